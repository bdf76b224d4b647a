"""Benchmark: the bench's replay overhead per round, with a scripted instant LLM.

Plays tasks through the real bot (fake GitHub + server on loopback, the LLM path pointed at a
scripted OpenAI-compatible server that answers at once), several times, and prints the median
and p99 seconds per round: the cost of the machinery itself (webhooks, jobs, GitHub calls,
engine, ledger), not of a model. The offline reviewer is measured the same way for reference.

    python -m bench.perf.replay [--tasks PATH...] [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from pathlib import Path

from bot.review.llm_config import configure_litellm

from ..replay.github import Harness, replay_task
from ..run import gather_tasks
from ..score.metrics import percentile
from ..scripted_llm import ScriptedLLM

EXAMPLES = Path(__file__).parent.parent / "examples"


async def measure(tasks, repeat: int, model: str | None, api_base: str | None) -> list[float]:
    seconds = []
    for attempt in range(repeat):
        with tempfile.TemporaryDirectory() as tmp:
            async with Harness(Path(tmp) / "ledger.db", model=model, api_base=api_base,
                               workers=1) as harness:
                for task in tasks:
                    records = await replay_task(harness, task)
                    seconds.extend(r["seconds"] for r in records)
    return seconds


async def main_async(args) -> None:
    tasks, _ = gather_tasks(args.tasks)
    rows = []
    async with ScriptedLLM() as llm:
        for name, model, base in (("offline", None, None),
                                  ("scripted LLM", "openai/scripted", llm.url)):
            s = await measure(tasks, args.repeat, model, base)
            rows.append((name, len(s), percentile(s, 50), percentile(s, 99)))
        calls = len(llm.requests)
    print(f"{len(tasks)} task(s) x {args.repeat}; scripted LLM calls: {calls}")
    print(f"{'reviewer':<14} {'rounds':>6} {'median s/round':>15} {'p99 s/round':>12}")
    for name, n, med, p99 in rows:
        print(f"{name:<14} {n:>6} {med:>15.3f} {p99:>12.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", default=[str(EXAMPLES)])
    parser.add_argument("--repeat", type=int, default=3)
    import os

    configure_litellm()
    os.environ.setdefault("OPENAI_API_KEY", "sk-scripted")
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
