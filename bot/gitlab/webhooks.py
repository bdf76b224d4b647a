"""``POST /gitlab/webhook``: authenticate, validate, record and enqueue GitLab hooks.

GitLab signs nothing by default: a hook carries the webhook's secret token itself in
``X-Gitlab-Token``. It is compared with ``GITLAB_WEBHOOK_SECRET`` in constant time before a
byte of the body is read (missing or wrong → 401). GitLab's newer signing token is accepted
too: a hook with ``webhook-signature`` (Standard Webhooks: ``v1,<base64 HMAC-SHA256 of
"{webhook-id}.{webhook-timestamp}.{body}">``, the timestamp within five minutes) is checked
against ``GITLAB_WEBHOOK_SIGNING_TOKEN`` once its body is read; a wrong signature is a 401 even
when the token matched. Bodies are bounded as on ``/webhook`` (no compression, 25 MB, 10 s,
spooled to disk past 256 KB). A hook with the right token is authenticated before its body is
read; one carrying a signature alone is not until the body is whole, so while it arrives it
holds a slot of the same budget of unverified bodies as GitHub's (``bot.forge.unverified``:
past 16 from one address 429, past 128 in all 503, at once), and a stale timestamp is refused
before a byte is read.

Merge Request hooks open rounds (``open``, ``reopen``, and ``update`` with ``oldrev``: a push)
or close the MR; an ``update`` without a push reads the MR's discussions again (GitLab sends no
hook for resolving one thread); Note hooks on merge requests become people's comments or
``/roundwise`` commands; Push hooks review the open MRs of the pushed branch. A hook is recorded
once by ``Idempotency-Key`` (else ``X-Gitlab-Event-UUID``): a redelivery is answered 200 and
does nothing more. Everything lands in the same durable queue as GitHub's deliveries.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import time

from aiohttp import web

from ..forge.appkeys import STATE, UNVERIFIED
from ..forge.body import Authenticated, BodyRefused, parse_payload, read_verified, still_arriving
from ..forge.delivery import BadPayload, Route, field
from ..forge.unverified import Refused
from ..observe import metrics
from .ids import REPO_PREFIX, repo_key, valid_project_path

__all__ = ["GITLAB_APP", "MAX_SKEW", "handle_gitlab_webhook", "route", "verify_signature"]

log = logging.getLogger(__name__)

GITLAB_APP = web.AppKey("roundwise_gitlab", object)
EVENTS = {"Merge Request Hook", "Note Hook", "Push Hook"}
MAX_SKEW = 300  # seconds a signed hook's timestamp may be off (Standard Webhooks' advice)
ZERO = "0" * 40


class StandardWebhookSignature:
    """A Standard Webhooks ``webhook-signature`` (space-separated ``v1,<base64>``) over
    ``{id}.{timestamp}.{body}`` with ``key``, checked as the body arrives."""

    def __init__(self, key: bytes, msg_id: str, stamp: str, header: str):
        self._mac = hmac.new(key, msg_id.encode() + b"." + stamp.encode() + b".",
                             hashlib.sha256)
        self._header = header

    def update(self, chunk: bytes) -> None:
        self._mac.update(chunk)

    def matches(self) -> bool:
        expected = base64.b64encode(self._mac.digest())
        return any(hmac.compare_digest(expected, part.partition(",")[2].encode())
                   for part in self._header.split() if part.startswith("v1,"))


def fresh(stamp: str, now: float) -> bool:
    """Whether a signed hook's ``webhook-timestamp`` is within ``MAX_SKEW`` of ``now``."""
    try:
        return abs(now - int(stamp)) <= MAX_SKEW
    except ValueError:
        return False


def verify_signature(key: bytes, body: bytes, msg_id: str, stamp: str, header: str,
                     now: float) -> bool:
    """A whole body's Standard Webhooks signature, its timestamp within ``MAX_SKEW``."""
    if not fresh(stamp, now):
        return False
    signature = StandardWebhookSignature(key, msg_id, stamp, header)
    signature.update(body)
    return signature.matches()


def _project(payload: dict) -> tuple[str, int]:
    path = field(payload, "project.path_with_namespace", str)
    if not valid_project_path(path):
        raise BadPayload("project.path_with_namespace must be a GitLab project path")
    return repo_key(path), field(payload, "project.id", int)


def route(event: str, payload: dict, bot_username: str | None) -> Route:
    """What a hook asks of the bot; raises BadPayload when required fields are missing."""
    if event == "Merge Request Hook":
        repo, project = _project(payload)
        attrs = field(payload, "object_attributes", dict)
        iid = field(payload, "object_attributes.iid", int)
        action = attrs.get("action")
        head = (attrs.get("last_commit") or {}).get("id")
        if action in ("open", "reopen") or (action == "update" and attrs.get("oldrev")):
            if not isinstance(head, str):
                raise BadPayload("object_attributes.last_commit.id is required")
            return Route("round", repo, iid, project, head,
                         {"action": {"open": "opened", "reopen": "reopened"}.get(
                             action, "synchronize")})
        if action in ("close", "merge"):
            return Route("closed", repo, iid, project, head, {"merged": action == "merge"})
        if action == "update":
            return Route("gitlab_sync", repo, iid, project, None, {})
        return Route(None, reason=f"merge request {action} is not handled")
    if event == "Note Hook":
        attrs = field(payload, "object_attributes", dict)
        if attrs.get("noteable_type") != "MergeRequest":
            return Route(None, reason="a note on something other than a merge request")
        if attrs.get("system"):
            return Route(None, reason="a system note")
        user = (payload.get("user") or {}).get("username")
        if bot_username and user == bot_username:
            return Route(None, reason="the bot's own note")
        repo, project = _project(payload)
        iid = field(payload, "merge_request.iid", int)
        field(payload, "object_attributes.id", int)
        note = {k: attrs.get(k) for k in ("id", "note", "type", "discussion_id", "position",
                                          "action", "created_at", "updated_at")}
        return Route("gitlab_note", repo, iid, project, None,
                     {"note": note, "user": {"username": user}})
    if event == "Push Hook":
        repo, project = _project(payload)
        ref, after = field(payload, "ref", str), payload.get("after")
        if not ref.startswith("refs/heads/"):
            return Route(None, reason="a push that is not to a branch")
        if not isinstance(after, str) or after == ZERO:
            return Route(None, reason="a deleted branch")
        return Route("gitlab_push", repo, None, project, after,
                     {"branch": ref.removeprefix("refs/heads/"), "after": after})
    return Route(None, reason=f"event {event} is not handled")


def _label(event: str) -> str:
    return {"Merge Request Hook": "gitlab_merge_request", "Note Hook": "gitlab_note",
            "Push Hook": "gitlab_push"}.get(event, "gitlab_other")


def _refuse(event: str, outcome: str, status: int, error: str, **headers) -> web.Response:
    metrics.DELIVERIES.labels(event=_label(event), outcome=outcome).inc()
    return web.json_response({"error": error}, status=status, headers=headers or None)


async def handle_gitlab_webhook(request: web.Request) -> web.Response:
    state = request.app[STATE]
    gitlab = request.app[GITLAB_APP]
    config = gitlab.config
    event = request.headers.get("X-Gitlab-Event", "")
    token = request.headers.get("X-Gitlab-Token")
    signature = request.headers.get("webhook-signature")
    token_ok = token is not None and bool(config.webhook_secret) and hmac.compare_digest(
        token.encode(), config.webhook_secret.encode())
    signed = signature is not None and config.signing_key is not None
    if (token is not None and not token_ok) or not (token_ok or signed):
        return _refuse(event, "bad_signature", 401, "X-Gitlab-Token missing or wrong")
    if signed and not fresh(request.headers.get("webhook-timestamp", ""), time.time()):
        return _refuse(event, "bad_signature", 401, "webhook-signature missing or wrong")
    check = StandardWebhookSignature(
        config.signing_key, request.headers.get("webhook-id", ""),
        request.headers.get("webhook-timestamp", ""), signature) if signed else Authenticated()
    try:  # bot.forge.body: no inflating, a size cap and a deadline, as on /webhook
        if token_ok or not still_arriving(request):
            body = await read_verified(request, check)
        else:  # a signature alone, its body still arriving: under the unverified budget
            with request.app[UNVERIFIED].slot(request.remote, request.transport):
                body = await read_verified(request, check)
    except Refused as exc:
        return _refuse(event, "refused", exc.status, exc.reason, Connection="close",
                       **{"Retry-After": "1"})
    except BodyRefused as exc:
        return _refuse(event, "refused", exc.status, exc.reason, Connection="close")
    if body is None:
        return _refuse(event, "bad_signature", 401, "webhook-signature missing or wrong")
    delivery = (request.headers.get("Idempotency-Key") or
                request.headers.get("X-Gitlab-Event-UUID") or
                request.headers.get("webhook-id") or "").strip()
    if not event or not delivery or len(delivery) > 200:
        return _refuse(event, "bad_request", 400,
                       "X-Gitlab-Event and X-Gitlab-Event-UUID (or Idempotency-Key) are required")
    try:
        payload = parse_payload(body)
        if not isinstance(payload, dict):
            raise BadPayload("the body must be a JSON object")
        target = route(event, payload, gitlab.client.known_username())
    except (ValueError, BadPayload) as exc:
        return _refuse(event, "bad_request", 400, f"bad payload: {exc}")
    if target.kind is None:
        metrics.DELIVERIES.labels(event=_label(event), outcome="ignored").inc()
        return web.json_response({"ignored": target.reason})
    action = (payload.get("object_attributes") or {}).get("action")
    del payload, body  # freed now, not held while the delivery waits for its batch's commit
    job_id = await state.queue.accept_soon(
        f"{REPO_PREFIX}{delivery}", event, action if isinstance(action, str) else None,
        target.kind, repo=target.repo, number=target.number,
        installation_id=target.installation_id, payload=target.payload,
        head_sha=target.head_sha)
    if job_id is None:
        metrics.DELIVERIES.labels(event=_label(event), outcome="duplicate").inc()
        return web.json_response({"duplicate": delivery})
    metrics.DELIVERIES.labels(event=_label(event), outcome="queued").inc()
    return web.json_response({"queued": job_id}, status=202)
