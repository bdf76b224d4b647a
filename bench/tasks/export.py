"""Every reviewed pull request becomes a replayable ``mcr-task/1`` task: ``roundwise bench export``.

The ledger holds what a multi-round task is made of: the rounds (base and head shas), what
people said and did between them (comments, replies, thread resolutions), every tracked
defect and every decision with its evidence. ``export_tasks`` writes one task per finished
(merged or closed) pull request:

- ``rounds`` with head/base shas and the people's events the ledger knows (comments attached
  to defects, thread resolutions as extra ``thread_resolved``/``thread_unresolved`` events,
  which loaders ignore);
- a defect card for every tracked defect people gave a signal on, with ``states`` per round and
  ``label_sources``: ``"human-signal"`` where people's actions imply the state (they raised,
  resolved, unresolved or disputed it, or confirmed the bot's decision; see
  ``tracker.verdicts``), ``null`` where only the bot decided. Scoring leaves the ``null`` states
  out (``bench.score.scoring``): they are not guessed;
- ``bot_decisions``: the bot's own decisions, for comparison, and ``dismissed_findings``: the
  bot's findings people dismissed (not defects by people's account, so no cards).

Without a clone the rounds have empty diffs and files; ``fill_from_git`` (``--git-dir``, or
``roundwise bench build`` later) adds each round's diff, changed files and commits from a local
clone, so the task is self-contained.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from bot.store.ledger_sqlite import Ledger
from tracker import keys
from tracker.lifecycle import carry_forward, parse_state
from tracker.verdicts import classify

__all__ = ["build_tasks", "export_pr", "export_tasks", "fill_from_git", "task_id_for"]

HUMAN = "human-signal"


def task_id_for(repo: str, number: int) -> str:
    return f"{repo.replace('/', '__')}-{number}"


def _round_of(stamp: str | None, starts: list[tuple[int, str]]) -> int:
    """The round whose events a moment belongs to: the last round started before it."""
    number = starts[0][0] if starts else 1
    for n, started in starts:
        if stamp and started and started <= stamp:
            number = n
    return number


def export_pr(ledger: Ledger, pr: dict, bot_logins: set[str] = frozenset()) -> dict | None:
    """One PR of the ledger as an ``mcr-task/1`` dict (None when it has no complete round)."""
    rounds = [r for r in ledger.rounds(pr["id"]) if r["status"] == "complete"]
    if not rounds:
        return None
    numbers = [r["number"] for r in rounds]
    index = {n: i for i, n in enumerate(numbers)}  # ledger round -> task round - 1
    starts = [(r["number"], r["started_at"]) for r in rounds]
    events: dict[int, list[dict]] = {n: [] for n in numbers}
    verdicts = classify(ledger, pr["id"], bot_logins)
    cards, decisions, dismissed = [], [], []
    every = ledger.defects(pr["id"])
    # a comment's later requests (D3b...) name the comment its first request (D3a) keeps
    first_ids = {keys.group(d.key): d.comment_ids for d in every if keys.part(d.key) == "a"}
    for defect in every:
        history = ledger.history(pr["id"], defect.key)
        for c in ledger.comments(pr["id"], defect.key):
            if c["posted_by_bot"] or c["author"] in bot_logins or not c["author"]:
                continue
            n = _round_of(c["created_at"], starts)
            event = {"kind": c["kind"] or "review_comment", "id": c["id"], "author": c["author"],
                     "role": "author" if c["author"] == pr["author"] else "reviewer",
                     "body": c["body"] or "", "in_reply_to": c["in_reply_to"],
                     "created_at": c["created_at"]}
            if event["kind"] == "review_comment" and not c["in_reply_to"]:
                event.update(path=defect.path, line=defect.line_end,
                             start_line=defect.line_start, side=defect.side)
            events.setdefault(n, []).append(event)
        for s in ledger.signal_rows(pr["id"], defect.key):
            if s["kind"] in ("thread_resolved", "thread_unresolved") and s["round"] in events:
                root = ledger.thread_root(pr["id"], defect.key)
                events[s["round"]].append({"kind": s["kind"], "author": s["author"],
                                           "comment_id": root["id"] if root else None,
                                           "defect": defect.key, "created_at": s["at"]})
        mine = [v for v in verdicts if v.defect_key == defect.key]
        by_round: dict[int, dict] = {}
        bot_by_round: dict[int, dict] = {}
        for h in history:
            if h["rule"] == "ignored":
                continue
            by_round[h["round"]] = h
            if h["decided_by"] in ("rule", "llm"):
                bot_by_round[h["round"]] = h
                decisions.append({"defect": defect.key, "round": index.get(h["round"], -1) + 1,
                                  "state": h["state"], "rule": h["rule"],
                                  "decided_by": h["decided_by"], "evidence": h["evidence"]})
        if any(v.kind == "finding" and v.verdict == "dismissed" for v in mine):
            dismissed.append({"defect": defect.key, "path": defect.path,
                              "line_start": defect.line_start, "line_end": defect.line_end,
                              "description": defect.description,
                              "evidence": "; ".join(v.evidence for v in mine
                                                    if v.kind == "finding")})
            continue
        confirmed = {v.round for v in mine if v.kind == "state" and v.verdict == "confirmed"}
        accepted = any(v.kind == "finding" and v.verdict == "accepted" for v in mine)
        states: list[str | None] = []
        sources: list[str | None] = []
        bot_states: list[str | None] = []
        current = None
        for n in numbers:
            row = by_round.get(n)
            if row is not None:
                current = row["state"]
            elif current is not None:
                current = str(carry_forward(parse_state(current)))
            states.append(current)
            human = row is not None and (
                row["decided_by"] == "human" or n in confirmed
                or (accepted and n == defect.raised_round and row["state"] == "New"))
            sources.append(HUMAN if human and current else None)
            bot = bot_by_round.get(n)
            bot_states.append(bot["state"] if bot else None)
        if not any(sources):
            continue
        raised = index.get(defect.raised_round, 0) + 1
        own_ids = defect.comment_ids or (first_ids.get(keys.group(defect.key), [])
                                         if keys.part(defect.key) else [])
        human_ids = [c for c in own_ids
                     if any(e.get("id") == c for e in events.get(defect.raised_round, []))]
        cards.append({
            "id": defect.key, "description": defect.description, "path": defect.path,
            "line_start": defect.line_start, "line_end": defect.line_end, "side": defect.side,
            "raised_in_round": raised, "type": defect.type, "severity": defect.severity,
            "origin": defect.origin.value, "states": states, "label_sources": sources,
            "bot_states": bot_states, "comment_ids": human_ids,
            "anchor_sha": defect.anchor_sha,
            "evidence": "; ".join(f"{v.verdict} ({v.signal})" for v in mine) or
                        "raised or decided by people",
        })
    task_rounds = []
    for r in rounds:
        task_rounds.append({
            "round": index[r["number"]] + 1, "head_sha": r["head_sha"],
            **({"base_sha": r["base_sha"]} if r["base_sha"] else {}),
            "commits": [], "diff": "", "files": {},
            "events": sorted(events.get(r["number"], []), key=lambda e: e.get("created_at") or ""),
        })
    return {
        "schema": "mcr-task/1",
        "task_id": task_id_for(pr["repo"], pr["number"]),
        "source": "exported from a roundwise ledger: rounds and people's events as the App "
                  "saw them; states labelled only where people's actions imply them "
                  "(label_sources), weak labels",
        "repo": pr["repo"], "language": "unknown",
        "pr": {"number": pr["number"], "title": pr["title"] or "", "body": "",
               "author": pr["author"], "base_sha": rounds[0]["base_sha"],
               "status": pr["status"]},
        "rounds": task_rounds, "defects": cards, "bot_decisions": decisions,
        "dismissed_findings": dismissed,
    }


def export_tasks(ledger_path: str | Path, out: str | Path, *, repo: str | None = None,
                 number: int | None = None, include_open: bool = False,
                 git_dir: str | Path | None = None,
                 bot_logins: set[str] = frozenset({"roundwise[bot]", "roundwise"})
                 ) -> list[Path]:
    """Write one task file per finished PR of the ledger; returns the paths written."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    with Ledger(ledger_path) as ledger:
        for pr in ledger.pull_requests():
            if repo and pr["repo"] != repo or number is not None and pr["number"] != number:
                continue
            if pr["status"] not in ("merged", "closed") and not include_open:
                continue
            task = export_pr(ledger, pr, bot_logins)
            if task is None:
                continue
            if git_dir:
                fill_from_git(task, git_dir)
            path = out / f"{task['task_id']}.json"
            path.write_text(json.dumps(task, indent=1, ensure_ascii=False) + "\n")
            written.append(path)
    return written


def _git(git_dir: str | Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(git_dir), *args], check=True, capture_output=True,
                          text=True).stdout


def fill_from_git(task: dict, git_dir: str | Path) -> dict:
    """Fill each round's diff, changed files (full text at its head) and commits from a clone."""
    pr_base = task["pr"].get("base_sha")
    previous = pr_base
    for rnd in task["rounds"]:
        base, head = rnd.get("base_sha") or pr_base, rnd["head_sha"]
        rnd["diff"] = _git(git_dir, "diff", "--no-color", "--no-renames", base, head)
        files: dict[str, str | None] = {}
        for line in _git(git_dir, "diff", "--name-status", "--no-renames", base,
                         head).splitlines():
            status, _, path = line.partition("\t")
            if status.startswith("D"):
                files[path] = None
                continue
            try:
                files[path] = _git(git_dir, "show", f"{head}:{path}")
            except (subprocess.CalledProcessError, UnicodeDecodeError):
                continue  # binary or unreadable: left out, as the format says
        rnd["files"] = files
        log = _git(git_dir, "log", "--reverse", "--format=%H%x00%s%x00%an",
                   f"{previous}..{head}" if previous else head)
        rnd["commits"] = [dict(zip(("sha", "message", "author"), entry.split("\0"),
                                   strict=False))
                          for entry in log.splitlines() if entry]
        previous = head
    return task


def build_tasks(tasks_dir: str | Path, git_dir: str | Path) -> list[Path]:
    """``roundwise bench build``: fill the tasks in a folder from a clone, in place."""
    done = []
    for path in sorted(Path(tasks_dir).rglob("*.json")):
        data = json.loads(path.read_text())
        if data.get("schema") != "mcr-task/1":
            continue
        fill_from_git(data, git_dir)
        path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
        done.append(path)
    return done
