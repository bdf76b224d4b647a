"""Taking in what people do between rounds: comments, replies and thread resolutions.

The bot calls these when GitHub tells it about review comments, reviews, PR comments and
review threads; offline replays call them with a task's events. A reviewer's comment that asks
for a change becomes a tracked defect (origin human); a reply joins the defect of its thread
and may carry a signal (the author claims a fix, a reviewer disputes one); resolving a thread
resolves its defect. Decisions taken here are people's, so they are recorded as decided by a
human, in the PR's current round.
"""

from __future__ import annotations

from dataclasses import dataclass

from .dedupe import Position, match_finding
from .discussion import (
    human_finding,
    opens_with_thanks,
    raises_concern,
    reply_signal,
    still_not_done,
)
from .lifecycle import State
from .models import DecidedBy, Decision, Defect, Signal, SignalKind
from .store import LedgerStore

MAX_COMMENT = 65536  # characters of a comment taken in; the rest is dropped


@dataclass
class Comment:
    """A comment as the tracker needs it, whatever it came from (webhook or task event)."""

    id: int
    kind: str  # review_comment, review or issue_comment
    author: str | None
    body: str
    path: str | None = None
    line: int | None = None
    start_line: int | None = None
    side: str | None = "RIGHT"
    in_reply_to: int | None = None
    by_bot: bool = False
    node_id: str | None = None
    commit_id: str | None = None  # the head the comment's line numbers refer to
    review_state: str | None = None  # a review's verdict: APPROVED, CHANGES_REQUESTED, ...

    def __post_init__(self) -> None:
        # A comment is stored as the person wrote it, up to a bound (GitHub takes 65,536
        # characters; a webhook or task file could carry more).
        if self.body and len(self.body) > MAX_COMMENT:
            self.body = self.body[:MAX_COMMENT]
        # Lines come from outside (a webhook, a task file): a line below 1 anchors nothing,
        # and a start after the line (or without one) is dropped rather than trusted.
        if self.line is not None and self.line < 1:
            self.line = None
        if self.start_line is not None and (self.line is None or not
                                            1 <= self.start_line <= self.line):
            self.start_line = None


@dataclass
class Outcome:
    """What taking a comment did: ``action`` is raised, attached, updated or ignored."""

    action: str
    defect: Defect | None = None
    signal: SignalKind | None = None
    reason: str = ""


def take_comment(ledger: LedgerStore, pr_id: int, comment: Comment, *, pr_author: str | None,
                 code: str | None = None) -> Outcome:
    """Record one comment. ``code`` is the text of the lines an inline comment sits on."""
    round_number = ledger.current_round(pr_id)
    if comment.by_bot:
        return Outcome("ignored", reason="the bot's own comment")
    if comment.in_reply_to:
        outcome = _take_reply(ledger, pr_id, comment, round_number, pr_author, code)
    else:
        outcome = _take_top_level(ledger, pr_id, comment, round_number, pr_author, code)
    if not (pr_author and comment.author == pr_author):
        _follow_remarks(ledger, pr_id, comment, round_number, outcome)
    return outcome


def _follow_remarks(ledger: LedgerStore, pr_id: int, comment: Comment, round_number: int,
                    outcome: Outcome) -> None:
    """What a reviewer's comment after a push says about their own earlier remarks on the
    whole PR (which no thread follows): approving, or opening with thanks, says they were met;
    commenting elsewhere without coming back to them says so weakly."""
    if not comment.author:
        return
    mine = [d for d in ledger.defects(pr_id, include_ignored=False)
            if not d.anchored and d.state.unresolved and d.author == comment.author
            and d.raised_round < round_number
            and not (outcome.defect is not None and outcome.defect.key == d.key)]
    if not mine:
        return
    approves = (comment.review_state or "").upper() == "APPROVED" or (
        comment.kind in ("review", "issue_comment") and not comment.in_reply_to
        and opens_with_thanks(comment.body))
    if not approves and still_not_done(comment.body):
        return  # "this still needs ..." elsewhere: not a reviewer who has moved on
    kind = SignalKind.REVIEWER_APPROVES if approves else SignalKind.REVIEWER_MOVED_ON
    for defect in mine:
        ledger.add_signal(pr_id, defect, round_number,
                          Signal(kind, defect.key, comment.author, _quote(comment.body),
                                 comment.id))


def _take_top_level(ledger: LedgerStore, pr_id: int, comment: Comment, round_number: int,
                    pr_author: str | None, code: str | None) -> Outcome:
    known = ledger.defect_by_comment(pr_id, comment.id)
    if known is not None:  # an edit, or the same delivery again
        return Outcome("updated", ledger.set_description(pr_id, known.key, comment.body))
    if pr_author and comment.author == pr_author:
        return Outcome("ignored", reason="the PR author's own remark")
    inline = comment.kind == "review_comment" and bool(comment.path) and comment.line is not None
    if not raises_concern(comment.body, inline=inline):
        return Outcome("ignored", reason="does not ask for a change")
    if inline:
        finding = human_finding(comment.body, author=comment.author, path=comment.path,
                                line=comment.line, start_line=comment.start_line,
                                side=comment.side or "RIGHT", comment_id=None)
    else:
        finding = human_finding(comment.body, author=comment.author)
    same = match_finding(finding, [(d, Position(d.path, d.line_start, d.line_end))
                                   for d in ledger.defects(pr_id, include_ignored=False)],
                         code=code if inline else None)
    if same is not None:  # a person raising what is already tracked: the same defect
        ledger.attach_comment(same.id, comment.id, kind=comment.kind, author=comment.author,
                              body=comment.body, node_id=comment.node_id,
                              in_reply_to=comment.in_reply_to)
        defect, signal = ledger.defect(pr_id, same.key), None
        if round_number > defect.raised_round:
            signal = SignalKind.REVIEWER_REPEATS
            ledger.add_signal(pr_id, defect, round_number,
                              Signal(SignalKind.REVIEWER_REPEATS, defect.key, comment.author,
                                     comment.body, comment.id))
            if defect.state is State.RESOLVED:
                defect = _unresolve(ledger, pr_id, defect, round_number, "reviewer-repeats",
                                    f"{comment.author or 'a reviewer'} raised it again after "
                                    f"it was resolved: {_quote(comment.body)}")
        return Outcome("attached", defect, signal, reason=f"repeats {same.key}")
    with ledger.transaction():
        defect = ledger.add_defect(
            pr_id, finding, round_number, code=code if inline else None,
            rule=f"raised-by-{comment.kind.replace('_', '-')}",
            evidence=f"{comment.author or 'a reviewer'} raised it in comment {comment.id}",
            anchor_sha=comment.commit_id if inline else None,
        )
        if comment.in_reply_to:  # later replies point at the thread's first comment
            ledger.attach_comment(defect.id, comment.in_reply_to, kind=comment.kind)
        ledger.attach_comment(defect.id, comment.id, kind=comment.kind, author=comment.author,
                              body=comment.body, node_id=comment.node_id,
                              in_reply_to=comment.in_reply_to)
    return Outcome("raised", ledger.defect(pr_id, defect.key))


def _take_reply(ledger: LedgerStore, pr_id: int, comment: Comment, round_number: int,
                pr_author: str | None, code: str | None) -> Outcome:
    defect = ledger.defect_by_comment(pr_id, comment.in_reply_to)
    if defect is None:
        # A thread the ledger does not track (the author's own note, praise): a reviewer's
        # reply that asks for a change there is a new defect of its own.
        return _take_top_level(ledger, pr_id, comment, round_number, pr_author, code)
    ledger.attach_comment(defect.id, comment.id, kind=comment.kind, author=comment.author,
                          body=comment.body, in_reply_to=comment.in_reply_to,
                          node_id=comment.node_id)
    by_author = bool(pr_author) and comment.author == pr_author
    kind = reply_signal(comment.body, by_author=by_author,
                        after_push=round_number > defect.raised_round)
    if kind is None:
        return Outcome("attached", defect)
    ledger.add_signal(pr_id, defect, round_number,
                      Signal(kind, defect.key, comment.author, comment.body, comment.id))
    if kind is SignalKind.REVIEWER_DISPUTES and defect.state is State.RESOLVED:
        defect = _unresolve(ledger, pr_id, defect, round_number, "reviewer-disputes",
                            f"{comment.author} replied that it is not fixed: "
                            f"{_quote(comment.body)}")
    elif kind is SignalKind.AUTHOR_PROMISES and defect.state is State.RESOLVED \
            and round_number > defect.raised_round:
        defect = _unresolve(ledger, pr_id, defect, round_number, "author-promises",
                            f"{comment.author} says it is still to be done: "
                            f"{_quote(comment.body)}")
    return Outcome("attached", defect, kind)


def take_reaction(ledger: LedgerStore, pr_id: int, comment_id: int, thumbs_down: int) -> Outcome:
    """People gave the bot's comment that raised a defect a 👎 (seen when the bot lists its
    comments; GitHub sends no webhook for reactions): a dismissal of that finding, once."""
    if thumbs_down <= 0:
        return Outcome("ignored", reason="no 👎")
    defect = ledger.defect_by_comment(pr_id, comment_id)
    if defect is None or defect.origin.value != "bot":
        return Outcome("ignored", reason="not a comment that raised a bot finding")
    root = ledger.thread_root(pr_id, defect.key)
    if root is None or root["id"] != comment_id:
        return Outcome("ignored", reason="a reply, not the finding's comment")
    if any(r["kind"] == str(SignalKind.THUMBS_DOWN) for r in ledger.signal_rows(pr_id, defect.key)):
        return Outcome("ignored", defect, reason="already counted")
    ledger.add_signal(pr_id, defect, ledger.current_round(pr_id),
                      Signal(SignalKind.THUMBS_DOWN, defect.key, None, f"👎 x{thumbs_down}",
                             comment_id))
    return Outcome("updated", defect, SignalKind.THUMBS_DOWN)


def take_thread(ledger: LedgerStore, pr_id: int, *, resolved: bool, by: str | None,
                node_id: str | None = None, comment_ids: list[int] = ()) -> Outcome:
    """A review thread was resolved or unresolved on GitHub."""
    defect = ledger.defect_by_thread(pr_id, node_id) if node_id else None
    for cid in comment_ids:
        defect = defect or ledger.defect_by_comment(pr_id, cid)
    if defect is None:
        return Outcome("ignored", reason="a thread the ledger does not track")
    if node_id and not defect.thread_node_id:
        ledger.set_thread(pr_id, defect.key, node_id)
    round_number = ledger.current_round(pr_id)
    kind = SignalKind.THREAD_RESOLVED if resolved else SignalKind.THREAD_UNRESOLVED
    ledger.add_signal(pr_id, defect, round_number, Signal(kind, defect.key, by))
    if resolved and defect.state is not State.RESOLVED:
        defect = ledger.record_decision(
            pr_id, round_number,
            Decision(defect.key, State.RESOLVED, str(kind), f"{by or 'a person'} resolved the "
                     "review thread", decided_by=DecidedBy.HUMAN),
        )
    elif not resolved and defect.state is State.RESOLVED:
        defect = _unresolve(ledger, pr_id, defect, round_number, str(kind),
                            f"{by or 'a person'} unresolved the review thread")
    return Outcome("updated", defect, kind)


def _unresolve(ledger: LedgerStore, pr_id: int, defect: Defect, round_number: int, rule: str,
               evidence: str) -> Defect:
    """Undo a resolution at the current round: back to what the defect was, or Reopened."""
    if round_number <= defect.raised_round:
        state = State.NEW
    else:
        previous = ledger.previous_state(defect, round_number)
        state = State.REOPENED if previous is State.RESOLVED else State.OPEN
    return ledger.record_decision(
        pr_id, round_number,
        Decision(defect.key, state, rule, evidence, decided_by=DecidedBy.HUMAN),
    )


def _quote(body: str, limit: int = 120) -> str:
    text = " ".join((body or "").split())
    return f'"{text[:limit]}{"..." if len(text) > limit else ""}"'
