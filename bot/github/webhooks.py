"""``POST /webhook``: verify, validate, record and enqueue GitHub deliveries, and answer at once.

The signature (``X-Hub-Signature-256``, HMAC-SHA256 of the raw body with the webhook secret) is
checked in constant time before anything else is read: missing or wrong → 401. A body that is
not JSON, lacks the fields its event needs or names a repository GitHub could not have → 400. Events the bot does not handle → 200 and
ignored. A valid delivery is recorded in the ledger and turned into a job; a delivery already
processed (GitHub reuses the id when one is redelivered) → 200 and nothing more.
"""

from __future__ import annotations

import hashlib
import hmac
import logging

from aiohttp import web

from tracker.intake import MAX_COMMENT

from ..forge.appkeys import STATE, UNVERIFIED
from ..forge.body import BodyRefused, parse_payload, still_arriving
from ..forge.delivery import BadPayload, Route, field
from ..forge.unverified import Refused
from ..jobs.slash_commands import parse_command
from ..observe import metrics
from .client import valid_full_name
from .signature import read_signed

log = logging.getLogger(__name__)

ROUND_ACTIONS = {"opened", "reopened", "ready_for_review", "synchronize"}
EVENTS = {"ping", "installation", "installation_repositories", "pull_request",
          "pull_request_review", "pull_request_review_comment", "pull_request_review_thread",
          "issue_comment"}


def verify_signature(body: bytes, header: str | None, secret: str) -> bool:
    """Constant-time check of ``sha256=<hex>`` against the body's HMAC with ``secret``."""
    if not header or not header.startswith("sha256="):
        return False
    expected = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected.encode(), header.strip().encode())


def _pr_fields(payload: dict, number_path: str) -> tuple[str, int, int]:
    """Repository, PR number and installation id: an App cannot act on a PR without all three."""
    repo = _repo_name(payload)
    number = field(payload, number_path, int)
    return repo, number, field(payload, "installation.id", int)


def _repo_name(payload: dict) -> str:
    """``repository.full_name``, refused unless it is an owner/name GitHub could have made: it
    goes into API URLs."""
    repo = field(payload, "repository.full_name", str)
    if not valid_full_name(repo):
        raise BadPayload("repository.full_name must be owner/name in GitHub's characters")
    return repo


def route(event: str, payload: dict, bot_logins: set[str]) -> Route:
    """Decide what a delivery means; raises BadPayload when required fields are missing."""
    action = payload.get("action")
    sender = payload.get("sender") or {}
    if event == "ping":
        return Route(None, reason="ping")
    if event == "installation" or event == "installation_repositories":
        return Route("installation", installation_id=field(payload, "installation.id", int),
                     payload={"action": action, "installation": payload["installation"],
                              "event": event})
    if event == "pull_request":
        repo, number, inst = _pr_fields(payload, "pull_request.number")
        head = field(payload, "pull_request.head.sha", str)
        if action in ROUND_ACTIONS:
            return Route("round", repo, number, inst, head, {"action": action})
        if action == "closed":
            merged = bool(payload["pull_request"].get("merged"))
            return Route("closed", repo, number, inst, head, {"merged": merged})
        return Route(None, reason=f"pull_request {action} is not handled")
    if event in ("check_run", "check_suite"):
        return _rerequest(event, action, payload)
    if sender.get("login") in bot_logins:
        return Route(None, reason="the bot's own activity")
    if event == "pull_request_review_comment":
        repo, number, inst = _pr_fields(payload, "pull_request.number")
        comment = _capped(field(payload, "comment", dict))
        field(payload, "comment.id", int)
        return Route("comment", repo, number, inst, None,
                     {"action": action, "kind": "review_comment", "comment": comment,
                      "pr_author": (payload["pull_request"].get("user") or {}).get("login")})
    if event == "pull_request_review":
        repo, number, inst = _pr_fields(payload, "pull_request.number")
        review = field(payload, "review", dict)
        field(payload, "review.id", int)
        approved = str(review.get("state") or "").lower() == "approved"
        if action not in ("submitted", "edited") or not (
                (review.get("body") or "").strip() or approved):
            return Route(None, reason="a review without a body")  # an approval is evidence
        return Route("comment", repo, number, inst, None,
                     {"action": action, "kind": "review", "comment": _capped(review),
                      "pr_author": (payload["pull_request"].get("user") or {}).get("login")})
    if event == "pull_request_review_thread":
        repo, number, inst = _pr_fields(payload, "pull_request.number")
        thread = field(payload, "thread", dict)
        if action not in ("resolved", "unresolved"):
            return Route(None, reason=f"thread {action} is not handled")
        return Route("thread", repo, number, inst, None,
                     {"action": action, "node_id": thread.get("node_id"),
                      "comment_ids": [c.get("id") for c in thread.get("comments") or []
                                      if isinstance(c, dict)],
                      "by": sender.get("login")})
    if event == "issue_comment":
        issue = field(payload, "issue", dict)
        if not issue.get("pull_request"):
            return Route(None, reason="a comment on an issue, not a pull request")
        repo, number, inst = _pr_fields(payload, "issue.number")
        comment = _capped(field(payload, "comment", dict))
        field(payload, "comment.id", int)
        pr_author = (issue.get("user") or {}).get("login")
        if action == "created" and parse_command(comment.get("body")):
            return Route("command", repo, number, inst, None,
                         {"comment": comment, "pr_author": pr_author})
        return Route("comment", repo, number, inst, None,
                     {"action": action, "kind": "issue_comment", "comment": comment,
                      "pr_author": pr_author})
    return Route(None, reason=f"event {event} is not handled")


def _capped(comment: dict) -> dict:
    """The comment as the job keeps it: its body cut to what the ledger takes in."""
    body = comment.get("body")
    if isinstance(body, str) and len(body) > MAX_COMMENT:
        return {**comment, "body": body[:MAX_COMMENT]}
    return comment


def _rerequest(event: str, action: str | None, payload: dict) -> Route:
    """"Re-run" on the bot's check run or check suite: review the pull request's head again.
    A check run's ``pull_requests`` may be empty (e.g. from a fork): the job then finds the PR
    in the ledger by the check run's id or head."""
    if action != "rerequested":
        return Route(None, reason=f"{event} {action} is not handled")
    repo = _repo_name(payload)
    inst = field(payload, "installation.id", int)
    head = field(payload, f"{event}.head_sha", str)
    item = payload[event]
    numbers = [p["number"] for p in item.get("pull_requests") or []
               if isinstance(p, dict) and isinstance(p.get("number"), int)]
    return Route("rerequest", repo, numbers[0] if numbers else None, inst, head,
                 {"numbers": numbers, "head_sha": head,
                  "check_run_id": item.get("id") if event == "check_run" else None})


def _label(event: str) -> str:
    """The event as a metric label: anyone can send any header, so only known names count."""
    return event if event in EVENTS else "other"


def _arriving(request: web.Request) -> bool:
    """Whether reading the body means waiting for it: a signed body not here yet, and not one
    ``read_signed`` refuses from its headers alone (compressed, too large)."""
    return bool(request.headers.get("X-Hub-Signature-256")) and still_arriving(request)


async def handle_webhook(request: web.Request) -> web.Response:
    state = request.app[STATE]
    event = request.headers.get("X-GitHub-Event", "")
    try:  # bot.forge.body: no inflating, a size cap and a deadline before the signature
        if not _arriving(request):
            body = await read_signed(request, state.config.webhook_secret)
        else:  # still arriving: under the budget of unverified bodies (bot.forge.unverified)
            with request.app[UNVERIFIED].slot(request.remote, request.transport):
                body = await read_signed(request, state.config.webhook_secret)
    except Refused as exc:
        metrics.DELIVERIES.labels(event=_label(event), outcome="refused").inc()
        return web.json_response({"error": exc.reason}, status=exc.status,
                                 headers={"Connection": "close", "Retry-After": "1"})
    except BodyRefused as exc:
        metrics.DELIVERIES.labels(event=_label(event), outcome="refused").inc()
        return web.json_response({"error": exc.reason}, status=exc.status,
                                 headers={"Connection": "close"})
    if body is None:
        metrics.DELIVERIES.labels(event=_label(event), outcome="bad_signature").inc()
        return web.json_response({"error": "signature missing or wrong"}, status=401)
    delivery = request.headers.get("X-GitHub-Delivery", "")
    if not event or not delivery:
        metrics.DELIVERIES.labels(event=_label(event), outcome="bad_request").inc()
        return web.json_response({"error": "X-GitHub-Event and X-GitHub-Delivery are required"},
                                 status=400)
    try:
        payload = parse_payload(body)
        if not isinstance(payload, dict):
            raise BadPayload("the body must be a JSON object")
        target = route(event, payload, state.config.bot_logins)
    except (ValueError, BadPayload) as exc:
        metrics.DELIVERIES.labels(event=_label(event), outcome="bad_request").inc()
        return web.json_response({"error": f"bad payload: {exc}"}, status=400)
    if target.kind is None:
        metrics.DELIVERIES.labels(event=_label(event), outcome="ignored").inc()
        return web.json_response({"ignored": target.reason})
    action = payload.get("action")
    # The parsed body is thousands of objects: freed now, not held (and walked by every
    # garbage collection) while the delivery waits for its batch's commit.
    del payload
    queue = state.queue
    job_id = await queue.accept_soon(delivery, event, action, target.kind,
                                     repo=target.repo, number=target.number,
                                     installation_id=target.installation_id,
                                     payload=target.payload, head_sha=target.head_sha)
    if job_id is None:
        metrics.DELIVERIES.labels(event=_label(event), outcome="duplicate").inc()
        return web.json_response({"duplicate": delivery})
    metrics.DELIVERIES.labels(event=_label(event), outcome="queued").inc()
    return web.json_response({"queued": job_id}, status=202)
