"""Isolation bench (a script, not a test): one hostile tenant must not slow the others down.

    python -m bench.faults.noisy_neighbour [--deliveries 100] [--flood 400] [--files 3000]
                                    [--diff-mb 25] [--deadline 150]

Three processes on 127.0.0.1: the fake GitHub (``bench.fake_github``, its state built in its
own process, so serving a 25 MB diff costs the measuring client nothing), the real server
(``bot.server.app.create_app`` behind ``bot.server.serving.GuardedRunner`` as ``roundwise serve`` runs it,
offline reviewer, 3 workers, a fresh SQLite ledger) and this one, which measures.

1. Quiet: ``--deliveries`` signed ``pull_request`` opened deliveries for ordinary PRs, one
   every 50 ms; the client-measured acknowledgement p99 is the baseline.
2. Noisy: ``--flood`` connections (from a process of their own) send a webhook body a byte a
   second behind a made-up ``X-Hub-Signature-256``, reconnecting a second after the server
   closes one; the hostile PR is opened (``--files`` changed files, a one-line print each)
   and half the deliveries for other ordinary PRs are sent; once its round is done it is
   pushed again (a ``--diff-mb`` MB diff, inside GitHub's 20,000 lines) and the other half
   sent; their p99 is measured again.
3. Every ordinary PR's round must complete for its head (PR number and full head sha, read
   from the ledger) within ``--deadline`` seconds of the start.

It prints the two p99s, their ratio (target at most 2) and the outcome of the hostile rounds,
and exits 1 when a round did not complete or a delivery was not acknowledged.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import multiprocessing
import secrets
import tempfile
import time
from pathlib import Path

import aiohttp

from ..perf.load_webhooks import percentile
from ..replay import payloads
from ..replay.github import throwaway_key

APP_ID, INSTALLATION, REPO = 4242, 77, "noisy/widgets"
HOSTILE = 9000  # the hostile PR's number; the ordinary ones count from 1
TARGET = 2.0
PACE = 0.05  # seconds between two measured deliveries
CODE = "def scale(values, factor):\n    result = [v * factor for v in values]\n" \
       "    print(result)\n    return result\n"


def _head(number: int, push: int = 1) -> str:
    return f"{push:08x}{number:032x}"


def wide_files(megabytes: float) -> dict[str, str]:
    """Files whose diff is about ``megabytes`` MB in under 20,000 lines (long lines)."""
    count, lines = 50, 390
    width = max(int(megabytes * 1024 * 1024 / (count * lines)) - 20, 10)
    return {f"wide/w{i:02d}.py": "".join(f"x = '{'y' * width}'  # {n}\n" for n in range(lines))
            for i in range(count)}


def fake_process(public: str, ordinary: int, files: int, diff_mb: float, conn) -> None:
    """The fake GitHub with every PR the run uses; sends its URL, the bot login and the
    payloads, then serves until told to stop."""
    from ..fake_github import FakeGitHub

    async def main() -> None:
        async with FakeGitHub(APP_ID, public) as fake:
            fake.add_installation(INSTALLATION, REPO.split("/")[0])
            fake.add_repo(REPO, INSTALLATION)
            out = {"ordinary": [], "hostile": []}
            for number in range(1, 2 * ordinary + 1):
                fake.add_pr(REPO, number, f"PR {number}", "", "sam", "main", f"{number:040x}",
                            {"app/core.py": "X = 1\n"})
                fake.push(REPO, number, _head(number), {f"app/mod{number}.py": CODE})
                out["ordinary"].append(
                    [number, _head(number), payloads.pull_request(fake, REPO, number, "opened")])
            fake.add_pr(REPO, HOSTILE, "Hostile", "", "mallory", "main", f"{HOSTILE:040x}",
                        {"app/core.py": "X = 1\n"})
            fake.push(REPO, HOSTILE, _head(HOSTILE, 1),
                      {f"pkg/m{i:04d}.py": f"print({i})\n" for i in range(files)})
            out["hostile"].append(payloads.pull_request(fake, REPO, HOSTILE, "opened"))
            wide = wide_files(diff_mb)
            conn.send((fake.url, fake.bot_login, out))
            loop = asyncio.get_running_loop()
            while await loop.run_in_executor(None, conn.recv) == "push":  # the 25 MB push
                fake.push(REPO, HOSTILE, _head(HOSTILE, 2), wide)
                conn.send(payloads.pull_request(fake, REPO, HOSTILE, "synchronize"))

    asyncio.run(main())


def server_process(config, conn) -> None:
    """The real server behind the connection limits ``roundwise serve`` uses."""
    from aiohttp import web

    from bot.github import RetryPolicy
    from bot.review.llm_config import configure_litellm
    from bot.server.app import create_app
    from bot.server.serving import GuardedRunner, settle_heap

    async def main() -> None:
        configure_litellm()
        # the flood's thousands of one-line notes (a client gone mid-body, the connection cap)
        # would bury the figures; errors still show
        for name in ("bot.forge.body", "bot.server.serving", "roundwise.http"):
            logging.getLogger(name).setLevel(logging.ERROR)
        app = create_app(config, retry=RetryPolicy(attempts=3, backoff=0.05), poll=0.05)
        runner = GuardedRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0, backlog=1024).start()
        settle_heap()
        conn.send(runner.addresses[0][1])
        await asyncio.get_running_loop().run_in_executor(None, conn.recv)
        await runner.cleanup()

    asyncio.run(main())


async def measure(session: aiohttp.ClientSession, url: str, secret: str,
                  batch: list) -> tuple[list[float], list[int]]:
    """Each delivery of ``batch`` sent ``PACE`` apart; their latencies (ms) and statuses."""
    async def one(payload: dict) -> tuple[float, int]:
        body = payloads.encode(payload)
        started = time.monotonic()
        try:
            async with session.post(f"{url}/webhook", data=body, headers=payloads.headers(
                    "pull_request", body, secret)) as resp:
                await resp.read()
                return (time.monotonic() - started) * 1000, resp.status
        except (aiohttp.ClientError, TimeoutError):
            return (time.monotonic() - started) * 1000, 0

    tasks = []
    for payload in batch:
        tasks.append(asyncio.create_task(one(payload)))
        await asyncio.sleep(PACE)
    results = await asyncio.gather(*tasks)
    return [r[0] for r in results], [r[1] for r in results]


async def slow_sender(port: int, stop: asyncio.Event, counts: dict) -> None:
    """One flood connection: a body a byte a second behind a made-up signature, again and
    again (a second after the server closes it)."""
    head = (f"POST /webhook HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"X-GitHub-Event: ping\r\nX-GitHub-Delivery: flood\r\n"
            f"X-Hub-Signature-256: sha256={'0' * 64}\r\nContent-Length: 100000\r\n\r\n").encode()
    await asyncio.sleep(secrets.randbelow(1000) / 1000)  # not all at the same instant
    while not stop.is_set():
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            counts["refused"] += 1
            await asyncio.sleep(1)
            continue
        counts["opened"] += 1
        try:
            writer.write(head)
            while not stop.is_set() and not reader.at_eof():
                writer.write(b"x")
                await writer.drain()
                try:
                    answer = await asyncio.wait_for(reader.read(200), 1.0)
                except TimeoutError:
                    continue
                if answer:
                    counts[answer.split(b" ", 2)[1].decode(errors="replace")] += 1
                break
        except (ConnectionError, OSError):
            counts["reset"] += 1
        finally:
            writer.close()
        await asyncio.sleep(1)


def flood_process(port: int, connections: int, conn) -> None:
    """The flood, in a process of its own (its hundreds of tasks must not delay the measuring
    client's loop); sends what the server answered once told to stop."""
    from collections import Counter

    async def main() -> None:
        stop, counts = asyncio.Event(), Counter()
        senders = [asyncio.create_task(slow_sender(port, stop, counts))
                   for _ in range(connections)]
        await asyncio.get_running_loop().run_in_executor(None, conn.recv)
        stop.set()
        await asyncio.gather(*senders, return_exceptions=True)
        conn.send(dict(counts))

    asyncio.run(main())


def rounds_done(db: str, expected: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """The (PR, head) pairs of ``expected`` whose round completed for that exact head."""
    from bot.store.ledger_sqlite import Ledger

    done = []
    with Ledger(db) as ledger:
        for number, head in expected:
            pr = ledger.find_pull_request(REPO, number)
            if pr and any(r["head_sha"] == head and r["status"] == "complete"
                          for r in ledger.rounds(pr["id"])):
                done.append((number, head))
    return done


def hostile_rounds(db: str) -> list[dict]:
    from bot.store.ledger_sqlite import Ledger

    with Ledger(db) as ledger:
        pr = ledger.find_pull_request(REPO, HOSTILE)
        return [{"head": r["head_sha"], "status": r["status"]}
                for r in (ledger.rounds(pr["id"]) if pr else [])]


async def run(count: int, flood: int, files: int, diff_mb: float, deadline: float) -> dict:
    from bot.config.env import Config

    started = time.monotonic()
    loop = asyncio.get_running_loop()
    spawn = multiprocessing.get_context("spawn")
    private, public = throwaway_key()
    fake_end, fake_theirs = spawn.Pipe()
    fake = spawn.Process(target=fake_process, args=(public, count, files, diff_mb, fake_theirs))
    fake.start()
    fake_url, bot_login, made = await loop.run_in_executor(None, fake_end.recv)
    ordinary = made["ordinary"]
    quiet, noisy = ordinary[:count], ordinary[count:]
    with tempfile.TemporaryDirectory() as folder:
        db = str(Path(folder) / "ledger.db")
        config = Config(app_id=str(APP_ID), private_key=private,
                        webhook_secret=secrets.token_hex(16), api_url=fake_url, db_path=db,
                        workers=3, bot_login=bot_login)
        ours, theirs = spawn.Pipe()
        server = spawn.Process(target=server_process, args=(config, theirs))
        server.start()
        flood_end, flood_theirs = spawn.Pipe()
        flooder = None
        counts: dict = {}
        try:
            port = await loop.run_in_executor(None, ours.recv)
            url = f"http://127.0.0.1:{port}"
            async with aiohttp.ClientSession(  # a connection per delivery, as GitHub sends
                    timeout=aiohttp.ClientTimeout(total=30),
                    connector=aiohttp.TCPConnector(force_close=True)) as session:
                await measure(session, url, config.webhook_secret,
                              [{"zen": "warm up", "hook_id": 1}] * 5)
                quiet_ms, quiet_status = await measure(session, url, config.webhook_secret,
                                                       [p for _, _, p in quiet])
                hostile_status = []
                flooder = spawn.Process(target=flood_process, args=(port, flood, flood_theirs))
                flooder.start()
                await asyncio.sleep(1.0)  # the flood under way
                half = len(noisy) // 2
                noisy_ms, noisy_status, hostile_status, by_push = [], [], [], []
                for push, part in enumerate((noisy[:half], noisy[half:]), 1):
                    # the hostile push (3,000 files, then a 25 MB diff), its round under way
                    # while the others' deliveries are measured, and done before the next
                    if push == 2:
                        fake_end.send("push")
                        made["hostile"].append(await loop.run_in_executor(None, fake_end.recv))
                    _, status = await measure(session, url, config.webhook_secret,
                                              [made["hostile"][push - 1]])
                    hostile_status += status
                    await asyncio.sleep(0.5)
                    ms, status = await measure(session, url, config.webhook_secret,
                                               [p for _, _, p in part])
                    noisy_ms, noisy_status = noisy_ms + ms, noisy_status + status
                    by_push.append(round(percentile(ms, 0.99), 1))
                    head = _head(HOSTILE, push)
                    while time.monotonic() - started < deadline and not await asyncio.to_thread(
                            rounds_done, db, [(HOSTILE, head)]):
                        await asyncio.sleep(0.2)
                expected, done = [(n, h) for n, h, _ in ordinary], []
                while time.monotonic() - started < deadline:
                    done = await asyncio.to_thread(rounds_done, db, expected)
                    if len(done) == len(expected):
                        break
                    await asyncio.sleep(0.5)
                async with session.get(f"{url}/healthz") as resp:
                    healthz = resp.status
        finally:
            if flooder is not None:
                flood_end.send("stop")
                counts = await loop.run_in_executor(None, flood_end.recv)
                await loop.run_in_executor(None, flooder.join, 30)
            ours.send("stop")
            await loop.run_in_executor(None, server.join, 30)
            fake_end.send("stop")
            await loop.run_in_executor(None, fake.join, 30)
        hostile = await asyncio.to_thread(hostile_rounds, db)
    quiet_p99, noisy_p99 = percentile(quiet_ms, 0.99), percentile(noisy_ms, 0.99)
    return {
        "deliveries_per_phase": count, "flood_connections": flood, "hostile_files": files,
        "hostile_diff_mb": diff_mb,
        "quiet_p50_ms": round(percentile(quiet_ms, 0.5), 1), "quiet_p99_ms": round(quiet_p99, 1),
        "noisy_p50_ms": round(percentile(noisy_ms, 0.5), 1), "noisy_p99_ms": round(noisy_p99, 1),
        "p99_ratio": round(noisy_p99 / quiet_p99, 2) if quiet_p99 else None,
        # the noisy p99 of each half: beside the 3,000-file round, then the 25 MB push's
        "noisy_p99_ms_by_push": by_push,
        "target_ratio": TARGET,
        "acknowledged": sum(s == 202 for s in quiet_status + noisy_status),
        "sent": len(quiet_status) + len(noisy_status),
        "hostile_acknowledged": hostile_status,
        "rounds_complete": len(done), "rounds_expected": len(expected),
        "missing": [f"#{n} {h}" for n, h in expected if (n, h) not in done][:10],
        "hostile_rounds": hostile, "healthz_after": healthz,
        "flood_answers": counts, "seconds": round(time.monotonic() - started, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--deliveries", type=int, default=100, help="measured per phase")
    parser.add_argument("--flood", type=int, default=400, help="slow-body connections")
    parser.add_argument("--files", type=int, default=3000, help="the hostile PR's files")
    parser.add_argument("--diff-mb", type=float, default=25.0,
                        help="the hostile push's diff, MB")
    parser.add_argument("--deadline", type=float, default=150.0,
                        help="seconds from the start for every ordinary round to complete")
    args = parser.parse_args(argv)
    result = asyncio.run(run(args.deliveries, args.flood, args.files, args.diff_mb,
                             args.deadline))
    print(json.dumps(result, indent=2))
    print(f"acknowledgement p99: quiet {result['quiet_p99_ms']} ms, with the hostile PR and "
          f"the flood {result['noisy_p99_ms']} ms: ratio {result['p99_ratio']} "
          f"(target <= {TARGET}); rounds complete {result['rounds_complete']}/"
          f"{result['rounds_expected']}")
    ok = result["rounds_complete"] == result["rounds_expected"] and \
        result["acknowledged"] == result["sent"]
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
