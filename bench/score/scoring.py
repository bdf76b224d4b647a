"""Scoring a bench run: tasks plus per-round records in, the paper's metrics out.

The bench replays each task round by round through the bot and writes one record per task per
round: every defect the system tracks at that round (its ledger), with states, anchors and the
ids of the human comments behind each. ``score(tasks, records, judge)`` turns them into the
summary the reports print:

- *Detection* (MCR tasks): at round t the system's findings (defects New/Open/Reopened, or
  turned Resolved at t) are matched one-to-one to the due cards (see ``metrics.card_due``).
  A pair can match when (a) the finding's comment ids share a comment with the card that the
  system had seen (events of rounds before t), (b) the same ledger defect matched this card at
  an earlier round (a tracked defect keeps its identity), or (c) same file and side, lines
  within ``tolerance`` of the card's range (as labelled, or carried forward through the
  code changes since the card was raised) and the judge says it is the same problem. The
  matching is a maximum one (``metrics.max_matching``), preferring (a), then (b), then closer
  lines. Precision, recall, F1, state accuracy on matched pairs, splits by language, round,
  type and severity, and the state confusion matrix follow.
- *Tracking*: live and settled (card, round) pairs whose answer is the state, in round t's
  record, of the defect whose comment ids meet the card's (else the one matched to it in
  detection at an earlier round); scored by ``metrics.tracking_scores``.
- *AACR* tasks (single round): line-level P/R/F1 (location only), semantic P/R/F1 (location
  and judge), semantic recall by context level, and findings that match an expert-rejected
  comment (``negatives``).
- Cost: tokens and seconds per round.
- *Own* and *carried* detection (``bench.score.provenance``): the same matches split by whether the
  bot raised the finding itself or a person raised it earlier.

Judges are asked only about located pairs, all at once (so an LLM judge runs concurrently).
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from dataclasses import dataclass, field

import unidiff

from tracker.anchors import Anchor, DiffMap

from ..tasks.diffs import file_diff
from ..tasks.mcr import Task, parse_task
from .card_requests import pick_request
from .judge import Judge
from .metrics import (
    TrackPair,
    accuracy,
    card_due,
    is_finding,
    line_gap,
    max_matching,
    prf,
    spread,
    state_confusion,
    tracking_scores,
)
from .provenance import hit_rates, split_detection

# Edge costs for the matching (lower is preferred among maximum matchings).
COMMENT_COST = 0.0
CARRIED_COST = 0.25
LOCATED_COST = 0.5

CONTEXTS = {"diff level": "diff", "file level": "file", "repo level": "repo"}


# --- locations -------------------------------------------------------------------------------


def _path(value: str | None) -> str | None:
    if not value:
        return None
    return value.removeprefix("./")


def _side(item: dict) -> str:
    return str(item.get("side") or "RIGHT").upper()


def location_gap(finding: dict, card: dict, ranges: list[tuple], tolerance: int) -> int | None:
    """Lines between a finding and the nearest of a card's ``ranges`` in the same file and on
    the same side, or None when they are not within ``tolerance`` (or either is unanchored)."""
    path = _path(finding.get("path"))
    if path is None or path != _path(card.get("path")) or _side(finding) != _side(card):
        return None
    span = (finding.get("line_start"), finding.get("line_end"))
    gap = min(line_gap(span, r) for r in ranges)
    return gap if gap <= tolerance else None


class CardPlaces:
    """Where a card's lines stand at a later round: its labelled range, and that range
    carried through the file's changes since ``raised_in_round`` (cached per task)."""

    def __init__(self) -> None:
        self._snapshots: dict[tuple[str, int], dict] = {}
        self._ranges: dict[tuple[str, str, int], list[tuple]] = {}

    def _snapshot(self, task: Task, number: int) -> dict:
        key = (task.task_id, number)
        if key not in self._snapshots:
            self._snapshots[key] = task.snapshot(number)
        return self._snapshots[key]

    def ranges(self, task: Task, card: dict, t: int) -> list[tuple]:
        """The card's line ranges to compare findings of round ``t`` with."""
        key = (task.task_id, str(card.get("id")), t)
        if key not in self._ranges:
            self._ranges[key] = self._compute(task, card, t)
        return self._ranges[key]

    def _compute(self, task: Task, card: dict, t: int) -> list[tuple]:
        start, end = card.get("line_start"), card.get("line_end")
        labelled = [(start, end)]
        raised = card.get("raised_in_round") or 1
        path = _path(card.get("path"))
        if path is None or start is None or t <= raised or _side(card) == "LEFT":
            return labelled
        try:
            anchor = Anchor(path, start, max(end or start, start))
            for k in range(raised, t):
                old, new = self._snapshot(task, k).get(path), self._snapshot(task, k + 1).get(path)
                if old == new:
                    continue
                mapped = DiffMap(file_diff(path, old, new)).map(anchor)
                if mapped.anchor is None or mapped.anchor.path != path:
                    return labelled
                anchor = mapped.anchor
        except (ValueError, KeyError, IndexError, unidiff.UnidiffParseError):
            return labelled  # best effort: a task whose texts cannot be replayed keeps its labels
        carried = (anchor.start, anchor.end)
        return labelled if carried == (start, end) else [*labelled, carried]


# --- one record's problem --------------------------------------------------------------------


def visible_comment_ids(task: Task, t: int) -> set:
    """Ids of the events the system had seen when it answered round ``t`` (rounds < t)."""
    return {e.get("id") for rnd in task.rounds[: max(0, t - 1)] for e in rnd.events
            if e.get("id") is not None}


def record_kind(record: dict, task: Task) -> str:
    """``mcr`` or ``aacr``: the record's own ``kind``, else AACR when the cards carry
    ``aacr_context``."""
    if record.get("kind") in ("mcr", "aacr"):
        return record["kind"]
    return "aacr" if any("aacr_context" in d for d in task.defects) else "mcr"


def finding_key(defect: dict, index: int) -> str:
    """A system defect's ledger key (its position when it has none)."""
    return str(defect.get("key") or f"#{index + 1}")


@dataclass
class RoundScore:
    """One record scored: its findings, due cards, and what matched."""

    task: Task
    record: dict
    kind: str
    round: int
    findings: list[dict]
    due: list[dict]
    located: dict[tuple[int, int], int] = field(default_factory=dict)  # (finding, card): gap
    linked: set[tuple[int, int]] = field(default_factory=set)  # shared seen comment ids
    negatives_located: dict[tuple[int, int], int] = field(default_factory=dict)
    matches: list[tuple[int, int, str]] = field(default_factory=list)  # finding, card, how
    line_matches: list[tuple[int, int]] = field(default_factory=list)
    negatives_matched: list[tuple[int, int]] = field(default_factory=list)

    def key(self, fi: int) -> str:
        return finding_key(self.findings[fi], fi)

    def details(self) -> dict:
        """What the bench writes next to the record in results.jsonl."""
        out = {
            "task": self.task.task_id,
            "round": self.round,
            "kind": self.kind,
            "findings": [self.key(i) for i in range(len(self.findings))],
            "due": [str(c.get("id")) for c in self.due],
            "matches": [[self.key(fi), str(self.due[ci].get("id"))] for fi, ci, _ in self.matches],
            "match_kinds": [how for _, _, how in self.matches],
        }
        if self.kind == "aacr":
            out["line_matches"] = [[self.key(fi), str(self.due[ci].get("id"))]
                                   for fi, ci in self.line_matches]
            out["negatives_matched"] = [
                [self.key(fi), str(self.task.negatives[ni].get("id"))]
                for fi, ni in self.negatives_matched]
        return out


def _prepare(task: Task, record: dict, places: CardPlaces, tolerance: int) -> RoundScore:
    t = int(record.get("round") or 1)
    kind = record_kind(record, task)
    findings = [d for d in record.get("defects") or [] if is_finding(d)]
    due = [c for c in task.defects if card_due(c.get("states") or [], t)]
    rs = RoundScore(task, record, kind, t, findings, due)
    seen = visible_comment_ids(task, t)
    for fi, finding in enumerate(findings):
        ids = set(finding.get("comment_ids") or []) & seen
        for ci, card in enumerate(due):
            if ids & set(card.get("comment_ids") or []):
                rs.linked.add((fi, ci))
            if _path(finding.get("path")) == _path(card.get("path")):  # spare ranges() else
                gap = location_gap(finding, card, places.ranges(task, card, t), tolerance)
                if gap is not None:
                    rs.located[(fi, ci)] = gap
        if kind == "aacr":
            for ni, negative in enumerate(task.negatives):
                gap = location_gap(finding, negative,
                                   [(negative.get("line_start"), negative.get("line_end"))],
                                   tolerance)
                if gap is not None:
                    rs.negatives_located[(fi, ni)] = gap
    return rs


def _located_cost(gap: int) -> float:
    return LOCATED_COST + 0.5 * gap / (gap + 1)


def _match(rs: RoundScore, verdicts: dict, carried: dict[str, str]) -> None:
    """Fill ``rs.matches`` (and the AACR extras) from links, carried identities and verdicts."""
    costs: dict[tuple[int, int], float] = {}
    how: dict[tuple[int, int], str] = {}
    for fi in range(len(rs.findings)):
        for ci, card in enumerate(rs.due):
            pair = (fi, ci)
            if pair in rs.linked:
                costs[pair], how[pair] = COMMENT_COST, "comment"
            elif carried.get(rs.key(fi)) == str(card.get("id")):
                costs[pair], how[pair] = CARRIED_COST, "carried"
            elif pair in rs.located and verdicts[(id(rs.findings[fi]), id(card))]:
                costs[pair], how[pair] = _located_cost(rs.located[pair]), "judge"
    rs.matches = [(fi, ci, how[(fi, ci)])
                  for fi, ci in max_matching(len(rs.findings), len(rs.due), costs)]
    if rs.kind == "aacr":
        line_costs = {pair: 0.5 * gap / (gap + 1) for pair, gap in rs.located.items()}
        rs.line_matches = max_matching(len(rs.findings), len(rs.due), line_costs)
        first: dict[int, int] = {}  # finding -> the first negative it matches
        for fi, ni in sorted(rs.negatives_located):
            if fi not in first and verdicts[(id(rs.findings[fi]), id(rs.task.negatives[ni]))]:
                first[fi] = ni
        rs.negatives_matched = sorted(first.items())


async def _judge_all(judge: Judge, rounds: list[RoundScore]) -> dict:
    """Ask the judge about every located pair not already linked by comments, concurrently."""
    wanted: dict[tuple[int, int], tuple[dict, dict]] = {}
    for rs in rounds:
        for fi, ci in rs.located:
            if (fi, ci) not in rs.linked:
                finding, card = rs.findings[fi], rs.due[ci]
                wanted[(id(finding), id(card))] = (finding, card)
        for fi, ni in rs.negatives_located:
            finding, negative = rs.findings[fi], rs.task.negatives[ni]
            wanted[(id(finding), id(negative))] = (finding, negative)
    keys = list(wanted)
    answers = await asyncio.gather(*(judge.same(*wanted[k]) for k in keys))
    verdicts = defaultdict(bool)
    verdicts.update(zip(keys, answers, strict=True))
    return verdicts


# --- aggregation -----------------------------------------------------------------------------


def _detection(rounds: list[RoundScore]) -> dict:
    return prf(sum(len(r.matches) for r in rounds), sum(len(r.findings) for r in rounds),
               sum(len(r.due) for r in rounds))


def labelled(card: dict, t: int) -> bool:
    """Whether a card's state at round ``t`` is scored: always, unless the card says where its
    labels come from (``label_sources``, exported and mined tasks) and round ``t``'s is not a
    human signal: such states are left out, not guessed."""
    sources = card.get("label_sources")
    if sources is None:
        return True
    return 0 < t <= len(sources) and sources[t - 1] == "human-signal"


def _state_pairs(rounds: list[RoundScore]) -> list[tuple[str, str]]:
    return [(rs.due[ci]["states"][rs.round - 1], str(rs.findings[fi].get("state")))
            for rs in rounds for fi, ci, _ in rs.matches if labelled(rs.due[ci], rs.round)]


def _human_signal(rounds: list[RoundScore], tasks: list) -> dict | None:
    """Agreement with people on tasks whose labels are people's signals (``label_sources``)."""
    weak = {t.task_id for t in tasks if any("label_sources" in c for c in t.defects)}
    if not weak:
        return None
    mine = [rs for rs in rounds if rs.task.task_id in weak]
    states = _state_pairs(mine)
    cards = [c for t in tasks if t.task_id in weak for c in t.defects]
    return {
        "tasks": len(weak),
        "labelled_states": sum(s == "human-signal" for c in cards
                               for s in c.get("label_sources") or []),
        "state_agreement": accuracy(states), "state_n": len(states),
        "tracking": tracking_scores(tracking_pairs(mine)),
        "note": "weak labels: states implied by people's actions; the others are not scored",
    }


def _hit_rates(rounds: list[RoundScore], field_name: str) -> dict:
    return hit_rates(rounds, field_name, lambda rs: {ci for _, ci, _ in rs.matches})


def _per_language(rounds: list[RoundScore]) -> dict:
    groups: dict[str, list[RoundScore]] = defaultdict(list)
    for rs in rounds:
        groups[rs.task.language].append(rs)
    out = {}
    for lang in sorted(groups):
        group = groups[lang]
        det = _detection(group)
        states = _state_pairs(group)
        out[lang] = {**det, "state_accuracy": accuracy(states), "state_n": len(states),
                     "n": det["due"], "tasks": len({r.task.task_id for r in group}),
                     "rounds": len(group)}
    return out


def _per_round(rounds: list[RoundScore]) -> dict:
    groups: dict[int, list[RoundScore]] = defaultdict(list)
    for rs in rounds:
        groups[rs.round].append(rs)
    return {f"R{t}": _detection(groups[t]) for t in sorted(groups)}


def tracking_pairs(rounds: list[RoundScore]) -> list[TrackPair]:
    """Live and settled (card, round >= 2) pairs, answered from each round's record.

    The card's defect is the one whose comment ids meet the card's; failing that, the one the
    detection matched to the card at the latest earlier round. No defect: answer None. A card
    no comment raised and the system never found is not a pair: nothing told the system.
    """
    by_task: dict[str, dict[int, RoundScore]] = defaultdict(dict)
    for rs in rounds:
        by_task[rs.task.task_id][rs.round] = rs
    pairs = []
    for task_rounds in by_task.values():
        task = next(iter(task_rounds.values())).task
        matched: dict[str, list[tuple[int, str]]] = defaultdict(list)  # card -> (round, key)
        for t in sorted(task_rounds):
            rs = task_rounds[t]
            matched_now = [(str(rs.due[ci].get("id")), rs.key(fi)) for fi, ci, _ in rs.matches]
            for card in task.defects:
                pair = _track_pair(task, card, t, rs, matched.get(str(card.get("id")), []))
                if pair is not None:
                    pairs.append(pair)
            for card_id, key in matched_now:
                matched[card_id].append((t, key))
    return pairs


def _track_pair(task: Task, card: dict, t: int, rs: RoundScore,
                earlier: list[tuple[int, str]]) -> TrackPair | None:
    states = card.get("states") or []
    if t < 2 or t > len(states) or states[t - 2] is None or states[t - 1] is None:
        return None
    if not labelled(card, t):
        return None
    ids = set(card.get("comment_ids") or [])
    if not ids and not earlier:
        return None  # never told to the system (no comment raised it) and never found by it
    defects = rs.record.get("defects") or []
    told = [d for d in defects if ids & set(d.get("comment_ids") or [])]
    found = told[0] if told else None
    if len(told) > 1:  # the requests of one comment (D3a, D3b): the one this card is
        cid = next(iter(sorted(ids & set(told[0].get("comment_ids") or []))))
        sharing = [str(c.get("id")) for c in task.defects if cid in (c.get("comment_ids") or [])]
        rank = sharing.index(str(card.get("id"))) if str(card.get("id")) in sharing else 0
        found = pick_request(card, told, rank)
    if found is None and earlier:
        key = earlier[-1][1]
        found = next((d for i, d in enumerate(defects) if finding_key(d, i) == key), None)
    return TrackPair(task.task_id, str(card.get("id")), t, states[t - 2], states[t - 1],
                     found.get("state") if found else None,
                     found.get("decision_confidence") if found else None)


def _aacr(rounds: list[RoundScore]) -> dict:
    findings = sum(len(r.findings) for r in rounds)
    cards = sum(len(r.due) for r in rounds)
    due: dict[str, int] = defaultdict(int)
    hit: dict[str, int] = defaultdict(int)
    for rs in rounds:
        matched = {ci for _, ci, _ in rs.matches}
        for ci, card in enumerate(rs.due):
            level = str(card.get("aacr_context") or "unknown").strip().lower()
            level = CONTEXTS.get(level, level)
            due[level] += 1
            hit[level] += ci in matched
    negatives = sum(len(r.negatives_matched) for r in rounds)
    languages: dict[str, list[RoundScore]] = defaultdict(list)
    for rs in rounds:
        languages[rs.task.language].append(rs)
    return {
        "tasks": len({r.task.task_id for r in rounds}),
        "findings": findings,
        "cards": cards,
        "line": prf(sum(len(r.line_matches) for r in rounds), findings, cards),
        "semantic": _detection(rounds),
        "recall_by_context": {level: (hit[level] / due[level] if due[level] else 0.0)
                              for level in sorted(set(CONTEXTS.values()) | set(due))},
        "context_due": {level: due[level] for level in sorted(set(CONTEXTS.values()) | set(due))},
        "negatives_matched": {"count": negatives,
                              "share": negatives / findings if findings else 0.0,
                              "negatives": sum(len(r.task.negatives) for r in rounds)},
        "per_language": {lang: {**_detection(group), "n": sum(len(r.due) for r in group)}
                         for lang, group in sorted(languages.items())},
    }


def _cost(records: list[dict]) -> dict:
    prompt = [float(r.get("prompt_tokens") or 0) for r in records]
    completion = [float(r.get("completion_tokens") or 0) for r in records]
    tokens = spread([p + c for p, c in zip(prompt, completion, strict=True)])
    return {
        "tokens": {"prompt": int(sum(prompt)), "completion": int(sum(completion)), **tokens,
                   "total": int(tokens["total"])},
        "seconds": spread([float(r.get("seconds") or 0.0) for r in records]),
        "cost": sum(float(r.get("cost") or 0.0) for r in records),
    }


# --- entry points ----------------------------------------------------------------------------


def _index_tasks(tasks: list) -> dict[str, Task]:
    out = {}
    for task in tasks:
        task = task if isinstance(task, Task) else parse_task(task)
        out[task.task_id] = task
    return out


def _select(tasks: dict[str, Task], records: list[dict]) -> tuple[list[tuple[Task, dict]], int]:
    """The records to score (the last one per task and round), in task and round order, and
    how many were skipped (unknown task, round out of range, or superseded)."""
    chosen: dict[tuple[str, int], dict] = {}
    skipped = 0
    for record in records:
        task = tasks.get(str(record.get("task")))
        t = int(record.get("round") or 0)
        if task is None or not 1 <= t <= len(task.rounds):
            skipped += 1
            continue
        skipped += (task.task_id, t) in chosen
        chosen[(task.task_id, t)] = record
    ordered = sorted(chosen.items())
    return [(tasks[task_id], record) for (task_id, _), record in ordered], skipped


async def ascore(tasks: list, records: list[dict], judge: Judge, tolerance: int = 1) -> dict:
    """Score a run (see the module docstring); the summary dict the reports read.

    ``summary["records"]`` holds one details dict per scored record (task, round, findings,
    due cards, ``matches`` as [finding key, card id] pairs), for the bench to write back.
    """
    index = _index_tasks(tasks)
    selected, skipped = _select(index, records)
    places = CardPlaces()
    rounds = [_prepare(task, record, places, tolerance) for task, record in selected]
    verdicts = await _judge_all(judge, rounds)
    carried: dict[str, dict[str, str]] = defaultdict(dict)  # task -> finding key -> card id
    for rs in rounds:  # task and round order, so identities carry forward
        _match(rs, verdicts, carried[rs.task.task_id])
        for fi, ci, _ in rs.matches:
            carried[rs.task.task_id][rs.key(fi)] = str(rs.due[ci].get("id"))
    mcr = [rs for rs in rounds if rs.kind == "mcr"]
    aacr = [rs for rs in rounds if rs.kind == "aacr"]
    states = _state_pairs(mcr)
    summary = {
        "tasks": len({rs.task.task_id for rs in rounds}),
        "rounds": len(rounds),
        "tolerance": tolerance,
        "judge": judge.describe(),
        "skipped_records": skipped,
        "detection": {**_detection(mcr), "rounds": len(mcr),
                      "tasks": len({rs.task.task_id for rs in mcr})},
        "state_accuracy": accuracy(states),
        "state_n": len(states),
        "tracking": tracking_scores(tracking_pairs(mcr)),
        "per_language": _per_language(mcr),
        "per_round": _per_round(mcr),
        "per_type": _hit_rates(mcr, "type"),
        "per_severity": _hit_rates(mcr, "severity"),
        "state_confusion": state_confusion(states),
        **_cost([rs.record for rs in rounds]),
        "records": [rs.details() for rs in rounds],
    }
    summary.update(split_detection(mcr))
    human = _human_signal(mcr, list(index.values()))
    if human is not None:
        summary["human_signal"] = human
    if aacr:
        summary["aacr"] = _aacr(aacr)
    return summary


def score(tasks: list, records: list[dict], judge: Judge, tolerance: int = 1) -> dict:
    """``ascore`` for callers without an event loop."""
    return asyncio.run(ascore(tasks, records, judge, tolerance))
