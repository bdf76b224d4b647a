"""The fake GitLab's REST API v4 over real HTTP: the calls the bot makes, as GitLab answers.

Paths are matched on the raw path, so a project may be named by id or by its URL-encoded path
(``group%2Fproject``), as on GitLab. Every answer carries ``RateLimit-*`` headers; past the
budget a call gets 429 with ``Retry-After``. Lists are paginated like GitLab's (``page``,
``per_page`` up to 100, ``X-Page``/``X-Total``/``X-Next-Page`` and an absolute ``Link``).
``fail_next`` scripts faults (5xx, 429 with ``Retry-After``) for the next matching calls; a
wrong or missing token is 401 ``{"message": "401 Unauthorized"}``.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlencode

from aiohttp import web

from .state import _MR, WEB, ApiError, FakeGitLabState, _Discussion, _Note, _now, _Project

__all__ = ["RestApi"]

_P = r"/api/v4/projects/(?P<pid>[^/]+)"
_MR_P = _P + r"/merge_requests/(?P<iid>\d+)"
ROUTES: list[tuple[str, str, str]] = [
    ("GET", r"/api/v4/user", "user"),
    ("GET", r"/api/v4/users", "users"),
    ("GET", _P, "project"),
    ("GET", _P + r"/merge_requests", "merge_requests"),
    ("GET", _MR_P, "merge_request"),
    ("GET", _MR_P + r"/versions", "versions"),
    ("GET", _MR_P + r"/versions/(?P<vid>\d+)", "version"),
    ("GET", _MR_P + r"/diffs", "diffs"),
    ("GET", _MR_P + r"/discussions", "discussions"),
    ("POST", _MR_P + r"/discussions", "create_discussion"),
    ("GET", _MR_P + r"/discussions/(?P<did>[0-9a-f]+)", "discussion"),
    ("PUT", _MR_P + r"/discussions/(?P<did>[0-9a-f]+)", "resolve"),
    ("POST", _MR_P + r"/discussions/(?P<did>[0-9a-f]+)/notes", "reply"),
    ("POST", _MR_P + r"/notes", "create_note"),
    ("PUT", _MR_P + r"/notes/(?P<nid>\d+)", "edit_note"),
    ("GET", _P + r"/repository/compare", "compare"),
    ("GET", _P + r"/repository/merge_base", "merge_base"),
    ("GET", _P + r"/repository/files/(?P<path>[^/]+)/raw", "raw"),
    ("GET", _P + r"/members/all/(?P<uid>\d+)", "member"),
    ("POST", _P + r"/statuses/(?P<sha>[0-9a-f]{7,64})", "set_status"),
    ("GET", _P + r"/repository/commits/(?P<sha>[0-9a-f]{7,64})/statuses", "statuses"),
]
_COMPILED = [(m, re.compile(p + r"/?$"), n) for m, p, n in ROUTES]


@dataclass
class _Fault:
    method: str
    path: re.Pattern
    status: int
    body: Any
    headers: dict[str, str]
    times: int


class RestApi(FakeGitLabState):
    """The HTTP side of the fake; ``token`` is the only access token it takes."""

    def __init__(self, token: str = "glpat-fake", *, rate_limit: int = 100_000,
                 bot_username: str = "project_1_bot_roundwise"):
        super().__init__(bot_username)
        self.token = token
        self.limit, self.remaining, self.reset_at = rate_limit, rate_limit, time.time() + 60
        self.faults: list[_Fault] = []
        self.requests: list[tuple[str, str, int]] = []  # (method, path, status)
        self.counts: dict[int, int] = {}  # project id -> requests

    # -- scripting ---------------------------------------------------------------------------

    def fail_next(self, method: str, path_regex: str, status: int, body: Any = None, *,
                  headers: dict[str, str] | None = None, times: int = 1) -> None:
        self.faults.append(_Fault(method, re.compile(path_regex), status,
                                  body if body is not None else {"message": f"{status} fault"},
                                  headers or {}, times))

    def set_rate_limit(self, remaining: int, reset_in: float = 60.0) -> None:
        self.remaining, self.reset_at = remaining, time.time() + reset_in

    @property
    def web(self) -> str:
        """The instance's web address in links: where it serves (as GitLab's own links are
        on the host of its API), ``WEB`` before it is started."""
        return getattr(self, "url", "") or WEB

    def usage(self, project_id: int) -> dict[str, int]:
        return {"requests": self.counts.get(project_id, 0)}

    # -- serving -----------------------------------------------------------------------------

    async def handle(self, request: web.Request) -> web.StreamResponse:
        path = request.raw_path.split("?", 1)[0]
        try:
            response = await self._handle(request, path)
        except ApiError as exc:
            response = self._json({"message": exc.message}, exc.status, exc.headers)
        self.requests.append((request.method, path, response.status))
        return response

    def _limit_headers(self) -> dict[str, str]:
        return {"RateLimit-Limit": str(self.limit),
                "RateLimit-Remaining": str(max(self.remaining, 0)),
                "RateLimit-Reset": str(int(self.reset_at)),
                "RateLimit-Observed": str(self.limit - max(self.remaining, 0))}

    async def _handle(self, request: web.Request, path: str) -> web.StreamResponse:
        auth = request.headers.get("Authorization", "")
        token = auth.removeprefix("Bearer ") if auth.startswith("Bearer ") else \
            request.headers.get("PRIVATE-TOKEN")
        if token != self.token:
            raise ApiError(401, "401 Unauthorized")
        match = next(((name, m) for method, pattern, name in _COMPILED
                      if method == request.method and (m := pattern.match(path))), None)
        if match is None:
            raise ApiError(404, "404 Not Found")
        name, found = match
        params = {k: unquote(v) for k, v in found.groupdict().items()}
        if "pid" in params:
            project = self.project(params["pid"])
            self.counts[project.id] = self.counts.get(project.id, 0) + 1
        for fault in self.faults:
            if fault.times > 0 and fault.method == request.method and fault.path.search(path):
                fault.times -= 1
                return self._json(fault.body, fault.status, fault.headers)
        if time.time() >= self.reset_at:
            self.remaining, self.reset_at = self.limit, time.time() + 60
        if self.remaining <= 0:
            wait = max(int(self.reset_at - time.time()) + 1, 1)
            raise ApiError(429, "429 Too Many Requests",
                           {"Retry-After": str(wait), **self._limit_headers()})
        self.remaining -= 1
        body = await request.read()
        data = json.loads(body) if body else {}
        return await getattr(self, f"_h_{name}")(request, params, data)

    def _json(self, data: Any, status: int = 200, headers: dict[str, str] | None = None
              ) -> web.Response:
        return web.Response(status=status, body=json.dumps(data).encode(),
                            content_type="application/json",
                            headers={**self._limit_headers(), **(headers or {})})

    def _page(self, request: web.Request, items: list) -> web.Response:
        try:
            per_page = min(max(int(request.query.get("per_page", "20")), 1), 100)
            page = max(int(request.query.get("page", "1")), 1)
        except ValueError:
            raise ApiError(400, "400 Bad request - page is invalid") from None
        total_pages = max((len(items) + per_page - 1) // per_page, 1)
        chunk = items[(page - 1) * per_page: page * per_page]

        def link(number: int) -> str:
            query = {**request.query, "page": str(number), "per_page": str(per_page)}
            return f"{request.url.with_query(None)}?{urlencode(query)}"

        links = [f'<{link(page + 1)}>; rel="next"'] if page < total_pages else []
        if page > 1:
            links.append(f'<{link(page - 1)}>; rel="prev"')
        links += [f'<{link(1)}>; rel="first"', f'<{link(total_pages)}>; rel="last"']
        headers = {"X-Page": str(page), "X-Per-Page": str(per_page),
                   "X-Total": str(len(items)), "X-Total-Pages": str(total_pages),
                   "X-Next-Page": str(page + 1) if page < total_pages else "",
                   "X-Prev-Page": str(page - 1) if page > 1 else "", "Link": ", ".join(links)}
        return self._json(chunk, headers=headers)

    # -- JSON shapes ---------------------------------------------------------------------------

    def _user(self, username: str | None) -> dict | None:
        if username is None:
            return None
        return {"id": self.user_id(username), "username": username, "name": username,
                "state": "active", "locked": False,
                "avatar_url": f"{self.web}/uploads/-/system/user/avatar/{self.user_id(username)}/a.png",
                "web_url": f"{self.web}/{username}", "bot": username == self.bot_username}

    def _note_json(self, mr: _MR, note: _Note) -> dict:
        out = {"id": note.id, "type": note.type, "body": note.body, "attachment": None,
               "author": self._user(note.author), "created_at": note.created_at,
               "updated_at": note.updated_at or note.created_at, "system": note.system,
               "noteable_id": mr.id, "noteable_type": "MergeRequest", "noteable_iid": mr.iid,
               "project_id": self._project_of(mr).id, "resolvable": note.resolvable,
               "confidential": False, "internal": False, "imported": False,
               "imported_from": "none"}
        if note.resolvable:
            out["resolved"] = note.resolved
            out["resolved_by"] = self._user(note.resolved_by)
            out["resolved_at"] = note.resolved_at
        if note.type == "DiffNote":
            out["position"] = note.position
            out["commit_id"] = (note.original_position or note.position or {}).get("head_sha")
        return out

    def _project_of(self, mr: _MR) -> _Project:
        return next(p for p in self.projects.values() if p.mrs.get(mr.iid) is mr)

    def _discussion_json(self, mr: _MR, d: _Discussion) -> dict:
        return {"id": d.id, "individual_note": d.individual_note,
                "notes": [self._note_json(mr, n) for n in d.notes]}

    def _mr_json(self, project: _Project, mr: _MR) -> dict:
        start = mr.versions[-1].start if mr.versions else mr.base_sha
        return {"id": mr.id, "iid": mr.iid, "project_id": project.id, "title": mr.title,
                "description": mr.description, "state": mr.state,
                "created_at": mr.created_at, "updated_at": mr.updated_at, "merged_by": None,
                "merge_user": None, "merged_at": None, "closed_by": None, "closed_at": None,
                "target_branch": mr.target_branch, "source_branch": mr.source_branch,
                "user_notes_count": sum(len(d.notes) for d in mr.discussions),
                "upvotes": 0, "downvotes": 0, "author": self._user(mr.author),
                "assignees": [], "assignee": None, "reviewers": [],
                "source_project_id": project.id, "target_project_id": project.id,
                "labels": [], "draft": mr.draft, "work_in_progress": mr.draft,
                "milestone": None, "merge_when_pipeline_succeeds": False,
                "merge_status": "can_be_merged", "detailed_merge_status": "mergeable",
                "sha": mr.head_sha, "merge_commit_sha": None, "squash_commit_sha": None,
                "discussion_locked": None, "should_remove_source_branch": None,
                "force_remove_source_branch": False, "prepared_at": mr.created_at,
                "reference": f"!{mr.iid}",
                "references": {"short": f"!{mr.iid}", "relative": f"!{mr.iid}",
                               "full": f"{project.path}!{mr.iid}"},
                "web_url": f"{self.web}/{project.path}/-/merge_requests/{mr.iid}",
                "time_stats": {"time_estimate": 0, "total_time_spent": 0,
                               "human_time_estimate": None, "human_total_time_spent": None},
                "squash": False, "squash_on_merge": False, "task_completion_status": {
                    "count": 0, "completed_count": 0}, "has_conflicts": False,
                "blocking_discussions_resolved": all(
                    n.resolved for d in mr.discussions for n in d.notes if n.resolvable),
                "diff_refs": {"base_sha": mr.base_sha, "head_sha": mr.head_sha,
                              "start_sha": start}}

    def _project_json(self, project: _Project) -> dict:
        namespace, _, name = project.path.rpartition("/")
        return {"id": project.id, "description": None, "name": name,
                "name_with_namespace": f"{namespace} / {name}" if namespace else name,
                "path": name, "path_with_namespace": project.path,
                "created_at": "2024-01-01T00:00:00.000Z", "default_branch": project.default_branch,
                "tag_list": [], "topics": [],
                "ssh_url_to_repo": f"git@gitlab.example:{project.path}.git",
                "http_url_to_repo": f"{self.web}/{project.path}.git",
                "web_url": f"{self.web}/{project.path}", "readme_url": None, "avatar_url": None,
                "forks_count": 0, "star_count": 0, "last_activity_at": _now(),
                "visibility": "private",
                "namespace": {"id": 100 + len(namespace), "name": namespace.rsplit("/", 1)[-1],
                              "path": namespace.rsplit("/", 1)[-1], "kind": "group",
                              "full_path": namespace, "parent_id": None, "avatar_url": None,
                              "web_url": f"{self.web}/groups/{namespace}"}}

    def _commit_json(self, project, sha: str) -> dict:
        """A commit as GitLab's commits and compare APIs show it."""
        commit = project.commits.get(sha)
        message = commit.message if commit else ""
        author = commit.author if commit else ""
        when = commit.created_at if commit else ""
        email = f"{author}@example.com"
        return {"id": sha, "short_id": sha[:8], "created_at": when,
                "parent_ids": list(project.parents.get(sha) or []),
                "title": message.split("\n", 1)[0], "message": message,
                "author_name": author, "author_email": email, "authored_date": when,
                "committer_name": author, "committer_email": email, "committed_date": when,
                "trailers": {}, "extended_trailers": {},
                "web_url": f"{self.web}/{project.path}/-/commit/{sha}"}

    @staticmethod
    def _entry(d) -> dict:
        return {"old_path": d.path, "new_path": d.path, "a_mode": "0" if d.old is None
                else "100644", "b_mode": "0" if d.new is None else "100644",
                "new_file": d.old is None, "renamed_file": False, "deleted_file": d.new is None,
                "generated_file": False, "collapsed": False, "too_large": False,
                "diff": "".join(h.render() for h in d.hunks)}

    @staticmethod
    def _version_json(mr: _MR, v) -> dict:
        return {"id": v.id, "head_commit_sha": v.head, "base_commit_sha": v.base,
                "start_commit_sha": v.start, "created_at": v.created_at,
                "merge_request_id": mr.id, "state": "collected", "real_size": "1"}

    def _mr_of(self, params: dict) -> tuple[_Project, _MR]:
        project = self.project(params["pid"])
        return project, self.mr(project, int(params["iid"]))

    # -- handlers ------------------------------------------------------------------------------

    async def _h_user(self, request, params, data):
        return self._json(self._user(self.bot_username))

    async def _h_users(self, request, params, data):
        name = request.query.get("username")
        return self._json([self._user(name)] if name in self.users else [])

    async def _h_project(self, request, params, data):
        return self._json(self._project_json(self.project(params["pid"])))

    async def _h_merge_requests(self, request, params, data):
        project = self.project(params["pid"])
        state, branch = request.query.get("state"), request.query.get("source_branch")
        found = [self._mr_json(project, mr) for mr in project.mrs.values()
                 if (state in (None, "all") or mr.state == state)
                 and (branch is None or mr.source_branch == branch)]
        return self._page(request, found)

    async def _h_merge_request(self, request, params, data):
        project, mr = self._mr_of(params)
        return self._json(self._mr_json(project, mr))

    async def _h_versions(self, request, params, data):
        _, mr = self._mr_of(params)
        return self._page(request, [self._version_json(mr, v) for v in reversed(mr.versions)])

    async def _h_version(self, request, params, data):
        project, mr = self._mr_of(params)
        version = next((v for v in mr.versions if v.id == int(params["vid"])), None)
        if version is None:
            raise ApiError(404, "404 Not found")
        return self._json({**self._version_json(mr, version), "diffs": [
            self._entry(d) for d in self.diff(project, version.base, version.head)]})

    async def _h_diffs(self, request, params, data):
        project, mr = self._mr_of(params)
        return self._page(request, [self._entry(d) for d in
                                    self.diff(project, mr.base_sha, mr.head_sha)])

    async def _h_discussions(self, request, params, data):
        _, mr = self._mr_of(params)
        return self._page(request, [self._discussion_json(mr, d) for d in mr.discussions])

    async def _h_discussion(self, request, params, data):
        _, mr = self._mr_of(params)
        return self._json(self._discussion_json(mr, self.discussion(mr, params["did"])))

    async def _h_create_discussion(self, request, params, data):
        project, mr = self._mr_of(params)
        body = data.get("body")
        if not isinstance(body, str):
            raise ApiError(400, "400 Bad request - body is missing")
        discussion = self.add_discussion(project, mr, self.bot_username, body,
                                         data.get("position"))
        return self._json(self._discussion_json(mr, discussion), 201)

    async def _h_reply(self, request, params, data):
        _, mr = self._mr_of(params)
        _, note = self.add_note(mr, self.bot_username, data.get("body") or "", params["did"])
        return self._json(self._note_json(mr, note), 201)

    async def _h_resolve(self, request, params, data):
        _, mr = self._mr_of(params)
        value = request.query.get("resolved", str(data.get("resolved", "")))
        if value not in ("true", "false", "True", "False"):
            raise ApiError(400, "400 Bad request - resolved is missing")
        discussion = self.resolve(mr, params["did"], value.lower() == "true", self.bot_username)
        return self._json(self._discussion_json(mr, discussion))

    async def _h_create_note(self, request, params, data):
        _, mr = self._mr_of(params)
        _, note = self.add_note(mr, self.bot_username, data.get("body") or "")
        return self._json(self._note_json(mr, note), 201)

    async def _h_edit_note(self, request, params, data):
        _, mr = self._mr_of(params)
        note = next((n for d in mr.discussions for n in d.notes if n.id == int(params["nid"])),
                    None)
        if note is None:
            raise ApiError(404, "404 Note Not Found")
        if note.author != self.bot_username:
            raise ApiError(403, "403 Forbidden")
        note.body = data.get("body") or note.body
        note.updated_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        return self._json(self._note_json(mr, note))

    async def _h_compare(self, request, params, data):
        project = self.project(params["pid"])
        base = self.resolve_ref(project, request.query.get("from", ""))
        head = self.resolve_ref(project, request.query.get("to", ""))
        if base is None or head is None:
            raise ApiError(404, "404 Ref Not Found")
        start = base if request.query.get("straight") == "true" else \
            self.merge_base(project, base, head) or base
        chain = self.ancestors(project, head)
        commits = chain[: chain.index(start)] if start in chain else chain
        return self._json({"commit": self._commit_json(project, head),
                           "commits": [self._commit_json(project, c) for c in reversed(commits)],
                           "diffs": [self._entry(d) for d in self.diff(project, start, head)],
                           "compare_timeout": False, "compare_same_ref": base == head})

    async def _h_merge_base(self, request, params, data):
        project = self.project(params["pid"])
        refs = request.query.getall("refs[]", [])
        shas = [self.resolve_ref(project, r) for r in refs]
        if len(shas) < 2 or None in shas:
            raise ApiError(404 if len(shas) >= 2 else 400, "404 Commit Not Found"
                           if len(shas) >= 2 else "400 Bad request - refs needs two commits")
        found = self.merge_base(project, shas[0], shas[1])
        if found is None:
            raise ApiError(404, "404 Merge Base Not Found")
        return self._json({"id": found})

    async def _h_raw(self, request, params, data):
        project = self.project(params["pid"])
        ref = request.query.get("ref")
        if not ref:
            raise ApiError(400, "400 Bad request - ref is missing")
        sha = self.resolve_ref(project, ref)
        text = project.trees.get(sha, {}).get(params["path"]) if sha else None
        if text is None:
            raise ApiError(404, "404 File Not Found")
        return web.Response(body=text.encode(), content_type="text/plain", charset="utf-8",
                            headers=self._limit_headers())

    async def _h_member(self, request, params, data):
        project = self.project(params["pid"])
        name = next((u for u, i in self.users.items() if i == int(params["uid"])), None)
        if name is None or name not in project.members:
            raise ApiError(404, "404 Not found")
        return self._json({**self._user(name), "access_level": project.members[name],
                           "created_at": "2024-01-01T00:00:00.000Z", "expires_at": None,
                           "membership_state": "active"})

    async def _h_set_status(self, request, params, data):
        project = self.project(params["pid"])
        state = data.get("state")
        if not isinstance(state, str):
            raise ApiError(400, "400 Bad request - state is missing")
        status = self.set_status(project, params["sha"], data.get("name") or "default", state,
                                 self.bot_username, ref=data.get("ref"),
                                 description=data.get("description"),
                                 target_url=data.get("target_url"))
        return self._json(self._status_json(status), 201)

    async def _h_statuses(self, request, params, data):
        project = self.project(params["pid"])
        history = project.statuses.get(params["sha"], [])
        if request.query.get("all") != "true":
            latest: dict[str, dict] = {}
            for status in history:
                latest[status["name"]] = status
            history = list(latest.values())
        return self._page(request, [self._status_json(s) for s in reversed(history)])

    def _status_json(self, status: dict) -> dict:
        return {**status, "author": self._user(status["author"]["username"]),
                "coverage": None, "pipeline_id": None}
