"""How trustworthy is live benchmarking? Human-signal labels against a task set's own labels.

After ``roundwise bench run --tasks PATH --out RUN`` the run's ledger (``RUN/work/ledger.db``)
holds what a live deployment would have recorded for those PRs. This script exports it as
``bench export`` would (``bench.tasks.export.export_pr``, open PRs included), maps each exported
card to the task's own defect card (the comments that raised it, else the run's detection match
recorded in ``RUN/results.jsonl``), and compares, round by round, every state that got a human
signal with the task's label. It prints, per state of the task's labels, how many states
exist, how many got a human signal (coverage) and how often the two agree, and the same per
exported label; ``--json`` prints the figures.

    python -m bench.studies.label_agreement --run RUN --tasks PATH [--json]
"""

from __future__ import annotations

import argparse
import json
from collections import Counter, defaultdict
from pathlib import Path

from bot.store.ledger_sqlite import Ledger

from ..replay.github import bench_repo
from ..tasks.export import HUMAN, export_pr
from ..tasks.mcr import load_tasks

__all__ = ["agreement", "main"]

STATES = ("New", "Open", "Resolved", "Reopened")


def _links(run: Path) -> dict[str, dict[str, set[str]]]:
    """Per task: ledger key -> task card ids it stands for (shared comments, else matches)."""
    links: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    path = run / "results.jsonl"
    if not path.exists():
        return links
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        rec = json.loads(line)
        for key, card in rec.get("matches") or []:
            links[rec["task"]][str(key)].add(str(card))
        for d in rec.get("defects") or []:
            links[rec["task"]].setdefault(f"ids:{d.get('key')}", set()).update(
                str(c) for c in d.get("comment_ids") or [])
    return links


def agreement(run: str | Path, task_paths: list[str]) -> dict:
    """The comparison, as a dict (see the module docstring)."""
    run = Path(run)
    tasks, _ = load_tasks(task_paths)
    links = _links(run)
    by_task_state = {s: Counter() for s in STATES}
    by_label = {s: Counter() for s in STATES}
    confusion: Counter = Counter()
    unmapped: Counter = Counter()  # by the exported card's origin
    with Ledger(run / "work" / "ledger.db") as ledger:
        for task in tasks:
            for card in task.defects:
                for state in card["states"]:
                    if state in by_task_state:
                        by_task_state[state]["states"] += 1
            pr = ledger.find_pull_request(bench_repo(task), int(task.pr.get("number") or 1))
            exported = export_pr(ledger, pr) if pr else None
            if not exported:
                continue
            task_links = links.get(task.task_id, {})
            for ex in exported["defects"]:
                ids = task_links.get(f"ids:{ex['id']}", set())
                cards = [c for c in task.defects
                         if ids & {str(i) for i in c.get("comment_ids") or []}]
                if not cards:
                    matched = task_links.get(ex["id"], set())
                    cards = [c for c in task.defects if str(c.get("id")) in matched]
                for t, (label, source) in enumerate(zip(ex["states"], ex["label_sources"],
                                                        strict=True), start=1):
                    if source != HUMAN:
                        continue
                    gold = cards[0]["states"][t - 1] if cards and t <= len(cards[0]["states"]) \
                        else None
                    if gold is None:
                        unmapped[ex['origin']] += 1
                        continue
                    agree = gold == label
                    by_task_state[gold]["signalled"] += 1
                    by_task_state[gold]["agree"] += agree
                    by_label[label]["n"] += 1
                    by_label[label]["agree"] += agree
                    confusion[(gold, label)] += 1
    out = {"by_task_state": {}, "by_human_label": {}, "unmapped_labels": dict(unmapped),
           "confusion": {f"{g}->{h}": n for (g, h), n in sorted(confusion.items())}}
    for s, c in by_task_state.items():
        out["by_task_state"][s] = {
            "states": c["states"], "human_signal": c["signalled"],
            "coverage": round(c["signalled"] / c["states"], 4) if c["states"] else None,
            "agree": c["agree"],
            "agreement": round(c["agree"] / c["signalled"], 4) if c["signalled"] else None}
    for s, c in by_label.items():
        out["by_human_label"][s] = {
            "n": c["n"], "agree": c["agree"],
            "precision": round(c["agree"] / c["n"], 4) if c["n"] else None}
    total = sum(c["signalled"] for c in by_task_state.values())
    out["total"] = {"states": sum(c["states"] for c in by_task_state.values()),
                    "human_signal": total,
                    "agree": sum(c["agree"] for c in by_task_state.values())}
    return out


def _pct(x) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", required=True, help="a bench run folder (holding work/)")
    parser.add_argument("--tasks", nargs="+", required=True, help="the run's task files")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    out = agreement(args.run, args.tasks)
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(f"{'task state':<10} {'states':>7} {'signal':>7} {'cover':>7} {'agree':>6} {'agree%':>7}")
    for s, c in out["by_task_state"].items():
        print(f"{s:<10} {c['states']:>7} {c['human_signal']:>7} {_pct(c['coverage']):>7} "
              f"{c['agree']:>6} {_pct(c['agreement']):>7}")
    t = out["total"]
    print(f"{'all':<10} {t['states']:>7} {t['human_signal']:>7} "
          f"{_pct(t['human_signal'] / t['states'] if t['states'] else None):>7} {t['agree']:>6} "
          f"{_pct(t['agree'] / t['human_signal'] if t['human_signal'] else None):>7}")
    print(f"{'human label':<11} {'n':>6} {'agree':>6} {'precision':>9}")
    for s, c in out["by_human_label"].items():
        print(f"{s:<11} {c['n']:>6} {c['agree']:>6} {_pct(c['precision']):>9}")
    print("human-signal labels with no task card, by origin: " + (", ".join(
        f"{k} {v}" for k, v in sorted(out["unmapped_labels"].items())) or "none"))
    print("confusion (task -> human label): " + ", ".join(f"{k} {v}" for k, v in
                                                           out["confusion"].items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
