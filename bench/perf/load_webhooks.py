"""Load script (not a test): how fast the real server acknowledges a burst of signed deliveries.

    python -m bench.perf.load_webhooks [--deliveries 200] [--workers 0]

Starts the real roundwise app (``bot.server.app.create_app``, offline reviewer, a fresh ledger file in a
temporary folder) on 127.0.0.1, in a process of its own, and sends ``--deliveries`` signed webhooks all at once, each with
its own delivery id: a mix of ``pull_request`` opened, ``issue_comment`` commands,
``pull_request_review_comment``, ``installation`` and ``ping``, built by ``bench.replay.payloads``
against a fake GitHub holding 20 pull requests. It prints the acknowledgement latency (median,
p99, max, in ms, measured by the client from send to response) and the throughput, and, for
comparison, the median latency of 50 deliveries sent one at a time before the burst (no
queueing behind other deliveries).

With ``--workers 0`` (the default) the worker pool is not started, so only acknowledgement is
measured: verify, validate, record the delivery and enqueue the job in the ledger. With
``--workers N`` the fake GitHub is served and N workers review the pull requests while the
burst arrives, which shows acknowledgement under background load. ``bench.perf.ack`` sends
the same burst to the app and to a bare HMAC-checking handler in one run, for the ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import secrets
import statistics
import tempfile
import time
from pathlib import Path

import aiohttp
from aiohttp import web

from bot.config.env import Config
from bot.github import RetryPolicy
from bot.review.llm_config import configure_litellm
from bot.server.app import create_app
from bot.store import open_queue_store

from ..fake_github import FakeGitHub
from ..replay import payloads
from ..replay.github import throwaway_key

APP_ID, INSTALLATION, REPO, PRS = 4242, 77, "load/widgets", 20
SEQUENTIAL = 50  # deliveries sent one by one first, for the latency without queueing
CODE = "def scale(values, factor):\n    result = [v * factor for v in values]\n" \
       "    print(result)\n    return result\n"


def setup_fake(fake: FakeGitHub) -> None:
    fake.add_installation(INSTALLATION, "load")
    fake.add_repo(REPO, INSTALLATION)
    for number in range(1, PRS + 1):
        fake.add_pr(REPO, number, f"PR {number}", "", "sam", "main", f"{number:040x}",
                    {"app/core.py": "X = 1\n"})
        fake.push(REPO, number, f"{number + 1000:040x}", {f"app/mod{number}.py": CODE})


def deliveries(fake: FakeGitHub, count: int) -> list[tuple[str, dict]]:
    """``count`` (event, payload) pairs, mixed, spread over the fake's pull requests."""
    out = []
    for i in range(count):
        number = i % PRS + 1
        kind = i % 5
        if kind == 0:
            out.append(("pull_request", payloads.pull_request(fake, REPO, number, "opened")))
        elif kind == 1:
            comment = fake.add_issue_comment(REPO, number, "rina", "/roundwise status")
            out.append(("issue_comment", payloads.issue_comment(fake, REPO, number, comment)))
        elif kind == 2:
            comment = fake.add_review_comment(REPO, number, "rina", f"app/mod{number}.py", 3,
                                              "Use the logger here, not print.")
            out.append(("pull_request_review_comment",
                        payloads.review_comment(fake, REPO, number, comment)))
        elif kind == 3:
            out.append(("installation", payloads.installation("created", 10_000 + i, "load")))
        else:
            out.append(("ping", {"zen": "Keep it logically awesome.", "hook_id": i}))
    return out


async def send_all(url: str, secret: str, batch: list[tuple[str, dict]], *,
                   concurrent: bool = True) -> tuple[list[float], list[int], float]:
    """POST every delivery, all at once or one after the other, each on its own connection
    as GitHub does; (latencies in ms, statuses, wall seconds)."""
    bodies = []
    for event, payload in batch:
        body = payloads.encode(payload)
        bodies.append((body, payloads.headers(event, body, secret)))
    connector = aiohttp.TCPConnector(limit=0, force_close=True)
    async with aiohttp.ClientSession(connector=connector) as session:
        async def one(body: bytes, headers: dict) -> tuple[float, int]:
            started = time.perf_counter()
            async with session.post(f"{url}/webhook", data=body, headers=headers) as resp:
                await resp.read()
                return (time.perf_counter() - started) * 1000, resp.status

        started = time.perf_counter()
        if concurrent:
            results = await asyncio.gather(*(one(b, h) for b, h in bodies))
        else:
            results = [await one(b, h) for b, h in bodies]
        wall = time.perf_counter() - started
    return [r[0] for r in results], [r[1] for r in results], wall


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def serve(config: Config, start_workers: bool, conn) -> None:
    """The server, in its own process so the client's work does not slow it down."""
    async def main() -> None:
        app = create_app(config, retry=RetryPolicy(attempts=3, backoff=0.05), poll=0.05,
                         start_workers=start_workers)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0, backlog=1024).start()
        conn.send(runner.addresses[0][1])
        await asyncio.get_running_loop().run_in_executor(None, conn.recv)  # until told to stop
        await runner.cleanup()

    asyncio.run(main())


async def run(count: int, workers: int) -> dict:
    private, public = throwaway_key()
    fake = FakeGitHub(APP_ID, public)
    if workers:
        await fake.start()
    setup_fake(fake)
    batch = deliveries(fake, count)
    alone = deliveries(fake, SEQUENTIAL)
    loop = asyncio.get_running_loop()
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "ledger.db"
        config = Config(app_id=str(APP_ID), private_key=private,
                        webhook_secret=secrets.token_hex(16),
                        api_url=fake.url or "http://127.0.0.1:9", db_path=str(db),
                        workers=max(workers, 1), bot_login=fake.bot_login)
        ours, theirs = multiprocessing.Pipe()
        server = multiprocessing.get_context("spawn").Process(
            target=serve, args=(config, bool(workers), theirs))
        server.start()
        try:
            port = await loop.run_in_executor(None, ours.recv)
            url = f"http://127.0.0.1:{port}"
            one_by_one, _, _ = await send_all(url, config.webhook_secret, alone,
                                              concurrent=False)
            latencies, statuses, wall = await send_all(url, config.webhook_secret, batch)
        finally:
            ours.send("stop")
            await loop.run_in_executor(None, server.join, 30)
            if workers:
                await fake.stop()
        store = open_queue_store(str(db))
        try:
            jobs = sum(store.job_counts().values())
        finally:
            store.close()
    return {"deliveries": count, "workers": workers, "statuses": sorted(set(statuses)),
            "accepted": sum(s in (200, 202) for s in statuses), "jobs": jobs,
            "alone_median_ms": statistics.median(one_by_one),
            "median_ms": statistics.median(latencies), "p99_ms": percentile(latencies, 0.99),
            "max_ms": max(latencies), "per_second": count / wall}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--deliveries", type=int, default=200, help="deliveries sent at once")
    parser.add_argument("--workers", type=int, default=0,
                        help="workers reviewing meanwhile (0: acknowledgement only)")
    args = parser.parse_args(argv)
    configure_litellm()
    r = asyncio.run(run(args.deliveries, args.workers))
    print(f"{r['deliveries']} concurrent signed deliveries, {r['workers']} worker(s): "
          f"{r['accepted']} accepted (statuses {r['statuses']}); "
          f"{r['jobs']} jobs in the ledger (burst and one-by-one)")
    print(f"acknowledgement latency: median {r['median_ms']:.1f} ms, p99 {r['p99_ms']:.1f} ms, "
          f"max {r['max_ms']:.1f} ms; throughput {r['per_second']:.0f} deliveries/s")
    print(f"one delivery at a time (before the burst, {SEQUENTIAL} sent): median "
          f"{r['alone_median_ms']:.1f} ms")
    return 0 if r["accepted"] == r["deliveries"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
