"""Replay a task's human review through the tracker alone, and score the states it decides.

No bot, no LLM: round by round, the reviewers' comments of round t-1 become tracked defects
(each inline comment's path and lines are its anchor), replies and thread actions become
signals, and at round t the deterministic tracker decides every defect's state from the diff
between the two heads. The answers are then scored as *tracking* (see the task format doc):
``comment_ids`` on a defect card tie it to the tracked defect its comments raised, and to the
request of that comment the card is when the comment asked for several things
(``bench.score.card_requests``).

This measures the ledger and the decision rules in isolation; ``roundwise bench run`` measures
the whole bot.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bot.store.ledger_sqlite import Ledger
from tracker.anchors import DiffMap, excerpt, find_code, normalise
from tracker.calibration import unsure
from tracker.decide import RoundInput, decide_round
from tracker.discussion import first_lines
from tracker.intake import Comment, Outcome, take_comment
from tracker.interdiff import interdiff
from tracker.lifecycle import State
from tracker.models import Decision, Defect

from ..tasks.mcr import Task
from .card_requests import pick_request
from .metrics import TrackPair, live_class, settled_ok, tracking_scores


@dataclass
class Replay:
    """The tracker's answers for one task: ``answers[t][key]``, the key each comment got and,
    for a comment that asked for several things, each request's defect (key, anchor, words)."""

    task: Task
    answers: dict[int, dict[str, str]] = field(default_factory=dict)
    comment_keys: dict[int, str] = field(default_factory=dict)
    comment_requests: dict[int, list[dict]] = field(default_factory=dict)
    evidence: dict[int, dict[str, str]] = field(default_factory=dict)
    confidence: dict[int, dict[str, float]] = field(default_factory=dict)
    profile: dict[int, dict[str, dict[str, bool]]] = field(default_factory=dict)

    def decisions(self) -> list[tuple[TrackPair, str, float, dict]]:
        """Every scored pair with the rule that decided it, that decision's confidence and its
        ``tracker.profile`` signals (pairs the tracker did not decide are left out)."""
        cards = {c["id"]: c for c in self.task.defects}
        out = []
        for pair in self.pairs():
            key = self.key_for(cards[pair.defect])
            said = self.evidence.get(pair.round, {}).get(key) if key else None
            if pair.answer is None or said is None:
                continue
            out.append((pair, said.split(":", 1)[0], self.confidence[pair.round][key],
                        self.profile.get(pair.round, {}).get(key) or {}))
        return out

    def key_for(self, card: dict) -> str | None:
        for cid in card.get("comment_ids") or []:
            if cid in self.comment_requests:
                sharing = [c["id"] for c in self.task.defects if cid in (c.get("comment_ids")
                                                                        or [])]
                rank = sharing.index(card["id"]) if card.get("id") in sharing else 0
                return pick_request(card, self.comment_requests[cid], rank)["key"]
            if cid in self.comment_keys:
                return self.comment_keys[cid]
        return None

    def pairs(self) -> list[TrackPair]:
        out = []
        for card in self.task.defects:
            if not card.get("comment_ids"):
                continue  # no comment raised it: nothing told the tracker about it
            key = self.key_for(card)
            states = card["states"]
            for t in range(2, len(states) + 1):
                before, gold = states[t - 2], states[t - 1]
                if before is None or gold is None:
                    continue
                answer = self.answers.get(t, {}).get(key) if key else None
                out.append(TrackPair(self.task.task_id, card["id"], t, before, gold, answer,
                                     self.confidence.get(t, {}).get(key) if key else None))
        return out


MAX_RECORD_BODY = 2000  # characters of the comment kept in a pair record


def pair_records(replay: Replay) -> list[dict]:
    """Every scored pair of one replay as a plain record, for analysis outside the bench: the
    labels, the answer and whether it is right (as the scores count it), the rule, its
    evidence and confidence, and the comment that raised the defect."""
    bodies = {e.get("id"): e.get("body") or "" for rnd in replay.task.rounds
              for e in rnd.events if e.get("id") is not None}
    cards = {c["id"]: c for c in replay.task.defects}
    out = []
    for pair in replay.pairs():
        card = cards[pair.defect]
        key = replay.key_for(card)
        said = replay.evidence.get(pair.round, {}).get(key, "") if key else ""
        rule, _, evidence = said.partition(": ")
        if pair.live:
            right = live_class(pair.answer) == live_class(pair.gold)
        else:
            right = settled_ok(pair)
        first = (card.get("comment_ids") or [None])[0]
        out.append({
            "task": pair.task, "repo": replay.task.repo or replay.task.task_id,
            "defect": pair.defect, "key": key, "round": pair.round,
            "before": pair.before, "gold": pair.gold, "answer": pair.answer,
            "live": pair.live, "right": right, "rule": rule or None,
            "evidence": evidence or None, "confidence": pair.confidence,
            "unsure": unsure(pair.confidence) if pair.confidence is not None else None,
            "profile": replay.profile.get(pair.round, {}).get(key) if key else None,
            "path": card.get("path"), "line": card.get("line_end") or card.get("line_start"),
            "comment": bodies.get(first, "")[:MAX_RECORD_BODY],
        })
    return out


def event_comment(event: dict) -> Comment | None:
    """A task event as the tracker's Comment (None for events that are not comments)."""
    kind = event.get("kind")
    if kind not in ("review_comment", "review", "issue_comment"):
        return None
    outdated = event.get("line") is None and event.get("original_line") is not None
    return Comment(
        id=event["id"],
        kind=kind,
        author=event.get("author"),
        body=event.get("body") or "",
        path=event.get("path") if kind == "review_comment" else None,
        # an outdated comment (GitHub nulls ``line``) is anchored at its original line
        line=event.get("original_line" if outdated else "line")
        if kind == "review_comment" else None,
        start_line=event.get("original_start_line" if outdated else "start_line")
        if kind == "review_comment" else None,
        side=event.get("side") or "RIGHT",
        in_reply_to=event.get("in_reply_to"),
        review_state=event.get("state") if kind == "review" else None,
    )


def take_event(ledger: Ledger, pr_id: int, event: dict, snapshot: dict[str, str | None], *,
               pr_author: str | None) -> Outcome | None:
    """One task event into the ledger, as the bot's webhook handling would take it.

    ``snapshot`` is the files at the head the event was written on (for the anchored code).
    """
    comment = event_comment(event)
    if comment is None:
        return None
    code = None
    if comment.path and comment.line:
        start = comment.start_line or comment.line
        code = "\n".join(excerpt(snapshot.get(comment.path), start, comment.line)) or None
    return take_comment(ledger, pr_id, comment, pr_author=pr_author, code=code, files=snapshot)


Decide = Callable[[list[Defect], RoundInput], list[Decision]]


def naive_decide(defects: list[Defect], rnd: RoundInput) -> list[Decision]:
    """The trivial tracker every change is measured against.

    A defect is Open while the whitespace-stripped text of the lines it was raised on still
    stands somewhere in its file at the new head, and Resolved otherwise (also when the file
    left the PR, and for remarks not anchored to code, whose text cannot stand anywhere).
    Human actions (resolving a thread) are not used.
    """
    out = []
    for d in defects:
        if d.ignored:
            continue
        if d.state is State.RESOLVED:
            out.append(Decision(d.key, State.RESOLVED, "naive", "resolved earlier"))
            continue
        text = rnd.files.get(d.path) if d.path else None
        stands = bool(d.code and normalise(d.code) and find_code(text, d.code))
        out.append(Decision(d.key, State.OPEN if stands else State.RESOLVED, "naive",
                            "its text still stands" if stands else "its text is gone"))
    return out


def round_input(task: Task, t: int, signals) -> RoundInput:
    """What the tracker sees at round ``t``: the author's change since round t-1, without the
    upstream changes a merge of the target branch (a new base) brought in."""
    snapshot = task.snapshot(t)
    before, now = task.round(t - 1), task.round(t)
    messages = first_lines([c.get("message") or "" for c in now.commits])
    if (before.base_sha or task.pr.get("base_sha")) == (now.base_sha or task.pr.get("base_sha")):
        rnd = RoundInput.from_diff(t, task.diff_between(t - 1, t), snapshot, signals)
        rnd.messages = messages
        return rnd
    previous = task.snapshot(t - 1)
    paths = set(previous) | set(snapshot)
    moved = interdiff(before.diff, now.diff, {p: previous.get(p) for p in paths},
                      {p: snapshot.get(p) for p in paths})
    return RoundInput(t, DiffMap(moved.round), snapshot, list(signals),
                      upstream=DiffMap(moved.upstream), messages=messages)


def replay_task(task: Task, ledger: Ledger, decide: Decide = decide_round,
                verdicts: dict[str, tuple[int, int]] | None = None) -> Replay:
    """Feed one task's rounds and human events through the tracker in ``ledger``;
    ``verdicts`` is the repository's record per rule (``tracker.verdicts.rule_record``)."""
    replay = Replay(task)
    author = task.pr.get("author")
    pr = ledger.pull_request(task.repo or task.task_id, int(task.pr.get("number") or 0),
                             title=task.pr.get("title"), author=author)
    pr_id = pr["id"]
    for rnd in task.rounds:
        t = rnd.number
        ledger.begin_round(pr_id, rnd.head_sha, rnd.base_sha or task.pr.get("base_sha"))
        snapshot = task.snapshot(t)
        if t > 1:
            inp = round_input(task, t, ledger.signals(pr_id, since_round=t - 1))
            inp.verdicts = dict(verdicts or {})
            decisions = decide(ledger.defects(pr_id), inp)
            ledger.record_round(pr_id, t, decisions)
            replay.evidence[t] = {d.key: f"{d.rule}: {d.evidence}" for d in decisions}
            replay.confidence[t] = {d.key: d.confidence for d in decisions}
            replay.profile[t] = {d.key: d.profile for d in decisions}
        ledger.finish_round(pr_id, t)
        replay.answers[t] = {d.key: str(d.state) for d in ledger.defects(pr_id)
                             if not d.ignored}
        for event in rnd.events:
            outcome = take_event(ledger, pr_id, event, snapshot, pr_author=author)
            if outcome is not None and outcome.defect is not None:
                replay.comment_keys[event["id"]] = outcome.defect.key
                if len(outcome.defects) > 1 and outcome.action == "raised":
                    replay.comment_requests[event["id"]] = [
                        {"key": d.key, "path": d.path, "line_start": d.line_start,
                         "line_end": d.line_end, "description": d.description}
                        for d in outcome.defects]
    return replay


def replay_tasks(tasks: list[Task], workdir: str | Path | None = None,
                 decide: Decide = decide_round) -> list[Replay]:
    """Replay every multi-round task, each in its own ledger file under ``workdir``."""
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(workdir or tmp)
        base.mkdir(parents=True, exist_ok=True)
        replays = []
        for task in tasks:
            if not task.multi_round:
                continue
            path = base / f"{task.task_id}.db"
            path.unlink(missing_ok=True)
            with Ledger(path) as ledger:
                replays.append(replay_task(task, ledger, decide))
        return replays


def rule_usage(replays: list[Replay]) -> dict[str, dict]:
    """Per deciding rule: live pairs, right answers, repositories used in and right in."""
    out: dict[str, dict] = {}
    for replay in replays:
        repo = replay.task.repo or replay.task.task_id
        cards = {c["id"]: c for c in replay.task.defects}
        for pair in replay.pairs():
            if not pair.live or pair.answer is None:
                continue
            key = replay.key_for(cards[pair.defect])
            rule = replay.evidence.get(pair.round, {}).get(key, "?").split(":", 1)[0]
            row = out.setdefault(rule, {"pairs": 0, "right": 0, "repos": set(),
                                        "repos_right": set()})
            row["pairs"] += 1
            row["repos"].add(repo)
            if (pair.answer == "Resolved") == (pair.gold == "Resolved"):
                row["right"] += 1
                row["repos_right"].add(repo)
    return out


def score_replays(replays: list[Replay]) -> dict:
    """Tracking scores over every pair of every replayed task."""
    pairs = [p for r in replays for p in r.pairs()]
    scores = tracking_scores(pairs)
    scores["tasks"] = len(replays)
    return scores


def replay_with_feedback(tasks: list[Task]) -> list[Replay]:
    """Replay each repository's tasks in order, as a repository the bot keeps reviewing would
    see them: after each task, every live decision it took is judged (confirmed when its
    answer matched the labels, contradicted when not) and that record per rule feeds the
    next task's decisions of the same repository (``tracker.calibration.for_repository``).
    Each repository starts as unseen."""
    records: dict[str, dict[str, list[int]]] = {}
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, task in enumerate(t for t in tasks if t.multi_round):
            repo = task.repo or task.task_id
            record = records.setdefault(repo, {})
            with Ledger(Path(tmp) / f"{i}.db") as ledger:
                replay = replay_task(task, ledger, verdicts={k: (v[0], v[1])
                                                             for k, v in record.items()})
            out.append(replay)
            for pair, rule, _, _ in replay.decisions():
                if pair.live:
                    row = record.setdefault(rule.split("+", 1)[0], [0, 0])
                    row[0] += live_class(pair.answer) == live_class(pair.gold)
                    row[1] += 1
    return out

