"""Loop-lag bench (a script, not a test): how long the server's event loop is held by the
three shapes of work that used to hold it.

    python -m bench.perf.loop_lag [--repeats 3] [--files 400] [--patch-lines 1500]
                                  [--mention-kb 64] [--explain]

The real server (``bot.server.app.create_app``, offline reviewer, workers on, a fresh SQLite
ledger) runs in a process of its own with a probe on its event loop: a task that sleeps 5 ms
again and again and keeps the longest it overslept (the loop lag: how long a webhook
delivery or ``/healthz`` arriving then would have waited). The fake GitHub runs in this
process, so its own work never lags the server's loop. Each repeat starts a fresh server and
measures, one shape after the other, the worst lag from the delivery until the pull request's
jobs are done:

* ``first-round``: the first round after start: the App's installation token is minted (its
  RSA key parsed, a JWT signed) before anything else;
* ``files-page``: a pull request of ``--files`` files (more than GitHub's 300, so the diff
  media type answers 406) of ``--patch-lines`` changed lines each: the round reads the files
  list page by page (100 files a page, a few MB of JSON each);
* ``mention-flood``: an issue comment of ``--mention-kb`` KB, one ``@mention`` after another
  (GitHub's 65,536-character limit), taken in as a person's comment.

It prints each shape's worst lag per repeat and min/median/max over the repeats, beside the
probe's idle reading (the same server, nothing to do, for as long): the goal is at most 50 ms
for each shape. The machine may be shared: the idle reading says how much lag others' work
causes on its own. ``--explain`` adds, per shape, where the loop thread stood while it stalled
(``Watchdog``) and the modules first imported meanwhile.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import secrets
import statistics
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
from aiohttp import web

from bench.fake_github import FakeGitHub
from bench.replay import payloads
from bench.replay.github import throwaway_key
from bot.config.env import Config
from bot.github import RetryPolicy
from bot.store import open_queue_store

APP_ID, INSTALLATION, REPO = 4343, 91, "lag/widgets"
GOAL_MS = 50.0
PROBE = 0.005  # seconds the probe sleeps each time
SHAPES = ("first-round", "files-page", "mention-flood")
SMALL, BIG, TALK = 1, 2, 3  # pull request numbers


class Watchdog:
    """With ``--explain``: a thread that looks at the loop's thread every 2 ms and, while
    the probe has not ticked for 30 ms, notes where the loop thread is (its innermost frames
    in roundwise's or aiohttp's code) and where each other busy thread is (marked ``[other
    thread]``), counting the looks per place: where a stall sits. A garbage collection of
    10 ms or more is noted as a place of its own. A stall with few looks was not the loop's
    code: the process waited for the GIL (a long C call in another thread, which holds this
    watchdog too: the other thread's place just before or after names it) or for a core."""

    def __init__(self, loop_thread: int):
        import gc
        import threading

        self.loop_thread = loop_thread
        self.tick = time.monotonic()
        self.seen: dict[str, int] = {}
        self._gc_start = 0.0
        gc.callbacks.append(self._collected)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        import threading
        import traceback

        while not self._stop.wait(0.002):
            if time.monotonic() - self.tick < 0.03:
                continue
            frames = sys._current_frames()
            for thread, frame in frames.items():
                if thread == threading.get_ident():
                    continue
                stack = traceback.extract_stack(frame)
                ours = [f for f in stack if "/bot/" in f.filename or "/tracker/" in f.filename
                        or "site-packages" in f.filename][-3:] or stack[-3:]
                place = " < ".join(f"{Path(f.filename).name}:{f.lineno} {f.name}"
                                   for f in reversed(ours))
                if thread != self.loop_thread:
                    if "wait" in place or "_worker" in place and "queue" in place:
                        continue
                    place = "[other thread] " + place
                self.seen[place] = self.seen.get(place, 0) + 1

    def _collected(self, phase: str, info: dict) -> None:
        """Garbage collections hold every thread: the long ones are noted as a place."""
        if phase == "start":
            self._gc_start = time.perf_counter()
            return
        took = (time.perf_counter() - self._gc_start) * 1000
        if took >= 10:
            place = f"garbage collection of generation {info['generation']}"
            self.seen[place] = self.seen.get(place, 0) + round(took / 2)

    def report(self) -> str:
        top = sorted(self.seen.items(), key=lambda kv: -kv[1])[:6]
        self.seen = {}
        return "\n".join(f"    {n * 2:5d} ms  {place}" for place, n in top)


def serve(config: Config, conn, explain: bool = False) -> None:
    """The server with its loop probe, in its own process: sends its port, then answers
    "mark" (start a measurement) and "read" (the worst lag in ms since the mark, and with
    ``explain`` where the loop thread stood while it stalled)."""
    async def main() -> None:
        import threading

        from bot.review.llm_config import configure_litellm
        from bot.server.app import create_app
        from bot.server.serving import settle_heap

        configure_litellm()
        app = create_app(config, retry=RetryPolicy(attempts=3, backoff=0.05), poll=0.02)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0, backlog=1024).start()
        settle_heap()
        worst = [0.0]
        watchdog = Watchdog(threading.get_ident()) if explain else None

        async def probe() -> None:
            loop = asyncio.get_running_loop()
            while True:
                before = loop.time()
                await asyncio.sleep(PROBE)
                worst[0] = max(worst[0], loop.time() - before - PROBE)
                if watchdog is not None:
                    watchdog.tick = time.monotonic()

        probing = asyncio.create_task(probe())
        known = set(sys.modules)
        conn.send(runner.addresses[0][1])
        loop = asyncio.get_running_loop()
        while (command := await loop.run_in_executor(None, conn.recv)) != "stop":
            if command == "mark":
                worst[0] = 0.0
                known = set(sys.modules)
                if watchdog is not None:
                    watchdog.report()
            where = ""
            if watchdog is not None:
                imported = sorted({m.split(".")[0] for m in set(sys.modules) - known})
                where = watchdog.report() + (f"\n    imported meanwhile: {', '.join(imported)}"
                                             if imported else "")
            conn.send((worst[0] * 1000, where))
        probing.cancel()
        await runner.cleanup()

    asyncio.run(main())


def big_files(count: int, lines: int, version: int) -> dict[str, str]:
    """``count`` Python files of ``lines`` lines; ``version`` changes every line."""
    return {f"pkg/mod_{f:03d}.py": "".join(f"value_{f}_{n} = compute({n}, {version})\n"
                                           for n in range(lines))
            for f in range(count)}


def setup(fake: FakeGitHub, files: int, patch_lines: int) -> None:
    fake.add_installation(INSTALLATION, "lag")
    fake.add_repo(REPO, INSTALLATION)
    fake.add_pr(REPO, SMALL, "small", "", "sam", "main", f"{1:040x}", {"app/core.py": "X = 1\n"})
    fake.push(REPO, SMALL, f"{2:040x}", {"app/core.py": "X = 2\nprint(X)\n"})
    fake.add_pr(REPO, BIG, "big", "", "sam", "main", f"{3:040x}",
                big_files(files, patch_lines, 0))
    fake.push(REPO, BIG, f"{4:040x}", big_files(files, patch_lines, 1))
    fake.add_pr(REPO, TALK, "talk", "", "sam", "main", f"{5:040x}", {"app/talk.py": "Y = 1\n"})


def flood(kb: int) -> str:
    """A comment of ``kb`` KB (at most GitHub's 65,536 characters) of mentions."""
    text, n = [], 0
    while sum(map(len, text)) < min(kb * 1024, 65_536) - 16:
        text.append(f"@user{n} ")
        n += 1
    return "".join(text)[: min(kb * 1024, 65_536)]


class Server:
    def __init__(self, config: Config, explain: bool = False):
        self.pipe, theirs = multiprocessing.Pipe()
        self.process = multiprocessing.get_context("spawn").Process(
            target=serve, args=(config, theirs, explain))
        self.url = ""

    async def ask(self, command: str) -> float:
        """The worst lag (ms) since the last mark; where it stalled is printed."""
        self.pipe.send(command)
        lag, where = await asyncio.get_running_loop().run_in_executor(None, self.pipe.recv)
        if where and command == "read":
            print(f"  stalls (loop thread's place while the probe was late):\n{where}")
        return lag

    async def start(self) -> None:
        self.process.start()
        port = await asyncio.get_running_loop().run_in_executor(None, self.pipe.recv)
        self.url = f"http://127.0.0.1:{port}"

    async def stop(self) -> None:
        self.pipe.send("stop")
        await asyncio.get_running_loop().run_in_executor(None, self.process.join, 30)


async def one_repeat(fake: FakeGitHub, private: str, mention_kb: int, explain: bool = False
                     ) -> dict[str, float]:
    """A fresh server: the idle lag, then each shape's worst lag (ms)."""
    with tempfile.TemporaryDirectory() as folder:
        db = str(Path(folder) / "ledger.db")
        config = Config(app_id=str(APP_ID), private_key=private,
                        webhook_secret=secrets.token_hex(16), api_url=fake.url, db_path=db,
                        workers=2, bot_login=fake.bot_login)
        server = Server(config, explain)
        await server.start()
        queue = open_queue_store(db)
        out: dict[str, float] = {}
        try:
            async with aiohttp.ClientSession() as session:
                async def deliver(event: str, payload: dict, number: int) -> float:
                    await server.ask("mark")
                    body = payloads.encode(payload)
                    async with session.post(f"{server.url}/webhook", data=body,
                                            headers=payloads.headers(
                                                event, body, config.webhook_secret)) as resp:
                        if resp.status >= 300:
                            raise RuntimeError(f"{event} refused: {resp.status}")
                    deadline = time.monotonic() + 300
                    await asyncio.sleep(0.1)
                    while queue.pending(REPO, number) and time.monotonic() < deadline:
                        await asyncio.sleep(0.05)
                    return await server.ask("read")

                await server.ask("mark")
                await asyncio.sleep(1.0)
                out["idle"] = await server.ask("read")
                out["first-round"] = await deliver(
                    "pull_request", payloads.pull_request(fake, REPO, SMALL, "opened"), SMALL)
                out["files-page"] = await deliver(
                    "pull_request", payloads.pull_request(fake, REPO, BIG, "opened"), BIG)
                comment = fake.add_issue_comment(REPO, TALK, "rina", flood(mention_kb))
                out["mention-flood"] = await deliver(
                    "issue_comment", payloads.issue_comment(fake, REPO, TALK, comment), TALK)
        finally:
            queue.close()
            await server.stop()
        return out


async def run(repeats: int, files: int, patch_lines: int, mention_kb: int,
              explain: bool = False) -> list[dict]:
    private, public = throwaway_key()
    rows = []
    async with FakeGitHub(APP_ID, public, rate_limit=1_000_000) as fake:
        setup(fake, files, patch_lines)
        for _ in range(repeats):
            rows.append(await one_repeat(fake, private, mention_kb, explain))
            print("  " + "  ".join(f"{k} {v:.1f} ms" for k, v in rows[-1].items()), flush=True)
    return rows


def report(rows: list[dict]) -> bool:
    print(f"worst event-loop lag (ms) over {len(rows)} repeats, min/median/max; "
          f"goal <= {GOAL_MS:g} ms per shape")
    met = True
    for shape in ("idle", *SHAPES):
        values = [row[shape] for row in rows]
        verdict = "" if shape == "idle" else (" ok" if statistics.median(values) <= GOAL_MS
                                              else " OVER")
        met &= shape == "idle" or statistics.median(values) <= GOAL_MS
        print(f"{shape:>14} {min(values):8.1f} {statistics.median(values):8.1f} "
              f"{max(values):8.1f}{verdict}")
    return met


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--files", type=int, default=400)
    parser.add_argument("--patch-lines", type=int, default=1500)
    parser.add_argument("--mention-kb", type=int, default=64)
    parser.add_argument("--explain", action="store_true",
                        help="print where the server's loop thread stood while it stalled")
    args = parser.parse_args(argv)
    rows = asyncio.run(run(max(args.repeats, 1), args.files, args.patch_lines, args.mention_kb,
                           args.explain))
    return 0 if report(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
