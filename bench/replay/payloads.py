"""Webhook deliveries built from a FakeGitHub's state, shaped like GitHub's real payloads.

The fake never sends webhooks itself: a test or the bench builds a payload here, encodes it,
signs it with ``headers`` and posts it to the bot, exactly as GitHub would. Shapes follow the
octokit/webhooks examples in the shared fixtures (``action``, the object, ``repository``,
``installation`` and ``sender``), with objects taken from the fake's REST views so ids and shas
agree with what the API then serves.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import uuid
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bench.fake_github import FakeGitHub


def _context(fake: FakeGitHub, repo: str) -> dict[str, Any]:
    """The ``repository`` and ``installation`` parts every App delivery carries."""
    repository = fake.repo_json(repo)
    installation = fake.installation_json(fake.installation_of(repo))
    return {
        "repository": repository,
        "installation": {"id": installation["id"], "node_id": installation["node_id"]},
    }


def pull_request(fake: FakeGitHub, repo: str, number: int, action: str,
                 before: str | None = None, *, sender: str | None = None,
                 changes: dict[str, Any] | None = None) -> dict[str, Any]:
    """A ``pull_request`` delivery. ``synchronize`` carries ``before`` (default: the previous
    pushed head, or the base sha after the first push) and ``after`` (the current head);
    ``edited`` carries ``changes``. The sender defaults to the PR's author."""
    pr = fake.pr_json(repo, number)
    payload: dict[str, Any] = {"action": action, "number": number, "pull_request": pr}
    if action == "synchronize":
        heads = fake.pushed_heads(repo, number)
        payload["before"] = before or (heads[-2] if len(heads) > 1 else pr["base"]["sha"])
        payload["after"] = pr["head"]["sha"]
    if action == "edited":
        payload["changes"] = changes or {}
    payload.update(_context(fake, repo))
    payload["sender"] = fake.user_json(sender or pr["user"]["login"])
    return payload


def review_comment(fake: FakeGitHub, repo: str, number: int, comment: dict[str, Any],
                   action: str = "created", *, changes: dict[str, Any] | None = None
                   ) -> dict[str, Any]:
    """A ``pull_request_review_comment`` delivery for a REST-shaped review comment."""
    payload: dict[str, Any] = {
        "action": action,
        "comment": comment,
        "pull_request": fake.pr_json(repo, number),
        **_context(fake, repo),
        "sender": fake.user_json(comment["user"]["login"]),
    }
    if action == "edited":
        payload["changes"] = changes or {}
    return payload


def review(fake: FakeGitHub, repo: str, number: int, review: dict[str, Any],
           action: str = "submitted") -> dict[str, Any]:
    """A ``pull_request_review`` delivery; the review's ``state`` is lower case as in webhooks."""
    body = dict(review, state=review["state"].lower())
    return {
        "action": action,
        "review": body,
        "pull_request": fake.pr_json(repo, number),
        **_context(fake, repo),
        "sender": fake.user_json(review["user"]["login"]),
    }


def review_thread(fake: FakeGitHub, repo: str, number: int, thread: dict[str, Any],
                  action: str, *, sender: str | None = None) -> dict[str, Any]:
    """A ``pull_request_review_thread`` delivery (``resolved``/``unresolved``) for a thread from
    ``FakeGitHub.threads`` or ``resolve_thread``. The sender defaults to who resolved it, else
    the PR's author."""
    pr = fake.pr_json(repo, number)
    who = sender or thread.get("resolved_by") or pr["user"]["login"]
    return {
        "action": action,
        "pull_request": pr,
        "thread": {"node_id": thread["node_id"], "comments": thread["comments"]},
        **_context(fake, repo),
        "sender": fake.user_json(who),
    }


def issue_comment(fake: FakeGitHub, repo: str, number: int, comment: dict[str, Any],
                  action: str = "created", *, changes: dict[str, Any] | None = None
                  ) -> dict[str, Any]:
    """An ``issue_comment`` delivery on the PR; ``issue.pull_request`` marks it as a PR."""
    payload: dict[str, Any] = {
        "action": action,
        "issue": fake.issue_json(repo, number),
        "comment": comment,
        **_context(fake, repo),
        "sender": fake.user_json(comment["user"]["login"]),
    }
    if action == "edited":
        payload["changes"] = changes or {}
    return payload


def installation(action: str, installation_id: int, account: str | dict[str, Any], *,
                 repositories: list[str] | None = None, app_id: int | None = None
                 ) -> dict[str, Any]:
    """An ``installation`` delivery (created, deleted, suspend, ...). ``account`` is a login or
    a user object; ``repositories`` are full names of the selected repositories."""
    if isinstance(account, str):
        digest = int(hashlib.sha1(account.encode()).hexdigest()[:7], 16)
        account = {"login": account, "id": digest, "type": "User"}
    repos = [
        {"id": int(hashlib.sha1(name.encode()).hexdigest()[:7], 16),
         "name": name.split("/")[1], "full_name": name, "private": False}
        for name in repositories or []
    ]
    return {
        "action": action,
        "installation": {
            "id": installation_id,
            "account": account,
            "repository_selection": "selected" if repositories else "all",
            "app_id": app_id,
            "target_id": account.get("id"),
            "target_type": account.get("type", "User"),
            "permissions": {"contents": "read", "issues": "write", "metadata": "read",
                            "pull_requests": "write"},
            "events": ["pull_request", "pull_request_review", "pull_request_review_comment",
                       "pull_request_review_thread", "issue_comment"],
            "suspended_at": None,
        },
        "repositories": repos,
        "sender": {"login": account["login"], "id": account.get("id"), "type": "User"},
    }


def encode(payload: dict[str, Any]) -> bytes:
    """The delivery body: the payload as compact JSON bytes."""
    return json.dumps(payload, separators=(",", ":")).encode()


def sign(body: bytes, secret: str) -> str:
    """``X-Hub-Signature-256`` for ``body``: ``sha256=`` + hex HMAC-SHA256 keyed by ``secret``."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def headers(event: str, body: bytes | str, secret: str, delivery_id: str | None = None
            ) -> dict[str, str]:
    """The headers GitHub sends with a delivery of ``body`` (a new uuid4 delivery id if None).

    Names use GitHub's casing; lower-case them before calling gidgethub's
    ``Event.from_http`` directly (HTTP servers compare names case-insensitively).
    """
    data = body.encode() if isinstance(body, str) else body
    return {
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery_id or str(uuid.uuid4()),
        "X-GitHub-Hook-ID": "1",
        "X-Hub-Signature-256": sign(data, secret),
        "Content-Type": "application/json",
        "User-Agent": "GitHub-Hookshot/fake",
    }
