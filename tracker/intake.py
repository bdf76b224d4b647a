"""Taking in what people do between rounds: comments, replies and thread resolutions.

The bot calls these when GitHub tells it about review comments, reviews, PR comments and
review threads; offline replays call them with a task's events. A reviewer's comment that asks
for a change becomes a tracked defect (origin human); a reply joins the defect of its thread
and may carry a signal (the author claims a fix, a reviewer disputes one); resolving a thread
resolves its defect. A comment that asks for several things becomes one defect per request
(``tracker.requests``; keys ``D3a``, ``D3b``: ``tracker.keys``), each anchored at the code it
names or else at the comment's lines; a reply, a resolved thread, an edit or a deletion of that
comment acts on all of them. Decisions taken here are people's, so they are recorded as
decided by a human, in the PR's current round.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from . import keys
from .anchors import excerpt
from .dedupe import Position, match_finding
from .discussion import (
    human_finding,
    opens_with_thanks,
    raises_concern,
    reply_signal,
    still_not_done,
)
from .lifecycle import State
from .models import DecidedBy, Decision, Defect, Finding, Signal, SignalKind
from .requests import own_place, split_requests
from .rules import SWITCHES
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
    """What taking a comment did: ``action`` is raised, attached, updated or ignored.
    ``defect`` is the defect the comment is kept with; ``defects`` every defect it raised or
    acted on (a comment's requests: ``D3a``, ``D3b``)."""

    action: str
    defect: Defect | None = None
    signal: SignalKind | None = None
    reason: str = ""
    defects: list[Defect] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.defect is not None and not self.defects:
            self.defects = [self.defect]


def take_comment(ledger: LedgerStore, pr_id: int, comment: Comment, *, pr_author: str | None,
                 code: str | None = None,
                 files: Mapping[str, str | None] | None = None) -> Outcome:
    """Record one comment. ``code`` is the text of the lines an inline comment sits on;
    ``files`` (path to text at the comment's head, optional) is where the requests of a comment
    that asks for several things look for the code they quote."""
    round_number = ledger.current_round(pr_id)
    if comment.by_bot:
        return Outcome("ignored", reason="the bot's own comment")
    if comment.in_reply_to:
        outcome = _take_reply(ledger, pr_id, comment, round_number, pr_author, code, files)
    else:
        outcome = _take_top_level(ledger, pr_id, comment, round_number, pr_author, code, files)
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
            and d.key not in {o.key for o in outcome.defects}]
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


def same_comment(ledger: LedgerStore, pr_id: int, defect: Defect) -> list[Defect]:
    """The defects made from the comment ``defect`` came from: its requests (``D3a``,
    ``D3b``...) not ignored, or ``defect`` alone."""
    if not keys.part(defect.key):
        return [defect]
    group = keys.group(defect.key)
    parts = [d for d in ledger.defects(pr_id, include_ignored=False)
             if keys.group(d.key) == group and keys.part(d.key)]
    return sorted(parts, key=lambda d: keys.order(d.key)) or [defect]


def _edited(ledger: LedgerStore, pr_id: int, known: Defect, body: str) -> list[Defect]:
    """A person edited a comment: its defects' descriptions follow, request by request (a
    request the edit added joins the last one; a comment tracked as one stays one)."""
    parts = same_comment(ledger, pr_id, known)
    if len(parts) == 1:
        return [ledger.set_description(pr_id, known.key, body)]
    requests = split_requests(body) if SWITCHES["split_requests"] else [body]
    texts = requests[:len(parts) - 1] + ["\n\n".join(requests[len(parts) - 1:])]
    return [ledger.set_description(pr_id, d.key, text)
            for d, text in zip(parts, texts) if text.strip()]


def _take_top_level(ledger: LedgerStore, pr_id: int, comment: Comment, round_number: int,
                    pr_author: str | None, code: str | None,
                    files: Mapping[str, str | None] | None = None) -> Outcome:
    known = ledger.defect_by_comment(pr_id, comment.id)
    if known is not None:  # an edit, or the same delivery again
        edited = _edited(ledger, pr_id, known, comment.body)
        return Outcome("updated", edited[0] if edited else known, defects=edited)
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
    tracked = [(d, Position(d.path, d.line_start, d.line_end))
               for d in ledger.defects(pr_id, include_ignored=False)]
    requests = split_requests(comment.body) if SWITCHES["split_requests"] else []
    if len(requests) > 1:  # each request new, or a repeat of what is tracked
        return _raise_requests(ledger, pr_id, comment, round_number, requests, code, files,
                               tracked)
    same = match_finding(finding, tracked, code=code if inline else None)
    if same is not None:  # a person raising what is already tracked: the same defect
        defect, signal = _repeats(ledger, pr_id, same, comment, round_number, comment.body)
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


def _repeats(ledger: LedgerStore, pr_id: int, same: Defect, comment: Comment,
             round_number: int, text: str, *, keep: bool = True
             ) -> tuple[Defect, SignalKind | None]:
    """A person raised ``same`` again (``text``: the words that did): after a push, a repeat
    that sends it back to Open if it was Resolved. ``keep``: the comment joins its thread."""
    if keep:
        ledger.attach_comment(same.id, comment.id, kind=comment.kind, author=comment.author,
                              body=comment.body, node_id=comment.node_id,
                              in_reply_to=comment.in_reply_to)
    defect, signal = ledger.defect(pr_id, same.key), None
    if round_number > defect.raised_round:
        signal = SignalKind.REVIEWER_REPEATS
        ledger.add_signal(pr_id, defect, round_number,
                          Signal(SignalKind.REVIEWER_REPEATS, defect.key, comment.author,
                                 text, comment.id))
        if defect.state is State.RESOLVED:
            defect = _unresolve(ledger, pr_id, defect, round_number, "reviewer-repeats",
                                f"{comment.author or 'a reviewer'} raised it again after "
                                f"it was resolved: {_quote(text)}")
    return defect, signal


def _request_finding(comment: Comment, text: str, code: str | None,
                     files: Mapping[str, str | None]) -> tuple[Finding, str | None]:
    """One request of a comment as a finding, at its own place (``own_place``) or else at the
    comment's, with the code it stands on."""
    inline = comment.kind == "review_comment" and bool(comment.path) and comment.line is not None
    place = own_place(text, comment.path if inline else None, files) \
        if (comment.side or "RIGHT") == "RIGHT" else None
    if place is not None:
        finding = human_finding(text, author=comment.author, path=place.path,
                                line=place.line_end, start_line=place.line_start)
        return finding, "\n".join(excerpt(files.get(place.path), place.line_start,
                                          place.line_end)) or None
    if inline:
        return human_finding(text, author=comment.author, path=comment.path, line=comment.line,
                             start_line=comment.start_line,
                             side=comment.side or "RIGHT"), code
    return human_finding(text, author=comment.author), None


def _raise_requests(ledger: LedgerStore, pr_id: int, comment: Comment, round_number: int,
                    requests: list[str], code: str | None,
                    files: Mapping[str, str | None] | None,
                    tracked: list[tuple[Defect, Position]]) -> Outcome:
    """A comment that asks for several things: one defect per request (``D5a``, ``D5b``...),
    each at the code it quotes or the lines it names, else at the comment's own lines. A
    request that repeats a tracked defect is that defect raised again, not a new one (a lone
    new request then keeps a plain key). The comment (and its thread) is kept with the first
    new request; the others reach it through their key."""
    findings = [_request_finding(comment, text, code, files or {}) for text in requests]
    with ledger.transaction():
        fresh, again = [], []
        for (finding, part_code), text in zip(findings, requests):
            same = match_finding(finding, tracked, code=part_code if finding.anchored else None)
            if same is None:
                fresh.append((finding, part_code, text))
            else:
                again.append((same, text))
        group = ledger.next_key(pr_id)
        made = []
        for i, (finding, part_code, text) in enumerate(fresh):
            defect = ledger.add_defect(
                pr_id, finding, round_number, code=part_code,
                rule=f"raised-by-{comment.kind.replace('_', '-')}",
                evidence=f"{comment.author or 'a reviewer'} raised it in comment {comment.id} "
                         f"(request {requests.index(text) + 1} of {len(requests)})",
                anchor_sha=comment.commit_id if finding.anchored else None,
                key=keys.part_key(group, i) if len(fresh) > 1 else group)
            if i == 0:
                if comment.in_reply_to:
                    ledger.attach_comment(defect.id, comment.in_reply_to, kind=comment.kind)
                ledger.attach_comment(defect.id, comment.id, kind=comment.kind,
                                      author=comment.author, body=comment.body,
                                      node_id=comment.node_id, in_reply_to=comment.in_reply_to)
            made.append(defect.key)
        signal = None
        for j, (same, text) in enumerate(again):
            _, said = _repeats(ledger, pr_id, same, comment, round_number, text,
                               keep=not fresh and j == 0)
            signal = signal or said
            made.append(same.key)
    defects = [ledger.defect(pr_id, key) for key in dict.fromkeys(made)]
    action = "raised" if fresh else "attached"
    return Outcome(action, defects[0], signal, reason=f"{len(requests)} requests, "
                   f"{len(fresh)} new", defects=defects)


def _take_reply(ledger: LedgerStore, pr_id: int, comment: Comment, round_number: int,
                pr_author: str | None, code: str | None,
                files: Mapping[str, str | None] | None = None) -> Outcome:
    holder = ledger.defect_by_comment(pr_id, comment.in_reply_to)
    if holder is None:
        # A thread the ledger does not track (the author's own note, praise): a reviewer's
        # reply that asks for a change there is a new defect of its own.
        return _take_top_level(ledger, pr_id, comment, round_number, pr_author, code, files)
    ledger.attach_comment(holder.id, comment.id, kind=comment.kind, author=comment.author,
                          body=comment.body, in_reply_to=comment.in_reply_to,
                          node_id=comment.node_id)
    by_author = bool(pr_author) and comment.author == pr_author
    kind = reply_signal(comment.body, by_author=by_author,
                        after_push=round_number > holder.raised_round)
    parts = same_comment(ledger, pr_id, holder)
    if kind is None:
        return Outcome("attached", holder, defects=parts)
    out = []
    for defect in parts:  # a reply in the thread speaks of every request of its comment
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
        out.append(defect)
    return Outcome("attached", out[0], kind, defects=out)


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
    out = []
    for part in same_comment(ledger, pr_id, defect):  # one thread, every request of it
        ledger.add_signal(pr_id, part, round_number, Signal(kind, part.key, by))
        if resolved and part.state is not State.RESOLVED:
            part = ledger.record_decision(
                pr_id, round_number,
                Decision(part.key, State.RESOLVED, str(kind), f"{by or 'a person'} resolved "
                         "the review thread", decided_by=DecidedBy.HUMAN),
            )
        elif not resolved and part.state is State.RESOLVED:
            part = _unresolve(ledger, pr_id, part, round_number, str(kind),
                              f"{by or 'a person'} unresolved the review thread")
        out.append(part)
    return Outcome("updated", out[0], kind, defects=out)


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
