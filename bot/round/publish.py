"""Step three of a round: publish its plan on the forge, idempotently.

One review with the new defects inline, the bot's own threads resolved when their defect is
Resolved and any thread unresolved when its defect is back (``bot.round.threads``), a reply in
the thread of every tracked defect whose state changed, and the sticky summary edited in
place. Every body carries a hidden marker, so a round that runs again after
a crash skips what is already there. Publishing reads the ledger (thread roots, the defects'
states before this round) but never writes it: that is ``commit``'s job, once all is posted.
"""

from __future__ import annotations

import logging

from tracker import learnings
from tracker.lifecycle import State
from tracker.models import Decision, Defect, Finding, SignalKind
from tracker.store import LedgerStore

from ..forge import Comment, Forge, InlineComment, NotFound, Unprocessable
from ..pr import hedge, render, summary, unreviewed
from ..review.engine import model_silence_note
from ..store.offload import off_loop
from .plan import RoundPlan, RoundRecord
from .threads import sync_threads

__all__ = ["body_sha", "post_summary", "publish", "summary_body"]

log = logging.getLogger(__name__)


async def publish(forge: Forge, store: LedgerStore, pr: dict, number: int, head: str,
                  plan: RoundPlan, *, bot_logins: set[str],
                  settings_error: str | None = None,
                  comments: list[Comment] | None = None) -> RoundRecord:
    """Post round ``number``'s plan on the PR; what was posted (ids), for ``commit``.
    ``comments``: the PR's review comments as this attempt found them (saves a listing)."""
    record = RoundRecord(not_inline=list(plan.posted.not_inline))
    if comments is None:
        comments = await forge.review_comments(pr["number"])
    posted = _markers(comments, bot_logins)
    await _post_review(forge, pr, number, head, plan, posted, record)
    comments = await forge.review_comments(pr["number"])
    posted = _markers(comments, bot_logins)
    record.new = {key: cid for (kind, key, r), cid in posted.items()
                  if kind == "new" and r == number}
    # Threads of defects that are back unfold before their reply ("D1 is back" must not land
    # in a folded thread); threads of resolved ones fold after it (on GitLab a note added to
    # a resolved discussion would leave it unresolved).
    # Resolved on an unsure ruling: the reply asks, and the thread stays open for the answer
    unsure = await off_loop(store, hedge.hedged, store, pr["id"], plan.decisions, number)
    await _sync_threads(forge, store, pr, plan, record, fold=False)
    said = _last_said(comments, bot_logins)
    await _post_replies(forge, store, pr, number, plan, posted, said, record, unsure)
    await _sync_threads(forge, store, pr, plan, record, fold=True, unsure=unsure)
    body = await off_loop(store, summary_body, store, pr["id"], number, head, plan,
                          settings_error, record)
    record.summary_id = await post_summary(forge, pr["number"], body, bot_logins)
    record.summary_sha = body_sha(body)
    return record


def body_sha(body: str) -> str:
    """What a summary shows, in a few bytes (to tell whether a re-render changed it)."""
    import hashlib

    return hashlib.sha256(body.encode("utf-8")).hexdigest()[:32]


async def _post_review(forge: Forge, pr: dict, number: int, head: str, plan: RoundPlan,
                       posted: dict, record: RoundRecord) -> None:
    comments = [_inline(item.key, item.finding, number) for item in plan.new
                if item.finding.path is not None and item.finding.line_start is not None
                and ("new", item.key, number) not in posted]
    if not comments:
        return
    body = f"roundwise round {number}: {len(comments)} new defect" \
           f"{'s' * (len(comments) != 1)}. " \
           f"{render.marker('review', '-', number)}"
    try:
        await forge.create_review(pr["number"], head, body, comments)
        return
    except Unprocessable as exc:
        log.warning("the forge rejected the review of round %d (%s); posting one by one",
                    number, exc.errors or exc)
    dropped = []
    for comment in comments:
        for attempt in _fallbacks(comment):
            try:
                await forge.create_review(pr["number"], head, body, [attempt])
                break
            except Unprocessable:
                continue
        else:
            dropped.append(comment.body.split("**")[1])
    record.not_inline = dropped


async def _post_replies(forge: Forge, store: LedgerStore, pr: dict, number: int, plan: RoundPlan,
                        posted: dict, said: dict, record: RoundRecord,
                        unsure: set[str] = frozenset()) -> None:
    defects = {d.key: d for d in await off_loop(store, store.defects, pr["id"])}
    complete = {r["number"] for r in await off_loop(store, store.rounds, pr["id"])
                if r["status"] == "complete"}
    for decision in plan.decisions:
        defect = defects.get(decision.key)
        if defect is None or not _needs_reply(defect, decision):
            continue
        root = await off_loop(store, store.thread_root, pr["id"], decision.key)
        if root is None:
            continue
        reply_id = posted.get(("state", decision.key, number))  # posted before a crash
        last = said.get(decision.key)
        if reply_id is None and last is not None and last[0] not in complete and \
                last[0] != number and last[1] == str(decision.state):
            # an earlier round said this, then died before the ledger knew: not said twice
            reply_id = last[2]
        if reply_id is None:
            try:
                reply_id = await forge.reply(pr["number"], root["id"],
                                             render.state_reply(defect, decision, number,
                                                                hedged=decision.key in unsure))
            except NotFound:  # someone deleted the thread: the summary carries the change
                log.info("the thread of %s is gone; its change goes in the summary",
                         decision.key)
                record.vanished.append(decision.key)
                continue
        record.replies[decision.key] = reply_id


async def _sync_threads(forge: Forge, store: LedgerStore, pr: dict, plan: RoundPlan,
                        record: RoundRecord, *, fold: bool,
                        unsure: set[str] = frozenset()) -> None:
    """``fold``: resolve the bot's threads of defects this round resolves; else unresolve the
    threads of defects that are back (so "D1 is back" is not posted into a folded thread)."""
    decided = {d.key: d.state for d in plan.decisions}
    wanted = {}
    for defect in await off_loop(store, store.defects, pr["id"]):
        state = decided.get(defect.key)
        if fold and state is State.RESOLVED and defect.origin.value == "bot" and \
                defect.state is not State.RESOLVED and defect.key not in unsure:
            wanted[defect.key] = True
        elif not fold and state is State.REOPENED and defect.state is State.RESOLVED:
            wanted[defect.key] = False
    record.threads.update(await sync_threads(forge, store, pr, wanted))


def summary_body(store: LedgerStore, pr_id: int, number: int, head: str, plan: RoundPlan | None,
                 settings_error: str | None = None, record: RoundRecord | None = None) -> str:
    """The sticky summary: every defect with this round's plan laid over the ledger. With no
    plan (a person changed the ledger after the round), the ledger alone, with the round's
    saved plan for what only the plan knows (notes, what was held back or not posted)."""
    rows, changes = summary.gather(store, pr_id, number, plan)
    shown = plan
    if plan is None:
        saved = store.plan(pr_id, number)
        shown = RoundPlan.from_json(saved) if saved else None
        record = record or (shown.posted if shown else None)
    notes = []
    if shown and shown.usage.failed:  # never a silent round without the model
        notes.append(f"⚠️ {model_silence_note(number, shown.usage)}")
    if record and record.not_inline:
        notes.append("GitHub would not take these as inline comments: "
                     + ", ".join(record.not_inline) + ".")
    for note in summary.notes_to_show(store, pr_id, number, shown.notes if shown else [], rows):
        notes.append(f"ℹ️ **Note:** {note} (Set `require_tests: true` in "
                     "`.github/roundwise.yml` to track this as a defect.)")
    if record and record.vanished:
        notes.append("These defects' threads were deleted on GitHub; their changes are shown "
                     "here only: " + ", ".join(record.vanished) + ".")
    if settings_error:
        notes.append(f"⚠️ {settings_error}; using the defaults.")
    notes += [f"⚠️ {note}" for note in (shown.skipped if shown else [])]  # bot.config.bounds
    if shown and (shown.unreviewed or shown.unlisted):  # and which files, why (bot.forge.coverage)
        notes.append("\n".join(unreviewed.summary_note(
            *unreviewed.read({"unreviewed": shown.unreviewed, "unlisted": shown.unlisted}))))
    pr = store.pull_request_by_id(pr_id)
    held, notices = _held(store, pr_id, number, shown)
    return summary.render(rows, changes, repo=pr["repo"], number=pr["number"],
                          round_number=number, head=head, notes=notes,
                          marker=render.SUMMARY_MARKER,
                          commands=render.commands(summary.open_keys(rows)),
                          overview=summary.overview(store, pr_id, number, plan, rows),
                          held=held, notices=notices)


def _held(store: LedgerStore, pr_id: int, number: int, plan: RoundPlan | None
          ) -> tuple[list[summary.Held], list[str]]:
    """The round's held-back findings and, per muted kind among them, its notice (the kinds
    unmuted since are no longer announced)."""
    if plan is None or not plan.held:
        return [], []
    pr = store.pull_request_by_id(pr_id)
    still = learnings.muted(store, pr["repo"])
    after, floor = (plan.converge + [None, None])[:2]
    held = []
    for finding, why in plan.held_findings():
        kind = learnings.kind_of(finding.rule, finding.type)
        reason = (f"below {floor} after round {after} (`converge`)" if why == "converge"
                  else f"`{kind}` muted here" + ("" if kind in still else " (unmuted since)"))
        held.append(summary.Held(finding.severity, finding.type, finding.description,
                                 finding.path, finding.line_start, finding.line_end, reason))
    repo = learnings.learning_repo(pr["repo"])
    notices = [learnings.Learning(repo, kind, *counts).notice()
               for kind, counts in sorted(plan.muted.items()) if kind in still]
    if after is not None:
        notices.append(f"🧭 Converging: after round {after}, new findings below {floor} are "
                       "held back (`converge` in `.github/roundwise.yml`).")
    return held, notices


async def post_summary(forge: Forge, number: int, body: str, bot_logins: set[str]) -> int:
    """Edit the PR's sticky summary comment in place, or create it the first time; its id."""
    for comment in await forge.issue_comments(number):
        if comment.author in bot_logins and render.SUMMARY_MARKER in comment.body:
            if comment.body != body:
                await forge.edit_issue_comment(comment.id, body)
            return comment.id
    return await forge.create_issue_comment(number, body)






def _needs_reply(defect: Defect, decision: Decision) -> bool:
    """Reply in a thread when the state changed, or when a claimed fix is not in the code."""
    previous = defect.state
    if decision.state is previous:
        return False
    if previous is State.NEW and decision.state is State.OPEN:
        claimed = any(str(SignalKind.AUTHOR_CLAIMS_FIXED) in s for s in decision.signals)
        return claimed or decision.rule.endswith("+overturned")
    return True


def _inline(key: str, finding: Finding, number: int) -> InlineComment:
    start = finding.line_start if finding.line_start < finding.line_end else None
    return InlineComment(finding.path, finding.line_end, finding.side,
                         render.inline_comment(key, finding, number), start_line=start)


def _fallbacks(comment: InlineComment) -> list[InlineComment]:
    """The comment as it is, then re-anchored to its last line alone."""
    if comment.start_line is None:
        return [comment]
    return [comment, comment.last_line_only()]


def _last_said(comments: list[Comment], bot_logins: set[str]
               ) -> dict[str, tuple[int, str, int]]:
    """Per defect, the bot's latest state reply: (round, the state it announced, comment id)."""
    out: dict[str, tuple[int, str, int]] = {}
    for c in comments:
        found = render.read_marker(c.body) if c.author in bot_logins else None
        became = render.read_became(c.body) if found else None
        if found and found[0] == "state" and became and \
                (found[1] not in out or found[2] >= out[found[1]][0]):
            out[found[1]] = (found[2], became, c.id)
    return out


def _markers(comments: list[Comment], bot_logins: set[str]) -> dict[tuple[str, str, int], int]:
    out = {}
    for c in comments:
        if c.author not in bot_logins:
            continue
        found = render.read_marker(c.body)
        if found:
            out.setdefault(found, c.id)
    return out
