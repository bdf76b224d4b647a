"""``roundwise bench ...`` and ``roundwise demo``: command-line entry points of the bench."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .tasks import TaskError, load_tasks
from .tracking import replay_tasks, score_replays

EXAMPLES = Path(__file__).parent / "examples"


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Register the bench's subcommands on the ``roundwise`` parser."""
    demo = sub.add_parser(
        "demo", help="replay the bundled example PRs through the ledger and print each round",
        description="Replay the bundled multi-round example tasks through the tracker and "
                    "print every defect's state at every round, with the evidence.",
    )
    demo.add_argument("--tasks", nargs="+", default=[str(EXAMPLES)],
                      help="task files or folders (default: the bundled examples)")
    demo.set_defaults(func=cmd_demo)

    bench = sub.add_parser("bench", help="replay tasks and score them like MCR-Bench")
    bsub = bench.add_subparsers(dest="bench_command", required=True)
    tracking = bsub.add_parser(
        "tracking", help="score the deterministic tracker alone on tasks' human reviews",
        description="Feed each task's human review comments of round t-1 into the tracker and "
                    "score the states it decides at round t (live and settled pairs).",
    )
    tracking.add_argument("--tasks", nargs="+", required=True, help="task files or folders")
    tracking.add_argument("--json", action="store_true", help="print the scores as JSON")
    tracking.add_argument("--errors", action="store_true", help="list every wrong live answer")
    tracking.set_defaults(func=cmd_tracking)


def _load(paths: list[str]):
    try:
        tasks, errors = load_tasks(paths)
    except TaskError as exc:
        raise SystemExit(f"roundwise: {exc}")
    for error in errors:
        print(f"skipped: {error}", file=sys.stderr)
    return tasks


def cmd_demo(args) -> int:
    tasks = _load(args.tasks)
    replays = replay_tasks(tasks)
    for replay in replays:
        task = replay.task
        print(f"\n{task.task_id} ({task.language}, {len(task.rounds)} rounds): {task.pr.get('title')}")
        for number, states in sorted(replay.answers.items()):
            evidence = replay.evidence.get(number, {})
            print(f"  round {number}:" + ("" if states else " no tracked defects yet"))
            for key, state in states.items():
                why = evidence.get(key, "raised by a reviewer after this round's push")
                print(f"    {key:<4} {state:<9} {why}")
    scores = score_replays(replays)
    print(f"\ntracking on {scores['tasks']} task(s): live pairs {scores['n']}, accuracy "
          f"{scores['state_accuracy']:.3f}, balanced accuracy {scores['balanced_accuracy']:.3f}; "
          f"settled errors {scores['settled_errors']}/{scores['settled_n']}")
    return 0


def cmd_tracking(args) -> int:
    tasks = _load(args.tasks)
    replays = replay_tasks(tasks)
    scores = score_replays(replays)
    if args.json:
        print(json.dumps(scores, indent=2))
    else:
        print(f"tasks {scores['tasks']} (multi-round)")
        print(f"live pairs {scores['n']} (Open {scores['support_by_state']['Open']}, "
              f"Resolved {scores['support_by_state']['Resolved']}; untracked "
              f"{scores['untracked']})")
        print(f"  accuracy           {scores['state_accuracy']:.3f}")
        print(f"  balanced accuracy  {scores['balanced_accuracy']:.3f}")
        for state, recall in scores["recall_by_state"].items():
            print(f"  recall {state:<10}  {recall:.3f}")
        print(f"settled pairs {scores['settled_n']}, errors {scores['settled_errors']}")
    if args.errors:
        for replay in replays:
            for pair in replay.pairs():
                if pair.live and (pair.answer == "Resolved") != (pair.gold == "Resolved"):
                    print(f"  {pair.task} {pair.defect} round {pair.round}: gold {pair.gold}, "
                          f"answer {pair.answer}")
    return 0
