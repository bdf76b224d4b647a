"""Deterministic, evidence-based state decisions for tracked defects at a new round.

``decide_round(defects, round_input)`` looks at what the push did to each defect's anchored
code and at what people did since the last round, and returns one Decision per tracked defect:

- a person resolved the thread, or ran ``/roundwise resolve`` → Resolved (decided by human);
- a person unresolved the thread of a Resolved defect → Reopened (decided by human);
- anchored code untouched → Open (the author saying "fixed" is recorded, but it is not proof);
- anchored code changed only in whitespace → Open;
- anchored code moved elsewhere unchanged → Open, re-anchored;
- anchored code changed or deleted → Resolved *candidate*;
- a Resolved defect whose fingerprinted code comes back in this round's added lines →
  Reopened *candidate*.

Candidates are the decisions a verifier (the LLM engine) may confirm or overturn:
``apply_verdict(decision, verdict)`` merges its answer and keeps both pieces of evidence.
Nothing here does I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from . import calibration
from .anchors import (
    Anchor,
    DiffMap,
    Mapped,
    Status,
    distinctive,
    excerpt,
    find_code,
    normalise,
    similarity,
    similarity_bound,
)
from .diffindex import changes
from .lifecycle import State, carry_forward
from .lines import place
from .models import DecidedBy, Decision, Defect, Signal, SignalKind
from .profile import read_profile
from .roundcache import one_round
from .rules import LIVE_RULES, REMARK_RULES, Case, rule

VERIFY_OPEN_BELOW = 0.5  # an Open ruling less sure than this is a candidate a verifier may resolve
UNDO_SIMILARITY = 0.6  # edited fixed code this close to the old code means the fix was undone


@dataclass
class RoundInput:
    """What the tracker knows about a new round.

    ``diff`` goes from the previously reviewed head to the new head; ``files`` holds the new
    head's text of every file that matters (those the diff touches and those defects sit in;
    None for deleted files). ``signals`` are people's actions since the previous round.
    ``test_paths_changed`` lists test files this round changed (for defects about tests).
    """

    number: int
    diff: DiffMap
    files: dict[str, str | None] = field(default_factory=dict)
    signals: list[Signal] = field(default_factory=list)
    diffs_from: dict[str, DiffMap] = field(default_factory=dict)  # anchor commit -> new head
    upstream: DiffMap | None = None  # previous head -> itself rebased, after a rebase
    messages: list[str] = field(default_factory=list)  # this push's commit messages
    verdicts: dict[str, tuple[int, int]] = field(default_factory=dict)  # rule -> (right, n)
    # judged by people in this repository (``tracker.verdicts``), for the confidence

    def rebased(self, defect: Defect) -> Defect:
        """The defect as it stands once upstream changes (a rebase) are applied: moved with
        them, never decided by them. ``diff`` then holds only the author's change."""
        if self.upstream is None or not defect.anchored or defect.side == "LEFT" \
                or defect.anchor_sha in self.diffs_from:
            return defect
        moved = self.upstream.map(Anchor(defect.path, defect.line_start,
                                         defect.line_end or defect.line_start))
        if moved.anchor is None:
            return defect
        return replace(defect, path=moved.anchor.path, line_start=moved.anchor.start,
                       line_end=moved.anchor.end)

    def diff_for(self, defect: Defect) -> DiffMap:
        """The diff that moves this defect's anchor: from its own commit when it is not the
        previously reviewed head (a person commented on a newer push), else ``diff``."""
        return self.diffs_from.get(defect.anchor_sha or "", self.diff)

    @classmethod
    def from_diff(cls, number: int, diff_text: str, files=None, signals=None) -> RoundInput:
        return cls(number, DiffMap(diff_text), dict(files or {}), list(signals or []))


@dataclass
class Verdict:
    """A verifier's answer about one candidate decision."""

    key: str
    state: State
    evidence: str
    decided_by: DecidedBy = DecidedBy.LLM


@one_round
def decide_round(defects: list[Defect], rnd: RoundInput) -> list[Decision]:
    """One decision per defect that is not ignored, in the order given."""
    by_key: dict[str, list[Signal]] = {}
    for signal in rnd.signals:
        by_key.setdefault(signal.defect_key, []).append(signal)
    table = calibration.current().for_repository(rnd.verdicts)
    calibrated: dict[tuple, float] = {}  # decisions alike in all the table reads share one answer
    out = []
    for defect in defects:
        if defect.ignored:
            continue
        decision = decide_defect(defect, rnd, by_key.get(defect.key, []),
                                 own_confidence=not table.by_repo)
        alike = (decision.rule, decision.confidence, str(decision.state),
                 tuple(decision.profile.items()))
        if alike not in calibrated:
            calibrated[alike] = round(table.confidence(decision.rule, decision.confidence,
                                                       decision.profile, decision.state), 3)
        decision.confidence = calibrated[alike]
        out.append(decision)
    return out


def decide_defect(defect: Defect, rnd: RoundInput, signals: list[Signal], *,
                  own_confidence: bool = True) -> Decision:
    """The state of one defect at round ``rnd.number``, with the evidence for it. Without
    ``own_confidence`` (a calibration table will replace it), a rule's own confidence is not
    worked out where that would cost a parse of the file."""
    previous = defect.state
    defect = rnd.rebased(defect)
    mapped = _map(defect, rnd)
    notes = [f"{s.kind} by {s.author or 'someone'}" for s in signals]
    human = _human_decision(defect, previous, signals)
    if human is not None:
        return _with_anchor(human, mapped, rnd, notes)
    if previous is State.RESOLVED:
        return _with_anchor(_settled(defect, rnd, mapped), mapped, rnd, notes)
    decision = _live(defect, rnd, mapped, signals, own_confidence)
    return _with_anchor(decision, mapped, rnd, notes)


def _human_decision(defect: Defect, previous: State, signals: list[Signal]) -> Decision | None:
    """Signals that settle the state by themselves: a person's explicit action wins."""
    last = None
    for signal in signals:  # in the order they happened; the last explicit action stands
        if signal.kind in (SignalKind.THREAD_RESOLVED, SignalKind.COMMAND_RESOLVE):
            last = (State.RESOLVED, signal)
        elif signal.kind is SignalKind.THREAD_UNRESOLVED:
            last = ("unresolved", signal)
    if last is None:
        return None
    target, signal = last
    if target == "unresolved":
        state = State.REOPENED if previous is State.RESOLVED else carry_forward(previous)
        what = "unresolved the thread"
    else:
        state, what = State.RESOLVED, (
            "resolved the thread" if signal.kind is SignalKind.THREAD_RESOLVED
            else "ran /roundwise resolve"
        )
    return Decision(defect.key, state, rule=str(signal.kind),
                    evidence=f"{signal.author or 'a person'} {what}",
                    decided_by=DecidedBy.HUMAN, confidence=calibration.HUMAN)


def _live(defect: Defect, rnd: RoundInput, mapped: Mapped | None,
          signals: list[Signal], own_confidence: bool = True) -> Decision:
    """A defect that went into this round unresolved: Open, or a Resolved candidate.

    The rule tables of ``tracker.rules`` decide, from what the comment is about.
    """
    case = Case(defect, rnd.diff_for(defect), rnd.files, signals, mapped, rnd.messages,
                own_confidence)
    ruling = rule(case, LIVE_RULES if mapped is not None else REMARK_RULES)
    disputes = [s for s in signals if s.kind is SignalKind.REVIEWER_DISPUTES]
    evidence = ruling.evidence
    if disputes and ruling.state is State.RESOLVED:
        evidence += f"; note: {disputes[-1].author} disputed an earlier fix"
    decision = Decision(defect.key, ruling.state, ruling.rule, evidence,
                        candidate=ruling.state is State.RESOLVED
                        or ruling.confidence < VERIFY_OPEN_BELOW,
                        confidence=ruling.confidence, profile=read_profile(case))
    if ruling.anchor is not None:
        decision.path = ruling.anchor.path
        decision.line_start, decision.line_end = ruling.anchor.start, ruling.anchor.end
    return decision


def _settled(defect: Defect, rnd: RoundInput, mapped: Mapped | None) -> Decision:
    """A Resolved defect stays Resolved unless the code it was about comes back.

    Two ways back: the exact code it was about reappears in this round's added lines, or the
    fixed lines are edited again into something closer to the old code than to the fix.
    """
    bad = defect.resolved_code
    if bad and defect.path and distinctive(bad):
        paths = {defect.path} | ({mapped.anchor.path} if mapped and mapped.anchor else set())
        for path in sorted(paths):
            added = rnd.diff.added_lines(path)
            near = mapped.anchor.start if mapped and mapped.anchor else None
            where = find_code(rnd.files.get(path), bad, near=near) if added else None
            if where and changes(rnd.diff, path).adds_within(*where):
                return Decision(
                    defect.key, State.REOPENED, "fingerprint-reappeared",
                    f"the code it was about came back at {place(path, *where)}",
                    candidate=True, path=path, line_start=where[0], line_end=where[1],
                    confidence=0.7,
                )
        if mapped and mapped.status is Status.MODIFIED and defect.code and mapped.added:
            to_bad, to_fix = _closest(mapped.added, bad, defect.code)
            if _undone(to_bad, to_fix):
                return Decision(
                    defect.key, State.REOPENED, "fix-undone",
                    f"the fixed lines were edited again and now resemble the old code "
                    f"(similarity {to_bad:.2f} to it, {to_fix:.2f} to the fix)", candidate=True,
                    confidence=0.6,
                )
    return Decision(defect.key, State.RESOLVED, "stays-resolved",
                    "resolved earlier and its code has not come back", confidence=0.9)


def _undone(to_bad: float, to_fix: float) -> bool:
    return to_bad >= UNDO_SIMILARITY and to_bad > to_fix


def _closest(lines: list[str], bad: str, fix: str) -> tuple[float, float]:
    """Similarity to the old code and to the fix of the run of ``lines`` most like either.

    With one run, its similarity to the old code is worked out only when an upper bound of
    it leaves ``_undone`` undecided; else the bound stands in for it (the same answer)."""
    size = max(len(normalise(fix)), 1)
    if len(lines) <= size:
        to_fix = similarity(lines, fix)
        bound = similarity_bound(lines, bad)
        return (similarity(lines, bad) if _undone(bound, to_fix) else bound), to_fix
    best = (0.0, 0.0)
    for i in range(max(len(lines) - size + 1, 1)):
        window = lines[i : i + size]
        pair = (similarity(window, bad), similarity(window, fix))
        if max(pair) > max(best):
            best = pair
    return best


def _map(defect: Defect, rnd: RoundInput) -> Mapped | None:
    if not defect.anchored:
        return None
    anchor = Anchor(defect.path, defect.line_start, defect.line_end or defect.line_start,
                    defect.side)
    if defect.side == "LEFT":
        # Deleted-side anchors refer to the base, which a push does not move.
        return Mapped(Status.UNTOUCHED, anchor)
    return rnd.diff_for(defect).map(anchor)


def _with_anchor(decision: Decision, mapped: Mapped | None, rnd: RoundInput,
                 notes: list[str]) -> Decision:
    """Attach the defect's new position and code (unless the decision already moved it)."""
    if decision.path is None and mapped is not None and mapped.anchor is not None:
        decision.path = mapped.anchor.path
        decision.line_start, decision.line_end = mapped.anchor.start, mapped.anchor.end
    if decision.path is not None and decision.path in rnd.files:
        lines = excerpt(rnd.files[decision.path], decision.line_start, decision.line_end)
        if lines:
            decision.code = "\n".join(lines)
    decision.signals = notes
    return decision


def apply_verdict(decision: Decision, verdict: Verdict | None) -> Decision:
    """Merge a verifier's verdict into a candidate decision, keeping both pieces of evidence.

    A verdict may only pick a state the rules could also have picked for this defect: a
    Resolved candidate becomes Open or stays Resolved; a Reopened candidate becomes Resolved
    or stays Reopened. Anything else is ignored.
    """
    if verdict is None or not decision.candidate:
        return decision
    allowed = {
        State.RESOLVED: {State.RESOLVED, State.OPEN},
        State.OPEN: {State.OPEN, State.RESOLVED},  # a low-confidence Open
        State.REOPENED: {State.REOPENED, State.RESOLVED},
    }.get(decision.state, {decision.state})
    if verdict.state not in allowed:
        return decision
    return Decision(
        decision.key, verdict.state,
        rule=decision.rule + ("+confirmed" if verdict.state is decision.state else "+overturned"),
        evidence=f"{decision.evidence}; verifier: {verdict.evidence}",
        decided_by=verdict.decided_by, candidate=False, path=decision.path,
        line_start=decision.line_start, line_end=decision.line_end,
        code=decision.code, signals=decision.signals, confidence=decision.confidence,
    )
