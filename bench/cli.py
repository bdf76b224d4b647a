"""``roundwise bench ...`` and ``roundwise demo``: command-line entry points of the bench."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

from .replay import REPLAYS
from .score import risk
from .score.tracking import pair_records, replay_tasks, score_replays
from .tasks.mcr import TaskError, load_tasks, named_file_errors
from .tune.calibration import held_out_records

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
    run.add_argument("--timeout", type=float,
                     help="seconds per model call (default: $ROUNDWISE_LLM_TIMEOUT, else 60)")
    run.add_argument("--round-timeout", type=float, default=300.0,
                     help="seconds the bench waits for one round's review (default: 300)")
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
    run.add_argument("--forge", choices=sorted(REPLAYS), default="github",
                     help="the code host to replay through: the fake GitHub (default) or "
                          "the fake GitLab")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    run.add_argument("--offline-fallback", action="store_true",
                     help="keep a run whose model cannot be used or never answered (its rounds "
                          "tracked from the code only) instead of failing it; a model that "
                          "cannot be used at all is replaced by the offline reviewer")
    run.add_argument("--repo-settings", metavar="FILE",
                     help="a .github/roundwise.yml given to every task's repository (e.g. to "
                          "replay with converge or paths settings)")
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
    tracking.add_argument("--errors", action="store_true",
                          help="list every wrong answer (live and settled) with its evidence")
    tracking.add_argument("--by-rule", action="store_true",
                          help="per rule: live pairs it decided, how many right, in how many "
                               "repositories (a rule right in one repository only is suspect)")
    tracking.add_argument("--baseline", choices=["naive"],
                          help="also score the trivial tracker on the same pairs, side by side")
    tracking.add_argument("--feedback", action="store_true",
                          help="replay each repository's tasks in order, each task's judged "
                               "decisions feeding the next tasks' confidence (a repository the "
                               "bot keeps reviewing); the answers are the same")
    tracking.add_argument("--pairs", metavar="FILE",
                          help="write every scored pair (live and settled) as JSON Lines: task, "
                               "repository, defect, round, labels, answer, right or wrong, "
                               "rule, evidence, confidence, the comment; '-' for stdout")
    tracking.set_defaults(func=cmd_tracking)
    context = bsub.add_parser(
        "context", help="measure what the LLM detection prompt shows, without an LLM",
        description="Build each task's detection prompts as a review would, with the diff "
                    "alone and with repository context, within the same token budget, and "
                    "report per context level and language the share of expert comments "
                    "whose lines are in the prompt, the share of the identifiers they name "
                    "whose definition is in it, and prompt tokens per PR.",
    )
    context.add_argument("--tasks", nargs="+", required=True,
                         help="task files or folders (mcr-task/1, AACR-Bench folders)")
    context.add_argument("--repos", help="folder of checkouts at each task's head, named "
                                         "<task_id> or <owner>__<repo>")
    context.add_argument("--budget", type=int,
                         help="prompt token budget (default: ROUNDWISE_MAX_PROMPT_TOKENS or "
                              "24000)")
    context.add_argument("--model", default="gpt-4o",
                         help="litellm model whose tokenizer counts (default gpt-4o)")
    context.add_argument("--cache", help="folder for the symbol indexes (default: none)")
    context.add_argument("--json", action="store_true", help="print the figures as JSON")
    context.set_defaults(func=cmd_context)

    from .tasks.export_cli import add_commands as add_export

    add_export(bsub)


class _BadInput(Exception):
    """Task files that end the command: one ``FILE: WHERE: WHY`` line each."""


def _say(error: _BadInput) -> int:
    print("\n".join(f"roundwise: {line}" for line in error.args[0]), file=sys.stderr)
    return 2


def _load(paths: list[str]):
    """The tasks under ``paths``; a task file named there that is malformed, or no valid task
    at all, ends the command (exit status 2) with the file, the place and the reason."""
    named = named_file_errors(paths)
    if named:
        raise _BadInput(named)
    try:
        tasks, errors = load_tasks(paths)
    except TaskError as exc:
        raise _BadInput([str(exc)]) from None
    if not tasks:
        raise _BadInput(errors or ["no task files found in " + ", ".join(paths)])
    for error in errors:
        print(f"skipped: {error}", file=sys.stderr)
    return tasks


def cmd_demo(args) -> int:
    try:
        tasks = _load(args.tasks)
    except _BadInput as exc:
        return _say(exc)
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
    from .score.tracking import naive_decide, replay_with_feedback

    try:
        tasks = _load(args.tasks)
    except _BadInput as exc:
        return _say(exc)
    replays = replay_with_feedback(tasks) if args.feedback else replay_tasks(tasks)
    scores = score_replays(replays)
    baseline = None
    if args.baseline == "naive":
        baseline = score_replays(replay_tasks(tasks, decide=naive_decide))
        scores["baseline"] = baseline
    records = [r for replay in replays for r in pair_records(replay)]
    fitted = risk.figures(records)
    held = risk.figures(held_out_records(records))
    scores["risk"] = {"shipped_table": fitted, "leave_one_repository_out": held}
    if args.json:
        print(json.dumps(scores, indent=2))
    else:
        print(tracking_table(scores, baseline))
        print(risk.table(held, "confidence, leave-one-repository-out"))
        print(risk.table(fitted, "confidence, shipped table (fitted where it saw these tasks)"))
    if args.by_rule:
        print(rule_table(replays))
        print("per rule and repository (live pairs)")
        print(risk.rules_table(held))
    if args.errors:
        for r in records:
            if not r["right"]:
                why = f"{r['rule']}: {r['evidence']}" if r["rule"] else ""
                print(f"  {'live' if r['live'] else 'settled'} {r['task']} {r['defect']} "
                      f"round {r['round']}: gold {r['gold']}, answer {r['answer']} "
                      f"({r['key']}: {why[:160]})")
    if args.pairs:
        write_pairs(args.pairs, records)
    return 0


def write_pairs(target: str, records: list[dict]) -> None:
    """Pair records as JSON Lines to a file (its folder made) or, for '-', to stdout."""
    lines = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    if target == "-":
        sys.stdout.write(lines)
        return
    path = Path(target)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(lines, encoding="utf-8")
    except OSError as exc:
        raise SystemExit(f"roundwise: cannot write {target}: {exc.strerror or exc}")
    print(f"wrote {len(records)} pairs to {target}", file=sys.stderr)


def rule_table(replays) -> str:
    """Which rule decided each live pair, how often it was right, and across how many
    repositories it was used and right."""
    from .score.tracking import rule_usage

    rows = rule_usage(replays)
    out = [f"{'rule':<28} {'pairs':>5} {'right':>5} {'repos':>5} {'repos right':>11}"]
    for rule, r in sorted(rows.items(), key=lambda kv: -kv[1]["pairs"]):
        out.append(f"{rule:<28} {r['pairs']:>5} {r['right']:>5} {len(r['repos']):>5} "
                   f"{len(r['repos_right']):>11}")
    return "\n".join(out)


def tracking_table(scores: dict, baseline: dict | None = None) -> str:
    """Tracking figures as a small table; with a baseline, its figures in a second column."""
    rows = [
        ("live pairs", (f"{scores['n']} (Open {scores['support_by_state']['Open']}, "
                        f"Resolved {scores['support_by_state']['Resolved']})"), None),
        ("accuracy", f"{scores['state_accuracy']:.3f}",
         baseline and f"{baseline['state_accuracy']:.3f}"),
        ("balanced accuracy", f"{scores['balanced_accuracy']:.3f}",
         baseline and f"{baseline['balanced_accuracy']:.3f}"),
    ]
    for state in ("Open", "Resolved"):
        if state in scores["recall_by_state"]:
            rows.append((f"recall {state}", f"{scores['recall_by_state'][state]:.3f}",
                         baseline and f"{baseline['recall_by_state'].get(state, 0.0):.3f}"))
    rows.append(("settled errors", f"{scores['settled_errors']}/{scores['settled_n']}",
                 baseline and f"{baseline['settled_errors']}/{baseline['settled_n']}"))
    if scores.get("sure_accuracy") is not None:
        rows.append(("unsure share (live)", f"{scores['unsure_share']:.3f}", None))
        rows.append(("accuracy when sure", f"{scores['sure_accuracy']:.3f}", None))
    lines = [f"tasks {scores['tasks']} (multi-round)"]
    if baseline:
        lines.append(f"{'':<20}{'roundwise':>12}{'naive':>12}")
    for name, ours, theirs in rows:
        if name == "live pairs":
            lines.append(f"{name:<20}{ours}")
        else:
            lines.append(f"{name:<20}{ours:>12}" + (f"{theirs or '':>12}" if baseline else ""))
    return "\n".join(lines)


def cmd_context(args) -> int:
    import os

    from .run import gather_tasks
    from .score.context import measure, render

    try:
        tasks, skipped = gather_tasks(args.tasks)
    except TaskError as exc:
        print(f"roundwise: {exc}", file=sys.stderr)
        return 2
    for message in skipped:
        print(f"skipped: {message}", file=sys.stderr)
    if not tasks:
        print("roundwise: no valid tasks found in " + ", ".join(args.tasks), file=sys.stderr)
        return 2
    budget = args.budget or int(os.environ.get("ROUNDWISE_MAX_PROMPT_TOKENS") or 24000)
    summary = measure(tasks, args.repos, budget, args.model, args.cache)
    print(json.dumps(summary, indent=2) if args.json else render(summary))
    return 0


#: pyproject.toml's ``bench`` extra (jinja2, which the reports use too, is the server's: the
#: dashboard's pages)
BENCH_EXTRA = ("matplotlib", "tqdm")


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
    named = named_file_errors(args.tasks)
    if named:  # a file named on the command line must be a task: say where it is not
        return _say(_BadInput(named))
    model = args.model
    if model and not args.baseline:
        problems = _model_problems(args)
        for problem in problems:
            print(f"roundwise: {problem}", file=sys.stderr)
        if problems and not args.offline_fallback:
            return 2
        if problems:
            print("roundwise: replaying with the offline reviewer (--offline-fallback)",
                  file=sys.stderr)
            model = None
    from .run import RunOptions, run

    opts = RunOptions(
        tasks=args.tasks, out=Path(args.out), model=model, api_base=args.api_base,
        judge=args.judge, concurrency=args.concurrency, baseline=args.baseline,
        limit=args.limit, resume=args.resume, cache=Path(args.cache) if args.cache else None,
        tolerance=args.tolerance, progress=not args.quiet, forge=args.forge,
        repo_settings=Path(args.repo_settings).read_text() if args.repo_settings else None,
        timeout=args.timeout, round_timeout=args.round_timeout,
    )
    silence = _FirstSilence()
    logging.getLogger("bot.review.llm").addHandler(silence)
    try:
        summary = asyncio.run(run(opts))
    except (TaskError, ValueError) as exc:
        print(f"roundwise: {exc}", file=sys.stderr)
        return 2
    finally:
        logging.getLogger("bot.review.llm").removeHandler(silence)
    for message in summary["run"]["skipped_inputs"]:
        print(f"skipped: {message}", file=sys.stderr)
    for task, error in summary["run"]["tasks_failed"].items():
        print(f"failed: {task}: {error}", file=sys.stderr)
    print(headline(summary))
    print(f"report: {Path(args.out) / 'report.md'} and {Path(args.out) / 'report.html'}")
    llm = summary.get("llm") or {}
    if model and not args.baseline and not llm.get("calls") and llm.get("failed"):
        # every round was tracked from the code only: not the run that was asked for
        failed = llm["failed"]
        print(f"roundwise: the model {model} never answered ({failed} call"
              f"{'s' * (failed != 1)} without an answer{f': {silence.first}' if silence.first else ''})"
              + ("; kept, tracked from the code only (--offline-fallback)"
                 if args.offline_fallback else "; pass --offline-fallback to keep such a run"),
              file=sys.stderr)
        if not args.offline_fallback:
            return 1
    return 1 if summary["run"]["tasks_failed"] else 0


class _FirstSilence(logging.Handler):
    """Keeps the first "no answer from MODEL: why" the bot's model client logs during a run (in
    one line), for the line that says why a run's model never answered; the client's other
    warnings are counted in the headline instead of printed one by one."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.first: str | None = None

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if self.first is None and message.startswith("no answer from"):
            self.first = " ".join(message.split())[:300]


def _model_problems(args) -> list[str]:
    """What makes the run's model unusable before any call (a provider litellm does not know,
    a key not set), in the words ``roundwise serve`` uses."""
    import os

    from bot.review.llm_config import LLMConfig
    from bot.server.startup import check_model

    llm = LLMConfig.from_env(os.environ, model=args.model, api_base=args.api_base)
    return check_model(llm, os.environ, names=("--model", "ROUNDWISE_FALLBACK_MODEL"),
                       keyless_local=True)


def _prf(d: dict) -> str:
    precision = "-" if d.get("precision") is None else f"{d['precision']:.3f}"
    return (f"precision {precision}  recall {d['recall']:.3f}  f1 {d['f1']:.3f}  "
            f"(matched {d['tp']} of {d['due']} due, {d['findings']} findings)")


def headline(summary: dict) -> str:
    """The few figures a person looks at first: the bot's own detection, then tracking, then
    the protocol's combined figure (which counts carried human defects as detections)."""
    d, tr = summary["detection"], summary["tracking"]
    run = summary.get("run") or {}
    lines = [(f"{summary['tasks']} task(s), {summary['rounds']} round(s), reviewer "
              f"{run.get('model', '-')}, judge {run.get('judge', '-')}")]
    if run.get("model") == "offline":
        lines.append("the reviewer is OFFLINE (static checks, no LLM): own detection is what "
                     "those checks find")
    own, carried = summary.get("own"), summary.get("carried")
    if own and d.get("rounds", 1):
        lines += [f"own detection, round 1     {_prf(own['round_1'])}",
                  f"own detection, all rounds  {_prf(own)}"]
    if d.get("rounds", 1):
        line = (f"tracking   accuracy {tr['state_accuracy']:.3f}  balanced "
                f"{tr['balanced_accuracy']:.3f}  (live pairs {tr['n']}); settled errors "
                f"{tr['settled_errors']}/{tr['settled_n']}")
        base = tr.get("baseline")
        if base:
            line += (f"; naive baseline balanced {base['balanced_accuracy']:.3f}, settled "
                     f"errors {base['settled_errors']}/{base['settled_n']}")
        lines.append(line)
        combined = f"combined detection (protocol)  {_prf(d)}"
        if carried:
            combined += f"; carried matched {carried['tp']}"
        lines += [combined, f"state accuracy on matched pairs {summary['state_accuracy']:.3f}"]
    if "human_signal" in summary:
        h = summary["human_signal"]
        lines.append(f"agreement with people (weak labels) state {h['state_agreement']:.3f} "
                     f"(n {h['state_n']}), tracking {h['tracking']['state_accuracy']:.3f} "
                     f"(live pairs {h['tracking']['n']}); {h['labelled_states']} labelled "
                     "states, the rest not scored")
    llm = summary.get("llm") or {}
    if llm.get("calls") or llm.get("failed"):
        line = f"model      {llm['calls']} call(s), {llm.get('failed', 0)} without an answer"
        line += "; dropped " + (", ".join(f"{k} {v}" for k, v in llm["dropped"].items())
                                if llm.get("dropped") else "nothing")
        lines.append(line)
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
