"""The fake GitHub's state: the records it keeps in memory, set up and acted on by plain
methods, and rendered as the JSON GitHub's REST API returns.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import itertools
import json
import re
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any, NamedTuple

from aiohttp import web
from cryptography.hazmat.primitives import serialization

from ..tasks.diffs import FileDiff, apply_files, diff_trees, map_line

DOCS = "https://docs.github.com/rest"
JSON_TYPE = "application/json; charset=utf-8"
DIFF_TYPE = "application/vnd.github.v3.diff; charset=utf-8"
RAW_TYPE = "application/vnd.github.v3.raw; charset=utf-8"
MAX_JWT_LIFETIME = 600
MAX_DIFF_FILES = 300
MAX_DIFF_LINES = 20000
MAX_LISTED_FILES = 3000  # the list-files API's most, whatever the pull request changes
PERMISSION_LEVELS = {
    "admin": ("admin", "admin"),
    "maintain": ("write", "maintain"),
    "write": ("write", "write"),
    "triage": ("read", "triage"),
    "read": ("read", "read"),
    "none": ("none", "none"),
}
#: the reaction contents GitHub counts on a comment (its ``reactions`` rollup)
REACTIONS = ("+1", "-1", "laugh", "hooray", "confused", "heart", "rocket", "eyes")
REVIEW_EVENTS = {
    "APPROVE": "APPROVED",
    "REQUEST_CHANGES": "CHANGES_REQUESTED",
    "COMMENT": "COMMENTED",
}
LINE_ERROR = "Line could not be resolved"
PATH_ERROR = "Path could not be resolved"
START_LINE_ERROR = (
    "Pull request review thread start line must be part of the same hunk as the line."
)
POSITION_ERROR = "Position could not be resolved"
START_ORDER_ERROR = "pull_request_review_thread.start_line must precede the end line."
MAX_API_BLOB = 1024 * 1024  # larger files: contents JSON has no content (``encoding: none``)


def to_sentence(messages: list[str]) -> str:
    """Several validation messages as GitHub joins them into one string ("a and b"; "a, b,
    and c"): the wording of the join is Rails' ``to_sentence`` (unconfirmed)."""
    if len(messages) <= 2:
        return " and ".join(messages)
    return ", ".join(messages[:-1]) + ", and " + messages[-1]



class RecordedRequest(NamedTuple):
    """One request the fake received (no headers, so never a token)."""

    method: str
    path: str
    query: dict[str, str]
    body: Any


@dataclass
class _Fault:
    method: str
    pattern: re.Pattern[str]
    status: int
    body: Any
    headers: dict[str, str]
    times: int
    lose: str | None = None  # "502" or "timeout": apply the call, then lose its response
    delay: float = 0.0  # seconds to wait before answering (or before the lost response)
    until: float | None = None  # answer every matching call until this epoch (times ignored)


@dataclass
class _Token:
    installation_id: int
    expires_at: float
    repositories: set[str] | None


@dataclass
class _Bucket:
    limit: int
    used: int = 0
    reset: int = 0


@dataclass
class _Usage:
    """What one credential (an installation, the App's JWT, no credential) asked of the fake."""

    requests: int = 0  # every request answered
    not_modified: int = 0  # 304s to conditional requests (free, as on GitHub)
    charged: int = 0  # requests counted against a primary rate limit
    app_jwt: int = 0  # token requests for this installation (charged to the App's own bucket)


@dataclass
class _Commit:
    sha: str
    message: str
    parents: list[str]
    author: str
    date: str


@dataclass
class _Review:
    id: int
    node_id: str
    user: str
    body: str
    state: str
    commit_id: str
    submitted_at: str | None


@dataclass
class _Comment:
    id: int
    node_id: str
    review_id: int
    user: str
    body: str
    path: str
    side: str
    line: int
    start_line: int | None
    start_side: str | None
    commit_id: str
    position: int | None
    diff_hunk: str
    created_at: str
    updated_at: str
    thread_id: str
    reply_to: int | None = None
    reactions: dict[str, set[str]] = field(default_factory=dict)  # content -> users


@dataclass
class _Thread:
    node_id: str
    comment_ids: list[int]
    resolved_by: str | None = None


@dataclass
class _IssueComment:
    id: int
    node_id: str
    user: str
    body: str
    created_at: str
    updated_at: str
    reactions: dict[str, set[str]] = field(default_factory=dict)  # content -> users


@dataclass
class _Anchor:
    """Where a review thread stands on the current head (line None when outdated)."""

    line: int | None
    start_line: int | None
    commit_id: str
    position: int | None


@dataclass
class _PullRequest:
    number: int
    title: str
    body: str | None
    author: str
    base_ref: str
    base_sha: str
    head_ref: str
    head_sha: str
    draft: bool
    created_at: str
    updated_at: str
    state: str = "open"
    merged: bool = False
    closed_at: str | None = None
    merged_at: str | None = None
    merge_commit_sha: str | None = None
    commit_shas: list[str] = field(default_factory=list)
    heads: list[str] = field(default_factory=list)
    reviews: list[_Review] = field(default_factory=list)
    comments: list[_Comment] = field(default_factory=list)
    threads: list[_Thread] = field(default_factory=list)
    issue_comments: list[_IssueComment] = field(default_factory=list)
    diff_too_large: str | None = None
    omitted_patches: set[str] = field(default_factory=set)


@dataclass
class _Repo:
    id: int
    owner: str
    name: str
    installation_id: int
    default_branch: str
    branches: dict[str, str] = field(default_factory=dict)
    commits: dict[str, _Commit] = field(default_factory=dict)
    trees: dict[str, dict[str, str]] = field(default_factory=dict)
    prs: dict[int, _PullRequest] = field(default_factory=dict)
    permissions: dict[str, str] = field(default_factory=dict)
    created_at: str = "2024-01-01T00:00:00Z"
    pushed_at: str = "2024-01-01T00:00:00Z"

    @property
    def full_name(self) -> str:
        return f"{self.owner}/{self.name}"


class ApiError(Exception):
    """An HTTP error answer: status, JSON body and extra headers."""

    def __init__(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        super().__init__(status, body)
        self.status = status
        self.body = body
        self.headers = headers or {}


def basic_error(status: int, message: str, docs: str = DOCS) -> dict[str, Any]:
    """A BasicError body, with ``status`` as a string like newer GitHub responses."""
    return {"message": message, "documentation_url": docs, "status": str(status)}


def _validation_simple(errors: list[str]) -> ApiError:
    return ApiError(
        422,
        {
            "message": "Unprocessable Entity",
            "errors": errors,
            "documentation_url": f"{DOCS}/pulls/reviews#create-a-review-for-a-pull-request",
            "status": "422",
        },
    )


def _validation_failed(resource: str, field_name: str, code: str, message: str | None = None
                       ) -> ApiError:
    error = {"resource": resource, "code": code, "field": field_name}
    if message:
        error["message"] = message
    return ApiError(
        422,
        {"message": "Validation Failed", "errors": [error], "documentation_url": DOCS,
         "status": "422"},
    )


def _not_found() -> ApiError:
    return ApiError(404, basic_error(404, "Not Found"))


def _node_id(prefix: str, number: int) -> str:
    packed = base64.urlsafe_b64encode(number.to_bytes(8, "big")).decode().rstrip("=")
    return f"{prefix}_kwDO{packed}"


class FakeState:
    """The fake's memory: installations, repositories, pull requests, reviews, comments and
    threads; the setup and human-action methods tests call; the JSON GitHub would return."""

    def __init__(
        self,
        app_id: int | str,
        public_key_pem: str | bytes,
        *,
        app_slug: str = "roundwise",
        client_id: str | None = None,
        token_ttl: float = 3600,
        rate_limit: int = 5000,
        repository_id_links: bool = True,
        clock: Callable[[], float] = time.time,
    ) -> None:
        pem = public_key_pem.encode() if isinstance(public_key_pem, str) else public_key_pem
        self._public_key = serialization.load_pem_public_key(pem)
        self.app_id = app_id
        self.app_slug = app_slug
        self.client_id = client_id
        self.token_ttl = token_ttl
        self.repository_id_links = repository_id_links
        self._clock = clock
        self.url = ""
        self.requests: list[RecordedRequest] = []
        self.token_issuances = 0
        self.lost_responses = 0  # answers thrown away by lose_response_next
        self._runner: web.AppRunner | None = None
        self._installations: dict[int, dict[str, Any]] = {}
        self._repos: dict[str, _Repo] = {}
        self._users: dict[str, dict[str, Any]] = {}
        self._tokens: dict[str, _Token] = {}
        self._faults: list[_Fault] = []
        self._diff_cache: dict[tuple[int, str, str], list[FileDiff]] = {}
        # one primary budget per credential and resource, as GitHub keeps them: each
        # installation's, the App's own (JWT calls) and the unauthenticated one (``_who``)
        self.rate_limit = rate_limit
        self._buckets: dict[tuple[str, str], _Bucket] = {}
        self._usage: dict[str, _Usage] = {}
        self._ids = itertools.count(1)
        self._review_ids = itertools.count(1_700_000_001)
        self._comment_ids = itertools.count(1_500_000_001)
        self._issue_comment_ids = itertools.count(1_900_000_001)
        self._user(self.bot_login, "Bot")

    # ------------------------------------------------------------------ helpers

    @property
    def bot_login(self) -> str:
        """The App's own login as REST shows it, e.g. ``roundwise[bot]``."""
        return f"{self.app_slug}[bot]"

    def _now(self) -> float:
        return self._clock()

    def _iso(self, epoch: float | None = None) -> str:
        moment = datetime.datetime.fromtimestamp(
            self._now() if epoch is None else epoch, datetime.UTC
        )
        return moment.strftime("%Y-%m-%dT%H:%M:%SZ")

    def _api(self) -> str:
        return self.url or "http://127.0.0.1"

    def _new_sha(self, *seed: object) -> str:
        return hashlib.sha1(repr((seed, next(self._ids))).encode()).hexdigest()

    def _user(self, login: str, kind: str = "User") -> dict[str, Any]:
        if login not in self._users:
            number = 10_000 + next(self._ids)
            self._users[login] = {"id": number, "type": kind}
        return self._users[login]

    def _repo(self, full_name: str) -> _Repo:
        repo = self._repos.get(full_name.lower())
        if repo is None:
            raise KeyError(f"unknown repository {full_name!r}")
        return repo

    def _pr(self, full_name: str, number: int) -> tuple[_Repo, _PullRequest]:
        repo = self._repo(full_name)
        if number not in repo.prs:
            raise KeyError(f"unknown pull request {full_name}#{number}")
        return repo, repo.prs[number]

    # ------------------------------------------------------------------ setup

    def add_installation(self, installation_id: int, account: str, *,
                         account_type: str = "User") -> dict[str, Any]:
        """Install the App on ``account`` (a user or, with account_type, an Organization)."""
        self._user(account, account_type)
        self._installations[int(installation_id)] = {"account": account}
        return self.installation_json(installation_id)

    def add_repo(self, full_name: str, installation_id: int, default_branch: str = "main",
                 files: dict[str, str] | None = None) -> dict[str, Any]:
        """Add a repository of an installation, with ``files`` on its default branch."""
        if int(installation_id) not in self._installations:
            raise KeyError(f"unknown installation {installation_id}")
        owner, name = full_name.split("/")
        self._user(owner)
        repo = _Repo(700_000_000 + next(self._ids), owner, name, int(installation_id),
                     default_branch)
        repo.created_at = repo.pushed_at = self._iso()
        self._repos[full_name.lower()] = repo
        sha = self._new_sha(full_name, "initial")
        self._add_commit(repo, sha, "Initial commit", [], owner, dict(files or {}))
        repo.branches[default_branch] = sha
        return self.repo_json(full_name)

    def _add_commit(self, repo: _Repo, sha: str, message: str, parents: list[str], author: str,
                    tree: dict[str, str]) -> None:
        if sha in repo.trees and repo.trees[sha] != tree:
            raise ValueError(f"sha {sha} already names a different tree in {repo.full_name}")
        repo.trees[sha] = tree
        repo.commits.setdefault(sha, _Commit(sha, message, parents, author, self._iso()))

    def add_pr(self, repo: str, number: int, title: str, body: str | None, author: str,
               base_ref: str, base_sha: str, base_files: dict[str, str], draft: bool = False,
               *, head_ref: str | None = None) -> dict[str, Any]:
        """Open PR ``number`` on ``base_ref`` at ``base_sha``.

        The base tree is the branch's current files overlaid with ``base_files``, and the branch
        moves to ``base_sha``. The head equals the base (an empty diff) until ``push``.
        """
        the_repo = self._repo(repo)
        self._user(author)
        tip = the_repo.branches.get(base_ref)
        tree = {**(the_repo.trees[tip] if tip else {}), **base_files}
        parents = [tip] if tip and tip != base_sha else []
        self._add_commit(the_repo, base_sha, f"Base of #{number}", parents, author, tree)
        the_repo.branches[base_ref] = base_sha
        now = self._iso()
        head_ref = head_ref or f"{author}/pr-{number}"
        the_repo.prs[number] = _PullRequest(
            number, title, body, author, base_ref, base_sha, head_ref, base_sha, draft, now, now
        )
        the_repo.branches[head_ref] = base_sha
        return self.pr_json(repo, number)

    def push(self, repo: str, number: int, head_sha: str, files: dict[str, str | None],
             commits: list[str | dict[str, Any]] | None = None, *, force: bool = False
             ) -> dict[str, Any]:
        """Move the PR head to a new snapshot named ``head_sha``.

        ``files`` hold the full head text of every path that differs from the base (None:
        deleted); absent paths are as on the base. ``commits`` are messages or dicts with
        ``message`` and optionally ``sha``/``author``; the last one is ``head_sha`` and earlier
        ones get made-up shas and the same tree. ``force`` replaces the PR's commits instead of
        adding to them (a force push).
        """
        the_repo, pr = self._pr(repo, number)
        if head_sha in the_repo.commits:
            raise ValueError(f"{head_sha} was already pushed to {repo}")
        tree = apply_files(the_repo.trees[pr.base_sha], files)
        specs = [c if isinstance(c, dict) else {"message": c} for c in commits or []]
        if not specs:
            specs = [{"message": f"Update {len(files)} file(s)"}]
        if specs[-1].get("sha", head_sha) != head_sha:
            raise ValueError("the last commit's sha must be head_sha")
        parent = pr.base_sha if force else pr.head_sha
        new_shas = []
        for index, spec in enumerate(specs):
            last = index == len(specs) - 1
            sha = head_sha if last else spec.get("sha") or self._new_sha(repo, number, index)
            self._add_commit(the_repo, sha, spec.get("message", "Update"), [parent],
                             spec.get("author", pr.author), tree)
            new_shas.append(sha)
            parent = sha
        pr.commit_shas = new_shas if force else pr.commit_shas + new_shas
        pr.head_sha = head_sha
        pr.heads.append(head_sha)
        pr.updated_at = the_repo.pushed_at = self._iso()
        the_repo.branches[pr.head_ref] = head_sha
        return self.pr_json(repo, number)

    def advance_base(self, repo: str, number: int, sha: str, files: dict[str, str | None],
                     message: str = "Upstream change") -> None:
        """Someone merges ``files`` into the PR's base branch as commit ``sha`` and the PR is
        retargeted onto it, as before a rebase: the next ``push(..., force=True)`` builds its
        head on this new base (the PR's commits are replaced, the old head is no ancestor)."""
        the_repo, pr = self._pr(repo, number)
        tree = apply_files(the_repo.trees[pr.base_sha], files)
        self._add_commit(the_repo, sha, message, [pr.base_sha], pr.author, tree)
        the_repo.branches[pr.base_ref] = sha
        pr.base_sha = sha

    def set_permission(self, repo: str, user: str, permission: str) -> None:
        """Grant ``user`` a role: admin, maintain, write, triage, read or none."""
        if permission not in PERMISSION_LEVELS:
            raise ValueError(f"unknown permission {permission!r}")
        self._user(user)
        self._repo(repo).permissions[user] = permission

    def close_pr(self, repo: str, number: int, merged: bool = True) -> dict[str, Any]:
        """Close the PR, merged or not."""
        _, pr = self._pr(repo, number)
        now = self._iso()
        pr.state, pr.merged, pr.closed_at, pr.updated_at = "closed", merged, now, now
        if merged:
            pr.merged_at = now
            pr.merge_commit_sha = self._new_sha(repo, number, "merge")
        return self.pr_json(repo, number)

    def reopen_pr(self, repo: str, number: int) -> dict[str, Any]:
        """Reopen a closed, unmerged PR."""
        _, pr = self._pr(repo, number)
        pr.state, pr.closed_at, pr.updated_at = "open", None, self._iso()
        return self.pr_json(repo, number)

    def set_draft(self, repo: str, number: int, draft: bool) -> dict[str, Any]:
        """Mark the PR draft or ready for review."""
        _, pr = self._pr(repo, number)
        pr.draft = draft
        return self.pr_json(repo, number)

    def set_diff_too_large(self, repo: str, number: int, reason: str | None = "files") -> None:
        """Make the PR's diff media type answer 406 (reason "files" or "lines"; None clears)."""
        self._pr(repo, number)[1].diff_too_large = reason

    def omit_patch(self, repo: str, number: int, *paths: str) -> None:
        """Leave ``patch`` out of these paths' DiffEntry, as GitHub does for huge files."""
        self._pr(repo, number)[1].omitted_patches.update(paths)

    def expire_tokens(self) -> None:
        """Expire every installation token issued so far."""
        for token in self._tokens.values():
            token.expires_at = min(token.expires_at, self._now())

    def set_rate_limit(self, remaining: int, *, resource: str = "core", reset_in: int = 3600,
                       installation: int | None = None, app: bool = False) -> None:
        """Set the primary budget left of one installation (``installation``), of every
        installation (None), or of the App's JWT calls (``app``); at 0 REST calls get 403 and
        GraphQL calls a 200 with a ``RATE_LIMITED`` error until the reset time passes."""
        if app:
            whos = [f"app:{self.app_id}"]
        elif installation is not None:
            whos = [f"installation:{int(installation)}"]
        else:
            whos = [f"installation:{i}" for i in self._installations]
        for who in whos:
            bucket = self._bucket(who, resource)
            bucket.used = bucket.limit - remaining
            bucket.reset = int(self._now()) + reset_in

    def _bucket(self, who: str, resource: str) -> _Bucket:
        """The primary budget of credential ``who`` for ``resource`` (made on first use).
        Unauthenticated calls get GitHub's 60 an hour."""
        key = (who, resource)
        if key not in self._buckets:
            self._buckets[key] = _Bucket(60 if who == "anonymous" else self.rate_limit)
        return self._buckets[key]

    def usage(self, installation_id: int | None = None) -> dict[str, int]:
        """What installation ``installation_id`` (None: the App's JWT calls) asked so far:
        ``requests``, ``not_modified`` (free 304s), ``charged`` and ``app_jwt`` (its token
        requests, charged to the App)."""
        who = f"app:{self.app_id}" if installation_id is None else (
            f"installation:{int(installation_id)}")
        return dict(vars(self._usage.get(who, _Usage())))

    # ------------------------------------------------------------------ faults

    def fail_next(self, method: str, path_regex: str, status: int, body: Any = None,
                  headers: dict[str, str] | None = None, times: int = 1) -> None:
        """Answer the next ``times`` requests matching ``method`` ("*" for any) and
        ``path_regex`` (searched in the path) with ``status``, ``body`` (default a BasicError;
        dict/list as JSON, str as HTML) and ``headers`` laid over the rate-limit headers."""
        if body is None:
            body = basic_error(status, HTTPStatus(status).phrase)
        self._faults.append(
            _Fault(method.upper(), re.compile(path_regex), status, body, dict(headers or {}),
                   times)
        )

    def fail_primary_rate_limit(self, method: str, path_regex: str, *, reset_in: int = 60,
                                times: int = 1) -> None:
        """Script 403s with ``x-ratelimit-remaining: 0`` (gidgethub's RateLimitExceeded)."""
        limit = self.rate_limit
        message = "API rate limit exceeded for installation. Wait for the reset time."
        headers = {
            "x-ratelimit-remaining": "0",
            "x-ratelimit-used": str(limit),
            "x-ratelimit-reset": str(int(self._now()) + reset_in),
        }
        self.fail_next(method, path_regex, 403, basic_error(403, message), headers, times)

    def fail_secondary_rate_limit(self, method: str, path_regex: str, *,
                                  retry_after: int | None = 60, status: int = 403,
                                  times: int = 1, reset_in: int | None = None) -> None:
        """Script secondary-limit answers (403 or 429, ``retry-after`` unless None).

        With ``reset_in`` GitHub's other form: no ``retry-after``, ``x-ratelimit-remaining: 0``
        and a reset time ``reset_in`` seconds ahead, and every matching call is refused until
        then (``times`` is ignored)."""
        message = (
            "You have exceeded a secondary rate limit. Please wait a few minutes before you "
            "try again."
        )
        headers = {} if retry_after is None else {"retry-after": str(retry_after)}
        if reset_in is not None:
            until = int(self._now()) + reset_in
            headers = {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(until)}
            self._faults.append(_Fault(method.upper(), re.compile(path_regex), status,
                                       basic_error(status, message), headers, 1, until=until))
            return
        self.fail_next(method, path_regex, status, basic_error(status, message), headers, times)

    def lose_response_next(self, method: str, path_regex: str, *, timeout: float | None = None,
                           times: int = 1) -> None:
        """Apply the next ``times`` matching calls, then lose their answers: a 502 (an HTML
        body, as GitHub's front end sends) or, with ``timeout``, no answer for that many seconds
        (the client gives up first). A call that failed anyway answers as usual."""
        self._faults.append(_Fault(method.upper(), re.compile(path_regex), 502,
                                   "<html><body>502 Bad Gateway</body></html>", {}, times,
                                   lose="timeout" if timeout else "502",
                                   delay=timeout or 0.0))

    def slow_next(self, method: str, path_regex: str, seconds: float, times: int = 1) -> None:
        """Answer the next ``times`` matching calls normally, but ``seconds`` late."""
        self._faults.append(_Fault(method.upper(), re.compile(path_regex), 200, None, {}, times,
                                   lose="slow", delay=seconds))

    def delete_review_comment(self, repo: str, number: int, comment_id: int) -> None:
        """Someone deletes review comment ``comment_id``; deleting the first comment of a
        thread takes the whole thread (and its replies) with it."""
        _, pr = self._pr(repo, number)
        comment = self._comment_by_id(pr, comment_id)
        if comment is None:
            raise KeyError(f"no review comment {comment_id} on {repo}#{number}")
        if comment.reply_to is None:
            pr.threads = [t for t in pr.threads if t.node_id != comment.thread_id]
            pr.comments = [c for c in pr.comments if c.thread_id != comment.thread_id]
        else:
            thread = next(t for t in pr.threads if t.node_id == comment.thread_id)
            thread.comment_ids.remove(comment_id)
            pr.comments.remove(comment)

    def delete_issue_comment(self, repo: str, number: int, comment_id: int) -> None:
        """Someone deletes conversation comment ``comment_id``."""
        _, pr = self._pr(repo, number)
        pr.issue_comments = [c for c in pr.issue_comments if c.id != comment_id]

    def _take_fault(self, method: str, paths: tuple[str, ...]) -> _Fault | None:
        now = self._now()
        self._faults = [f for f in self._faults if f.until is None or f.until > now]
        for fault in self._faults:
            if fault.method in ("*", method) and any(fault.pattern.search(p) for p in paths):
                if fault.until is not None:
                    return fault
                fault.times -= 1
                if fault.times <= 0:
                    self._faults.remove(fault)
                return fault
        return None

    # ------------------------------------------------------------------ JSON shapes

    def user_json(self, login: str) -> dict[str, Any]:
        """A simple-user object."""
        info = self._user(login)
        html = f"https://github.com/apps/{self.app_slug}" if login == self.bot_login else (
            f"https://github.com/{login}")
        api = f"{self._api()}/users/{urllib.parse.quote(login)}"
        return {
            "login": login,
            "id": info["id"],
            "node_id": _node_id("U", info["id"]),
            "avatar_url": f"https://avatars.githubusercontent.com/u/{info['id']}?v=4",
            "gravatar_id": "",
            "url": api,
            "html_url": html,
            "followers_url": f"{api}/followers",
            "following_url": f"{api}/following{{/other_user}}",
            "gists_url": f"{api}/gists{{/gist_id}}",
            "starred_url": f"{api}/starred{{/owner}}{{/repo}}",
            "subscriptions_url": f"{api}/subscriptions",
            "organizations_url": f"{api}/orgs",
            "repos_url": f"{api}/repos",
            "events_url": f"{api}/events{{/privacy}}",
            "received_events_url": f"{api}/received_events",
            "type": info["type"],
            "user_view_type": "public",
            "site_admin": False,
        }

    def installation_json(self, installation_id: int) -> dict[str, Any]:
        """An installation object."""
        installation = self._installations[int(installation_id)]
        account = self.user_json(installation["account"])
        return {
            "id": int(installation_id),
            "node_id": _node_id("MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9u", int(installation_id)),
            "account": account,
            "app_id": int(self.app_id) if str(self.app_id).isdigit() else self.app_id,
            "app_slug": self.app_slug,
            "target_id": account["id"],
            "target_type": account["type"],
            "repository_selection": "all",
            "access_tokens_url": f"{self._api()}/app/installations/{installation_id}/access_tokens",
            "html_url": f"https://github.com/settings/installations/{installation_id}",
            "permissions": self._app_permissions(),
            "events": ["pull_request", "pull_request_review", "pull_request_review_comment",
                       "pull_request_review_thread", "issue_comment"],
            "repositories_url": f"{self._api()}/installation/repositories",
            "created_at": "2024-01-01T00:00:00Z",
            "updated_at": "2024-01-01T00:00:00Z",
            "single_file_name": None,
            "has_multiple_single_files": False,
            "single_file_paths": [],
            "suspended_by": None,
            "suspended_at": None,
        }

    def app_json(self) -> dict[str, Any]:
        """The App as GitHub shows it (``integration``: in check runs, ``GET /app``)."""
        owner = next(iter(self._installations.values()), {}).get("account") or "roundwise-dev"
        return {
            "id": int(self.app_id) if str(self.app_id).isdigit() else self.app_id,
            "slug": self.app_slug,
            "node_id": _node_id("A", int(self.app_id) if str(self.app_id).isdigit() else 1),
            "client_id": self.client_id or f"Iv1.{self.app_slug}",
            "owner": self.user_json(owner),
            "name": self.app_slug,
            "description": "",
            "external_url": f"https://github.com/apps/{self.app_slug}",
            "html_url": f"https://github.com/apps/{self.app_slug}",
            "created_at": "2024-01-01T00:00:00Z",
            "updated_at": "2024-01-01T00:00:00Z",
            "permissions": self._app_permissions(),
            "events": ["pull_request", "pull_request_review", "pull_request_review_comment",
                       "pull_request_review_thread", "issue_comment", "check_run"],
        }

    @staticmethod
    def _app_permissions() -> dict[str, str]:
        return {"checks": "write", "contents": "read", "issues": "write", "metadata": "read",
                "pull_requests": "write"}

    def repo_json(self, full_name: str) -> dict[str, Any]:
        """A repository object (GitHub's ``repository`` schema, as pulls and webhooks carry
        it): every URL template, counts, flags and times."""
        repo = self._repo(full_name)
        api = f"{self._api()}/repos/{repo.full_name}"
        html = f"https://github.com/{repo.full_name}"
        templates = {
            "archive_url": "/{archive_format}{/ref}", "assignees_url": "/assignees{/user}",
            "blobs_url": "/git/blobs{/sha}", "branches_url": "/branches{/branch}",
            "collaborators_url": "/collaborators{/collaborator}",
            "comments_url": "/comments{/number}", "commits_url": "/commits{/sha}",
            "compare_url": "/compare/{base}...{head}", "contents_url": "/contents/{+path}",
            "contributors_url": "/contributors", "deployments_url": "/deployments",
            "downloads_url": "/downloads", "events_url": "/events", "forks_url": "/forks",
            "git_commits_url": "/git/commits{/sha}", "git_refs_url": "/git/refs{/sha}",
            "git_tags_url": "/git/tags{/sha}", "hooks_url": "/hooks",
            "issue_comment_url": "/issues/comments{/number}",
            "issue_events_url": "/issues/events{/number}", "issues_url": "/issues{/number}",
            "keys_url": "/keys{/key_id}", "labels_url": "/labels{/name}",
            "languages_url": "/languages", "merges_url": "/merges",
            "milestones_url": "/milestones{/number}",
            "notifications_url": "/notifications{?since,all,participating}",
            "pulls_url": "/pulls{/number}", "releases_url": "/releases{/id}",
            "stargazers_url": "/stargazers", "statuses_url": "/statuses/{sha}",
            "subscribers_url": "/subscribers", "subscription_url": "/subscription",
            "tags_url": "/tags", "teams_url": "/teams", "trees_url": "/git/trees{/sha}",
        }
        open_prs = sum(1 for pr in repo.prs.values() if pr.state == "open")
        return {
            "id": repo.id,
            "node_id": _node_id("R", repo.id),
            "name": repo.name,
            "full_name": repo.full_name,
            "private": False,
            "owner": self.user_json(repo.owner),
            "html_url": html,
            "description": None,
            "fork": False,
            "url": api,
            **{key: api + rest for key, rest in templates.items()},
            "git_url": f"git://github.com/{repo.full_name}.git",
            "ssh_url": f"git@github.com:{repo.full_name}.git",
            "clone_url": f"{html}.git",
            "svn_url": html,
            "mirror_url": None,
            "homepage": None,
            "language": None,
            "forks_count": 0,
            "forks": 0,
            "stargazers_count": 0,
            "watchers_count": 0,
            "watchers": 0,
            "size": 0,
            "default_branch": repo.default_branch,
            "open_issues_count": open_prs,
            "open_issues": open_prs,
            "is_template": False,
            "topics": [],
            "has_issues": True,
            "has_projects": True,
            "has_wiki": True,
            "has_pages": False,
            "has_downloads": True,
            "has_discussions": False,
            "archived": False,
            "disabled": False,
            "visibility": "public",
            "license": None,
            "allow_forking": True,
            "web_commit_signoff_required": False,
            "pushed_at": repo.pushed_at,
            "created_at": repo.created_at,
            "updated_at": repo.pushed_at,
        }

    def _commit_json(self, repo: _Repo, sha: str) -> dict[str, Any]:
        commit = repo.commits[sha]
        api = f"{self._api()}/repos/{repo.full_name}"
        person = {"name": commit.author, "email": f"{commit.author}@users.noreply.github.com",
                  "date": commit.date}
        tree_sha = hashlib.sha1(json.dumps(repo.trees[sha], sort_keys=True).encode()).hexdigest()
        return {
            "sha": sha,
            "node_id": _node_id("C", int(sha[:12], 16)),
            "url": f"{api}/commits/{sha}",
            "html_url": f"https://github.com/{repo.full_name}/commit/{sha}",
            "commit": {
                "author": person,
                "committer": person,
                "message": commit.message,
                "tree": {"sha": tree_sha, "url": f"{api}/git/trees/{tree_sha}"},
                "url": f"{api}/git/commits/{sha}",
                "comment_count": 0,
            },
            "author": self.user_json(commit.author),
            "committer": self.user_json(commit.author),
            "comments_url": f"{api}/commits/{sha}/comments",
            "parents": [{"sha": p, "url": f"{api}/commits/{p}",
                         "html_url": f"https://github.com/{repo.full_name}/commit/{p}"}
                        for p in commit.parents],
        }

    def _diff(self, repo: _Repo, old_sha: str, new_sha: str) -> list[FileDiff]:
        key = (repo.id, old_sha, new_sha)  # a sha's tree never changes once stored
        if key not in self._diff_cache:
            self._diff_cache[key] = diff_trees(repo.trees[old_sha], repo.trees[new_sha])
        return self._diff_cache[key]

    def _pr_files(self, repo: _Repo, pr: _PullRequest, sha: str | None = None
                  ) -> dict[str, FileDiff]:
        return {d.path: d for d in self._diff(repo, pr.base_sha, sha or pr.head_sha)}

    def _association(self, repo: _Repo, login: str) -> str:
        if login == repo.owner:
            return "OWNER"
        if repo.permissions.get(login) in ("admin", "maintain", "write"):
            return "COLLABORATOR"
        return "NONE"

    def pr_json(self, repo: str, number: int) -> dict[str, Any]:
        """A pull-request object as ``GET /repos/{o}/{r}/pulls/{n}`` returns it."""
        the_repo, pr = self._pr(repo, number)
        api = f"{self._api()}/repos/{the_repo.full_name}"
        html = f"https://github.com/{the_repo.full_name}/pull/{number}"
        diffs = self._diff(the_repo, pr.base_sha, pr.head_sha)
        repo_json = self.repo_json(repo)
        head_user = self.user_json(pr.author)
        return {
            "url": f"{api}/pulls/{number}",
            "id": 900_000_000 + the_repo.id % 1000 * 1000 + number,
            "node_id": _node_id("PR", the_repo.id * 1000 + number),
            "html_url": html,
            "diff_url": f"{html}.diff",
            "patch_url": f"{html}.patch",
            "issue_url": f"{api}/issues/{number}",
            "number": number,
            "state": pr.state,
            "locked": False,
            "title": pr.title,
            "user": self.user_json(pr.author),
            "body": pr.body,
            "created_at": pr.created_at,
            "updated_at": pr.updated_at,
            "closed_at": pr.closed_at,
            "merged_at": pr.merged_at,
            "merge_commit_sha": pr.merge_commit_sha,
            "assignee": None,
            "assignees": [],
            "requested_reviewers": [],
            "requested_teams": [],
            "labels": [],
            "milestone": None,
            "draft": pr.draft,
            "commits_url": f"{api}/pulls/{number}/commits",
            "review_comments_url": f"{api}/pulls/{number}/comments",
            "review_comment_url": f"{api}/pulls/comments{{/number}}",
            "comments_url": f"{api}/issues/{number}/comments",
            "statuses_url": f"{api}/statuses/{pr.head_sha}",
            "head": {"label": f"{pr.author}:{pr.head_ref}", "ref": pr.head_ref,
                     "sha": pr.head_sha, "user": head_user, "repo": repo_json},
            "base": {"label": f"{the_repo.owner}:{pr.base_ref}", "ref": pr.base_ref,
                     "sha": pr.base_sha, "user": self.user_json(the_repo.owner),
                     "repo": repo_json},
            "_links": {
                "self": {"href": f"{api}/pulls/{number}"},
                "html": {"href": html},
                "issue": {"href": f"{api}/issues/{number}"},
                "comments": {"href": f"{api}/issues/{number}/comments"},
                "review_comments": {"href": f"{api}/pulls/{number}/comments"},
                "review_comment": {"href": f"{api}/pulls/comments{{/number}}"},
                "commits": {"href": f"{api}/pulls/{number}/commits"},
                "statuses": {"href": f"{api}/statuses/{pr.head_sha}"},
            },
            "author_association": self._association(the_repo, pr.author),
            "auto_merge": None,
            "active_lock_reason": None,
            "merged": pr.merged,
            "merged_by": self.user_json(the_repo.owner) if pr.merged else None,
            "maintainer_can_modify": False,
            "rebaseable": True if pr.state == "open" else None,
            "mergeable": True if pr.state == "open" else None,
            "mergeable_state": "clean" if pr.state == "open" else "unknown",
            "comments": len(pr.issue_comments),
            "review_comments": len(self._visible_comments(pr)),
            "commits": len(pr.commit_shas),
            "additions": sum(d.additions for d in diffs),
            "deletions": sum(d.deletions for d in diffs),
            "changed_files": len(diffs),
        }

    def issue_json(self, repo: str, number: int) -> dict[str, Any]:
        """The issue view of a PR (what issue_comment webhooks carry as ``issue``)."""
        the_repo, pr = self._pr(repo, number)
        api = f"{self._api()}/repos/{the_repo.full_name}"
        html = f"https://github.com/{the_repo.full_name}/pull/{number}"
        return {
            "url": f"{api}/issues/{number}",
            "html_url": html,
            "id": 800_000_000 + number,
            "node_id": _node_id("PR", the_repo.id * 1000 + number),
            "number": number,
            "title": pr.title,
            "user": self.user_json(pr.author),
            "state": pr.state,
            "locked": False,
            "comments": len(pr.issue_comments),
            "created_at": pr.created_at,
            "updated_at": pr.updated_at,
            "closed_at": pr.closed_at,
            "author_association": self._association(the_repo, pr.author),
            "body": pr.body,
            "draft": pr.draft,
            "pull_request": {"url": f"{api}/pulls/{number}", "html_url": html,
                             "diff_url": f"{html}.diff", "patch_url": f"{html}.patch",
                             "merged_at": pr.merged_at},
        }

    def _diff_entry(self, repo: _Repo, sha: str, file_diff: FileDiff, with_patch: bool
                    ) -> dict[str, Any]:
        quoted = urllib.parse.quote(file_diff.path)
        entry = {
            "sha": file_diff.blob,
            "filename": file_diff.path,
            "status": file_diff.status,
            "additions": file_diff.additions,
            "deletions": file_diff.deletions,
            "changes": file_diff.additions + file_diff.deletions,
            "blob_url": f"https://github.com/{repo.full_name}/blob/{sha}/{quoted}",
            "raw_url": f"https://github.com/{repo.full_name}/raw/{sha}/{quoted}",
            "contents_url": f"{self._api()}/repos/{repo.full_name}/contents/{quoted}?ref={sha}",
        }
        if with_patch and file_diff.hunks:
            entry["patch"] = file_diff.patch
        return entry

    def _review_json(self, repo: _Repo, pr: _PullRequest, review: _Review) -> dict[str, Any]:
        html = f"https://github.com/{repo.full_name}/pull/{pr.number}"
        out = {
            "id": review.id,
            "node_id": review.node_id,
            "user": self.user_json(review.user),
            "body": review.body,
            "state": review.state,
            "html_url": f"{html}#pullrequestreview-{review.id}",
            "pull_request_url": f"{self._api()}/repos/{repo.full_name}/pulls/{pr.number}",
            "author_association": self._association(repo, review.user),
            "_links": {"html": {"href": f"{html}#pullrequestreview-{review.id}"},
                       "pull_request": {"href": f"{self._api()}/repos/{repo.full_name}/pulls/"
                                                f"{pr.number}"}},
            "commit_id": review.commit_id,
        }
        if review.submitted_at:
            out["submitted_at"] = review.submitted_at
        return out

    def _anchor(self, repo: _Repo, pr: _PullRequest, top: _Comment) -> _Anchor:
        """Carry a thread's position from the commit it was made on to the current head."""
        if top.commit_id == pr.head_sha:
            return _Anchor(top.line, top.start_line, top.commit_id, top.position)
        outdated = _Anchor(None, None, top.commit_id, None)
        file_diff = self._pr_files(repo, pr).get(top.path)
        if file_diff is None:
            return outdated

        def carry(line: int | None, side: str | None) -> int | None:
            if line is None or side == "LEFT":
                return line
            old = repo.trees[top.commit_id].get(top.path)
            return map_line(old, repo.trees[pr.head_sha].get(top.path), line)

        line, start = carry(top.line, top.side), carry(top.start_line, top.start_side)
        lines = file_diff.side_lines(top.side)
        if line not in lines:
            return outdated
        if top.start_line is not None:
            start_lines = file_diff.side_lines(top.start_side or top.side)
            if start not in start_lines or start_lines[start] != lines[line]:
                return outdated
        return _Anchor(line, start, pr.head_sha, file_diff.position_of(line, top.side))

    def _comment_by_id(self, pr: _PullRequest, comment_id: int) -> _Comment | None:
        return next((c for c in pr.comments if c.id == comment_id), None)

    def _review_comment_json(self, repo: _Repo, pr: _PullRequest, comment: _Comment
                             ) -> dict[str, Any]:
        top = self._comment_by_id(pr, comment.reply_to) if comment.reply_to else comment
        anchor = self._anchor(repo, pr, top)
        api = f"{self._api()}/repos/{repo.full_name}"
        html = f"https://github.com/{repo.full_name}/pull/{pr.number}#discussion_r{comment.id}"
        out = {
            "url": f"{api}/pulls/comments/{comment.id}",
            "pull_request_review_id": comment.review_id,
            "id": comment.id,
            "node_id": comment.node_id,
            "diff_hunk": comment.diff_hunk,
            "path": comment.path,
            "position": anchor.position,
            "original_position": comment.position,
            "commit_id": anchor.commit_id,
            "original_commit_id": comment.commit_id,
            "user": self.user_json(comment.user),
            "body": comment.body,
            "created_at": comment.created_at,
            "updated_at": comment.updated_at,
            "html_url": html,
            "pull_request_url": f"{api}/pulls/{pr.number}",
            "author_association": self._association(repo, comment.user),
            "_links": {"self": {"href": f"{api}/pulls/comments/{comment.id}"},
                       "html": {"href": html},
                       "pull_request": {"href": f"{api}/pulls/{pr.number}"}},
            "start_line": anchor.start_line,
            "original_start_line": comment.start_line,
            "start_side": comment.start_side,
            "line": anchor.line,
            "original_line": comment.line,
            "side": comment.side,
            "subject_type": "line",
            "reactions": self._reactions_json(f"{api}/pulls/comments/{comment.id}/reactions",
                                              comment.reactions),
        }
        if comment.reply_to is not None:
            out["in_reply_to_id"] = comment.reply_to
        return out

    @staticmethod
    def _reactions_json(url: str, reactions: dict[str, set[str]]) -> dict[str, Any]:
        """GitHub's reaction rollup on a comment (counts per content, as REST lists it)."""
        counts = {k: len(reactions.get(k, ())) for k in REACTIONS}
        return {"url": url, "total_count": sum(counts.values()), **counts}

    def _issue_comment_json(self, repo: _Repo, pr: _PullRequest, comment: _IssueComment
                            ) -> dict[str, Any]:
        api = f"{self._api()}/repos/{repo.full_name}"
        return {
            "url": f"{api}/issues/comments/{comment.id}",
            "html_url": f"https://github.com/{repo.full_name}/pull/{pr.number}"
                        f"#issuecomment-{comment.id}",
            "issue_url": f"{api}/issues/{pr.number}",
            "id": comment.id,
            "node_id": comment.node_id,
            "user": self.user_json(comment.user),
            "created_at": comment.created_at,
            "updated_at": comment.updated_at,
            "author_association": self._association(repo, comment.user),
            "body": comment.body,
            "reactions": self._reactions_json(f"{api}/issues/comments/{comment.id}/reactions",
                                              comment.reactions),
            "performed_via_github_app": None,
        }

    def _pending_review_ids(self, pr: _PullRequest) -> set[int]:
        return {r.id for r in pr.reviews if r.state == "PENDING"}

    def _visible_comments(self, pr: _PullRequest) -> list[_Comment]:
        pending = self._pending_review_ids(pr)
        return [c for c in pr.comments if c.review_id not in pending]

    def _thread_json(self, repo: _Repo, pr: _PullRequest, thread: _Thread) -> dict[str, Any]:
        comments = [self._comment_by_id(pr, i) for i in thread.comment_ids]
        top = comments[0]
        anchor = self._anchor(repo, pr, top)
        return {
            "node_id": thread.node_id,
            "is_resolved": thread.resolved_by is not None,
            "resolved_by": thread.resolved_by,
            "is_outdated": anchor.line is None,
            "path": top.path,
            "line": anchor.line,
            "original_line": top.line,
            "start_line": anchor.start_line,
            "side": top.side,
            "comments": [self._review_comment_json(repo, pr, c) for c in comments],
        }

    # ------------------------------------------------------------------ views for assertions

    def installation_of(self, repo: str) -> int:
        """The id of the installation that holds ``repo``."""
        return self._repo(repo).installation_id

    def head_sha(self, repo: str, number: int) -> str:
        """The PR's current head sha."""
        return self._pr(repo, number)[1].head_sha

    def pushed_heads(self, repo: str, number: int) -> list[str]:
        """Every head sha pushed to the PR, oldest first."""
        return list(self._pr(repo, number)[1].heads)

    def reviews(self, repo: str, number: int) -> list[dict[str, Any]]:
        """All reviews on the PR (REST shape), oldest first."""
        the_repo, pr = self._pr(repo, number)
        return [self._review_json(the_repo, pr, r) for r in pr.reviews]

    def review_comments(self, repo: str, number: int) -> list[dict[str, Any]]:
        """Submitted review comments (REST shape, lines as of the current head), by id."""
        the_repo, pr = self._pr(repo, number)
        return [self._review_comment_json(the_repo, pr, c) for c in self._visible_comments(pr)]

    def issue_comments(self, repo: str, number: int) -> list[dict[str, Any]]:
        """Issue (conversation) comments on the PR (REST shape), by id."""
        the_repo, pr = self._pr(repo, number)
        return [self._issue_comment_json(the_repo, pr, c) for c in pr.issue_comments]

    def threads(self, repo: str, number: int) -> list[dict[str, Any]]:
        """Review threads: node_id, is_resolved, resolved_by, is_outdated, path, line,
        original_line, start_line, side and comments (REST shape), oldest first."""
        the_repo, pr = self._pr(repo, number)
        visible = {c.id for c in self._visible_comments(pr)}
        return [self._thread_json(the_repo, pr, t) for t in pr.threads
                if t.comment_ids[0] in visible]

    # ------------------------------------------------------------------ writes (shared)

    def _check_target(self, files: dict[str, FileDiff], spec: dict[str, Any]
                      ) -> tuple[str, int, str, int | None, str | None]:
        """Resolve a review comment's (path, line, side, start_line, start_side) on a diff.

        Raises ValueError with GitHub's message when the target is not in the diff.
        """
        path = spec.get("path")
        file_diff = files.get(path) if isinstance(path, str) else None
        if file_diff is None:
            raise ValueError(PATH_ERROR)
        line, side = spec.get("line"), spec.get("side") or "RIGHT"
        if line is None and spec.get("position") is not None:
            found = file_diff.at_position(spec["position"]) \
                if type(spec["position"]) is int else None
            if found is None:
                raise ValueError(POSITION_ERROR)
            line, side = found
        if side not in ("LEFT", "RIGHT") or type(line) is not int:
            raise ValueError(LINE_ERROR)
        lines = file_diff.side_lines(side)
        if line not in lines:
            raise ValueError(LINE_ERROR)
        start_line = spec.get("start_line")
        start_side = (spec.get("start_side") or side) if start_line is not None else None
        if start_line is not None:
            if type(start_line) is int and start_side == side and start_line >= line:
                raise ValueError(START_ORDER_ERROR)
            start_lines = file_diff.side_lines(start_side)
            if (type(start_line) is not int or start_line not in start_lines
                    or start_lines[start_line] != lines[line]):
                raise ValueError(START_LINE_ERROR)
        return path, line, side, start_line, start_side

    def _new_review(self, pr: _PullRequest, user: str, body: str, state: str, commit_id: str
                    ) -> _Review:
        review_id = next(self._review_ids)
        submitted = None if state == "PENDING" else self._iso()
        review = _Review(review_id, _node_id("PRR", review_id), user, body, state, commit_id,
                         submitted)
        pr.reviews.append(review)
        return review

    def _new_comment(self, repo: _Repo, pr: _PullRequest, review: _Review, user: str, body: str,
                     target: tuple[str, int, str, int | None, str | None], commit_id: str,
                     reply_to: _Comment | None = None) -> _Comment:
        comment_id = next(self._comment_ids)
        now = self._iso()
        if reply_to is not None:
            comment = _Comment(
                comment_id, _node_id("PRRC", comment_id), review.id, user, body, reply_to.path,
                reply_to.side, reply_to.line, reply_to.start_line, reply_to.start_side,
                reply_to.commit_id, reply_to.position, reply_to.diff_hunk, now, now,
                reply_to.thread_id, reply_to.id,
            )
            next(t for t in pr.threads if t.node_id == reply_to.thread_id).comment_ids.append(
                comment_id)
        else:
            path, line, side, start_line, start_side = target
            file_diff = self._pr_files(repo, pr, commit_id)[path]
            thread = _Thread(_node_id("PRRT", comment_id), [comment_id])
            pr.threads.append(thread)
            comment = _Comment(
                comment_id, _node_id("PRRC", comment_id), review.id, user, body, path, side,
                line, start_line, start_side, commit_id, file_diff.position_of(line, side),
                file_diff.diff_hunk(line, side), now, now, thread.node_id,
            )
        pr.comments.append(comment)
        pr.updated_at = now
        return comment

    def _visible_comment(self, pr: _PullRequest, comment_id: int) -> _Comment | None:
        comment = self._comment_by_id(pr, comment_id)
        if comment is not None and comment.review_id in self._pending_review_ids(pr):
            return None
        return comment

    # ------------------------------------------------------------------ writes as a human

    def add_review_comment(self, repo: str, number: int, user: str, path: str, line: int,
                           body: str, side: str = "RIGHT", start_line: int | None = None,
                           in_reply_to: int | None = None, commit_id: str | None = None
                           ) -> dict[str, Any]:
        """A person comments on a diff line (or replies, joining the top comment's thread).

        Like the web UI it makes a one-comment COMMENTED review. Raises ValueError with
        GitHub's message when the line is not in the PR diff at ``commit_id`` (default head).
        """
        the_repo, pr = self._pr(repo, number)
        self._user(user)
        commit_id = commit_id or pr.head_sha
        if in_reply_to is not None:
            parent = self._visible_comment(pr, in_reply_to)
            if parent is None:
                raise KeyError(f"no review comment {in_reply_to} on {repo}#{number}")
            top = self._comment_by_id(pr, parent.reply_to) if parent.reply_to else parent
            review = self._new_review(pr, user, "", "COMMENTED", pr.head_sha)
            comment = self._new_comment(the_repo, pr, review, user, body, None, pr.head_sha, top)
        else:
            spec = {"path": path, "line": line, "side": side, "start_line": start_line}
            target = self._check_target(self._pr_files(the_repo, pr, commit_id), spec)
            review = self._new_review(pr, user, "", "COMMENTED", commit_id)
            comment = self._new_comment(the_repo, pr, review, user, body, target, commit_id)
        return self._review_comment_json(the_repo, pr, comment)

    def add_review(self, repo: str, number: int, user: str, state: str, body: str
                   ) -> dict[str, Any]:
        """A person submits a review; ``state`` is an event (APPROVE, REQUEST_CHANGES, COMMENT)
        or a state (APPROVED, CHANGES_REQUESTED, COMMENTED), any case."""
        the_repo, pr = self._pr(repo, number)
        self._user(user)
        state = state.upper()
        state = REVIEW_EVENTS.get(state, state)
        if state not in REVIEW_EVENTS.values():
            raise ValueError(f"unknown review state {state!r}")
        review = self._new_review(pr, user, body, state, pr.head_sha)
        return self._review_json(the_repo, pr, review)

    def dismiss_review(self, repo: str, number: int, review_id: int, by_user: str
                       ) -> dict[str, Any]:
        """A maintainer dismisses review ``review_id`` (an approval or a change request)."""
        the_repo, pr = self._pr(repo, number)
        self._user(by_user)
        review = next((r for r in pr.reviews if r.id == int(review_id)), None)
        if review is None or review.state not in ("APPROVED", "CHANGES_REQUESTED"):
            raise ValueError(f"review {review_id} cannot be dismissed")
        review.state = "DISMISSED"
        return self._review_json(the_repo, pr, review)

    def add_issue_comment(self, repo: str, number: int, user: str, body: str) -> dict[str, Any]:
        """A person writes a conversation comment on the PR."""
        the_repo, pr = self._pr(repo, number)
        self._user(user)
        return self._issue_comment_json(the_repo, pr, self._new_issue_comment(pr, user, body))

    def _new_issue_comment(self, pr: _PullRequest, user: str, body: str) -> _IssueComment:
        comment_id = next(self._issue_comment_ids)
        now = self._iso()
        comment = _IssueComment(comment_id, _node_id("IC", comment_id), user, body, now, now)
        pr.issue_comments.append(comment)
        pr.updated_at = now
        return comment

    def add_reaction(self, repo: str, number: int, comment_id: int, user: str,
                     content: str = "-1") -> dict[str, Any]:
        """A person reacts to review comment ``comment_id`` (GitHub sends no webhook for it)."""
        if content not in REACTIONS:
            raise ValueError(f"unknown reaction {content!r}")
        the_repo, pr = self._pr(repo, number)
        self._user(user)
        comment = self._comment_by_id(pr, comment_id)
        if comment is None:
            raise KeyError(f"no review comment {comment_id}")
        comment.reactions.setdefault(content, set()).add(user)
        return self._review_comment_json(the_repo, pr, comment)

    def _thread_of(self, pr: _PullRequest, comment_id: int) -> _Thread:
        comment = self._comment_by_id(pr, comment_id)
        if comment is None:
            raise KeyError(f"no review comment {comment_id}")
        return next(t for t in pr.threads if t.node_id == comment.thread_id)

    def resolve_thread(self, repo: str, number: int, comment_id: int, by_user: str
                       ) -> dict[str, Any]:
        """A person resolves the thread holding review comment ``comment_id``."""
        the_repo, pr = self._pr(repo, number)
        self._user(by_user)
        thread = self._thread_of(pr, comment_id)
        thread.resolved_by = by_user
        return self._thread_json(the_repo, pr, thread)

    def unresolve_thread(self, repo: str, number: int, comment_id: int) -> dict[str, Any]:
        """A person unresolves the thread holding review comment ``comment_id``."""
        the_repo, pr = self._pr(repo, number)
        thread = self._thread_of(pr, comment_id)
        thread.resolved_by = None
        return self._thread_json(the_repo, pr, thread)
