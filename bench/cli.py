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
    run = bsub.add_parser(
        "run", help="replay tasks through the real bot and score them",
        description="Replay mcr-task/1 tasks (files, folders, AACR-Bench folders) through the "
                    "real roundwise server and a fake GitHub on loopback, round by round, then "
                    "score them like MCR-Bench and write summary.json, results.jsonl, "
                    "report.md and report.html into --out.",
    )
    run.add_argument("--tasks", nargs="+", default=[str(EXAMPLES)],
                     help="task files or folders (default: the bundled examples)")
    run.add_argument("--out", default="bench-out", help="output folder (default: bench-out)")
    run.add_argument("--model", help="litellm model for the bot (default: offline reviewer)")
    run.add_argument("--api-base", help="base URL of the model's API (OpenAI-compatible)")
    run.add_argument("--judge", default="offline",
                     help="'offline' (default) or a litellm model for the LLM-Hit-Judge")
    run.add_argument("--concurrency", type=int, default=2, help="tasks replayed at once")
    run.add_argument("--baseline", choices=["stateless"],
                     help="score the stateless pure-LLM protocol instead of the bot")
    run.add_argument("--limit", type=int, help="only the first N tasks (by id)")
    run.add_argument("--resume", action="store_true",
                     help="keep tasks already finished in --out and play only the rest")
    run.add_argument("--cache", help="folder for cached LLM answers (default: OUT/llm-cache)")
    run.add_argument("--tolerance", type=int, default=1,
                     help="line tolerance when matching findings to defects (default 1)")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    run.set_defaults(func=cmd_run)
    compare = bsub.add_parser("compare", help="print the deltas between two runs",
                              description="Print B - A for the headline figures of two runs.")
    compare.add_argument("run_a", help="first run folder (holding summary.json)")
    compare.add_argument("run_b", help="second run folder")
    compare.set_defaults(func=cmd_compare)
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


BENCH_EXTRA = ("jinja2", "matplotlib", "tqdm")  # pyproject.toml's ``bench`` extra


def _needs_extra() -> int:
    """Exit status 2 with one line when the bench extra is not installed, else 0."""
    from importlib.util import find_spec

    missing = [name for name in BENCH_EXTRA if find_spec(name) is None]
    if not missing:
        return 0
    print(f"roundwise: the bench needs its extra ({', '.join(missing)} missing): "
          "pip install 'roundwise[bench]'", file=sys.stderr)
    return 2


def cmd_run(args) -> int:
    import asyncio

    if _needs_extra():  # a server-only install: say so before replaying anything
        return 2
    from .run import RunOptions, run

    opts = RunOptions(
        tasks=args.tasks, out=Path(args.out), model=args.model, api_base=args.api_base,
        judge=args.judge, concurrency=args.concurrency, baseline=args.baseline,
        limit=args.limit, resume=args.resume, cache=Path(args.cache) if args.cache else None,
        tolerance=args.tolerance, progress=not args.quiet,
    )
    try:
        summary = asyncio.run(run(opts))
    except (TaskError, ValueError) as exc:
        print(f"roundwise: {exc}", file=sys.stderr)
        return 2
    for message in summary["run"]["skipped_inputs"]:
        print(f"skipped: {message}", file=sys.stderr)
    for task, error in summary["run"]["tasks_failed"].items():
        print(f"failed: {task}: {error}", file=sys.stderr)
    print(headline(summary))
    print(f"report: {Path(args.out) / 'report.md'} and {Path(args.out) / 'report.html'}")
    return 1 if summary["run"]["tasks_failed"] else 0


def headline(summary: dict) -> str:
    """The few figures a person looks at first."""
    d, tr = summary["detection"], summary["tracking"]
    lines = [
        (f"{summary['tasks']} task(s), {summary['rounds']} round(s), reviewer "
         f"{summary['run']['model']}, judge {summary['run']['judge']}"),
        f"detection  precision {d['precision']:.3f}  recall {d['recall']:.3f}  f1 {d['f1']:.3f}",
        f"state accuracy on matched pairs {summary['state_accuracy']:.3f}",
        (f"tracking   accuracy {tr['state_accuracy']:.3f}  balanced "
         f"{tr['balanced_accuracy']:.3f}  (live pairs {tr['n']}); settled errors "
         f"{tr['settled_errors']}/{tr['settled_n']}"),
    ]
    if "aacr" in summary:
        a = summary["aacr"]
        lines.append(f"aacr       line f1 {a['line']['f1']:.3f}  semantic f1 "
                     f"{a['semantic']['f1']:.3f}")
    return "\n".join(lines)


def cmd_compare(args) -> int:
    if _needs_extra():
        return 2
    from .report import ReportError, compare, load_summary

    try:
        a, b = load_summary(args.run_a), load_summary(args.run_b)
    except ReportError as exc:
        print(f"roundwise: {exc}", file=sys.stderr)
        return 2
    print(compare(a, b, (args.run_a, args.run_b)))
    return 0
