"""The GitHub backend's client: App authentication, installation tokens, REST and GraphQL with retries.

``GitHubApp`` holds the App's identity: it signs RS256 JWTs with pyjwt (``iat`` 60 s in the
past, ``exp`` nine minutes ahead, so host clock drift cannot push it past GitHub's ten-minute
limit) and trades them for installation tokens through gidgethub, cached until shortly before
their ``expires_at``. The PEM key is parsed once (tens of milliseconds: cryptography checks the
RSA key) and every signature is made in a worker thread, so minting a token never holds the
event loop. ``app.repo(installation_id, "owner/name")`` gives a ``RepoClient`` with the
calls the bot makes, every one retried with backoff on 5xx (an HTML 502 from GitHub's front end
on ``/graphql`` too), secondary rate limits, 429 and exhausted primary limits (GraphQL's: a 200
with a rate-limit error). A wait longer than the policy allows is not slept: the error says
how long (``retry_after``) and the job queue tries again then. Tokens are never logged.

The reads a round repeats (the pull, its files, reviews and comments, the settings file on the
default branch) are conditional requests: the last answer's ``ETag`` is sent back and GitHub's
304, which its primary limit does not count, returns the kept answer (``ConditionalCache``,
bounded, one scope per installation and media type). Owner and name are checked against GitHub's characters and every URL segment is
quoted, so no payload can point a call at another endpoint.
"""

from __future__ import annotations

import asyncio
import base64
import http
import json
import logging
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from datetime import datetime
from typing import Any
from urllib.parse import quote

import aiohttp
import gidgethub
import jwt
import orjson
from cryptography.hazmat.primitives.serialization import load_pem_private_key
from gidgethub.aiohttp import GitHubAPI

from tracker.gitpath import quote as git_quote

from ..forge import ForgeError
from ..forge.calls import RetryPolicy, backoff, hinted_wait, limited, with_retries
from ..forge.confine import repo_path
from ..observe import metrics
from .errors import GitHubError, NotAcceptable, NotFound, RateLimited, Unavailable, error_for

log = logging.getLogger(__name__)

__all__ = ["ConditionalCache", "GitHubApp", "RepoClient", "RetryPolicy", "files_to_diff",
           "graphql_endpoint", "valid_full_name"]

USER_AGENT = "roundwise"
TOKEN_MARGIN = 300.0  # refresh an installation token this many seconds before it expires
DIFF = "application/vnd.github.diff"
#: the most of one diff the bot reads (a round reviews far less: ``bot.config.bounds``); past
#: it the diff is treated as too large, as GitHub treats one of over 20,000 lines
MAX_DIFF_BYTES = 8 * 1024 * 1024
OVER_CAP = "the diff is larger than the bot reads"  # the 406 message of a diff over the cap
RAW = "application/vnd.github.raw"

THREADS_QUERY = """
query($owner: String!, $name: String!, $number: Int!, $cursor: String) {
  repository(owner: $owner, name: $name) {
    pullRequest(number: $number) {
      reviewThreads(first: 100, after: $cursor) {
        pageInfo { hasNextPage endCursor }
        nodes {
          id isResolved isOutdated path line
          comments(first: 100) { nodes { id databaseId fullDatabaseId body author { login } } }
        }
      }
    }
  }
}
"""
RESOLVE_MUTATION = """
mutation($id: ID!) { resolveReviewThread(input: {threadId: $id}) { thread { id isResolved } } }
"""
UNRESOLVE_MUTATION = """
mutation($id: ID!) { unresolveReviewThread(input: {threadId: $id}) { thread { id isResolved } } }
"""


# GitHub's characters: an account is letters, digits and hyphens (39 at most, no leading
# hyphen; Enterprise managed users add "_shortcode"); a repository letters, digits, ".", "-"
# and "_" (100 at most), never "." or "..".
_OWNER = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,38}")
_NAME = re.compile(r"[A-Za-z0-9._-]{1,100}")


def valid_full_name(full_name: object) -> bool:
    """Whether ``full_name`` is an ``owner/name`` GitHub could have made."""
    if not isinstance(full_name, str):
        return False
    owner, sep, name = full_name.partition("/")
    return bool(sep and _OWNER.fullmatch(owner) and _NAME.fullmatch(name)
                and name not in (".", ".."))


class ConditionalCache:
    """The last answer (with its ``ETag`` and ``Last-Modified``) of each conditional read,
    least recently used dropped past ``size`` entries or ``max_bytes`` of answers. Answers are
    kept as JSON bytes, so a caller changing what it got cannot change what the next 304
    returns; one larger than a quarter of ``max_bytes`` is not kept."""

    def __init__(self, size: int = 2048, max_bytes: int = 32 * 1024 * 1024):
        self.size = size
        self.max_bytes = max_bytes
        self.bytes = 0
        self._entries: OrderedDict[tuple, tuple] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def scope(self, *key: object) -> MutableMapping:
        """The mapping gidgethub reads and writes for one installation and media type."""
        return _Scope(self, key)

    def get(self, key: tuple) -> tuple:
        etag, modified, data, more = self._entries[key]
        self._entries.move_to_end(key)
        return etag, modified, orjson.loads(data), more

    def put(self, key: tuple, value: tuple) -> None:
        etag, modified, data, more = value
        self.drop(key)
        try:
            raw = orjson.dumps(data)
        except TypeError:  # not JSON: nothing to keep
            return
        if len(raw) > self.max_bytes // 4:
            return
        self._entries[key] = (etag, modified, raw, more)
        self.bytes += len(raw)
        while len(self._entries) > self.size or self.bytes > self.max_bytes:
            _, (_, _, dropped, _) = self._entries.popitem(last=False)
            self.bytes -= len(dropped)

    def drop(self, key: tuple) -> None:
        entry = self._entries.pop(key, None)
        if entry is not None:
            self.bytes -= len(entry[2])

    def stored(self) -> list[tuple]:
        """Every key kept, least recently used first."""
        return list(self._entries)


class _Scope(MutableMapping):
    """gidgethub's ``cache`` (URL -> (etag, last-modified, data, next page)) over one scope."""

    def __init__(self, cache: ConditionalCache, key: tuple):
        self._cache, self._key = cache, key

    def __getitem__(self, url: str) -> tuple:
        return self._cache.get((*self._key, url))

    def __setitem__(self, url: str, value: tuple) -> None:
        self._cache.put((*self._key, url), value)

    def __delitem__(self, url: str) -> None:
        self._cache.drop((*self._key, url))

    def __iter__(self) -> Iterator[str]:
        n = len(self._key)
        return iter([k[n] for k in self._cache.stored() if k[:n] == self._key])

    def __len__(self) -> int:
        return sum(1 for _ in self)


class _API(GitHubAPI):
    """gidgethub's client, keeping the last answer's status and headers: a GraphQL answer
    that is not JSON (an HTML 502) or a 200 carrying a rate-limit error is classified by
    them."""

    last_status: int | None = None
    last_headers: Any = None

    async def _request(self, method: str, url: str, headers: Any, body: bytes = b""
                       ) -> tuple[int, Any, bytes]:
        if any(k.lower() == "accept" and v == DIFF for k, v in headers.items()):
            status, answer_headers, data = await self._capped(method, url, headers, body)
        else:
            status, answer_headers, data = await super()._request(method, url, headers, body)
        self.last_status, self.last_headers = status, answer_headers
        return status, answer_headers, data

    async def _capped(self, method: str, url: str, headers: Any, body: bytes
                      ) -> tuple[int, Any, bytes]:
        """A diff read as it arrives, and given up past ``MAX_DIFF_BYTES``: answered as GitHub
        answers a diff it will not make (406), so callers fall back the same way."""
        async with self._session.request(method, url, headers=headers, data=body) as resp:
            too_large = (406, {"content-type": "application/json"}, json.dumps(
                {"message": f"{OVER_CAP} ({MAX_DIFF_BYTES} bytes)"}).encode())
            if resp.status != 200:
                return resp.status, resp.headers, await resp.content.read(MAX_DIFF_BYTES)
            if (resp.content_length or 0) > MAX_DIFF_BYTES:
                return too_large
            data = bytearray()
            async for chunk in resp.content.iter_chunked(64 * 1024):
                data += chunk
                if len(data) > MAX_DIFF_BYTES:
                    return too_large
            return resp.status, resp.headers, bytes(data)


def graphql_endpoint(api_url: str) -> str:
    """GraphQL lives at /graphql on api.github.com and at /api/graphql on GitHub Enterprise."""
    api_url = api_url.rstrip("/")
    if api_url.endswith("/api/v3"):
        return api_url[: -len("/v3")] + "/graphql"
    return api_url + "/graphql"


class GitHubApp:
    """A GitHub App identity talking to one GitHub API (public, Enterprise, or the fake)."""

    def __init__(self, session: aiohttp.ClientSession, app_id: str | int, private_key: str,
                 api_url: str = "https://api.github.com", *, retry: RetryPolicy | None = None,
                 clock: Callable[[], float] = time.time,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep):
        self.session = session
        self.app_id = str(app_id)
        self._private_key = private_key
        self.api_url = api_url.rstrip("/")
        self.retry = retry or RetryPolicy()
        self.clock = clock
        self.sleep = sleep
        self._signing_key: Any = None  # the PEM parsed once, on first use
        self._key_lock = threading.Lock()
        self._tokens: dict[int, tuple[str, float]] = {}
        self._token_locks: dict[int, asyncio.Lock] = {}
        self.conditional = ConditionalCache()

    def __repr__(self) -> str:  # never show the key
        return f"GitHubApp(app_id={self.app_id}, api_url={self.api_url})"

    def jwt(self) -> str:
        """An App JWT: RS256, ``iss`` the App id, valid from 60 s ago for 10 minutes (CPU
        work: on the event loop, call ``signed_jwt``)."""
        now = int(self.clock())
        payload = {"iat": now - 60, "exp": now + 540, "iss": self.app_id}
        return jwt.encode(payload, self._key(), algorithm="RS256")

    async def signed_jwt(self) -> str:
        """``jwt()`` made in a worker thread: parsing the key and signing never hold the loop."""
        return await asyncio.to_thread(self.jwt)

    async def load_key(self) -> None:
        """Parse the App's key now, in a worker thread: ``cryptography`` holds the GIL while
        it checks an RSA key (about 45 ms), so parsing it at the first round stalled the loop
        through the other thread; at start nothing is waiting yet. A key that cannot be
        parsed fails where it always did, at the first token."""
        try:
            await asyncio.to_thread(self._key)
        except (ValueError, TypeError):
            pass

    def _key(self) -> Any:
        """The App's private key as cryptography's object, parsed from the PEM once."""
        with self._key_lock:
            if self._signing_key is None:
                self._signing_key = load_pem_private_key(self._private_key.encode(),
                                                         password=None)
            return self._signing_key

    def _api(self, token: str | None = None, cache: MutableMapping | None = None) -> _API:
        return _API(self.session, USER_AGENT, oauth_token=token, base_url=self.api_url,
                    cache=cache)

    async def installation_token(self, installation_id: int) -> str:
        """A cached installation token, fetched again shortly before it expires."""
        cached = self._tokens.get(installation_id)
        if cached and cached[1] - TOKEN_MARGIN > self.clock():
            return cached[0]
        lock = self._token_locks.setdefault(installation_id, asyncio.Lock())
        async with lock:
            cached = self._tokens.get(installation_id)
            if cached and cached[1] - TOKEN_MARGIN > self.clock():
                return cached[0]
            async def mint():
                return await self._api().post(
                    f"/app/installations/{installation_id}/access_tokens", data=b"",
                    jwt=await self.signed_jwt())

            data = await self._with_retries(
                "POST", f"/app/installations/{installation_id}/access_tokens", mint)
            token = data["token"]
            expires = _parse_time(data.get("expires_at")) or self.clock() + 3600
            self._tokens[installation_id] = (token, expires)
            return token

    def forget_token(self, installation_id: int) -> None:
        self._tokens.pop(installation_id, None)

    def repo(self, installation_id: int, full_name: str) -> RepoClient:
        """The client of one repository; ValueError unless ``full_name`` is one GitHub
        could have made (``valid_full_name``)."""
        return RepoClient(self, installation_id, full_name)

    async def _with_retries(self, method: str, url: str, call: Callable[[], Awaitable[Any]],
                            *, installation_id: int | None = None,
                            probe: Callable[[], Awaitable[Any]] | None = None) -> Any:
        """Run one API call under ``bot.forge.calls.with_retries``: what GitHub says may be
        retried is; a 401 with an installation token fetches a new token and retries at once.

        ``probe`` (for writes that are not idempotent) looks on GitHub for what the call would
        have written: before every retry it runs, and when it finds the write (GitHub applied
        it but its answer was lost: a 502, a timeout) that is the call's result."""

        def refresh(error: ForgeError) -> bool:
            if error.status == 401 and installation_id is not None:
                self.forget_token(installation_id)
                return True
            return False

        return await with_retries(
            call, policy=self.retry, sleep=self.sleep, host="GitHub", method=method, url=url,
            classify=lambda exc, attempt: self._classify(exc, method, url, attempt),
            probe=probe, refresh=refresh,
            count=lambda outcome: metrics.GITHUB_CALLS.labels(method=method,
                                                              outcome=outcome).inc())

    def _classify(self, exc: Exception, method: str, url: str,
                  attempt: int) -> tuple[float | None, GitHubError]:
        """(seconds to wait before retrying or None, the error to raise if not retrying)."""
        wait = backoff(self.retry, attempt)
        if isinstance(exc, TypeError):
            # gidgethub < 6 chokes on a 422 whose errors are plain strings (create-review).
            return None, error_for(f"unprocessable: {exc}", status=422, method=method, url=url)
        if isinstance(exc, gidgethub.GitHubBroken):
            return wait, Unavailable("GitHub is having trouble", status=_status(exc),
                                        method=method, url=url, retryable=True)
        if isinstance(exc, gidgethub.HTTPException):
            status = _status(exc)
            headers = {k.lower(): v for k, v in (exc.headers or {}).items()}
            errors = getattr(exc, "errors", None)
            message = str(exc) or f"HTTP {status}"
            if status in (403, 429):
                hinted = self._rate_limit_wait(headers, wait, status, message)
                if hinted is not None:
                    return limited(self.retry, hinted, RateLimited, "rate limited",
                                   status=status, method=method, url=url)
            return None, error_for(message, status=status, method=method, url=url,
                                   errors=errors)
        if isinstance(exc, gidgethub.GraphQLException):
            response = getattr(exc, "response", None)
            status = _status(exc)  # BadGraphQLRequest (4xx) only; 200 with errors has none
            text = json.dumps(response, default=str) if response is not None else str(exc)
            headers = {k.lower(): v for k, v in (getattr(exc, "headers", None) or {}).items()}
            if status == 429 or "rate limit" in text.lower() or '"RATE_LIMITED"' in text:
                # GitHub answers a spent GraphQL budget with 200, errors and remaining 0
                hinted = self._rate_limit_wait(headers, wait, 429, "rate limit")
                return limited(self.retry, hinted, RateLimited, "GraphQL rate limited",
                               status=status, method=method, url=url, errors=response)
            return None, error_for(f"GraphQL error: {exc}", status=status, method=method,
                                   url=url, errors=response)
        if isinstance(exc, (aiohttp.ClientError, asyncio.TimeoutError)):
            return wait, Unavailable(f"connection problem: {exc!r}", method=method, url=url,
                                     retryable=True)
        raise exc

    def _rate_limit_wait(self, headers: dict, wait: float, status: int,
                         message: str) -> float | None:
        """GitHub's hint (``Retry-After``, or ``X-RateLimit-Reset`` once ``-Remaining`` is 0);
        a secondary limit without a usable hint waits at least ``secondary_wait``; None: a
        plain permission 403."""
        hinted = hinted_wait(headers, self.clock(), reset="x-ratelimit-reset",
                             remaining="x-ratelimit-remaining")
        if hinted is not None:
            return hinted
        if "retry-after" in headers or headers.get("x-ratelimit-remaining") == "0":
            return self.retry.secondary_wait
        if status == 429 or "rate limit" in message.lower():  # secondary, without a hint
            return max(wait, self.retry.secondary_wait)
        return None


def _status(exc: Exception) -> int | None:
    code = getattr(exc, "status_code", None)
    return int(code) if code is not None else None


def _parse_time(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(value).timestamp()
    except ValueError:
        return None


class RepoClient:
    """The calls the bot makes inside one repository, as one installation."""

    def __init__(self, app: GitHubApp, installation_id: int, full_name: str):
        if not valid_full_name(full_name):
            raise ValueError(f"not a GitHub repository name: {str(full_name)[:200]!r}")
        self.app = app
        self.installation_id = installation_id
        self.full_name = full_name
        self.owner, _, self.name = full_name.partition("/")

    def _cache(self, accept: str | None = None) -> MutableMapping:
        return self.app.conditional.scope(self.installation_id, accept or "json")

    async def _call(self, method: str, url: str, *, probe=None, conditional: bool = False,
                    **kwargs) -> Any:
        async def run():
            token = await self.app.installation_token(self.installation_id)
            cache = self._cache(kwargs.get("accept")) if conditional else None
            api = self.app._api(token, cache)
            if method == "GET":
                return await api.getitem(url, **kwargs)
            if method == "POST":
                return await api.post(url, **kwargs)
            if method == "PATCH":
                return await api.patch(url, **kwargs)
            if method == "PUT":
                return await api.put(url, **kwargs)
            raise ValueError(method)

        return await self.app._with_retries(method, url, run, probe=probe,
                                            installation_id=self.installation_id)

    async def _pages(self, url: str, *, conditional: bool = False) -> list[Any]:
        async def run():
            token = await self.app.installation_token(self.installation_id)
            api = self.app._api(token, self._cache() if conditional else None)
            return [item async for item in api.getiter(url)]

        return await self.app._with_retries("GET", url, run,
                                            installation_id=self.installation_id)

    def _url(self, rest: str) -> str:
        return f"/repos/{_seg(self.owner)}/{_seg(self.name)}{rest}"

    async def pull(self, number: int) -> dict:
        return await self._call("GET", self._url(f"/pulls/{int(number)}"), conditional=True)

    async def pull_diff(self, number: int) -> str:
        """The whole PR diff; rebuilt from the files list when GitHub says it is too large
        (too many files or lines). A diff over the bot's own cap (``MAX_DIFF_BYTES``) stays
        ``NotAcceptable``: its files list would be as large."""
        try:  # an empty diff comes back as an empty body: the empty text, not None
            return await self._call("GET", self._url(f"/pulls/{int(number)}"), accept=DIFF) or ""
        except NotAcceptable as exc:
            if OVER_CAP in str(exc):
                raise
            # else too large for the diff media type
        files = await self._pages(self._url(f"/pulls/{int(number)}/files?per_page=100"),
                                  conditional=True)
        return files_to_diff(files)

    async def compare_diff(self, base: str, head: str) -> str:
        return await self._call("GET", self._url(f"/compare/{_seg(base)}...{_seg(head)}"),
                                accept=DIFF) or ""

    async def compare(self, base: str, head: str) -> dict:
        """The comparison of two commits as JSON (status, commits...); the last one is kept,
        so a round asking for its status and then its commits makes one request."""
        cached = getattr(self, "_compared", None)
        if cached is not None and cached[0] == (base, head):
            return cached[1]
        data = await self._call("GET", self._url(f"/compare/{_seg(base)}...{_seg(head)}"))
        data = data if isinstance(data, dict) else {}
        self._compared = ((base, head), data)
        return data

    async def compare_status(self, base: str, head: str) -> str:
        """How ``head`` relates to ``base``: ahead, behind, diverged or identical."""
        return str((await self.compare(base, head)).get("status") or "")

    async def commit_messages(self, base: str, head: str) -> list[str]:
        """The messages of the commits ``head`` has that ``base`` has not, oldest first."""
        commits = (await self.compare(base, head)).get("commits") or []
        return [str(((c or {}).get("commit") or {}).get("message") or "")
                for c in commits if isinstance(c, dict)]

    async def file_text(self, path: str, ref: str | None = None) -> str | None:
        """A file's text at ``ref`` (default branch when None); None when it does not exist
        (or the path would leave the repository: ``bot.forge.confine``)."""
        if repo_path(path) != path:
            log.warning("not reading %r: not a path inside the repository", path[:200])
            return None
        url = self._url(f"/contents/{quote(path)}") + (f"?ref={quote(ref, safe='')}" if ref
                                                        else "")
        try:  # the default branch's (the settings file, read every round) is conditional
            data = await self._call("GET", url, conditional=ref is None)
        except NotFound:
            return None
        if not isinstance(data, dict) or data.get("type") != "file":
            return None
        if data.get("encoding") == "base64" and data.get("content") is not None:
            raw = base64.b64decode("".join(data["content"].split()))
        else:  # over 1 MB: ask for the raw bytes
            raw = (await self._call("GET", url, accept=RAW) or "").encode()
        return raw.decode("utf-8", errors="replace")

    async def review_comments(self, number: int) -> list[dict]:
        return await self._pages(self._url(f"/pulls/{int(number)}/comments?per_page=100"),
                                 conditional=True)

    async def create_review(self, number: int, commit_id: str, body: str,
                            comments: list[dict], event: str = "COMMENT") -> dict:
        data = {"commit_id": commit_id, "body": body, "event": event, "comments": comments}

        async def probe():  # every inline comment's body is unique (its hidden marker)
            if not comments:
                return next((r for r in await self.reviews(number) if r.get("body") == body
                             and r.get("commit_id") == commit_id), None)
            have = {c.get("body") for c in await self.review_comments(number)}
            return {"comments": "applied"} if all(c["body"] in have for c in comments) else None

        return await self._call("POST", self._url(f"/pulls/{int(number)}/reviews"), data=data,
                                probe=probe)

    async def reply(self, number: int, comment_id: int, body: str) -> dict:
        async def probe():
            return next((c for c in await self.review_comments(number)
                         if c.get("in_reply_to_id") == comment_id and c.get("body") == body),
                        None)

        return await self._call("POST", self._url(
            f"/pulls/{int(number)}/comments/{int(comment_id)}/replies"),
                                data={"body": body}, probe=probe)

    async def issue_comments(self, number: int) -> list[dict]:
        return await self._pages(self._url(f"/issues/{int(number)}/comments?per_page=100"),
                                 conditional=True)

    async def create_issue_comment(self, number: int, body: str) -> dict:
        async def probe():
            return next((c for c in await self.issue_comments(number)
                         if c.get("body") == body), None)

        return await self._call("POST", self._url(f"/issues/{int(number)}/comments"),
                                data={"body": body}, probe=probe)

    async def react_issue_comment(self, comment_id: int, content: str) -> dict:
        """A reaction on a PR comment (GitHub answers 200 when it is there already)."""
        return await self._call("POST", self._url(
            f"/issues/comments/{int(comment_id)}/reactions"), data={"content": content})

    async def edit_issue_comment(self, comment_id: int, body: str) -> dict:
        return await self._call("PATCH", self._url(f"/issues/comments/{int(comment_id)}"),
                                data={"body": body})

    async def reviews(self, number: int) -> list[dict]:
        return await self._pages(self._url(f"/pulls/{int(number)}/reviews?per_page=100"),
                                 conditional=True)

    async def dismiss_review(self, number: int, review_id: int, message: str) -> dict:
        return await self._call("PUT", self._url(
            f"/pulls/{int(number)}/reviews/{int(review_id)}/dismissals"),
                                data={"message": message, "event": "DISMISS"})

    async def create_check_run(self, data: dict) -> dict:
        async def probe():  # created, but the answer was lost: the run with our name and id
            return await self.find_check_run(data["head_sha"], data["name"],
                                             data.get("external_id"))

        return await self._call("POST", self._url("/check-runs"), data=data, probe=probe)

    async def find_check_run(self, head_sha: str, name: str,
                             external_id: str | None) -> dict | None:
        """The newest check run named ``name`` with ``external_id`` on commit ``head_sha``."""
        found = await self._call("GET", self._url(
            f"/commits/{_seg(head_sha)}/check-runs?check_name={_seg(name)}&per_page=100"))
        runs = [r for r in (found or {}).get("check_runs") or []
                if isinstance(r, dict) and r.get("name") == name
                and r.get("external_id") == external_id]
        return max(runs, key=lambda r: int(r.get("id") or 0), default=None)

    async def update_check_run(self, check_run_id: int, data: dict) -> dict:
        return await self._call("PATCH", self._url(f"/check-runs/{int(check_run_id)}"), data=data)

    async def permission(self, user: str) -> str:
        """``admin``, ``write``, ``read`` or ``none`` (unknown users have none)."""
        try:
            data = await self._call("GET", self._url(f"/collaborators/{_seg(user)}/permission"))
        except NotFound:
            return "none"
        return data.get("permission") or "none"

    async def graphql(self, query: str, **variables) -> dict:
        async def run():
            token = await self.app.installation_token(self.installation_id)
            api = self.app._api(token)
            try:
                return await api.graphql(query, endpoint=graphql_endpoint(self.app.api_url),
                                         **variables)
            except gidgethub.GraphQLResponseTypeError as exc:
                # not JSON: GitHub's front end answering 5xx in HTML, retried like a JSON 5xx
                if api.last_status is not None and api.last_status >= 500:
                    known = api.last_status in {int(code) for code in http.HTTPStatus}
                    raise gidgethub.GitHubBroken(http.HTTPStatus(
                        api.last_status if known else 502)) from exc
                raise
            except gidgethub.GraphQLException as exc:
                exc.headers = api.last_headers  # a spent budget's reset time is in them
                raise

        return await self.app._with_retries("POST", "/graphql", run,
                                            installation_id=self.installation_id)

    async def review_threads(self, number: int) -> list[dict]:
        """Every review thread of the PR with its comments (GraphQL, all pages)."""
        threads, cursor = [], None
        while True:
            data = await self.graphql(THREADS_QUERY, owner=self.owner, name=self.name,
                                      number=number, cursor=cursor)
            conn = data["repository"]["pullRequest"]["reviewThreads"]
            threads.extend(conn["nodes"])
            if not conn["pageInfo"]["hasNextPage"]:
                return threads
            cursor = conn["pageInfo"]["endCursor"]

    async def resolve_thread(self, thread_id: str) -> None:
        await self.graphql(RESOLVE_MUTATION, id=thread_id)

    async def unresolve_thread(self, thread_id: str) -> None:
        await self.graphql(UNRESOLVE_MUTATION, id=thread_id)


def _seg(value: str) -> str:
    """One URL path segment: everything quoted, "/" and dot segments included."""
    value = quote(str(value), safe="")
    return value.replace(".", "%2E") if value in (".", "..") else value


def files_to_diff(files: list[dict]) -> str:
    """A unified diff rebuilt from the pull-request files list (for PRs too large to diff)."""
    parts = []
    for f in files:
        new, old = f["filename"], f.get("previous_filename") or f["filename"]
        a, b = git_quote(f"a/{old}"), git_quote(f"b/{new}")  # as git writes names
        parts.append(f"diff --git {a} {b}\n")
        status = f.get("status")
        if status == "renamed" and old != new:
            parts.append(f"rename from {git_quote(old)}\nrename to {git_quote(new)}\n")
        if f.get("patch") is None:
            if status != "renamed":
                parts.append(f"Binary files {a} and {b} differ\n")
            continue
        parts.append("--- " + ("/dev/null" if status == "added" else a) + "\n")
        parts.append("+++ " + ("/dev/null" if status == "removed" else b) + "\n")
        patch = f["patch"]
        parts.append(patch if patch.endswith("\n") else patch + "\n")
    return "".join(parts)
