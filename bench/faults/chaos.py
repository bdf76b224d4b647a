"""``python -m bench.faults.chaos``: a bounded chaos soak of a real ``roundwise serve`` (issue 9).

Everything runs on loopback: the fake GitHub in this process, ``roundwise serve`` as a
subprocess on a fresh ledger file. The soak opens ``--prs`` pull requests and pushes to each
``--pushes`` times (every push adds a function with a leftover ``print`` and drops the print of
an older one, so defects are raised, kept and resolved), delivering signed webhooks. Meanwhile
it injects random GitHub faults (5xx, among them an HTML-bodied 502 on ``/graphql``; writes
applied with their answer lost, a check-run creation among them; secondary rate limits, 422 on
reviews, answers up to a second late), deletes some of the bot's inline comments, and SIGKILLs
and restarts
the server at least ``--kills`` times. A delivery the server did not acknowledge (it was down)
is redelivered with the same delivery id, as GitHub's "Redeliver" does.

Then, with the faults off, it waits for the queue to drain and checks from GitHub's side:
at most one review batch per reviewed head (a 422 makes the bot post a batch one comment per
review, all with the batch's marker), no defect posted twice (two top-level bot comments on
the same code with the same text), no job left ``running`` or ``queued`` and no round left
``running`` or ``failed``, every final head reviewed, by its full sha (the sticky summary
names it, its ``roundwise`` check run is completed, the ledger completed a round of it; the
made-up shas of one PR's pushes differ from their first character). It prints its figures as
JSON (with ``checks_in_progress``: check runs of any head left spinning) and exits 1 when an
invariant fails. It stops by itself: ``--deadline`` seconds at most (default 240).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import random
import shutil
import signal
import socket
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import aiohttp

from bot.pr import render
from bot.store import open_queue_store
from bot.store.ledger_sqlite import Ledger
from tracker.lines import split_lines

from ..fake_github import FakeGitHub
from ..replay import payloads
from ..replay.github import throwaway_key

APP_ID, INSTALLATION, REPO, BOT = 4242, 77, "chaos/service", "roundwise[bot]"
SECRET = "chaos-secret"
SIMPLE_422 = {"message": "Unprocessable Entity", "errors": ["Line could not be resolved"],
              "documentation_url": "https://docs.github.com/rest/pulls/reviews", "status": "422"}


def files_at(pr: int, push: int) -> dict[str, str]:
    """PR ``pr`` after push ``push``: functions f1..f<push>, prints in the newest two."""
    parts = []
    for j in range(1, push + 1):
        body = f'    print("pr{pr}-f{j}", result)\n' if j > push - 2 else ""
        parts.append(f"def f{j}(values):\n    result = [v * {j} for v in values]\n"
                     f"{body}    return result\n\n\n")
    return {f"app/mod{pr}.py": "".join(parts)}


def sha(pr: int, push: int) -> str:
    """A made-up commit id; every push's differs from the others' from the first character
    on (so a check by a short sha could tell two pushes of one PR apart too)."""
    return hashlib.sha1(f"chaos:{pr}:{push}".encode()).hexdigest()


class Server:
    """``roundwise serve`` as a subprocess: start, SIGKILL, start again."""

    def __init__(self, fake: FakeGitHub, key: str, db: Path, log: Path):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {**os.environ, "GITHUB_APP_ID": str(APP_ID), "GITHUB_PRIVATE_KEY": key,
                    "GITHUB_WEBHOOK_SECRET": SECRET, "GITHUB_API_URL": fake.url,
                    "ROUNDWISE_DB": str(db), "ROUNDWISE_BOT_LOGIN": BOT,
                    "ROUNDWISE_WORKERS": "4"}
        self.log = log
        self.proc: asyncio.subprocess.Process | None = None
        self.starts = 0

    async def start(self, session: aiohttp.ClientSession) -> None:
        out = os.open(self.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            self.proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "roundwise", "serve", "--host", "127.0.0.1", "--port",
                str(self.port), env=self.env, stdout=out, stderr=out)
        finally:
            os.close(out)
        self.starts += 1
        for _ in range(200):
            try:
                async with session.get(f"{self.url}/healthz") as resp:
                    if resp.status in (200, 503):
                        return
            except aiohttp.ClientError:
                pass
            if self.proc.returncode is not None:
                raise RuntimeError(f"roundwise serve exited {self.proc.returncode}; see {self.log}")
            await asyncio.sleep(0.05)
        raise RuntimeError("roundwise serve did not come up")

    async def kill(self) -> None:
        if self.proc and self.proc.returncode is None:
            self.proc.send_signal(signal.SIGKILL)
            await self.proc.wait()

    async def stop(self) -> None:
        if self.proc and self.proc.returncode is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(self.proc.wait(), 10)
            except TimeoutError:
                await self.kill()


class Soak:
    def __init__(self, args, fake: FakeGitHub, server: Server, session: aiohttp.ClientSession):
        self.args, self.fake, self.server, self.session = args, fake, server, session
        self.rng = random.Random(args.seed)
        self.faults: Counter[str] = Counter()
        self.redeliveries = 0
        self.kills = 0
        self.deleted = 0
        self.down = asyncio.Event()  # set while the server is being restarted

    async def deliver(self, pr: int, action: str) -> None:
        body = payloads.encode(payloads.pull_request(self.fake, REPO, pr, action))
        headers = payloads.headers("pull_request", body, SECRET)
        while True:
            try:
                async with self.session.post(f"{self.server.url}/webhook", data=body,
                                             headers=headers) as resp:
                    if resp.status < 300:
                        return
            except (TimeoutError, aiohttp.ClientError):
                pass
            self.redeliveries += 1
            await asyncio.sleep(0.2)

    async def drive(self) -> None:
        for push in range(1, self.args.pushes + 1):
            for pr in range(1, self.args.prs + 1):
                self.fake.push(REPO, pr, sha(pr, push), files_at(pr, push))
                await self.deliver(pr, "opened" if push == 1 else "synchronize")
                await asyncio.sleep(self.args.pace * self.rng.random())

    def inject(self) -> None:
        f, pick = self.fake, self.rng.randrange(12)
        if pick == 0:
            f.fail_next("GET", r"/pulls/\d+$", 502, "<html>Bad Gateway</html>")
            self.faults["5xx"] += 1
        elif pick == 1:
            f.fail_next("GET", r"/(compare|contents)/", 503)
            self.faults["5xx"] += 1
        elif pick == 2:
            f.fail_next("POST", r"^/graphql$", 502)
            self.faults["5xx"] += 1
        elif pick == 3:
            f.lose_response_next("POST", r"/pulls/\d+/reviews$")
            self.faults["lost_response"] += 1
        elif pick == 4:
            f.lose_response_next("POST", r"/issues/\d+/comments$")
            self.faults["lost_response"] += 1
        elif pick == 5:
            f.lose_response_next("POST", r"/replies$")
            self.faults["lost_response"] += 1
        elif pick == 6:
            f.fail_secondary_rate_limit("GET", r"/pulls/\d+/comments", retry_after=1)
            self.faults["secondary_limit"] += 1
        elif pick == 7:
            f.fail_next("POST", r"/pulls/\d+/reviews$", 422, SIMPLE_422)
            self.faults["422"] += 1
        elif pick == 8:
            f.slow_next("GET", r"/pulls/\d+/comments|/contents/", self.rng.uniform(0.2, 1.0))
            self.faults["slow"] += 1
        elif pick == 9:  # GitHub's front end answers with HTML, not JSON
            f.fail_next("POST", r"^/graphql$", 502, "<html><body>502 Bad Gateway</body></html>")
            self.faults["5xx_html_graphql"] += 1
        elif pick == 10:
            f.lose_response_next("POST", r"/check-runs$")
            self.faults["lost_check_run"] += 1
        else:
            self.delete_one()

    def delete_one(self) -> None:
        pr = self.rng.randrange(1, self.args.prs + 1)
        mine = [c for c in self.fake.review_comments(REPO, pr)
                if c["user"]["login"] == BOT and not c.get("in_reply_to_id")]
        if mine:
            self.fake.delete_review_comment(REPO, pr, self.rng.choice(mine)["id"])
            self.deleted += 1

    async def chaos(self, until: asyncio.Event) -> None:
        next_kill = time.monotonic() + self.rng.uniform(0.5, 1.5)
        while not until.is_set() or self.kills < self.args.kills:
            if self.rng.random() < self.args.fault_rate:
                self.inject()
            if time.monotonic() >= next_kill and self.kills < self.args.kills:
                await self.server.kill()
                self.kills += 1
                await asyncio.sleep(self.rng.uniform(0.0, 0.3))
                await self.server.start(self.session)
                next_kill = time.monotonic() + self.rng.uniform(0.5, 2.0)
            await asyncio.sleep(0.05)


def pending(db: Path) -> dict[str, int]:
    store = open_queue_store(str(db))
    try:
        return store.job_counts()
    finally:
        store.close()


def completed_heads(db: Path) -> dict[int, set[str]]:
    """Per PR number, the full head shas of its completed rounds."""
    with Ledger(db) as ledger:
        return {pr["number"]: {r["head_sha"] for r in ledger.rounds(pr["id"])
                               if r["status"] == "complete"}
                for pr in ledger.pull_requests()}


def round_statuses(db: Path) -> dict[str, int]:
    with Ledger(db) as ledger:
        return dict(Counter(r["status"] for pr in ledger.pull_requests()
                            for r in ledger.rounds(pr["id"])))


def finding_of(repo, comment: dict) -> tuple[str, str, str]:
    """What an inline bot comment posts, whatever line it ended up on: its path, the code of
    the line it was written on (in the commit it was written on) and its description."""
    text = split_lines(repo.trees[comment["original_commit_id"]].get(comment["path"]))
    number = comment["original_line"]
    line = text[number - 1] if 0 < number <= len(text) else ""
    body = comment["body"]
    return comment["path"], line.strip(), body.split("\n\n")[1] if "\n\n" in body else body


def check(fake: FakeGitHub, prs: int, completed: dict[int, set[str]]) -> dict:
    """The invariants, from GitHub's side (a review batch is a round's review marker).
    ``completed``: per PR, the full head shas of the rounds the ledger completed."""
    batches_over, duplicates, unreviewed, reviews, problems = 0, 0, [], 0, []
    spinning = 0
    the_repo = fake._repo(REPO)
    for pr in range(1, prs + 1):
        per_head: dict[str, set[str]] = {}
        for r in fake.reviews(REPO, pr):
            if r["user"]["login"] == BOT and r["body"]:
                reviews += 1
                per_head.setdefault(r["commit_id"], set()).add(
                    render.read_marker(r["body"]) or r["body"])
        for head, batches in per_head.items():
            if len(batches) > 1:
                batches_over += len(batches) - 1
                problems.append(f"PR {pr} head {head[:7]}: review batches {sorted(map(str, batches))}")
        seen: Counter = Counter()
        for c in fake.review_comments(REPO, pr):
            if c["user"]["login"] != BOT or c.get("in_reply_to_id"):
                continue
            seen[finding_of(the_repo, c)] += 1
        for what, n in seen.items():
            if n > 1:
                duplicates += n - 1
                problems.append(f"PR {pr}: posted {n} times: {what}")
        # the final head, by its full sha: the summary names it (short), its own check run
        # is completed, and the ledger completed a round of it
        head = fake.head_sha(REPO, pr)
        summaries = [c for c in fake.issue_comments(REPO, pr)
                     if c["user"]["login"] == BOT and render.SUMMARY_MARKER in c["body"]]
        runs = [r for r in fake.check_runs(REPO, head) if r["name"] == "roundwise"]
        if len(summaries) != 1 or f"`{head[:7]}`" not in summaries[0]["body"] or \
                not any(r["status"] == "completed" and r["head_sha"] == head for r in runs) or \
                head not in completed.get(pr, set()):
            unreviewed.append(pr)
            problems.append(f"PR {pr}: final head {head} not reviewed")
        spinning += sum(r["status"] != "completed" for r in runs)
    left = [r for r in fake.check_runs(REPO) if r["name"] == "roundwise"
            and r["status"] != "completed"]
    return {"reviews": reviews, "extra_review_batches": batches_over,
            "duplicate_defects": duplicates, "final_heads_unreviewed": unreviewed,
            "final_head_checks_in_progress": spinning, "checks_in_progress": len(left),
            "problems": problems[:20]}


async def soak(args) -> int:
    started = time.monotonic()
    private, public = throwaway_key()
    work = Path(tempfile.mkdtemp(prefix="roundwise-chaos-"))
    async with FakeGitHub(APP_ID, public) as fake, aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=10)) as session:
        fake.add_installation(INSTALLATION, "chaos")
        fake.add_repo(REPO, INSTALLATION, files={"README.md": "chaos\n"})
        for pr in range(1, args.prs + 1):
            fake.add_pr(REPO, pr, f"Change {pr}", "", "dev", "main",
                        fake._repo(REPO).branches["main"], {})
        server = Server(fake, private, work / "ledger.db", work / "serve.log")
        await server.start(session)
        run = Soak(args, fake, server, session)
        done = asyncio.Event()
        chaos = asyncio.create_task(run.chaos(done))
        try:
            async with asyncio.timeout(args.deadline):
                await run.drive()
                done.set()
                await chaos
                fake._faults.clear()  # calm: let the queue drain
                while True:
                    jobs = pending(work / "ledger.db")
                    if not jobs.get("queued") and not jobs.get("running"):
                        break
                    await asyncio.sleep(0.2)
                await asyncio.sleep(0.5)
        except TimeoutError:
            print(f"deadline of {args.deadline}s reached", file=sys.stderr)
        finally:
            chaos.cancel()
            await server.stop()
        jobs = pending(work / "ledger.db")
        result = {
            "prs": args.prs, "pushes": args.pushes, "rounds": round_statuses(work / "ledger.db"),
            "faults_injected": dict(run.faults), "responses_lost": fake.lost_responses,
            "bot_comments_deleted": run.deleted, "kills": run.kills,
            "server_starts": server.starts, "redeliveries": run.redeliveries, "jobs": jobs,
            "stuck_jobs": jobs.get("running", 0) + jobs.get("queued", 0),
            "unfinished_rounds": sum(n for status, n in round_statuses(work / "ledger.db")
                                     .items() if status in ("running", "failed")),
            **check(fake, args.prs, completed_heads(work / "ledger.db")),
            "tracebacks_in_log": server.log.read_text(errors="replace").count("Traceback"),
            "seconds": round(time.monotonic() - started, 1), "workdir": str(work),
        }
    ok = (result["stuck_jobs"] == 0 and result["duplicate_defects"] == 0
          and result["unfinished_rounds"] == 0
          and result["extra_review_batches"] == 0 and not result["final_heads_unreviewed"]
          and result["final_head_checks_in_progress"] == 0
          and result["checks_in_progress"] == 0
          and run.kills >= args.kills)
    if ok and not args.keep:
        shutil.rmtree(work, ignore_errors=True)
        result["workdir"] = None
    print(json.dumps(result, indent=2))
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.faults.chaos", description=__doc__.split(
        "\n\n")[0])
    parser.add_argument("--prs", type=int, default=20, help="pull requests (default 20)")
    parser.add_argument("--pushes", type=int, default=4, help="pushes per PR (default 4)")
    parser.add_argument("--kills", type=int, default=10, help="SIGKILLs at least (default 10)")
    parser.add_argument("--fault-rate", type=float, default=0.3,
                        help="chance of a fault every 50 ms (default 0.3)")
    parser.add_argument("--pace", type=float, default=0.05,
                        help="at most this many seconds between pushes (default 0.05)")
    parser.add_argument("--deadline", type=float, default=240.0,
                        help="stop after this many seconds whatever happens (default 240)")
    parser.add_argument("--seed", type=int, default=9, help="random seed (default 9)")
    parser.add_argument("--keep", action="store_true",
                        help="keep the ledger and server log (always kept when a check fails)")
    return asyncio.run(soak(parser.parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
