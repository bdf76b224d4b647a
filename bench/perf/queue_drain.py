"""Burst drain, for ``bench.perf.queue``: does the queue keep its workers busy as it grows?

Jobs arrive at ``rate`` per second (``JobQueue.enqueue``, as webhooks would queue them, spread
over 2,000 pull requests) while the real ``bot.jobs.Workers`` claim and finish them; the handler
only sleeps ``work`` seconds. With ``rate`` above the workers' capacity (``workers / work``) the
backlog grows the whole time. Once a second the depth and the finished count are sampled; the
drain rate per depth bucket is the jobs finished while the depth was in that bucket over the
time it spent there (``prefill`` starts it deep). A queue whose claim slows with depth shows it as a falling rate.
The steady drain (from the first backlog on) is also given as a share of capacity (and of the
capacity the handlers' measured time allows: an asyncio sleep of 50 ms lasts about half a
millisecond more, which is not the queue's), and what
each job costs its worker beyond the work as a number of durable commits, one commit being
measured on the same store before and after the drain (a worker finishing a job and claiming
the next in one commit costs about one).
"""

from __future__ import annotations

import asyncio
import logging
import random
import statistics
import tempfile
import time
from itertools import pairwise
from pathlib import Path

from bot.jobs import JobQueue, Workers

from .queue_fill import close_store, fill, open_store, touch

PRS = 2_000


async def _drain(queue: JobQueue, seconds: float, workers: int, work: float, rate: float,
                 handled: list[float]) -> tuple[list[tuple[float, int, int]], int]:
    finished = 0

    async def handle(job) -> None:
        nonlocal finished
        started = time.perf_counter()
        await asyncio.sleep(work)
        handled.append(time.perf_counter() - started)
        finished += 1

    pool = Workers(queue, handle, count=workers, poll=0.05)
    pool.start()
    rng = random.Random(3)
    samples: list[tuple[float, int, int]] = []
    sent = 0
    started = time.perf_counter()
    next_sample = started
    try:
        while (now := time.perf_counter()) - started < seconds:
            if now >= next_sample:
                depth = await queue.call(queue.depth)
                samples.append((now - started, depth, finished))
                next_sample += 1.0
            due = started + sent / rate
            if due > now:
                await asyncio.sleep(min(due - now, next_sample - now))
                continue
            number = rng.randrange(1, PRS + 1)
            await queue.call(queue.enqueue, "comment", repo=f"drain/repo{number % 20}",
                             number=number, installation_id=7, payload={})
            sent += 1
        samples.append((time.perf_counter() - started, await queue.call(queue.depth),
                        finished))
    finally:
        await pool.stop()
    return samples, sent


def buckets(samples: list[tuple[float, int, int]], width: int) -> list[dict]:
    """Per depth bucket: seconds spent there, jobs finished, rate."""
    out: dict[int, dict] = {}
    for (t0, depth, done0), (t1, _, done1) in pairwise(samples):
        b = out.setdefault(depth // width, {"low": depth // width * width, "seconds": 0.0,
                                            "finished": 0})
        b["seconds"] += t1 - t0
        b["finished"] += done1 - done0
    return [dict(b, rate=b["finished"] / b["seconds"]) for _, b in sorted(out.items())]


def commit_floor(bench, job_id: int, samples: int = 30) -> float:
    """Median milliseconds of one durable commit on the bench's store (job ``job_id``'s row
    updated in a transaction of its own, through the store's connection path): the least a
    job's claim or finish can cost."""
    times = []
    for _ in range(samples):
        started = time.perf_counter()
        touch(bench, job_id)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def run_drain(engine: str, pg_url: str, *, seconds: float, workers: int, work: float,
              rate: float, prefill: int = 0) -> dict:
    """The drain on a fresh store; ``prefill`` queued jobs (``bench.perf.queue_fill``) first, to
    start deep. The durable-commit floor is measured on the same store just before and just
    after the drain."""
    with tempfile.TemporaryDirectory() as folder:
        bench = open_store(engine, Path(folder), pg_url)
        try:
            if prefill:
                fill(bench, prefill, history=0)
            # one finished job: the row the commit floor rewrites (a write that changes no
            # row commits without flushing anything)
            done = bench.store.enqueue("comment", repo="drain/floor", number=0,
                                       installation_id=7, payload={}, delivery_id=None,
                                       head_sha=None)
            bench.store.finish(done, "done", None)
            floors = [commit_floor(bench, done)]
            queue = JobQueue(store=bench.store)
            logging.getLogger("bot.jobs.queue").setLevel(logging.ERROR)  # "re-queued N job(s)"
            handled: list[float] = []  # each job's time in the handler, measured
            samples, sent = asyncio.run(_drain(queue, seconds, workers, work, rate, handled))
            floors.append(commit_floor(bench, done))
        finally:
            close_store(bench)
    elapsed = samples[-1][0]
    depths = [depth for _, depth, _ in samples]
    width = max(100, ((max(depths) - min(depths)) // 6 + 99) // 100 * 100)
    # the steady drain: from the first sample with a backlog to the end
    start = next((i for i, (_, depth, _) in enumerate(samples) if depth > workers), 0)
    t0, _, done0 = samples[start]
    steady = (samples[-1][2] - done0) / max(samples[-1][0] - t0, 1e-9)
    floor = statistics.median(floors)
    per_job = workers / steady * 1000 if steady else float("inf")  # ms a worker spends per job
    took = statistics.mean(handled) if handled else work  # what the handler really took
    return {"engine": engine, "workers": workers, "work": work, "rate": rate,
            "sent": sent, "elapsed": elapsed, "finished": samples[-1][2],
            "capacity": workers / work, "buckets": buckets(samples, width), "width": width,
            "steady": steady, "commit_ms": floor, "floors": floors,
            "overhead_ms": per_job - work * 1000,
            "overhead_commits": (per_job - work * 1000) / floor,
            "handler_ms": took * 1000, "handled_capacity": workers / took}


def print_drain(r: dict) -> None:
    print(f"\nburst drain, {r['engine']}: {r['sent']} jobs queued in {r['elapsed']:.1f} s "
          f"({r['sent'] / r['elapsed']:.0f}/s asked {r['rate']:g}/s); {r['workers']} workers x "
          f"{r['work'] * 1000:g} ms = capacity {r['capacity']:.0f} jobs/s; "
          f"{r['finished']} finished")
    print(f"{'depth':>15}{'seconds':>9}{'finished':>10}{'jobs/s':>9}{'of capacity':>13}")
    for b in r["buckets"]:
        span = f"{b['low']:,}-{b['low'] + r['width'] - 1:,}"
        print(f"{span:>15}{b['seconds']:>9.1f}{b['finished']:>10}{b['rate']:>9.1f}"
              f"{b['rate'] / r['capacity']:>12.0%}")
    print(f"the handler's {r['work'] * 1000:g} ms took {r['handler_ms']:.2f} ms on average "
          f"(asyncio's timers overshoot): the queue's own share is the drain against "
          f"{r['handled_capacity']:.1f} jobs/s, {r['steady'] / r['handled_capacity']:.1%}")
    print(f"steady drain {r['steady']:.1f} jobs/s = {r['steady'] / r['capacity']:.1%} of "
          f"capacity; each job costs its worker {r['overhead_ms']:.1f} ms beyond the work = "
          f"{r['overhead_commits']:.2f} durable commits (one commit: {r['commit_ms']:.2f} ms, "
          f"measured before and after: {r['floors'][0]:.2f}, {r['floors'][1]:.2f})")
