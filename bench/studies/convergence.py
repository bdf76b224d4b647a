"""Benchmark: findings the bot posts per round, R1 → last round, with ``converge`` off and on.

Replays the tasks twice through the real server and the fake GitHub (``bench.run``), with a
scripted noisy model (``bench.scripted_llm.nitpick_responder``: findings on about one added line
in seven, mostly Minor; the offline checks run beside it): once with the repositories' default
settings, once with ``converge`` in every task repository's ``.github/roundwise.yml``. From each
run's ``posted.jsonl`` it counts the inline findings posted in each round, and from its ledger
the findings held back, and prints per round number (R1, R2...) and per task's first and last
round the totals of both runs. A user's complaint is noise that does not fall: the figure to
read is posted in the last round against R1, which must fall, not rise.

    python -m bench.studies.convergence --tasks ../shared/data/mcr-dev [--out DIR] [--json]
        [--converge "{after_round: 2, min_severity: Major}"]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
from collections import defaultdict
from pathlib import Path

from bot.store.ledger_sqlite import Ledger

from ..run import RunOptions, run
from ..scripted_llm import ScriptedLLM, nitpick_responder

__all__ = ["count", "main", "measure"]

DEFAULT_CONVERGE = "{after_round: 2, min_severity: Major}"


def count(out: Path) -> dict:
    """Posted and held-back findings per task and round of one run folder."""
    posted: dict[str, dict[int, int]] = defaultdict(dict)
    for line in (out / "posted.jsonl").read_text().splitlines():
        record = json.loads(line)
        posted[record["task"]][record["round"]] = sum(len(r["comments"])
                                                      for r in record["reviews"])
    held: dict[str, dict[int, int]] = defaultdict(dict)
    with Ledger(out / "work" / "ledger.db") as ledger:
        for pr in ledger.pull_requests():
            task = pr["repo"].split("/", 1)[1]
            for rnd in ledger.rounds(pr["id"]):
                plan = json.loads(rnd["plan"]) if rnd.get("plan") else {}
                held[task][rnd["number"]] = len(plan.get("held") or [])
    return {"posted": posted, "held": held}


def _totals(counts: dict) -> dict:
    posted, held = counts["posted"], counts["held"]
    by_round: dict[int, list[int]] = defaultdict(lambda: [0, 0, 0])  # posted, held, tasks
    first = last = held_last = 0
    for task, rounds in posted.items():
        for number, n in rounds.items():
            row = by_round[number]
            row[0] += n
            row[1] += held.get(task, {}).get(number, 0)
            row[2] += 1
        final = max(rounds)
        if final > 1:  # R1 against the last round, over the tasks that have both
            first += rounds.get(1, 0)
            last += rounds[final]
            held_last += held.get(task, {}).get(final, 0)
    multi = sum(1 for rounds in posted.values() if max(rounds) > 1)
    return {"by_round": {n: {"posted": p, "held": h, "tasks": t}
                         for n, (p, h, t) in sorted(by_round.items())},
            "r1": first, "last": last, "held_last": held_last, "tasks": len(posted),
            "multi_round_tasks": multi}


async def measure(tasks: list[str], out: Path, converge: str, concurrency: int = 2) -> dict:
    os.environ.setdefault("ROUNDWISE_API_KEY", "sk-scripted")
    results = {}
    async with ScriptedLLM(nitpick_responder) as model:
        for mode, settings in (("off", None), ("on", f"converge: {converge}\n")):
            folder = out / f"converge-{mode}"
            await run(RunOptions(tasks=tasks, out=folder, model="openai/scripted",
                                 api_base=model.url, concurrency=concurrency, progress=False,
                                 repo_settings=settings))
            results[mode] = _totals(count(folder))
            ran = json.loads((folder / "summary.json").read_text())["run"]
            results[mode]["failed"] = sorted(ran["tasks_failed"])  # not counted above
    results["converge"] = converge
    results["tasks"] = tasks
    return results


def _print(results: dict) -> None:
    print(f"tasks: {' '.join(results['tasks'])}; scripted noisy model + offline checks; "
          f"converge: {results['converge']}")
    rounds = sorted(set(results["off"]["by_round"]) | set(results["on"]["by_round"]))
    print(f"{'round':>5} {'tasks':>5} {'posted off':>10} {'posted on':>9} {'held on':>7}")
    for n in rounds:
        off = results["off"]["by_round"].get(n, {"posted": 0, "tasks": 0})
        on = results["on"]["by_round"].get(n, {"posted": 0, "held": 0})
        print(f"{'R' + str(n):>5} {off['tasks']:>5} {off['posted']:>10} {on['posted']:>9} "
              f"{on['held']:>7}")
    for mode in ("off", "on"):
        r = results[mode]
        print(f"converge {mode:>3}: R1 {r['r1']} -> last round {r['last']} posted "
              f"(over {r['multi_round_tasks']} tasks of 2+ rounds; held back in last rounds: "
              f"{r['held_last']}); tasks failed: {', '.join(r['failed']) or 'none'}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.studies.convergence",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", nargs="+", required=True, help="task files or folders")
    parser.add_argument("--out", help="where the two runs go (default: a temporary folder)")
    parser.add_argument("--converge", default=DEFAULT_CONVERGE,
                        help=f"the converge setting of the second run ({DEFAULT_CONVERGE})")
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="roundwise-converge-") as tmp:
        out = Path(args.out) if args.out else Path(tmp)
        results = asyncio.run(measure(args.tasks, out, args.converge, args.concurrency))
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        _print(results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
