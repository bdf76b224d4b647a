"""The fake GitHub's HTTP side: the aiohttp server, authentication, routing, pagination,
rate limits, scripted faults and the REST handlers.
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import hashlib
import itertools
import json
import math
import re
import secrets
import urllib.parse
from dataclasses import dataclass
from email.utils import format_datetime, parsedate_to_datetime
from typing import Any, NamedTuple, Self

import jwt
from aiohttp import web

from ..tasks.diffs import FileDiff, blob_sha
from .state import (
    DIFF_TYPE,
    DOCS,
    JSON_TYPE,
    MAX_API_BLOB,
    MAX_DIFF_FILES,
    MAX_DIFF_LINES,
    MAX_JWT_LIFETIME,
    MAX_LISTED_FILES,
    PATH_ERROR,
    PERMISSION_LEVELS,
    RAW_TYPE,
    REACTIONS,
    REVIEW_EVENTS,
    ApiError,
    RecordedRequest,
    _Bucket,
    _Comment,
    _Fault,
    _IssueComment,
    _node_id,
    _not_found,
    _PullRequest,
    _Repo,
    _Token,
    _Usage,
    _validation_failed,
    _validation_simple,
    basic_error,
    to_sentence,
)


class _Route(NamedTuple):
    method: str
    pattern: re.Pattern[str]
    handler: str
    auth: str  # "jwt", "token", "graphql", "user" (a user access token), "none" or "web"


_REPO = r"/repos/(?P<owner>[^/]+)/(?P<name>[^/]+)"
_PULL = _REPO + r"/pulls/(?P<number>\d+)"
_ROUTES = [
    _Route(method, re.compile(pattern), handler, auth)
    for method, pattern, handler, auth in [
        ("POST", r"/app/installations/(?P<installation_id>\d+)/access_tokens", "access_token",
         "jwt"),
        ("GET", r"/app", "app", "jwt"),
        ("GET", _REPO + r"/installation", "repo_installation", "jwt"),
        ("GET", _PULL, "pull", "token"),
        ("GET", _PULL + r"/files", "pull_files", "token"),
        ("GET", _PULL + r"/commits", "pull_commits", "token"),
        ("GET", _PULL + r"/reviews", "list_reviews", "token"),
        ("POST", _PULL + r"/reviews", "create_review", "token"),
        ("POST", _PULL + r"/reviews/(?P<review_id>\d+)/events", "submit_review", "token"),
        ("GET", _PULL + r"/comments", "list_review_comments", "token"),
        ("POST", _PULL + r"/comments", "create_review_comment", "token"),
        ("POST", _PULL + r"/comments/(?P<comment_id>\d+)/replies", "reply", "token"),
        ("GET", _REPO + r"/pulls/comments/(?P<comment_id>\d+)", "get_review_comment", "token"),
        ("PATCH", _REPO + r"/pulls/comments/(?P<comment_id>\d+)", "edit_review_comment", "token"),
        ("GET", _REPO + r"/issues/(?P<number>\d+)/comments", "list_issue_comments", "token"),
        ("POST", _REPO + r"/issues/(?P<number>\d+)/comments", "create_issue_comment", "token"),
        ("GET", _REPO + r"/issues/comments/(?P<comment_id>\d+)", "get_issue_comment", "token"),
        ("PATCH", _REPO + r"/issues/comments/(?P<comment_id>\d+)", "edit_issue_comment", "token"),
        ("POST", _REPO + r"/issues/comments/(?P<comment_id>\d+)/reactions",
         "react_issue_comment", "token"),
        ("GET", _REPO + r"/compare/(?P<basehead>.+)", "compare", "token"),
        ("GET", _REPO + r"/contents(?:/(?P<path>.*))?", "contents", "token"),
        ("GET", _REPO + r"/collaborators/(?P<user>[^/]+)/permission", "permission", "token"),
        ("POST", r"/graphql", "graphql", "graphql"),
        # the App-manifest flow (``manifests``): the web form, then the code's conversion
        ("POST", r"/settings/apps/new", "manifest_form", "none"),
        ("POST", r"/organizations/(?P<org>[^/]+)/settings/apps/new", "manifest_form", "none"),
        ("POST", r"/app-manifests/(?P<code>[^/]+)/conversions", "manifest_conversion", "none"),
        # the OAuth web flow (``oauth``): two web endpoints, then calls with a user token
        ("GET", r"/login/oauth/authorize", "oauth_authorize", "web"),
        ("POST", r"/login/oauth/access_token", "oauth_access_token", "web"),
        ("GET", r"/user", "user", "user"),
        ("GET", r"/user/installations", "user_installations", "user"),
        ("GET", r"/user/installations/(?P<installation_id>\d+)/repositories",
         "user_installation_repos", "user"),
    ]
]


# per-request notes: whose budget it spends, and the bucket it was charged to (for 304s)
_KEY = getattr(web, "RequestKey", None)  # aiohttp >= 3.12 wants typed keys
_WHO: Any = _KEY("roundwise_who", str) if _KEY else "roundwise_who"
_CHARGED: Any = _KEY("roundwise_charged", object) if _KEY else "roundwise_charged"


@dataclass
class _Call:
    """One authenticated API call being handled."""

    request: web.Request
    params: dict[str, str]
    body: Any
    token: _Token | None
    repo: _Repo | None = None
    pr: _PullRequest | None = None


def _accepts(request: web.Request, *media: str) -> bool:
    accept = request.headers.get("Accept", "").lower()
    wanted = [part.split(";")[0].strip() for part in accept.split(",")]
    return any(f"application/vnd.github.{kind}" in wanted for kind in media)


def _http_date(iso: str) -> str:
    """An ISO 8601 UTC time as an HTTP date (``Last-Modified``)."""
    return format_datetime(datetime.datetime.fromisoformat(iso), usegmt=True)


def _etag_matches(header: str, etag: str) -> bool:
    """``If-None-Match`` uses the weak comparison: ``W/`` prefixes do not count."""
    bare = etag.removeprefix("W/")
    return any(part.strip() == "*" or part.strip().removeprefix("W/") == bare
               for part in header.split(","))


def _int_param(query: Any, name: str, default: int) -> int:
    try:
        return int(query.get(name, default))
    except ValueError:
        return default


class RestApi:
    """Serving over HTTP: authentication, routing, pagination, rate limits, faults, and the
    REST handlers (App auth, reads, reviews, issue comments)."""

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Serve on 127.0.0.1 at a free port; ``url`` becomes ``http://127.0.0.1:PORT``."""
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._dispatch)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        host, port = self._runner.addresses[0][:2]
        self.url = f"http://{host}:{port}"

    async def stop(self) -> None:
        """Stop serving."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    # ------------------------------------------------------------------ HTTP plumbing

    def _who(self, request: web.Request) -> str:
        """Whose primary budget a request spends: ``installation:ID`` for an installation
        token (every token of one installation shares it, as on GitHub), ``app:ID`` for an
        App JWT, ``anonymous`` otherwise."""
        value = self._credential(request, ("token", "bearer"))
        token = self._tokens.get(value) if value else None
        if token is not None:
            return f"installation:{token.installation_id}"
        if value and value.count(".") == 2 and not value.startswith("ghs_"):
            return f"app:{self.app_id}"
        return "anonymous"

    def _rate_headers(self, who: str, resource: str) -> dict[str, str]:
        bucket = self._bucket(who, resource)
        self._roll(bucket)
        return {
            "x-ratelimit-limit": str(bucket.limit),
            "x-ratelimit-remaining": str(max(bucket.limit - bucket.used, 0)),
            "x-ratelimit-used": str(bucket.used),
            "x-ratelimit-reset": str(bucket.reset),
            "x-ratelimit-resource": resource,
        }

    def _roll(self, bucket: _Bucket) -> None:
        now = int(self._now())
        if now >= bucket.reset:
            bucket.used, bucket.reset = 0, now + 3600

    def _charge(self, request: web.Request, resource: str) -> None:
        """Spend one request of the caller's budget; an empty budget answers as GitHub does
        (REST: 403; GraphQL: 200 with a ``RATE_LIMITED`` error, both with remaining 0)."""
        who = request.get(_WHO) or self._who(request)
        bucket = self._bucket(who, resource)
        self._roll(bucket)
        if bucket.used >= bucket.limit:
            headers = self._rate_headers(who, resource)
            kind = who.partition(":")[0]
            if resource == "graphql":
                raise ApiError(200, {"errors": [{
                    "type": "RATE_LIMITED",
                    "message": f"API rate limit already exceeded for {kind} ID "
                               f"{who.partition(':')[2]}."}]}, headers)
            raise ApiError(403, basic_error(
                403, f"API rate limit exceeded for {kind} ID {who.partition(':')[2]}.",
                "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api"), headers)
        bucket.used += 1
        request[_CHARGED] = bucket
        self._usage.setdefault(who, _Usage()).charged += 1

    def _credential(self, request: web.Request, schemes: tuple[str, ...]) -> str | None:
        scheme, _, value = request.headers.get("Authorization", "").strip().partition(" ")
        return value.strip() if scheme.lower() in schemes and value.strip() else None

    def _check_jwt(self, request: web.Request) -> None:
        token = self._credential(request, ("bearer",))
        undecodable = ApiError(401, basic_error(401, "A JSON web token could not be decoded"))
        if token is None:
            raise undecodable
        try:
            claims = jwt.decode(
                token, self._public_key, algorithms=["RS256"],
                options={"verify_exp": False, "verify_iat": False, "verify_nbf": False,
                         "require": ["iat", "exp", "iss"]},
            )
        except jwt.PyJWTError:
            raise undecodable from None
        iat, exp, now = claims["iat"], claims["exp"], self._now()
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (iat, exp)):
            raise undecodable
        if exp - iat > MAX_JWT_LIFETIME:
            raise ApiError(401, basic_error(
                401, "'Expiration time' claim ('exp') is too far in the future"))
        if iat > now:
            raise ApiError(401, basic_error(
                401, "'Issued at' claim ('iat') must be an Integer representing a time in the "
                     "past"))
        if exp <= now:
            raise ApiError(401, basic_error(
                401, "'Expiration time' claim ('exp') must be a numeric value representing the "
                     "future time at which the assertion expires"))
        if str(claims["iss"]) not in {str(self.app_id), str(self.client_id)}:
            raise ApiError(401, basic_error(401, "Integration not found"))

    def _check_token(self, request: web.Request, docs: str = DOCS) -> _Token:
        value = self._credential(request, ("token", "bearer"))
        token = self._tokens.get(value) if value else None
        if token is None or token.expires_at <= self._now():
            raise ApiError(401, basic_error(401, "Bad credentials", docs))
        return token

    def _visible_repo(self, owner: str, name: str, token: _Token | None) -> _Repo:
        repo = self._repos.get(f"{owner}/{name}".lower())
        if repo is None:
            raise _not_found()
        if token is not None and (
            token.installation_id != repo.installation_id
            or (token.repositories is not None and repo.name.lower() not in token.repositories)
        ):
            raise _not_found()
        return repo

    def _normalise(self, path: str) -> str:
        """Map GitHub's ``/repositories/{id}/...`` link shape to ``/repos/{owner}/{name}/...``."""
        match = re.fullmatch(r"/repositories/(\d+)(/.*)?", path)
        if match:
            for repo in self._repos.values():
                if repo.id == int(match.group(1)):
                    return f"/repos/{repo.full_name}{match.group(2) or ''}"
        return path

    def _route(self, method: str, path: str) -> tuple[_Route, dict[str, str]]:
        for route in _ROUTES:
            match = route.pattern.fullmatch(path)
            if match and route.method == method:
                return route, {k: v for k, v in match.groupdict().items() if v is not None}
        raise _not_found()

    @staticmethod
    def _parse_body(raw: bytes) -> tuple[Any, bool]:
        if not raw:
            return None, True
        try:
            return json.loads(raw), True
        except ValueError:
            return raw.decode(errors="replace"), False

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        body, parsed = self._parse_body(raw)
        self.requests.append(
            RecordedRequest(request.method, request.path, dict(request.query), body)
        )
        path = self._normalise(request.path)
        resource = "graphql" if path == "/graphql" else "core"
        who = request[_WHO] = self._who(request)
        usage = self._usage.setdefault(who, _Usage())
        usage.requests += 1
        minted = re.fullmatch(r"/app/installations/(\d+)/access_tokens", path)
        if minted and request.method == "POST":
            self._usage.setdefault(f"installation:{minted.group(1)}", _Usage()).app_jwt += 1
        fault = self._take_fault(request.method, (request.path, path))
        if fault is not None and fault.lose:
            return await self._lossy(fault, request, path, body, parsed, who, resource)
        if fault is not None:
            response = self._fault_response(fault)
            response.headers.update({**self._rate_headers(who, resource), **fault.headers})
            return response
        try:
            response = await self._handle(request, path, body, parsed)
        except ApiError as error:
            response = self._json(error.body, error.status)
            response.headers.update(error.headers)
        response = self._conditional(request, response, usage)
        for name, value in self._rate_headers(who, resource).items():
            response.headers.setdefault(name, value)
        return response

    def _conditional(self, request: web.Request, response: web.StreamResponse,
                     usage: _Usage) -> web.StreamResponse:
        """GitHub's conditional GETs: every 200 carries an ``ETag`` (of its body, so of its
        media type too); ``If-None-Match`` naming it, or else ``If-Modified-Since`` not
        before a ``Last-Modified`` the handler gave, gets a bodiless 304 that is not charged."""
        if request.method != "GET" or response.status != 200 or \
                not isinstance(response, web.Response) or not isinstance(response.body, bytes):
            return response
        etag = 'W/"' + hashlib.sha256(response.body).hexdigest()[:40] + '"'
        response.headers["ETag"] = etag
        modified = response.headers.get("Last-Modified")
        wanted = request.headers.get("If-None-Match")
        since = request.headers.get("If-Modified-Since")
        if wanted is not None:
            fresh = _etag_matches(wanted, etag)
        elif since is not None and modified is not None:
            try:
                fresh = parsedate_to_datetime(modified) <= parsedate_to_datetime(since)
            except (TypeError, ValueError):
                fresh = False
        else:
            fresh = False
        if not fresh:
            return response
        bucket = request.get(_CHARGED)
        if bucket is not None:  # a 304 costs nothing
            bucket.used -= 1
            usage.charged -= 1
        usage.not_modified += 1
        headers = {"ETag": etag, **({"Last-Modified": modified} if modified else {})}
        return web.Response(status=304, headers=headers)

    async def _lossy(self, fault: _Fault, request: web.Request, path: str, body: Any,
                     parsed: bool, who: str, resource: str) -> web.StreamResponse:
        """A slow answer, or a call applied whose answer is then lost (502 or never sent)."""
        try:
            response = await self._handle(request, path, body, parsed)
        except ApiError as error:
            response = self._json(error.body, error.status)
            response.headers.update(error.headers)
        lost = fault.lose != "slow" and response.status < 400
        if lost:
            self.lost_responses += 1
            response = self._fault_response(fault)
        if fault.delay:
            await asyncio.sleep(fault.delay)
        for name, value in self._rate_headers(who, resource).items():
            response.headers.setdefault(name, value)
        return response

    async def _handle(self, request: web.Request, path: str, body: Any, parsed: bool
                      ) -> web.StreamResponse:
        route, params = self._route(request.method, path)
        token = None
        if route.auth == "jwt":
            self._check_jwt(request)
        elif route.auth in ("none", "web"):
            pass
        elif route.auth == "user":  # a person's user access token (``oauth``)
            params = {**params, "user_login": self._check_user_token(request)}
        else:
            docs = "https://docs.github.com/graphql" if route.auth == "graphql" else DOCS
            token = self._check_token(request, docs)
        if route.auth != "web":  # github.com's pages are not API calls
            self._charge(request, "graphql" if route.auth == "graphql" else "core")
        if not parsed and route.auth not in ("none", "web"):
            raise ApiError(400, basic_error(400, "Problems parsing JSON"))
        call = _Call(request, params, body, token)
        if "owner" in params:
            call.repo = self._visible_repo(params["owner"], params["name"], token)
            if "number" in params:
                call.pr = call.repo.prs.get(int(params["number"]))
                if call.pr is None:
                    raise _not_found()
        return await getattr(self, f"_h_{route.handler}")(call)

    def _json(self, data: Any, status: int = 200, headers: dict[str, str] | None = None
              ) -> web.Response:
        return web.Response(status=status, body=json.dumps(data).encode(),
                            headers={"Content-Type": JSON_TYPE, **(headers or {})})

    def _fault_response(self, fault: _Fault) -> web.Response:
        if isinstance(fault.body, (dict, list)):
            return self._json(fault.body, fault.status)
        if isinstance(fault.body, bytes):
            return web.Response(status=fault.status, body=fault.body)
        return web.Response(status=fault.status, body=str(fault.body).encode(),
                            headers={"Content-Type": "text/html; charset=utf-8"})

    def _link_base(self, call: _Call) -> str:
        """Absolute URL of this list on the fake, in GitHub's ``/repositories/{id}`` shape."""
        path = self._normalise(call.request.path)
        if self.repository_id_links and call.repo is not None:
            parts = path.split("/", 4)  # "", "repos", owner, name, rest
            path = f"/repositories/{call.repo.id}" + (f"/{parts[4]}" if len(parts) == 5 else "")
        return self.url + path

    def _paginate(self, call: _Call, items: list[Any]) -> web.Response:
        """One page of ``items`` with GitHub's absolute ``Link`` header (prev/next/last/first)."""
        query = call.request.query
        per_page = min(max(_int_param(query, "per_page", 30), 1), 100)
        page = max(_int_param(query, "page", 1), 1)
        last = max(math.ceil(len(items) / per_page), 1)
        base = self._link_base(call)

        def link(number: int, rel: str) -> str:
            params = {**query, "per_page": str(per_page), "page": str(number)}
            return f'<{base}?{urllib.parse.urlencode(params)}>; rel="{rel}"'

        links = []
        if page > 1:
            links.append(link(min(page - 1, last), "prev"))
        if page < last:
            links += [link(page + 1, "next"), link(last, "last")]
        if page > 1:
            links.append(link(1, "first"))
        headers = {"Link": ", ".join(links)} if links else {}
        return self._json(items[(page - 1) * per_page: page * per_page], headers=headers)

    def _resolve_ref(self, repo: _Repo, ref: str | None) -> str | None:
        if not ref:
            return repo.branches[repo.default_branch]
        ref = ref.removeprefix("refs/heads/")
        if ref in repo.branches:
            return repo.branches[ref]
        if ref in repo.trees:
            return ref
        if len(ref) >= 7 and re.fullmatch(r"[0-9a-f]+", ref):
            found = [sha for sha in repo.trees if sha.startswith(ref)]
            if len(found) == 1:
                return found[0]
        return None

    # ------------------------------------------------------------------ handlers: App auth

    async def _h_access_token(self, call: _Call) -> web.Response:
        installation_id = int(call.params["installation_id"])
        if installation_id not in self._installations:
            raise _not_found()
        body = call.body if isinstance(call.body, dict) else {}
        permissions = self._app_permissions()
        if isinstance(body.get("permissions"), dict):
            permissions = {k: v for k, v in body["permissions"].items() if k in permissions}
        names = body.get("repositories")
        selected = {str(n).lower() for n in names} if isinstance(names, list) and names else None
        value = f"ghs_{self.app_id}_{secrets.token_urlsafe(96)}"
        expires_at = self._now() + self.token_ttl
        self._tokens[value] = _Token(installation_id, expires_at, selected)
        self.token_issuances += 1
        answer = {
            "token": value,
            "expires_at": self._iso(expires_at),
            "permissions": permissions,
            "repository_selection": "all" if selected is None else "selected",
        }
        if selected is not None:
            answer["repositories"] = [
                self.repo_json(r.full_name) for r in self._repos.values()
                if r.installation_id == installation_id and r.name.lower() in selected
            ]
        return self._json(answer, 201)

    async def _h_app(self, call: _Call) -> web.Response:
        return self._json(self.app_json())

    async def _h_repo_installation(self, call: _Call) -> web.Response:
        return self._json(self.installation_json(call.repo.installation_id))

    # ------------------------------------------------------------------ handlers: reads

    async def _h_pull(self, call: _Call) -> web.Response:
        repo, pr = call.repo, call.pr
        if _accepts(call.request, "diff", "v3.diff"):
            diffs = self._diff(repo, pr.base_sha, pr.head_sha)
            self._check_diff_size(pr, diffs)
            return web.Response(body="".join(d.render() for d in diffs).encode(),
                                headers={"Content-Type": DIFF_TYPE})
        self._reject_unmodelled_media(call)
        return self._json(self.pr_json(repo.full_name, pr.number),
                          headers={"Last-Modified": _http_date(pr.updated_at)})

    def _check_diff_size(self, pr: _PullRequest | None, diffs: list[FileDiff]) -> None:
        lines = sum(len(h.lines) for d in diffs for h in d.hunks)
        reason = pr.diff_too_large if pr is not None else None
        if reason is None and len(diffs) > MAX_DIFF_FILES:
            reason = "files"
        if reason is None and lines > MAX_DIFF_LINES:
            reason = "lines"
        if reason is None:
            return
        limit = f"files ({MAX_DIFF_FILES})" if reason == "files" else f"lines ({MAX_DIFF_LINES})"
        raise ApiError(406, {
            "message": f"Sorry, the diff exceeded the maximum number of {limit}. Consider using "
                       "'List pull requests files' API or locally cloning the repository "
                       "instead.",
            "errors": [{"resource": "PullRequest", "field": "diff", "code": "too_large"}],
            "documentation_url": f"{DOCS}/pulls/pulls#list-pull-requests-files",
            "status": "406",
        })

    @staticmethod
    def _reject_unmodelled_media(call: _Call) -> None:
        if _accepts(call.request, "patch", "v3.patch", "sha", "v3.sha"):
            accept = call.request.headers.get("Accept", "")
            raise ApiError(415, basic_error(
                415, f"Unsupported 'Accept' header: {accept!r} (not modelled by the fake)"))

    async def _h_pull_files(self, call: _Call) -> web.Response:
        repo, pr = call.repo, call.pr
        entries = [  # GitHub lists 3,000 files at most
            self._diff_entry(repo, pr.head_sha, d, d.path not in pr.omitted_patches)
            for d in self._diff(repo, pr.base_sha, pr.head_sha)[:MAX_LISTED_FILES]
        ]
        return self._paginate(call, entries)

    async def _h_pull_commits(self, call: _Call) -> web.Response:
        shas = call.pr.commit_shas[:250]
        return self._paginate(call, [self._commit_json(call.repo, s) for s in shas])

    def _ancestors(self, repo: _Repo, sha: str) -> list[str]:
        """``sha`` and its ancestors, newest first (first parents only)."""
        chain = []
        while sha is not None and sha not in chain:
            chain.append(sha)
            parents = repo.commits[sha].parents
            sha = parents[0] if parents else None
        return chain

    async def _h_compare(self, call: _Call) -> web.Response:
        repo = call.repo
        base_ref, sep, head_ref = call.params["basehead"].partition("...")
        base, head = self._resolve_ref(repo, base_ref), self._resolve_ref(repo, head_ref)
        if not sep or base is None or head is None:
            raise _not_found()
        base_line, head_line = self._ancestors(repo, base), self._ancestors(repo, head)
        merge_base = next((s for s in head_line if s in base_line), base)
        ahead = head_line[: head_line.index(merge_base)] if merge_base in head_line else head_line
        behind = base_line[: base_line.index(merge_base)] if merge_base in base_line else []
        status = ("identical" if base == head else "ahead" if not behind
                  else "behind" if not ahead else "diverged")
        diffs = self._diff(repo, merge_base, head)
        if _accepts(call.request, "diff", "v3.diff"):
            self._check_diff_size(None, diffs)  # GitHub's comparison diffs share the limits
            return web.Response(body="".join(d.render() for d in diffs).encode(),
                                headers={"Content-Type": DIFF_TYPE})
        self._reject_unmodelled_media(call)
        api = f"{self._api()}/repos/{repo.full_name}"
        html = f"https://github.com/{repo.full_name}/compare/{base_ref}...{head_ref}"
        return self._json({
            "url": f"{api}/compare/{base_ref}...{head_ref}",
            "html_url": html,
            "permalink_url": html,
            "diff_url": f"{html}.diff",
            "patch_url": f"{html}.patch",
            "base_commit": self._commit_json(repo, base),
            "merge_base_commit": self._commit_json(repo, merge_base),
            "status": status,
            "ahead_by": len(ahead),
            "behind_by": len(behind),
            "total_commits": len(ahead),
            "commits": [self._commit_json(repo, s) for s in reversed(ahead[:250])],
            "files": [self._diff_entry(repo, head, d, True) for d in diffs[:300]],
        })

    async def _h_contents(self, call: _Call) -> web.Response:
        repo = call.repo
        path = call.params.get("path", "").strip("/")
        ref = call.request.query.get("ref")
        sha = self._resolve_ref(repo, ref)
        if sha is None:
            raise ApiError(404, basic_error(404, f"No commit found for the ref {ref}"))
        tree = repo.trees[sha]
        api = f"{self._api()}/repos/{repo.full_name}/contents"
        if path in tree:
            text = tree[path]
            if _accepts(call.request, "raw", "v3.raw"):
                return web.Response(body=text.encode(), headers={"Content-Type": RAW_TYPE})
            data = text.encode()
            if len(data) > MAX_API_BLOB:  # 1-100 MB: GitHub sends no content; ask for raw
                encoding, wrapped = "none", ""
            else:
                encoded = base64.b64encode(data).decode()
                encoding = "base64"
                wrapped = "".join(encoded[i:i + 60] + "\n" for i in range(0, len(encoded), 60))
            blob = blob_sha(text)
            self_url = f"{api}/{urllib.parse.quote(path)}?ref={ref or repo.default_branch}"
            git_url = f"{self._api()}/repos/{repo.full_name}/git/blobs/{blob}"
            html_url = f"https://github.com/{repo.full_name}/blob/{ref or repo.default_branch}/" \
                       f"{urllib.parse.quote(path)}"
            return self._json({
                "type": "file", "encoding": encoding, "size": len(data),
                "name": path.rsplit("/", 1)[-1], "path": path, "content": wrapped,
                "sha": blob, "url": self_url, "git_url": git_url, "html_url": html_url,
                "download_url": f"https://raw.githubusercontent.com/{repo.full_name}/{sha}/{path}",
                "_links": {"self": self_url, "git": git_url, "html": html_url},
            })
        prefix = f"{path}/" if path else ""
        children: dict[str, str] = {}
        for name in tree:
            if name.startswith(prefix):
                head, _, rest = name.removeprefix(prefix).partition("/")
                children[head] = "dir" if rest else children.get(head, "file")
        if not children:
            raise ApiError(404, basic_error(404, "Not Found"))
        def item(name: str, kind: str) -> dict[str, Any]:
            where = prefix + name
            blob = blob_sha(tree[where]) if kind == "file" else hashlib.sha1(
                where.encode()).hexdigest()
            git = f"{self._api()}/repos/{repo.full_name}/git/" + (
                "blobs/" if kind == "file" else "trees/") + blob
            html = f"https://github.com/{repo.full_name}/" + (
                "blob/" if kind == "file" else "tree/") + f"{sha}/{where}"
            url = f"{api}/{urllib.parse.quote(where)}?ref={sha}"
            return {"type": kind, "name": name, "path": where, "sha": blob,
                    "size": len(tree[where].encode()) if kind == "file" else 0, "url": url,
                    "git_url": git, "html_url": html,
                    "download_url": f"https://raw.githubusercontent.com/{repo.full_name}/{sha}/"
                                    f"{where}" if kind == "file" else None,
                    "_links": {"self": url, "git": git, "html": html}}

        return self._json([item(name, kind) for name, kind in sorted(children.items())])

    async def _h_permission(self, call: _Call) -> web.Response:
        repo, login = call.repo, call.params["user"]
        if login not in self._users:
            raise _not_found()
        default = "admin" if login == repo.owner else "read"
        permission, role = PERMISSION_LEVELS[repo.permissions.get(login, default)]
        user = self.user_json(login)
        user["permissions"] = {
            "admin": permission == "admin", "maintain": role in ("admin", "maintain"),
            "push": permission in ("admin", "write"), "triage": permission != "none",
            "pull": permission != "none",
        }
        user["role_name"] = role
        return self._json({"permission": permission, "role_name": role, "user": user})

    # ------------------------------------------------------------------ handlers: reviews

    async def _h_list_reviews(self, call: _Call) -> web.Response:
        return self._paginate(call, [self._review_json(call.repo, call.pr, r)
                                     for r in call.pr.reviews])

    async def _h_create_review(self, call: _Call) -> web.Response:
        repo, pr = call.repo, call.pr
        body = call.body if isinstance(call.body, dict) else {}
        event = body.get("event")
        if event is not None and event not in REVIEW_EVENTS:
            raise ApiError(422, {
                "message": f"Invalid request.\n\nFor 'properties/event', {json.dumps(event)} is "
                           "not a member of enum.",
                "documentation_url": f"{DOCS}/pulls/reviews#create-a-review-for-a-pull-request",
                "status": "422",
            })
        state = REVIEW_EVENTS.get(event, "PENDING")
        commit_id = body.get("commit_id") or pr.head_sha
        if commit_id not in pr.commit_shas and commit_id != pr.head_sha:
            raise _validation_simple([f"No commit found for SHA: {commit_id}"])
        if state in ("COMMENTED", "CHANGES_REQUESTED") and not body.get("body"):
            raise _validation_simple(["Body can't be blank"])
        if state == "PENDING" and any(r.user == self.bot_login and r.state == "PENDING"
                                      for r in pr.reviews):
            raise _validation_simple(["User can only have one pending review per pull request"])
        files = self._pr_files(repo, pr, commit_id)
        targets, errors = [], []
        for spec in body.get("comments") or []:
            try:
                if not isinstance(spec, dict) or not spec.get("body"):
                    raise ValueError("Body can't be blank")
                targets.append((spec["body"], self._check_target(files, spec)))
            except ValueError as error:
                if str(error) not in errors:
                    errors.append(str(error))
        if errors:  # GitHub joins several into one string
            raise _validation_simple([to_sentence(errors)])
        review = self._new_review(pr, self.bot_login, body.get("body") or "", state, commit_id)
        for text, target in targets:
            self._new_comment(repo, pr, review, self.bot_login, text, target, commit_id)
        return self._json(self._review_json(repo, pr, review))

    async def _h_submit_review(self, call: _Call) -> web.Response:
        repo, pr = call.repo, call.pr
        review = next((r for r in pr.reviews if r.id == int(call.params["review_id"])), None)
        if review is None or review.user != self.bot_login:
            raise _not_found()
        body = call.body if isinstance(call.body, dict) else {}
        if review.state != "PENDING":
            raise _validation_simple(["Can not submit a non-pending review"])
        if body.get("event") not in REVIEW_EVENTS:
            raise _validation_failed("PullRequestReview", "event", "missing_field")
        review.state = REVIEW_EVENTS[body["event"]]
        review.body = body.get("body") or review.body
        review.submitted_at = self._iso()
        return self._json(self._review_json(repo, pr, review))

    async def _h_list_review_comments(self, call: _Call) -> web.Response:
        comments = [self._review_comment_json(call.repo, call.pr, c)
                    for c in self._visible_comments(call.pr)]
        since = call.request.query.get("since")
        if since:
            comments = [c for c in comments if c["updated_at"] >= since]
        if call.request.query.get("direction") == "desc":
            comments.reverse()
        return self._paginate(call, comments)

    async def _h_create_review_comment(self, call: _Call) -> web.Response:
        repo, pr = call.repo, call.pr
        body = call.body if isinstance(call.body, dict) else {}
        if not body.get("body"):
            raise _validation_failed("PullRequestReviewComment", "body", "missing_field")
        if body.get("in_reply_to") is not None:
            return await self._reply(call, int(body["in_reply_to"]), body["body"])
        commit_id = body.get("commit_id")
        if commit_id not in pr.commit_shas:
            raise _validation_failed("PullRequestReviewComment", "commit_id", "invalid")
        try:
            target = self._check_target(self._pr_files(repo, pr, commit_id), body)
        except ValueError as error:
            field_name = ("pull_request_review_thread.path" if str(error) == PATH_ERROR
                          else "pull_request_review_thread.line")
            raise _validation_failed("PullRequestReviewComment", field_name, "custom",
                                     "could not be resolved") from None
        review = self._new_review(pr, self.bot_login, "", "COMMENTED", commit_id)
        comment = self._new_comment(repo, pr, review, self.bot_login, body["body"], target,
                                    commit_id)
        return self._json(self._review_comment_json(repo, pr, comment), 201)

    async def _h_reply(self, call: _Call) -> web.Response:
        body = call.body if isinstance(call.body, dict) else {}
        return await self._reply(call, int(call.params["comment_id"]), body.get("body"))

    async def _reply(self, call: _Call, comment_id: int, text: str | None) -> web.Response:
        repo, pr = call.repo, call.pr
        parent = self._visible_comment(pr, comment_id)
        if parent is None or parent.reply_to is not None:
            raise _not_found()
        if not text:
            raise _validation_failed("PullRequestReviewComment", "body", "missing_field")
        review = self._new_review(pr, self.bot_login, "", "COMMENTED", pr.head_sha)
        comment = self._new_comment(repo, pr, review, self.bot_login, text, None, pr.head_sha,
                                    parent)
        return self._json(self._review_comment_json(repo, pr, comment), 201)

    def _find_review_comment(self, repo: _Repo, comment_id: int
                             ) -> tuple[_PullRequest, _Comment]:
        for pr in repo.prs.values():
            comment = self._visible_comment(pr, comment_id)
            if comment is not None:
                return pr, comment
        raise _not_found()

    async def _h_get_review_comment(self, call: _Call) -> web.Response:
        pr, comment = self._find_review_comment(call.repo, int(call.params["comment_id"]))
        return self._json(self._review_comment_json(call.repo, pr, comment))

    async def _h_edit_review_comment(self, call: _Call) -> web.Response:
        pr, comment = self._find_review_comment(call.repo, int(call.params["comment_id"]))
        body = call.body if isinstance(call.body, dict) else {}
        if not body.get("body"):
            raise _validation_failed("PullRequestReviewComment", "body", "missing_field")
        comment.body, comment.updated_at = body["body"], self._iso()
        return self._json(self._review_comment_json(call.repo, pr, comment))

    # ------------------------------------------------------------------ handlers: issue comments

    async def _h_list_issue_comments(self, call: _Call) -> web.Response:
        return self._paginate(call, [self._issue_comment_json(call.repo, call.pr, c)
                                     for c in call.pr.issue_comments])

    async def _h_create_issue_comment(self, call: _Call) -> web.Response:
        body = call.body if isinstance(call.body, dict) else {}
        if not isinstance(body.get("body"), str) or not body["body"]:
            raise _validation_failed("IssueComment", "body", "missing_field")
        comment = self._new_issue_comment(call.pr, self.bot_login, body["body"])
        return self._json(self._issue_comment_json(call.repo, call.pr, comment), 201)

    def _find_issue_comment(self, repo: _Repo, comment_id: int
                            ) -> tuple[_PullRequest, _IssueComment]:
        for pr in repo.prs.values():
            for comment in pr.issue_comments:
                if comment.id == comment_id:
                    return pr, comment
        raise _not_found()

    async def _h_get_issue_comment(self, call: _Call) -> web.Response:
        pr, comment = self._find_issue_comment(call.repo, int(call.params["comment_id"]))
        return self._json(self._issue_comment_json(call.repo, pr, comment))

    async def _h_react_issue_comment(self, call: _Call) -> web.Response:
        """The App reacts to a PR comment: 201 and the new reaction the first time, 200 and
        the reaction it made then when it had already."""
        _pr, comment = self._find_issue_comment(call.repo, int(call.params["comment_id"]))
        body = call.body if isinstance(call.body, dict) else {}
        content = body.get("content")
        if content not in REACTIONS:
            raise _validation_failed("Reaction", "content", "invalid")
        made = self.__dict__.setdefault("_reactions_made", {})
        key = (comment.id, content, self.bot_login)
        if key in made:
            return self._json(made[key], 200)
        comment.reactions.setdefault(content, set()).add(self.bot_login)
        ids = self.__dict__.setdefault("_reaction_ids", itertools.count(1))
        reaction_id = next(ids)
        made[key] = {"id": reaction_id, "node_id": _node_id("REA", reaction_id),
                     "user": self.user_json(self.bot_login), "content": content,
                     "created_at": self._iso()}
        return self._json(made[key], 201)

    async def _h_edit_issue_comment(self, call: _Call) -> web.Response:
        pr, comment = self._find_issue_comment(call.repo, int(call.params["comment_id"]))
        body = call.body if isinstance(call.body, dict) else {}
        if not isinstance(body.get("body"), str) or not body["body"]:
            raise _validation_failed("IssueComment", "body", "missing_field")
        comment.body, comment.updated_at = body["body"], self._iso()
        return self._json(self._issue_comment_json(call.repo, pr, comment))
