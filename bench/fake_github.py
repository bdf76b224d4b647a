"""A fake GitHub REST and GraphQL API served over real HTTP on 127.0.0.1.

The bot's tests and the offline bench point the bot at ``FakeGitHub.url`` instead of
api.github.com, so what passes here is what runs in production. The fake follows the contract in
the shared GitHub API notes: App JWTs and installation tokens, pull request reads (JSON, git
diffs, files, compare, contents, commits), reviews and comments with GitHub's all-or-nothing line
validation, GraphQL review threads, rate-limit headers, absolute ``Link`` pagination and scripted
faults. State lives in memory and is set up (or acted on as a human) through plain methods. The
fake never sends webhooks; ``bench.payloads`` builds them from its state.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import itertools
import json
import math
import re
import secrets
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any, NamedTuple, Self

import jwt
from aiohttp import web
from cryptography.hazmat.primitives import serialization

from .diffs import FileDiff, blob_sha, diff_trees, map_line

DOCS = "https://docs.github.com/rest"
JSON_TYPE = "application/json; charset=utf-8"
DIFF_TYPE = "application/vnd.github.v3.diff; charset=utf-8"
RAW_TYPE = "application/vnd.github.v3.raw; charset=utf-8"
MAX_JWT_LIFETIME = 600
MAX_DIFF_FILES = 300
MAX_DIFF_LINES = 20000
PERMISSION_LEVELS = {
    "admin": ("admin", "admin"),
    "maintain": ("write", "maintain"),
    "write": ("write", "write"),
    "triage": ("read", "triage"),
    "read": ("read", "read"),
    "none": ("none", "none"),
}
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


# --------------------------------------------------------------------------- GraphQL subset


class GraphQLSyntaxError(ValueError):
    """The query text is outside the small GraphQL subset the fake parses."""

    def __init__(self, message: str, location: dict[str, int] | None = None) -> None:
        super().__init__(message)
        self.location = location


@dataclass
class _Var:
    name: str


@dataclass
class GqlField:
    """A field in a selection set: ``alias: name(args) { selections }``."""

    name: str
    alias: str | None
    args: dict[str, Any]
    selections: list[GqlField]
    location: dict[str, int]

    @property
    def key(self) -> str:
        return self.alias or self.name


@dataclass
class GqlOperation:
    """A parsed operation: its type, variable declarations and top-level fields."""

    kind: str
    variables: dict[str, tuple[str, Any]]  # name -> (type text, default)
    selections: list[GqlField]


_GQL_TOKEN = re.compile(
    r"""(?P<skip>[\s,\ufeff]+|\#[^\n]*)
      | (?P<spread>\.\.\.)
      | (?P<punct>[!$():=@\[\]{}|&])
      | (?P<string>"(?:[^"\\\n]|\\.)*")
      | (?P<number>-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)
      | (?P<name>[_A-Za-z][_0-9A-Za-z]*)""",
    re.VERBOSE,
)


def _gql_tokens(text: str) -> list[tuple[str, str, dict[str, int]]]:
    tokens, pos = [], 0
    while pos < len(text):
        match = _GQL_TOKEN.match(text, pos)
        line = text.count("\n", 0, pos) + 1
        location = {"line": line, "column": pos - (text.rfind("\n", 0, pos) + 1) + 1}
        if not match:
            raise GraphQLSyntaxError(f"Parse error on {text[pos]!r}", location)
        if match.lastgroup != "skip":
            tokens.append((match.lastgroup, match.group(), location))
        pos = match.end()
    return tokens


class _GqlParser:
    """Recursive-descent parser for one operation without fragments."""

    def __init__(self, text: str) -> None:
        self.tokens = _gql_tokens(text)
        self.pos = 0

    def peek(self) -> str | None:
        return self.tokens[self.pos][1] if self.pos < len(self.tokens) else None

    def take(self, expected: str | None = None) -> tuple[str, str, dict[str, int]]:
        if self.pos >= len(self.tokens):
            raise GraphQLSyntaxError("Parse error on end of query")
        token = self.tokens[self.pos]
        if expected is not None and token[1] != expected:
            raise GraphQLSyntaxError(
                f"Parse error on {token[1]!r}, expected {expected!r}", token[2])
        self.pos += 1
        return token

    def name(self) -> str:
        kind, value, location = self.take()
        if kind != "name":
            raise GraphQLSyntaxError(f"Parse error on {value!r}, expected a name", location)
        return value

    def operation(self) -> GqlOperation:
        kind, variables = "query", {}
        if self.peek() in ("query", "mutation", "subscription"):
            kind = self.take()[1]
            if self.peek() not in ("(", "{", "@"):
                self.name()
            if self.peek() == "(":
                variables = self.variable_definitions()
        elif self.peek() == "fragment":
            raise GraphQLSyntaxError("fragments are not supported by the fake")
        selections = self.selection_set()
        if self.peek() is not None:
            raise GraphQLSyntaxError("only one operation per document is supported by the fake")
        return GqlOperation(kind, variables, selections)

    def variable_definitions(self) -> dict[str, tuple[str, Any]]:
        found = {}
        self.take("(")
        while self.peek() != ")":
            self.take("$")
            name = self.name()
            self.take(":")
            type_text = ""
            while self.peek() not in ("=", ")", "$", "@"):
                type_text += self.take()[1]
            default = self.value() if self.peek() == "=" and self.take("=") else None
            found[name] = (type_text, default)
        self.take(")")
        return found

    def selection_set(self) -> list[GqlField]:
        self.take("{")
        fields = []
        while self.peek() != "}":
            if self.peek() == "...":
                raise GraphQLSyntaxError("fragments are not supported by the fake")
            fields.append(self.field())
        self.take("}")
        return fields

    def field(self) -> GqlField:
        location = self.tokens[self.pos][2] if self.pos < len(self.tokens) else {}
        name, alias = self.name(), None
        if self.peek() == ":":
            self.take(":")
            alias, name = name, self.name()
        args = self.arguments() if self.peek() == "(" else {}
        while self.peek() == "@":
            self.take("@")
            self.name()
            if self.peek() == "(":
                self.arguments()
        selections = self.selection_set() if self.peek() == "{" else []
        return GqlField(name, alias, args, selections, location)

    def arguments(self) -> dict[str, Any]:
        args = {}
        self.take("(")
        while self.peek() != ")":
            name = self.name()
            self.take(":")
            args[name] = self.value()
        self.take(")")
        return args

    def value(self) -> Any:
        kind, text, location = self.take()
        if text == "$":
            return _Var(self.name())
        if kind == "string":
            return json.loads(text)
        if kind == "number":
            return float(text) if any(c in text for c in ".eE") else int(text)
        if text == "[":
            items = []
            while self.peek() != "]":
                items.append(self.value())
            self.take("]")
            return items
        if text == "{":
            obj = {}
            while self.peek() != "}":
                key = self.name()
                self.take(":")
                obj[key] = self.value()
            self.take("}")
            return obj
        if kind == "name":
            return {"true": True, "false": False, "null": None}.get(text, text)
        raise GraphQLSyntaxError(f"Parse error on {text!r}", location)


def parse_graphql(text: str) -> GqlOperation:
    """Parse the subset of GraphQL the fake serves (one operation, no fragments)."""
    return _GqlParser(text).operation()


def _bind(value: Any, variables: dict[str, Any]) -> Any:
    """Replace ``$var`` references in an argument value by the request's variables."""
    if isinstance(value, _Var):
        return variables.get(value.name)
    if isinstance(value, list):
        return [_bind(item, variables) for item in value]
    if isinstance(value, dict):
        return {key: _bind(item, variables) for key, item in value.items()}
    return value


# Object types and their fields; a field's value is its object type or None for a scalar.
_CONNECTION = {"totalCount": None, "pageInfo": "PageInfo"}
GRAPHQL_SCHEMA: dict[str, dict[str, str | None]] = {
    "Query": {"repository": "Repository", "rateLimit": "RateLimit"},
    "Mutation": {
        "resolveReviewThread": "ResolveReviewThreadPayload",
        "unresolveReviewThread": "UnresolveReviewThreadPayload",
    },
    "RateLimit": dict.fromkeys(["cost", "limit", "remaining", "used", "resetAt", "nodeCount"]),
    "Repository": {
        **dict.fromkeys(["id", "name", "nameWithOwner", "url", "databaseId"]),
        "owner": "RepositoryOwner",
        "pullRequest": "PullRequest",
    },
    "RepositoryOwner": dict.fromkeys(["login", "url"]),
    "PullRequest": {
        **dict.fromkeys(
            ["id", "number", "title", "state", "isDraft", "headRefOid", "baseRefOid", "url"]
        ),
        "reviewThreads": "PullRequestReviewThreadConnection",
    },
    "PageInfo": dict.fromkeys(["hasNextPage", "hasPreviousPage", "startCursor", "endCursor"]),
    "PullRequestReviewThreadConnection": {
        **_CONNECTION,
        "nodes": "PullRequestReviewThread",
        "edges": "PullRequestReviewThreadEdge",
    },
    "PullRequestReviewThreadEdge": {"cursor": None, "node": "PullRequestReviewThread"},
    "PullRequestReviewThread": {
        **dict.fromkeys(
            [
                "id", "isResolved", "isOutdated", "isCollapsed", "path", "line", "originalLine",
                "startLine", "originalStartLine", "diffSide", "startDiffSide", "subjectType",
                "viewerCanResolve", "viewerCanUnresolve", "viewerCanReply",
            ]
        ),
        "resolvedBy": "User",
        "comments": "PullRequestReviewCommentConnection",
        "pullRequest": "PullRequest",
    },
    "PullRequestReviewCommentConnection": {
        **_CONNECTION,
        "nodes": "PullRequestReviewComment",
        "edges": "PullRequestReviewCommentEdge",
    },
    "PullRequestReviewCommentEdge": {"cursor": None, "node": "PullRequestReviewComment"},
    "PullRequestReviewComment": {
        **dict.fromkeys(
            [
                "id", "databaseId", "fullDatabaseId", "body", "createdAt", "updatedAt", "url",
                "path", "line", "originalLine", "startLine", "originalStartLine", "outdated",
                "diffHunk",
            ]
        ),
        "author": "Actor",
        "replyTo": "PullRequestReviewComment",
        "commit": "Commit",
        "originalCommit": "Commit",
    },
    "Actor": dict.fromkeys(["login", "url", "avatarUrl"]),
    "User": dict.fromkeys(["login", "url", "id"]),
    "Commit": dict.fromkeys(["oid"]),
    "ResolveReviewThreadPayload": {"thread": "PullRequestReviewThread", "clientMutationId": None},
    "UnresolveReviewThreadPayload": {"thread": "PullRequestReviewThread", "clientMutationId": None},
}


def validate_graphql(operation: GqlOperation) -> list[dict[str, Any]]:
    """Static checks GitHub makes before running a query: fields exist, objects have selections."""
    errors: list[dict[str, Any]] = []

    def walk(type_name: str, fields: list[GqlField], path: list[str]) -> None:
        for gql_field in fields:
            if gql_field.name == "__typename":
                continue
            where = [*path, gql_field.key]
            known = GRAPHQL_SCHEMA[type_name]
            if gql_field.name not in known:
                errors.append(
                    {
                        "path": where,
                        "extensions": {
                            "code": "undefinedField",
                            "typeName": type_name,
                            "fieldName": gql_field.name,
                        },
                        "locations": [gql_field.location],
                        "message": f"Field '{gql_field.name}' doesn't exist on type '{type_name}'",
                    }
                )
            elif known[gql_field.name] is None and gql_field.selections:
                errors.append(
                    {
                        "path": where,
                        "locations": [gql_field.location],
                        "message": "Selections can't be made on scalars "
                        f"(field '{gql_field.name}')",
                    }
                )
            elif known[gql_field.name] is not None and not gql_field.selections:
                errors.append(
                    {
                        "path": where,
                        "locations": [gql_field.location],
                        "message": f"Field must have selections (field '{gql_field.name}' returns "
                        f"{known[gql_field.name]} but has no selections)",
                    }
                )
            elif known[gql_field.name] is not None:
                walk(known[gql_field.name], gql_field.selections, where)

    root = "Mutation" if operation.kind == "mutation" else "Query"
    walk(root, operation.selections, [operation.kind])
    return errors


class GraphQLError(Exception):
    """A field-level GraphQL error (reported in ``errors`` with HTTP 200)."""

    def __init__(self, message: str, kind: str = "NOT_FOUND") -> None:
        super().__init__(message)
        self.kind = kind


@dataclass
class _Node:
    """A GraphQL object: its type name and field values (a callable takes the field's args)."""

    typename: str
    fields: dict[str, Any]


def _cursor(index: int) -> str:
    return base64.b64encode(f"cursor:v2:{index}".encode()).decode()


def _cursor_index(cursor: str) -> int:
    try:
        text = base64.b64decode(cursor, validate=True).decode()
        if not text.startswith("cursor:v2:"):
            raise ValueError(cursor)
        return int(text.removeprefix("cursor:v2:"))
    except ValueError:
        raise GraphQLError(
            f"`{cursor}` does not appear to be a valid cursor.", "INVALID_CURSOR_ARGUMENTS"
        ) from None


def _connection(type_name: str, field_name: str, items: list[Any], args: dict[str, Any]) -> _Node:
    """A Relay connection over ``items`` honouring first/last/after/before like GitHub."""
    first, last = args.get("first"), args.get("last")
    if first is None and last is None:
        raise GraphQLError(
            f"You must provide a `first` or `last` value to properly paginate the "
            f"`{field_name}` connection.",
            "MISSING_PAGINATION_BOUNDARIES",
        )
    for name, value in (("first", first), ("last", last)):
        if value is not None and not 1 <= value <= 100:
            raise GraphQLError(
                f"Requesting {value} records on the `{field_name}` connection exceeds the "
                f"`{name}` limit of 100 records.",
                "EXCESSIVE_PAGINATION",
            )
    start = _cursor_index(args["after"]) + 1 if args.get("after") else 0
    end = _cursor_index(args["before"]) if args.get("before") else len(items)
    window = list(range(start, min(end, len(items))))
    has_next, has_previous = end < len(items), start > 0
    if first is not None:
        has_next = has_next or len(window) > first
        window = window[:first]
    if last is not None:
        has_previous = has_previous or len(window) > last
        window = window[-last:]
    page_info = _Node(
        "PageInfo",
        {
            "hasNextPage": has_next,
            "hasPreviousPage": has_previous,
            "startCursor": _cursor(window[0]) if window else None,
            "endCursor": _cursor(window[-1]) if window else None,
        },
    )
    edge_type = type_name.removesuffix("Connection") + "Edge"
    return _Node(
        type_name,
        {
            "totalCount": len(items),
            "pageInfo": page_info,
            "nodes": [items[i] for i in window],
            "edges": [_Node(edge_type, {"cursor": _cursor(i), "node": items[i]}) for i in window],
        },
    )


def _execute(value: Any, fields: list[GqlField], variables: dict[str, Any], path: list[Any],
             errors: list[dict[str, Any]]) -> Any:
    """Resolve ``fields`` on ``value``; field errors become null plus an ``errors`` entry."""
    if isinstance(value, list):
        return [_execute(item, fields, variables, [*path, i], errors)
                for i, item in enumerate(value)]
    if not isinstance(value, _Node):
        return value
    out = {}
    for gql_field in fields:
        if gql_field.name == "__typename":
            out[gql_field.key] = value.typename
            continue
        raw = value.fields.get(gql_field.name)
        try:
            resolved = raw(_bind(gql_field.args, variables)) if callable(raw) else raw
        except GraphQLError as error:
            errors.append(
                {
                    "type": error.kind,
                    "path": [*path, gql_field.key],
                    "locations": [gql_field.location],
                    "message": str(error),
                }
            )
            out[gql_field.key] = None
            continue
        out[gql_field.key] = _execute(
            resolved, gql_field.selections, variables, [*path, gql_field.key], errors
        )
    return out


# --------------------------------------------------------------------------- state


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


class _Route(NamedTuple):
    method: str
    pattern: re.Pattern[str]
    handler: str
    auth: str  # "jwt", "token" or "graphql"


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
        ("GET", _REPO + r"/compare/(?P<basehead>.+)", "compare", "token"),
        ("GET", _REPO + r"/contents(?:/(?P<path>.*))?", "contents", "token"),
        ("GET", _REPO + r"/collaborators/(?P<user>[^/]+)/permission", "permission", "token"),
        ("POST", r"/graphql", "graphql", "graphql"),
    ]
]


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


def _int_param(query: Any, name: str, default: int) -> int:
    try:
        return int(query.get(name, default))
    except ValueError:
        return default


class FakeGitHub:
    """In-memory GitHub serving the REST and GraphQL calls the bot makes, over real HTTP.

    ``app_id`` and the App's RSA public key PEM verify App JWTs. ``token_ttl`` sets how long
    installation tokens live; ``clock`` (epoch seconds) lets tests move time. With
    ``repository_id_links`` (default, like GitHub) pagination links use the
    ``/repositories/{id}/...`` shape rather than the request's path.
    """

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
        self._runner: web.AppRunner | None = None
        self._installations: dict[int, dict[str, Any]] = {}
        self._repos: dict[str, _Repo] = {}
        self._users: dict[str, dict[str, Any]] = {}
        self._tokens: dict[str, _Token] = {}
        self._faults: list[_Fault] = []
        self._diff_cache: dict[tuple[int, str, str], list[FileDiff]] = {}
        self._buckets = {"core": _Bucket(rate_limit), "graphql": _Bucket(rate_limit)}
        self._ids = itertools.count(1)
        self._review_ids = itertools.count(1_700_000_001)
        self._comment_ids = itertools.count(1_500_000_001)
        self._issue_comment_ids = itertools.count(1_900_000_001)
        self._user(self.bot_login, "Bot")

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
        tree = dict(the_repo.trees[pr.base_sha])
        for path, text in files.items():
            if text is None:
                tree.pop(path, None)
            else:
                tree[path] = text
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
        pr.updated_at = self._iso()
        the_repo.branches[pr.head_ref] = head_sha
        return self.pr_json(repo, number)

    def advance_base(self, repo: str, number: int, sha: str, files: dict[str, str | None],
                     message: str = "Upstream change") -> None:
        """Someone merges ``files`` into the PR's base branch as commit ``sha`` and the PR is
        retargeted onto it, as before a rebase: the next ``push(..., force=True)`` builds its
        head on this new base (the PR's commits are replaced, the old head is no ancestor)."""
        the_repo, pr = self._pr(repo, number)
        tree = dict(the_repo.trees[pr.base_sha])
        for path, text in files.items():
            if text is None:
                tree.pop(path, None)
            else:
                tree[path] = text
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

    def set_rate_limit(self, remaining: int, *, resource: str = "core",
                       reset_in: int = 3600) -> None:
        """Set the primary budget left; at 0 calls get 403 until the reset time passes."""
        bucket = self._buckets[resource]
        bucket.used = bucket.limit - remaining
        bucket.reset = int(self._now()) + reset_in

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
        limit = self._buckets["core"].limit
        message = "API rate limit exceeded for installation. Wait for the reset time."
        headers = {
            "x-ratelimit-remaining": "0",
            "x-ratelimit-used": str(limit),
            "x-ratelimit-reset": str(int(self._now()) + reset_in),
        }
        self.fail_next(method, path_regex, 403, basic_error(403, message), headers, times)

    def fail_secondary_rate_limit(self, method: str, path_regex: str, *,
                                  retry_after: int | None = 60, status: int = 403,
                                  times: int = 1) -> None:
        """Script secondary-limit answers (403 or 429, ``retry-after`` unless None)."""
        message = (
            "You have exceeded a secondary rate limit. Please wait a few minutes before you "
            "try again."
        )
        headers = {} if retry_after is None else {"retry-after": str(retry_after)}
        self.fail_next(method, path_regex, status, basic_error(status, message), headers, times)

    def _take_fault(self, method: str, paths: tuple[str, ...]) -> _Fault | None:
        for fault in self._faults:
            if fault.method in ("*", method) and any(fault.pattern.search(p) for p in paths):
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
        return {
            "login": login,
            "id": info["id"],
            "node_id": _node_id("U", info["id"]),
            "avatar_url": f"https://avatars.githubusercontent.com/u/{info['id']}?v=4",
            "gravatar_id": "",
            "url": f"{self._api()}/users/{urllib.parse.quote(login)}",
            "html_url": html,
            "type": info["type"],
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
            "suspended_at": None,
        }

    @staticmethod
    def _app_permissions() -> dict[str, str]:
        return {"contents": "read", "issues": "write", "metadata": "read",
                "pull_requests": "write"}

    def repo_json(self, full_name: str) -> dict[str, Any]:
        """A repository object."""
        repo = self._repo(full_name)
        api = f"{self._api()}/repos/{repo.full_name}"
        return {
            "id": repo.id,
            "node_id": _node_id("R", repo.id),
            "name": repo.name,
            "full_name": repo.full_name,
            "private": False,
            "owner": self.user_json(repo.owner),
            "html_url": f"https://github.com/{repo.full_name}",
            "fork": False,
            "url": api,
            "pulls_url": api + "/pulls{/number}",
            "default_branch": repo.default_branch,
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
            "parents": [{"sha": p, "url": f"{api}/commits/{p}"} for p in commit.parents],
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
            "draft": pr.draft,
            "head": {"label": f"{pr.author}:{pr.head_ref}", "ref": pr.head_ref,
                     "sha": pr.head_sha, "user": head_user, "repo": repo_json},
            "base": {"label": f"{the_repo.owner}:{pr.base_ref}", "ref": pr.base_ref,
                     "sha": pr.base_sha, "user": self.user_json(the_repo.owner),
                     "repo": repo_json},
            "author_association": self._association(the_repo, pr.author),
            "merged": pr.merged,
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
        }
        if comment.reply_to is not None:
            out["in_reply_to_id"] = comment.reply_to
        return out

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
            found = file_diff.at_position(spec["position"])
            if found is None:
                raise ValueError(LINE_ERROR)
            line, side = found
        if side not in ("LEFT", "RIGHT") or type(line) is not int:
            raise ValueError(LINE_ERROR)
        lines = file_diff.side_lines(side)
        if line not in lines:
            raise ValueError(LINE_ERROR)
        start_line = spec.get("start_line")
        start_side = (spec.get("start_side") or side) if start_line is not None else None
        if start_line is not None:
            start_lines = file_diff.side_lines(start_side)
            if (type(start_line) is not int or start_line not in start_lines
                    or start_lines[start_line] != lines[line]
                    or (start_side == side and start_line >= line)):
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
        return comment

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

    # ------------------------------------------------------------------ HTTP plumbing

    def _rate_headers(self, resource: str) -> dict[str, str]:
        bucket = self._buckets[resource]
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

    def _charge(self, resource: str) -> None:
        bucket = self._buckets[resource]
        self._roll(bucket)
        if bucket.used >= bucket.limit:
            raise ApiError(403, basic_error(403, "API rate limit exceeded for installation."))
        bucket.used += 1

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
        fault = self._take_fault(request.method, (request.path, path))
        if fault is not None:
            response = self._fault_response(fault)
            response.headers.update({**self._rate_headers(resource), **fault.headers})
            return response
        try:
            response = await self._handle(request, path, body, parsed)
        except ApiError as error:
            response = self._json(error.body, error.status)
            response.headers.update(error.headers)
        for name, value in self._rate_headers(resource).items():
            response.headers.setdefault(name, value)
        return response

    async def _handle(self, request: web.Request, path: str, body: Any, parsed: bool
                      ) -> web.StreamResponse:
        route, params = self._route(request.method, path)
        token = None
        if route.auth == "jwt":
            self._check_jwt(request)
        else:
            docs = "https://docs.github.com/graphql" if route.auth == "graphql" else DOCS
            token = self._check_token(request, docs)
        self._charge("graphql" if route.auth == "graphql" else "core")
        if not parsed:
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
        return self._json({
            "id": self.app_id, "slug": self.app_slug, "name": self.app_slug,
            "client_id": self.client_id, "permissions": self._app_permissions(),
        })

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
        return self._json(self.pr_json(repo.full_name, pr.number))

    def _check_diff_size(self, pr: _PullRequest, diffs: list[FileDiff]) -> None:
        lines = sum(len(h.lines) for d in diffs for h in d.hunks)
        reason = pr.diff_too_large
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
        entries = [
            self._diff_entry(repo, pr.head_sha, d, d.path not in pr.omitted_patches)
            for d in self._diff(repo, pr.base_sha, pr.head_sha)
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
            encoded = base64.b64encode(text.encode()).decode()
            wrapped = "".join(encoded[i:i + 60] + "\n" for i in range(0, len(encoded), 60))
            return self._json({
                "type": "file", "encoding": "base64", "size": len(text.encode()),
                "name": path.rsplit("/", 1)[-1], "path": path, "content": wrapped,
                "sha": blob_sha(text), "url": f"{api}/{urllib.parse.quote(path)}?ref={sha}",
                "html_url": f"https://github.com/{repo.full_name}/blob/{sha}/{path}",
                "download_url": f"https://raw.githubusercontent.com/{repo.full_name}/{sha}/{path}",
            })
        prefix = f"{path}/" if path else ""
        children: dict[str, str] = {}
        for name in tree:
            if name.startswith(prefix):
                head, _, rest = name.removeprefix(prefix).partition("/")
                children[head] = "dir" if rest else children.get(head, "file")
        if not children:
            raise ApiError(404, basic_error(404, "Not Found"))
        return self._json([
            {"type": kind, "name": name, "path": prefix + name,
             "sha": blob_sha(tree[prefix + name]) if kind == "file" else None,
             "size": len(tree[prefix + name].encode()) if kind == "file" else 0,
             "url": f"{api}/{prefix}{name}?ref={sha}"}
            for name, kind in sorted(children.items())
        ])

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
        if errors:
            raise _validation_simple(errors)
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

    async def _h_edit_issue_comment(self, call: _Call) -> web.Response:
        pr, comment = self._find_issue_comment(call.repo, int(call.params["comment_id"]))
        body = call.body if isinstance(call.body, dict) else {}
        if not isinstance(body.get("body"), str) or not body["body"]:
            raise _validation_failed("IssueComment", "body", "missing_field")
        comment.body, comment.updated_at = body["body"], self._iso()
        return self._json(self._issue_comment_json(call.repo, pr, comment))

    # ------------------------------------------------------------------ handlers: GraphQL

    async def _h_graphql(self, call: _Call) -> web.Response:
        body = call.body if isinstance(call.body, dict) else {}
        query, variables = body.get("query"), body.get("variables") or {}
        if not isinstance(query, str):
            return self._json({"errors": [
                {"message": "A query attribute must be specified and must be a string."}]})
        try:
            operation = parse_graphql(query)
        except GraphQLSyntaxError as error:
            entry = {"message": str(error)}
            if error.location:
                entry["locations"] = [error.location]
            return self._json({"errors": [entry]})
        errors = validate_graphql(operation) + self._variable_errors(operation, variables)
        if errors:
            return self._json({"errors": errors})
        bound = {name: variables.get(name, default)
                 for name, (_, default) in operation.variables.items()}
        bound.update(variables)
        root = self._gql_root(call, operation.kind)
        errors = []
        data = _execute(root, operation.selections, bound, [], errors)
        return self._json({"data": data, "errors": errors} if errors else {"data": data})

    @staticmethod
    def _variable_errors(operation: GqlOperation, variables: dict[str, Any]
                         ) -> list[dict[str, Any]]:
        return [
            {"message": f"Variable ${name} of type {type_text} was provided invalid value",
             "extensions": {"value": None, "problems": [
                 {"path": [], "explanation": "Expected value to not be null"}]}}
            for name, (type_text, default) in operation.variables.items()
            if type_text.endswith("!") and variables.get(name, default) is None
        ]

    def _gql_root(self, call: _Call, kind: str) -> _Node:
        if kind == "mutation":
            return _Node("Mutation", {
                "resolveReviewThread": lambda a: self._gql_set_resolved(call, a, True),
                "unresolveReviewThread": lambda a: self._gql_set_resolved(call, a, False),
            })
        bucket = self._buckets["graphql"]
        return _Node("Query", {
            "repository": lambda a: self._gql_repository(call, a),
            "rateLimit": _Node("RateLimit", {
                "cost": 1, "limit": bucket.limit, "remaining": bucket.limit - bucket.used,
                "used": bucket.used, "resetAt": self._iso(bucket.reset), "nodeCount": 0,
            }),
        })

    def _gql_repository(self, call: _Call, args: dict[str, Any]) -> _Node:
        owner, name = args.get("owner"), args.get("name")
        try:
            repo = self._visible_repo(str(owner), str(name), call.token)
        except ApiError:
            raise GraphQLError(
                f"Could not resolve to a Repository with the name '{owner}/{name}'.") from None
        return _Node("Repository", {
            "id": _node_id("R", repo.id), "databaseId": repo.id, "name": repo.name,
            "nameWithOwner": repo.full_name, "url": f"https://github.com/{repo.full_name}",
            "owner": _Node("RepositoryOwner", {"login": repo.owner,
                                               "url": f"https://github.com/{repo.owner}"}),
            "pullRequest": lambda a: self._gql_pull_request(repo, a),
        })

    def _gql_pull_request(self, repo: _Repo, args: dict[str, Any]) -> _Node:
        pr = repo.prs.get(args.get("number"))
        if pr is None:
            raise GraphQLError(
                f"Could not resolve to a PullRequest with the number of {args.get('number')}.")
        state = "MERGED" if pr.merged else pr.state.upper()
        return _Node("PullRequest", {
            "id": _node_id("PR", repo.id * 1000 + pr.number), "number": pr.number,
            "title": pr.title, "state": state, "isDraft": pr.draft, "headRefOid": pr.head_sha,
            "baseRefOid": pr.base_sha,
            "url": f"https://github.com/{repo.full_name}/pull/{pr.number}",
            "reviewThreads": lambda a: _connection(
                "PullRequestReviewThreadConnection", "reviewThreads",
                [self._gql_thread(repo, pr, t) for t in self._visible_threads(pr)], a),
        })

    def _visible_threads(self, pr: _PullRequest) -> list[_Thread]:
        visible = {c.id for c in self._visible_comments(pr)}
        return [t for t in pr.threads if t.comment_ids[0] in visible]

    def _gql_actor(self, login: str) -> _Node:
        """GraphQL shows an App's bot as ``Bot`` with its slug, without REST's ``[bot]``."""
        if login == self.bot_login:
            return _Node("Bot", {"login": self.app_slug, "avatarUrl": None,
                                 "url": f"https://github.com/apps/{self.app_slug}"})
        return _Node("User", {"login": login, "url": f"https://github.com/{login}",
                              "avatarUrl": None, "id": _node_id("U", self._user(login)["id"])})

    def _gql_thread(self, repo: _Repo, pr: _PullRequest, thread: _Thread) -> _Node:
        view = self._thread_json(repo, pr, thread)
        top = self._comment_by_id(pr, thread.comment_ids[0])
        comments = [self._gql_comment(repo, pr, rest) for rest in view["comments"]]
        resolved = view["is_resolved"]
        return _Node("PullRequestReviewThread", {
            "id": thread.node_id, "isResolved": resolved, "isOutdated": view["is_outdated"],
            "isCollapsed": resolved, "path": top.path, "line": view["line"],
            "originalLine": top.line, "startLine": view["start_line"],
            "originalStartLine": top.start_line, "diffSide": top.side,
            "startDiffSide": top.start_side, "subjectType": "LINE",
            "viewerCanResolve": not resolved, "viewerCanUnresolve": resolved,
            "viewerCanReply": True,
            "resolvedBy": self._gql_actor(thread.resolved_by) if resolved else None,
            "comments": lambda a: _connection(
                "PullRequestReviewCommentConnection", "comments", comments, a),
            "pullRequest": lambda a: self._gql_pull_request(repo, {"number": pr.number}),
        })

    def _gql_comment(self, repo: _Repo, pr: _PullRequest, rest: dict[str, Any]) -> _Node:
        reply_to = rest.get("in_reply_to_id")
        return _Node("PullRequestReviewComment", {
            "id": rest["node_id"], "databaseId": rest["id"], "fullDatabaseId": str(rest["id"]),
            "body": rest["body"], "createdAt": rest["created_at"],
            "updatedAt": rest["updated_at"], "url": rest["html_url"], "path": rest["path"],
            "line": rest["line"], "originalLine": rest["original_line"],
            "startLine": rest["start_line"], "originalStartLine": rest["original_start_line"],
            "outdated": rest["line"] is None, "diffHunk": rest["diff_hunk"],
            "author": self._gql_actor(rest["user"]["login"]),
            "replyTo": (lambda a: self._gql_comment(repo, pr, self._review_comment_json(
                repo, pr, self._comment_by_id(pr, reply_to)))) if reply_to else None,
            "commit": _Node("Commit", {"oid": rest["commit_id"]}),
            "originalCommit": _Node("Commit", {"oid": rest["original_commit_id"]}),
        })

    def _gql_set_resolved(self, call: _Call, args: dict[str, Any], resolved: bool) -> _Node:
        thread_id = (args.get("input") or {}).get("threadId")
        for repo in self._repos.values():
            if repo.installation_id != call.token.installation_id:
                continue
            for pr in repo.prs.values():
                for thread in self._visible_threads(pr):
                    if thread.node_id == thread_id:
                        thread.resolved_by = self.bot_login if resolved else None
                        payload = "ResolveReviewThreadPayload" if resolved else (
                            "UnresolveReviewThreadPayload")
                        return _Node(payload, {
                            "thread": self._gql_thread(repo, pr, thread),
                            "clientMutationId": (args.get("input") or {}).get("clientMutationId"),
                        })
        raise GraphQLError(f"Could not resolve to a node with the global id of '{thread_id}'")

