"""The GitLab backend's client: REST v4 through gidgetlab (aiohttp), with retries.

``GitLabClient`` holds the instance URL and the access token (a project or group access token,
sent as ``Authorization: Bearer``; never logged) and gives a ``ProjectClient`` per project with
the calls the bot makes. Every call is retried with backoff on 5xx and lost connections; a 429
is waited out for its ``Retry-After`` (or until ``RateLimit-Reset``), as is a 403 whose
``RateLimit-Remaining`` is 0; a wait longer than the policy allows is not slept but raised as
``RateLimited`` with ``retry_after``, and the job queue tries again then. Lists follow GitLab's
pagination (``Link: rel="next"``, gidgetlab's ``getiter``) at 100 a page. Writes that are not
idempotent (new notes and discussions) take a ``probe`` that looks for the write on GitLab
before each retry, so a note GitLab stored but whose answer was lost is not posted twice.
Every path segment is quoted whole, so no payload can point a call at another endpoint.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import quote

import aiohttp
import gidgetlab
from gidgetlab.aiohttp import GitLabAPI

from ..forge.calls import RetryPolicy, backoff, hinted_wait, limited, with_retries
from .errors import GitLabError, NotFound, RateLimited, Unavailable, error_for

__all__ = ["GitLabClient", "ProjectClient", "RetryPolicy"]

log = logging.getLogger(__name__)

USER_AGENT = "roundwise"
PAGE = 100


class _API(GitLabAPI):
    """gidgetlab's client, keeping the last answer's status and headers (a 429's
    ``Retry-After`` is in them; gidgetlab's exceptions carry no headers)."""

    last_status: int | None = None
    last_headers: Any = None

    async def _request(self, method: str, url: str, headers: Any, body: bytes = b""
                       ) -> tuple[int, Any, bytes]:
        status, answer_headers, data = await super()._request(method, url, headers, body)
        self.last_status, self.last_headers = status, answer_headers
        return status, answer_headers, data


def _seg(value: object) -> str:
    """One URL path segment, everything quoted (a project path's "/" too, as GitLab wants)."""
    text = quote(str(value), safe="")
    return text.replace(".", "%2E") if text in (".", "..") else text


class GitLabClient:
    """One GitLab instance, as the holder of one access token."""

    def __init__(self, session: aiohttp.ClientSession, url: str, token: str, *,
                 retry: RetryPolicy | None = None, clock: Callable[[], float] = time.time,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep):
        self.session = session
        self.url = url.rstrip("/")
        self._token = token
        self.retry = retry or RetryPolicy()
        self.clock = clock
        self.sleep = sleep
        self._me: dict | None = None
        self.status_shas: dict[int, str] = {}  # commit status id -> its sha (this process)

    def __repr__(self) -> str:  # never show the token
        return f"GitLabClient(url={self.url})"

    def _api(self) -> _API:
        return _API(self.session, USER_AGENT, access_token=self._token, url=self.url)

    async def call(self, method: str, url: str, *, data: Any = b"", params: dict | None = None,
                   probe: Callable[[], Awaitable[Any]] | None = None) -> Any:
        async def run():
            api = self._api()
            try:
                if method == "GET":
                    return await api.getitem(url, params or {})
                if method == "POST":
                    return await api.post(url, params or {}, data=data)
                if method == "PUT":
                    return await api.put(url, params or {}, data=data)
                raise ValueError(method)
            except gidgetlab.HTTPException as exc:
                exc.headers = api.last_headers  # read by _classify
                raise

        return await self._with_retries(method, url, run, probe=probe)

    async def pages(self, url: str, params: dict | None = None) -> list[Any]:
        async def run():
            api = self._api()
            try:
                return [item async for item in api.getiter(url, {"per_page": str(PAGE),
                                                                 **(params or {})})]
            except gidgetlab.HTTPException as exc:
                exc.headers = api.last_headers
                raise

        return await self._with_retries("GET", url, run)

    async def me(self) -> dict:
        """The token's own user (a project access token has a bot user), asked once."""
        if self._me is None:
            self._me = await self.call("GET", "/user")
        return self._me

    def known_username(self) -> str | None:
        return (self._me or {}).get("username")

    def project(self, project: int | str) -> ProjectClient:
        return ProjectClient(self, project)

    async def _with_retries(self, method: str, url: str, call: Callable[[], Awaitable[Any]],
                            *, probe: Callable[[], Awaitable[Any]] | None = None) -> Any:
        return await with_retries(
            call, policy=self.retry, sleep=self.sleep, host="GitLab", method=method, url=url,
            classify=lambda exc, attempt: self._classify(exc, method, url, attempt),
            probe=probe)

    def _classify(self, exc: Exception, method: str, url: str,
                  attempt: int) -> tuple[float | None, GitLabError]:
        wait = backoff(self.retry, attempt)
        if isinstance(exc, gidgetlab.GitLabBroken):
            return wait, Unavailable("GitLab is having trouble", status=_status(exc),
                                     method=method, url=url, retryable=True)
        if isinstance(exc, gidgetlab.HTTPException):
            status = _status(exc)
            headers = {k.lower(): v for k, v in (getattr(exc, "headers", None) or {}).items()}
            message = str(exc) or f"HTTP {status}"
            if status == 429 or (status == 403 and (
                    isinstance(exc, gidgetlab.RateLimitExceeded)
                    or headers.get("ratelimit-remaining") == "0")):
                hinted = hinted_wait(headers, self.clock(), reset="ratelimit-reset")
                return limited(self.retry, max(wait, self.retry.secondary_wait)
                               if hinted is None else hinted, RateLimited, "rate limited",
                               status=status, method=method, url=url)
            return None, error_for(message, status=status, method=method, url=url,
                                   errors=getattr(exc, "errors", None))
        if isinstance(exc, (aiohttp.ClientError, asyncio.TimeoutError)):
            return wait, Unavailable(f"connection problem: {exc!r}", method=method, url=url,
                                     retryable=True)
        raise exc


def _status(exc: Exception) -> int | None:
    code = getattr(exc, "status_code", None)
    return int(code) if code is not None else None


class ProjectClient:
    """The calls the bot makes inside one project (by numeric id or path)."""

    def __init__(self, client: GitLabClient, project: int | str):
        self.client = client
        self.project = project
        self._default_branch: str | None = None

    def _url(self, rest: str = "") -> str:
        return f"/projects/{_seg(self.project)}{rest}"

    def _mr(self, iid: int, rest: str = "") -> str:
        return self._url(f"/merge_requests/{int(iid)}{rest}")

    async def default_branch(self) -> str:
        if self._default_branch is None:
            data = await self.client.call("GET", self._url())
            self._default_branch = (data or {}).get("default_branch") or "main"
        return self._default_branch

    async def merge_request(self, iid: int) -> dict:
        return await self.client.call("GET", self._mr(iid))

    async def versions(self, iid: int) -> list[dict]:
        """The MR's diff versions, newest first (GitLab records one per push)."""
        return await self.client.pages(self._mr(iid, "/versions"))

    async def version(self, iid: int, version_id: int) -> dict:
        return await self.client.call("GET", self._mr(iid, f"/versions/{int(version_id)}"))

    async def mr_diffs(self, iid: int) -> list[dict]:
        return await self.client.pages(self._mr(iid, "/diffs"))

    async def compare(self, base: str, head: str) -> dict:
        """The commits and diffs from ``base`` to ``head``; the last answer is kept, so the
        round's diff and its commit messages cost one request."""
        cached = getattr(self, "_compared", None)
        if cached is not None and cached[0] == (base, head):
            return cached[1]
        data = await self.client.call("GET", self._url("/repository/compare"),
                                      params={"from": base, "to": head})
        data = data if isinstance(data, dict) else {}
        self._compared = ((base, head), data)
        return data

    async def merge_base(self, a: str, b: str) -> str | None:
        try:
            data = await self.client.call(
                "GET", self._url(f"/repository/merge_base?refs%5B%5D={_seg(a)}"
                                 f"&refs%5B%5D={_seg(b)}"))
        except NotFound:
            return None
        return (data or {}).get("id")

    async def file_raw(self, path: str, ref: str) -> str | None:
        try:
            data = await self.client.call(
                "GET", self._url(f"/repository/files/{_seg(path)}/raw"), params={"ref": ref})
        except NotFound:
            return None
        except UnicodeDecodeError:  # served as text but not in its charset: not readable text
            return None
        if isinstance(data, bytes):
            return data.decode("utf-8", errors="replace")
        if isinstance(data, (dict, list)):  # a JSON file, decoded by gidgetlab: keep its text
            import json

            return json.dumps(data)
        return "" if data is None else str(data)

    async def discussions(self, iid: int) -> list[dict]:
        return await self.client.pages(self._mr(iid, "/discussions"))

    async def discussion(self, iid: int, discussion_id: str) -> dict:
        return await self.client.call("GET", self._mr(iid, f"/discussions/{_seg(discussion_id)}"))

    async def create_discussion(self, iid: int, body: str, position: dict | None) -> dict:
        async def probe():
            for d in await self.discussions(iid):
                notes = d.get("notes") or []
                if notes and notes[0].get("body") == body:
                    return d
            return None

        data: dict[str, Any] = {"body": body}
        if position is not None:
            data["position"] = position
        return await self.client.call("POST", self._mr(iid, "/discussions"), data=data,
                                      probe=probe)

    async def add_note(self, iid: int, discussion_id: str, body: str) -> dict:
        async def probe():
            try:
                d = await self.discussion(iid, discussion_id)
            except NotFound:
                return None
            return next((n for n in d.get("notes") or [] if n.get("body") == body), None)

        return await self.client.call(
            "POST", self._mr(iid, f"/discussions/{_seg(discussion_id)}/notes"),
            data={"body": body}, probe=probe)

    async def resolve_discussion(self, iid: int, discussion_id: str, resolved: bool = True
                                 ) -> dict:
        return await self.client.call(
            "PUT", self._mr(iid, f"/discussions/{_seg(discussion_id)}"),
            params={"resolved": "true" if resolved else "false"})

    async def create_note(self, iid: int, body: str) -> dict:
        async def probe():
            return next((n for d in await self.discussions(iid)
                         for n in d.get("notes") or [] if n.get("body") == body), None)

        return await self.client.call("POST", self._mr(iid, "/notes"), data={"body": body},
                                      probe=probe)

    async def edit_note(self, iid: int, note_id: int, body: str) -> dict:
        return await self.client.call("PUT", self._mr(iid, f"/notes/{int(note_id)}"),
                                      data={"body": body})

    async def user_id(self, username: str) -> int | None:
        users = await self.client.call("GET", "/users", params={"username": username})
        found = [u for u in users or [] if isinstance(u, dict) and u.get("username") == username]
        return int(found[0]["id"]) if found else None

    async def access_level(self, user_id: int) -> int:
        """The user's access level in the project, inherited ones included (0: none)."""
        try:
            data = await self.client.call("GET", self._url(f"/members/all/{int(user_id)}"))
        except NotFound:
            return 0
        return int((data or {}).get("access_level") or 0)

    async def set_status(self, sha: str, data: dict) -> dict:
        return await self.client.call("POST", self._url(f"/statuses/{_seg(sha)}"), data=data)

    async def statuses(self, sha: str) -> list[dict]:
        return await self.client.pages(self._url(f"/repository/commits/{_seg(sha)}/statuses"),
                                       {"all": "true"})

    async def open_merge_requests(self, source_branch: str) -> list[dict]:
        return await self.client.pages(self._url("/merge_requests"),
                                       {"state": "opened", "source_branch": source_branch})
