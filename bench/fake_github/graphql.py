"""The fake GitHub's GraphQL: a small parser, validator and executor for the subset the bot
sends (review threads and their comments, resolving threads), over the fake's state.
"""

from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aiohttp import web

if TYPE_CHECKING:
    from .rest import _Call

from .state import ApiError, _node_id, _PullRequest, _Repo, _Thread


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


class GraphQLApi:
    """``POST /graphql``: the review-thread queries and resolve/unresolve mutations the bot sends."""

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
        bucket = self._bucket(self._who(call.request), "graphql")
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
