"""Measurement: prompt tokens per round of roundwise's LLM path against a stateless prompt.

For every round t of every task, two prompts are measured with litellm's token counter (model
``gpt-4o`` by default, which works offline with the bundled price list and tokenizer):

(a) **roundwise**: what the LLM engine actually sends for round t. The real ``Engine`` with the
    ``LLMDetector`` and ``LLMVerifier`` runs against the scripted OpenAI-compatible server
    (``bench.scripted_llm``, which answers instantly: no findings, candidates confirmed); the
    ledger between rounds holds what the bot would hold: the human review comments of earlier
    rounds as tracked defects, replies as signals, and the engine's decisions. Every request
    the server records for round t is counted: detection on the diff since the previous head,
    plus the verification calls for the tracker's candidates.
(b) **stateless**: the paper's baseline prompt for round t (``stateless_messages``): the PR,
    the diffs of rounds 1..t and every human event of rounds 1..t-1, in one prompt.

Prints per-round medians and the ratio (b)/(a), overall and from round 2 on (round 1 is the
same for both: one diff, no history).

    python -m bench.perf.prompt_tokens [--tasks bench/examples /work/shared/data/mcr-dev]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from bot.review.llm_config import configure_litellm

configure_litellm()  # this script is a composition root, and litellm is imported just below

import litellm

from bench.score.context import round_context as task_round_context
from bench.score.stateless import stateless_messages
from bench.score.tracking import take_event
from bench.scripted_llm import ScriptedLLM, system_text
from bench.tasks.mcr import Task, load_tasks
from bot.review.engine import Engine, RoundContext
from bot.review.llm import LLMClient, LLMConfig, LLMDetector, LLMVerifier
from bot.store.ledger_sqlite import Ledger

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@dataclass
class RoundTokens:
    """The two prompt sizes for one round of one task."""

    task: str
    round: int
    roundwise: int
    stateless: int
    calls: int
    tracked: int
    verify: int = 0  # the part of ``roundwise`` spent on verification calls


def count(model: str, messages: list[dict]) -> int:
    """Prompt tokens of one request by litellm's counter."""
    return int(litellm.token_counter(model=model, messages=messages))


def round_context(task: Task, t: int, ledger: Ledger, pr_id: int) -> RoundContext:
    """What the bot would know at round ``t``: the diffs, the head files, the ledger."""
    return replace(task_round_context(task, t),
                   tracked=ledger.defects(pr_id, include_ignored=False),
                   signals=ledger.signals(pr_id, since_round=t - 1) if t > 1 else [])


def take_events(task: Task, t: int, ledger: Ledger, pr_id: int) -> None:
    """The people's review of round ``t`` into the ledger, as the bot's webhooks would."""
    snapshot = task.snapshot(t)
    for event in task.events(t):
        take_event(ledger, pr_id, event, snapshot, pr_author=task.pr.get("author"))


def stateless_for(task: Task, t: int) -> list[dict]:
    rounds = [{"diff": r.diff, "files": r.files} for r in task.rounds]
    events = [r.events for r in task.rounds]
    return stateless_messages(task.pr, rounds, events, t)


async def measure_task(task: Task, server: ScriptedLLM, config: LLMConfig, model: str,
                       workdir: Path) -> list[RoundTokens]:
    """Both prompt sizes for every round of one task."""
    client = LLMClient(config)
    engine = Engine([LLMDetector(client)], LLMVerifier(client))
    out = []
    with Ledger(workdir / f"{task.task_id}.db") as ledger:
        pr_id = ledger.pull_request(task.repo or task.task_id, int(task.pr.get("number") or 0),
                                    title=task.pr.get("title"), author=task.pr.get("author"))["id"]
        for rnd in task.rounds:
            t = rnd.number
            ledger.begin_round(pr_id, rnd.head_sha, rnd.base_sha or task.pr.get("base_sha"))
            ctx = round_context(task, t, ledger, pr_id)
            server.clear()
            result = await engine.review(ctx)
            sizes = [(count(model, r["messages"]), "defect verifier" in system_text(r))
                     for r in server.requests]
            roundwise = sum(n for n, _ in sizes)
            if t > 1:
                ledger.record_round(pr_id, t, result.decisions)
            ledger.finish_round(pr_id, t)
            out.append(RoundTokens(task.task_id, t, roundwise,
                                   count(model, stateless_for(task, t)),
                                   len(server.requests), len(ctx.tracked),
                                   verify=sum(n for n, v in sizes if v)))
            take_events(task, t, ledger, pr_id)
    return out


async def measure(tasks: list[Task], model: str, budget: int) -> list[RoundTokens]:
    rows: list[RoundTokens] = []
    async with ScriptedLLM() as server:
        config = LLMConfig(model="openai/scripted", api_base=server.url, api_key="sk-test",
                           timeout=10.0, max_prompt_tokens=budget)
        with tempfile.TemporaryDirectory() as tmp:
            for task in tasks:
                rows.extend(await measure_task(task, server, config, model, Path(tmp)))
    return rows


def summary(rows: list[RoundTokens]) -> dict:
    """Per-round medians and the stateless/roundwise ratios."""
    by_round: dict[int, list[RoundTokens]] = {}
    for row in rows:
        by_round.setdefault(row.round, []).append(row)
    per_round = {
        t: {"n": len(rs),
            "roundwise_median": statistics.median(r.roundwise for r in rs),
            "verify_median": statistics.median(r.verify for r in rs),
            "stateless_median": statistics.median(r.stateless for r in rs),
            "ratio_median": statistics.median(r.stateless / max(r.roundwise, 1) for r in rs)}
        for t, rs in sorted(by_round.items())
    }
    later = [r for r in rows if r.round > 1]
    return {
        "rounds": len(rows),
        "tasks": len({r.task for r in rows}),
        "per_round": per_round,
        "ratio_total": sum(r.stateless for r in rows) / max(sum(r.roundwise for r in rows), 1),
        "ratio_total_from_round_2": (sum(r.stateless for r in later) /
                                     max(sum(r.roundwise for r in later), 1)) if later else None,
        "ratio_median_from_round_2": statistics.median(
            r.stateless / max(r.roundwise, 1) for r in later) if later else None,
    }


def print_summary(title: str, s: dict) -> None:
    print(f"\n{title}: {s['tasks']} tasks, {s['rounds']} rounds")
    print(f"{'round':>5} {'n':>4} {'roundwise':>10} {'(verify)':>9} {'stateless':>10} "
          f"{'ratio':>7}   (medians)")
    for t, row in s["per_round"].items():
        print(f"{t:>5} {row['n']:>4} {row['roundwise_median']:>10.0f} "
              f"{row['verify_median']:>9.0f} {row['stateless_median']:>10.0f} "
              f"{row['ratio_median']:>7.2f}")
    print(f"stateless/roundwise, all rounds (sum/sum): {s['ratio_total']:.2f}")
    if s["ratio_total_from_round_2"] is not None:
        print(f"stateless/roundwise, rounds >= 2 (sum/sum): {s['ratio_total_from_round_2']:.2f}; "
              f"median per round: {s['ratio_median_from_round_2']:.2f}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", nargs="+", default=[str(EXAMPLES)],
                        help="task files or folders (default: the bundled examples)")
    parser.add_argument("--model", default="gpt-4o", help="tokenizer model for the counts")
    parser.add_argument("--budget", type=int, default=24000, help="max prompt tokens per call")
    parser.add_argument("--json", help="write every round's figures and the summary here")
    args = parser.parse_args(argv)
    tasks, errors = load_tasks(args.tasks)
    for error in errors:
        print(f"skipped: {error}")
    rows = asyncio.run(measure(tasks, args.model, args.budget))
    s = summary(rows)
    print_summary(", ".join(args.tasks), s)
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": [asdict(r) for r in rows], "summary": s},
                                              indent=2))


if __name__ == "__main__":
    main()
