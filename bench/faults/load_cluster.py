"""``python -m bench.faults.load_cluster``: several ``roundwise serve`` replicas on one PostgreSQL
database under a steady stream of webhooks, one replica SIGKILLed and restarted (issue 10).

A load script, not a test. Everything runs on loopback: a fresh schema in the ``--db``
database (dropped at the end unless ``--keep``), the fake GitHub in this process and
``--replicas`` real ``roundwise serve`` subprocesses on that one schema (offline reviewer,
``ROUNDWISE_JOB_LEASE`` of ``--lease`` seconds so a killed replica's jobs are taken over soon,
the default number of workers each). It opens ``--prs`` pull requests and pushes to each
``--pushes`` times (every push adds a function with a leftover ``print`` and drops the print
of an older one), sending one signed ``pull_request`` delivery per push (``opened``, then
``synchronize``) at ``--rate`` deliveries a second, spread over the replicas at random. Some
deliveries are sent twice (the same delivery id, to another replica, at once or a little
later), some arrive out of order (a later push's delivery before the earlier one's). A
delivery a replica did not acknowledge (it was down) goes to the next replica with the same
id, as a load balancer in front of GitHub's redelivery would. During the run the replica with
the most running jobs is killed with SIGKILL ``--kills`` times and restarted on its port.
``--github-latency`` makes the fake answer every call late (after applying it), so rounds take
longer and the kills land in the middle of them.

Then it waits for the queue to drain (``--timeout``) and checks: every delivery recorded once
and processed, one job per delivery and none left queued or running (failed ones listed), no
head reviewed twice and every PR's final head reviewed (a round complete in the ledger, one
review on GitHub, the sticky summary naming it), no inline comment posted twice (same body,
path, line and commit; nor the same finding on the same code line), no round left running or
failed. It prints the figures (deliveries, wall time, jobs/s, acknowledgement latency, kills,
takeovers) and exits 1 when a check fails, 2 when PostgreSQL cannot be reached.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import os
import random
import re
import secrets
import shutil
import signal
import socket
import statistics
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import aiohttp

from bot.pr import render
from bot.review.llm_config import configure_litellm
from bot.store import LedgerStore, QueueStore, open_ledger_store, open_queue_store, split_schema

from ..fake_github import FakeGitHub
from ..replay import payloads
from ..replay.github import throwaway_key
from .chaos import files_at, finding_of

APP_ID, INSTALLATION, REPO = 4242, 77, "cluster/service"
SECRET = "load-cluster-secret"
DEFAULT_DB = "postgresql://postgres@127.0.0.1:5432/test"
ROOT = Path(__file__).resolve().parents[2]


def sha(pr: int, push: int) -> str:
    """A distinct head sha per PR and push (distinct in its first seven characters too)."""
    return hashlib.sha1(f"load-cluster {pr} {push}".encode()).hexdigest()


def with_schema(db: str, schema: str) -> str:
    """``db`` with ``schema=NAME`` in its query (replacing any there)."""
    parts = urlsplit(db)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "schema"]
    return urlunsplit(parts._replace(query=urlencode([*query, ("schema", schema)])))


def percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


class Database:
    """The run's schema: made and dropped over a plain connection, read through the same
    stores the replicas use (``bot.store``: the queue's and the ledger's)."""

    def __init__(self, db: str, schema: str):
        import psycopg

        self.target, self.schema = with_schema(db, schema), schema
        self.conn = psycopg.connect(split_schema(self.target)[0], autocommit=True,
                                    connect_timeout=5)
        self.queue: QueueStore | None = None
        self.ledger: LedgerStore | None = None

    def create(self) -> None:
        """The fresh schema, migrated (the replicas then find their tables ready)."""
        self.conn.execute(f'create schema "{self.schema}"')
        self.queue = open_queue_store(self.target)
        self.ledger = open_ledger_store(self.target)

    def drop(self) -> None:
        self.close_stores()
        self.conn.execute(f'drop schema if exists "{self.schema}" cascade')

    def close_stores(self) -> None:
        for store in (self.queue, self.ledger):
            if store is not None:
                store.close()
        self.queue = self.ledger = None

    def close(self) -> None:
        self.close_stores()
        self.conn.close()


class Replica:
    """One ``roundwise serve`` subprocess on a fixed port: start, SIGKILL, start again."""

    def __init__(self, index: int, env: dict[str, str], log: Path):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.index = index
        self.url = f"http://127.0.0.1:{self.port}"
        self.env, self.log = env, log
        self.proc: asyncio.subprocess.Process | None = None
        self.starts = 0
        self.up = False

    async def start(self, session: aiohttp.ClientSession, timeout: float = 30.0) -> None:
        out = os.open(self.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            self.proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "roundwise", "serve", "--host", "127.0.0.1", "--port",
                str(self.port), cwd=ROOT, env=self.env, stdout=out, stderr=out)
        finally:
            os.close(out)
        self.starts += 1
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with contextlib.suppress(aiohttp.ClientError, TimeoutError):
                async with session.get(f"{self.url}/healthz") as resp:
                    if resp.status == 200:
                        self.up = True
                        return
            if self.proc.returncode is not None:
                raise RuntimeError(f"replica {self.index} exited {self.proc.returncode}; "
                                   f"see {self.log}")
            await asyncio.sleep(0.05)
        raise RuntimeError(f"replica {self.index} did not come up; see {self.log}")

    async def kill(self) -> None:
        self.up = False
        if self.proc and self.proc.returncode is None:
            self.proc.send_signal(signal.SIGKILL)
            await self.proc.wait()

    async def stop(self) -> int | None:
        self.up = False
        if self.proc is None:
            return None
        if self.proc.returncode is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(self.proc.wait(), 20)
            except TimeoutError:
                await self.kill()
        return self.proc.returncode


@dataclass
class Delivery:
    id: str
    pr: int
    push: int
    body: bytes
    headers: dict[str, str]


@dataclass
class Figures:
    posts: int = 0
    latencies: list[float] = field(default_factory=list)
    statuses: Counter = field(default_factory=Counter)
    redeliveries: int = 0
    duplicates: int = 0
    out_of_order: int = 0
    kills: list[dict] = field(default_factory=list)


class Run:
    def __init__(self, args, fake: FakeGitHub, replicas: list[Replica],
                 session: aiohttp.ClientSession, db: Database):
        self.args, self.fake, self.replicas, self.session, self.db = (
            args, fake, replicas, session, db)
        self.rng = random.Random(args.seed)
        self.figures = Figures()
        self.sent: dict[str, Delivery] = {}
        self.tasks: set[asyncio.Task] = set()

    # -- sending -----------------------------------------------------------------------------

    async def post(self, delivery: Delivery, first: int) -> None:
        """POST ``delivery`` to replica ``first``, or the next ones while it is not
        acknowledged (a replica down): the same delivery id each time."""
        n, attempt = len(self.replicas), 0
        while True:
            replica = self.replicas[(first + attempt) % n]
            started = time.perf_counter()
            try:
                self.figures.posts += 1
                async with self.session.post(f"{replica.url}/webhook", data=delivery.body,
                                             headers=delivery.headers) as resp:
                    await resp.read()
                    if resp.status < 300:
                        self.figures.latencies.append((time.perf_counter() - started) * 1000)
                        self.figures.statuses[resp.status] += 1
                        return
                    self.figures.statuses[resp.status] += 1
            except (TimeoutError, aiohttp.ClientError):
                pass
            attempt += 1
            self.figures.redeliveries += 1
            if attempt % n == 0:
                await asyncio.sleep(0.2)  # every replica refused: wait a little

    def send(self, delivery: Delivery) -> None:
        """Send in the background (the steady rate does not wait for acknowledgements); some
        deliveries go a second time to another replica."""
        self.sent[delivery.id] = delivery
        first = self.rng.randrange(len(self.replicas))
        self._spawn(self.post(delivery, first))
        if self.rng.random() < self.args.duplicate_rate:
            self.figures.duplicates += 1
            other = (first + 1 + self.rng.randrange(max(len(self.replicas) - 1, 1))) \
                % len(self.replicas)
            delay = 0.0 if self.rng.random() < 0.3 else self.rng.uniform(0.05, 3.0)
            self._spawn(self._later(delay, delivery, other))

    async def _later(self, delay: float, delivery: Delivery, replica: int) -> None:
        await asyncio.sleep(delay)
        await self.post(delivery, replica)

    def _spawn(self, coro) -> None:
        task = asyncio.create_task(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    def push(self, pr: int, push: int) -> Delivery:
        """Push ``push`` to PR ``pr`` on the fake and build its delivery (as of now)."""
        self.fake.push(REPO, pr, sha(pr, push), files_at(pr, push))
        action = "opened" if push == 1 else "synchronize"
        body = payloads.encode(payloads.pull_request(self.fake, REPO, pr, action))
        delivery_id = f"load-{pr}-{push}-{secrets.token_hex(4)}"
        return Delivery(delivery_id, pr, push, body,
                        payloads.headers("pull_request", body, SECRET, delivery_id))

    async def drive(self) -> None:
        """Every push of every PR, at a steady rate: PRs in a random order per pass; some
        pushes followed at once by the next one, whose delivery is sent first."""
        interval = 1.0 / self.args.rate
        pushed = dict.fromkeys(range(1, self.args.prs + 1), 0)
        next_at = time.monotonic()

        async def tick() -> None:
            nonlocal next_at
            next_at += interval
            await asyncio.sleep(max(0.0, next_at - time.monotonic()))

        for rnd in range(1, self.args.pushes + 1):
            order = list(pushed)
            self.rng.shuffle(order)
            for pr in order:
                if pushed[pr] >= rnd:
                    continue
                k = pushed[pr] + 1
                if k < self.args.pushes and self.rng.random() < self.args.out_of_order_rate:
                    earlier, later = self.push(pr, k), self.push(pr, k + 1)
                    pushed[pr] = k + 1
                    self.figures.out_of_order += 1
                    self.send(later)
                    await tick()
                    self.send(earlier)
                else:
                    pushed[pr] = k
                    self.send(self.push(pr, k))
                await tick()
        while self.tasks:
            await asyncio.gather(*list(self.tasks))

    # -- kills -------------------------------------------------------------------------------

    def running_by_pid(self) -> Counter:
        owners = Counter()
        for job in self.db.queue.jobs(status="running"):
            match = re.match(r"worker-(\d+)-", job.owner or "")
            if match:
                owners[int(match.group(1))] += 1
        return owners

    async def killer(self, expected_seconds: float) -> None:
        """SIGKILL the busiest replica ``--kills`` times, spread over the sending, and
        restart it on its port."""
        start = time.monotonic()
        for i in range(1, self.args.kills + 1):
            at = start + expected_seconds * i / (self.args.kills + 1)
            await asyncio.sleep(max(0.0, at - time.monotonic()))
            live = [r for r in self.replicas if r.proc and r.proc.returncode is None]
            pids = {r.proc.pid for r in live}  # not a killed one whose jobs await takeover
            waited = time.monotonic() + 5.0  # rather mid-round: wait a little for a busy one
            while not (pids & set(running := self.running_by_pid())) and \
                    time.monotonic() < waited:
                await asyncio.sleep(0.02)
            victim = max(live, key=lambda r: (running.get(r.proc.pid, 0), self.rng.random()))
            jobs = running.get(victim.proc.pid, 0)
            pid = victim.proc.pid
            await victim.kill()
            down = self.rng.uniform(0.5, 2.0)
            self.figures.kills.append({"replica": victim.index, "pid": pid,
                                       "running_jobs": jobs,
                                       "at_s": round(time.monotonic() - start, 1),
                                       "down_s": round(down, 1)})
            await asyncio.sleep(down)
            await victim.start(self.session)

    # -- waiting -----------------------------------------------------------------------------

    def unfinished(self) -> int:
        counts = self.db.queue.job_counts()
        return counts.get("queued", 0) + counts.get("running", 0)

    async def drain(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.unfinished():
                return True
            await asyncio.sleep(0.25)
        return False


def review_checks(fake: FakeGitHub, prs: int) -> tuple[dict, list[str]]:
    """From GitHub's side: no head reviewed twice, every final head reviewed, no inline
    comment posted twice, one sticky summary per PR."""
    bot = fake.bot_login
    the_repo = fake._repo(REPO)
    problems: list[str] = []
    reviews = heads_reviewed = twice = copies = 0
    unreviewed: list[int] = []
    for pr in range(1, prs + 1):
        per_head = Counter(r["commit_id"] for r in fake.reviews(REPO, pr)
                           if r["user"]["login"] == bot and r["body"])
        reviews += sum(per_head.values())
        heads_reviewed += len(per_head)
        for head, n in per_head.items():
            if n > 1:
                twice += 1
                problems.append(f"PR {pr}: head {head[:7]} reviewed {n} times")
        literal, finding = Counter(), Counter()
        for c in fake.review_comments(REPO, pr):
            if c["user"]["login"] != bot or c.get("in_reply_to_id"):
                continue
            literal[(c["body"], c["path"], c["original_line"], c["original_commit_id"])] += 1
            finding[finding_of(the_repo, c)] += 1
        for what, n in [*literal.items(), *finding.items()]:
            if n > 1:
                copies += n - 1
                problems.append(f"PR {pr}: comment posted {n} times: {str(what)[:160]}")
        head = fake.head_sha(REPO, pr)
        summaries = [c for c in fake.issue_comments(REPO, pr)
                     if c["user"]["login"] == bot and render.SUMMARY_MARKER in c["body"]]
        if per_head.get(head) != 1 or len(summaries) != 1 or \
                f"`{head[:7]}`" not in summaries[0]["body"]:
            unreviewed.append(pr)
    if unreviewed:
        problems.append(f"final head not reviewed (once, with its summary): PRs {unreviewed[:20]}")
    return {"reviews": reviews, "heads_reviewed": heads_reviewed, "heads_reviewed_twice": twice,
            "comments_posted_twice": copies, "final_heads_unreviewed": len(unreviewed)}, problems


def ledger_checks(db: Database, sent: dict[str, Delivery], fake: FakeGitHub) -> tuple[dict,
                                                                                      list[str]]:
    """From the stores: every delivery recorded once and processed, one job each, none left
    behind, every final head's round complete, no round left running or failed."""
    problems: list[str] = []
    queue, ledger = db.queue, db.ledger
    found = {i: queue.delivery(i) for i in sent}  # the id is the deliveries' key: once
    rows = {i: d for i, d in found.items() if d is not None}
    missing = sorted(set(sent) - set(rows))
    unprocessed = sorted(i for i, d in rows.items() if not d.processed_at)
    if missing:
        problems.append(f"{len(missing)} deliveries never recorded: {missing[:5]}")
    if unprocessed:
        problems.append(f"{len(unprocessed)} deliveries not processed: {unprocessed[:5]}")
    all_jobs = queue.jobs()
    per_delivery = Counter(j.delivery_id for j in all_jobs)
    doubled = {d: n for d, n in per_delivery.items() if n > 1}
    if doubled:
        problems.append(f"deliveries with more than one job: {list(doubled.items())[:5]}")
    jobless = sorted(set(sent) - set(per_delivery))
    if jobless:
        problems.append(f"{len(jobless)} deliveries without a job: {jobless[:5]}")
    jobs = dict(Counter(j.status for j in all_jobs))
    left = jobs.get("queued", 0) + jobs.get("running", 0)
    if left:
        problems.append(f"{left} job(s) left queued or running")
    failed = [j for j in all_jobs if j.status == "failed"]
    for job in failed:
        problems.append(f"job {job.id} ({job.delivery_id}) failed after {job.attempts} "
                        f"attempt(s): {(job.error or '')[:200]}")
    outcomes = Counter(re.sub(r"round \d+ complete.*", "round complete",
                              re.sub(r"[0-9a-f]{7} was already reviewed in round \d+",
                                     "already reviewed", d.outcome or "?"))
                       for d in rows.values())
    rounds: Counter = Counter()
    complete: set[tuple[int, str]] = set()
    for pr in ledger.pull_requests(REPO):
        for rnd in ledger.rounds(pr["id"]):
            rounds[rnd["status"]] += 1
            if rnd["status"] == "complete":
                complete.add((pr["number"], rnd["head_sha"]))
    stuck = rounds["running"] + rounds["failed"]
    if stuck:
        problems.append(f"{stuck} round(s) left running or failed")
    prs = sorted({d.pr for d in sent.values()})
    incomplete = [pr for pr in prs if (pr, fake.head_sha(REPO, pr)) not in complete]
    if incomplete:
        problems.append(f"final head without a complete round: PRs {incomplete[:20]}")
    return {"deliveries_recorded": len(rows),
            "deliveries_processed": sum(bool(d.processed_at) for d in rows.values()),
            "delivery_attempts": sum(d.attempts for d in rows.values()),
            "jobs": jobs, "failed_jobs": len(failed),
            "jobs_run_more_than_once": sum(j.attempts > 1 for j in all_jobs),
            "outcomes": dict(outcomes.most_common()), "rounds": dict(rounds)}, problems


def takeovers(logs: list[Path]) -> int:
    """Jobs re-queued after their replica died, as the replicas logged them."""
    pattern = re.compile(r"re-queued (\d+) job\(s\) interrupted by a crash")
    return sum(int(m.group(1)) for log in logs if log.exists()
               for m in pattern.finditer(log.read_text(errors="replace")))


def pg_problem(db: str) -> str | None:
    """Why ``db`` cannot be used; None when a server answers there."""
    try:
        import psycopg
    except ImportError:
        return "psycopg is not installed (pip install 'psycopg[binary]' psycopg-pool)"
    conninfo = urlunsplit(urlsplit(db)._replace(query=urlencode(
        [(k, v) for k, v in parse_qsl(urlsplit(db).query) if k != "schema"])))
    try:
        psycopg.connect(conninfo, connect_timeout=3).close()
    except psycopg.Error as exc:
        return f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc) else ''}"
    return None


def replica_env(args, fake: FakeGitHub, key: str, target: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "ROUNDWISE_"))}
    env.update({"PYTHONPATH": str(ROOT), "GITHUB_APP_ID": str(APP_ID),
                "GITHUB_PRIVATE_KEY": key, "GITHUB_WEBHOOK_SECRET": SECRET,
                "GITHUB_API_URL": fake.url, "ROUNDWISE_DB": target,
                "ROUNDWISE_BOT_LOGIN": fake.bot_login,
                "ROUNDWISE_JOB_LEASE": str(args.lease)})
    if args.workers:
        env["ROUNDWISE_WORKERS"] = str(args.workers)
    return env


async def run(args) -> int:
    private, public = throwaway_key()
    schema = f"rw_load_{secrets.token_hex(5)}"
    db = Database(args.db, schema)
    db.create()
    work = Path(tempfile.mkdtemp(prefix="roundwise-load-cluster-"))
    result: dict = {"prs": args.prs, "pushes": args.pushes, "replicas": args.replicas,
                    "lease_s": args.lease, "rate": args.rate, "seed": args.seed,
                    "github_latency_s": args.github_latency,
                    "schema": schema}
    problems: list[str] = []
    replicas: list[Replica] = []
    try:
        # GitHub's hourly limit (5,000 calls an installation) is not what this measures
        async with FakeGitHub(APP_ID, public, rate_limit=10**9) as fake, aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=30)) as session:
            if args.github_latency > 0:  # every answer late: kills land mid-round
                fake.slow_next("*", ".", args.github_latency, times=10**12)
            fake.add_installation(INSTALLATION, "cluster")
            fake.add_repo(REPO, INSTALLATION, files={"README.md": "cluster\n"})
            for pr in range(1, args.prs + 1):
                fake.add_pr(REPO, pr, f"Change {pr}", "", "dev", "main",
                            fake._repo(REPO).branches["main"], {})
            env = replica_env(args, fake, private, with_schema(args.db, schema))
            replicas = [Replica(i, env, work / f"replica-{i}.log")
                        for i in range(args.replicas)]
            await asyncio.gather(*(r.start(session) for r in replicas))
            the_run = Run(args, fake, replicas, session, db)
            sends = args.prs * args.pushes
            started = time.monotonic()
            killer = asyncio.create_task(the_run.killer(sends / args.rate))
            try:
                await the_run.drive()
                sent_s = time.monotonic() - started
                await killer
                drained = await the_run.drain(args.timeout)
            finally:
                killer.cancel()
            wall = time.monotonic() - started
            if not drained:
                problems.append(f"queue not drained within {args.timeout:.0f} s "
                                f"({the_run.unfinished()} job(s) left)")
            await asyncio.sleep(0.5)  # let the last job's tail (check, metrics) finish
            codes = [await r.stop() for r in replicas]
            if any(c != 0 for c in codes):
                problems.append(f"replicas did not stop cleanly on SIGTERM: exit codes {codes}")
            figures = the_run.figures
            on_github, found = review_checks(fake, args.prs)
            in_db, found_db = ledger_checks(db, the_run.sent, fake)
            problems += found_db + found
            jobs_done = sum(n for status, n in in_db["jobs"].items()
                            if status in ("done", "skipped", "failed"))
            tracebacks = sum(r.log.read_text(errors="replace").count("Traceback")
                             for r in replicas if r.log.exists())
            result.update({
                "deliveries": len(the_run.sent), "posts": figures.posts,
                "duplicates_sent": figures.duplicates, "out_of_order": figures.out_of_order,
                "redeliveries": figures.redeliveries, "statuses": dict(figures.statuses),
                "sending_s": round(sent_s, 1), "wall_s": round(wall, 1),
                "jobs_per_s": round(jobs_done / wall, 1) if wall else 0.0,
                "ack_p50_ms": round(percentile(figures.latencies, 0.5), 1),
                "ack_p99_ms": round(percentile(figures.latencies, 0.99), 1),
                "ack_max_ms": round(max(figures.latencies, default=0.0), 1),
                "ack_mean_ms": round(statistics.fmean(figures.latencies), 1)
                if figures.latencies else 0.0,
                "kills": len(figures.kills), "kill_log": figures.kills,
                "takeovers": takeovers([r.log for r in replicas]),
                "replica_starts": sum(r.starts for r in replicas),
                **in_db, **on_github, "tracebacks_in_logs": tracebacks,
            })
            if len(figures.kills) < args.kills:
                problems.append(f"only {len(figures.kills)} of {args.kills} kills happened")
    finally:
        for r in replicas:
            with contextlib.suppress(Exception):
                await r.stop()
        if args.keep:
            result["kept"] = {"schema": schema, "logs": str(work)}
        else:
            db.drop()
        db.close()
        if not args.keep and not problems:
            shutil.rmtree(work, ignore_errors=True)
        elif not args.keep:
            result["logs"] = str(work)
    result["problems"] = problems
    result["ok"] = not problems
    report(result, args.json)
    return 0 if not problems else 1


def report(r: dict, as_json: bool) -> None:
    if as_json:
        print(json.dumps(r, indent=2))
        return
    print(f"load_cluster: {r['prs']} PRs x {r['pushes']} pushes on {r['replicas']} replicas "
          f"(lease {r['lease_s']:g} s, {r['rate']:g} deliveries/s, seed {r['seed']}, "
          f"schema {r['schema']})")
    if "deliveries" in r:
        print(f"  deliveries {r['deliveries']} ({r['posts']} POSTs: {r['duplicates_sent']} "
              f"duplicates, {r['redeliveries']} redeliveries after a refusal; "
              f"{r['out_of_order']} out of order); statuses {r['statuses']}")
        print(f"  wall {r['wall_s']} s (sending {r['sending_s']} s); jobs {r['jobs']}; "
              f"{r['jobs_per_s']} jobs/s")
        print(f"  ack latency p50 {r['ack_p50_ms']} ms, p99 {r['ack_p99_ms']} ms, "
              f"max {r['ack_max_ms']} ms")
        kills = ", ".join(f"replica {k['replica']} at {k['at_s']} s with {k['running_jobs']} "
                          f"running" for k in r["kill_log"])
        print(f"  kills {r['kills']} ({kills}); takeovers {r['takeovers']}; jobs run more "
              f"than once {r['jobs_run_more_than_once']}; replica starts {r['replica_starts']}")
        print(f"  outcomes {r['outcomes']}; rounds {r['rounds']}")
        print(f"  reviews {r['reviews']} on {r['heads_reviewed']} heads; heads reviewed twice "
              f"{r['heads_reviewed_twice']}; comments posted twice "
              f"{r['comments_posted_twice']}; final heads unreviewed "
              f"{r['final_heads_unreviewed']}; failed jobs {r['failed_jobs']}; "
              f"tracebacks in logs {r['tracebacks_in_logs']}")
    checks = [
        ("every delivery recorded once and processed",
         not any("deliver" in p for p in r["problems"])),
        ("no head reviewed twice", r.get("heads_reviewed_twice", 1) == 0),
        ("every final head reviewed", r.get("final_heads_unreviewed", 1) == 0 and
         not any("final head" in p for p in r["problems"])),
        ("no comment posted twice", r.get("comments_posted_twice", 1) == 0),
        ("no job left behind or failed", not any("job" in p for p in r["problems"])),
        ("no round left running or failed", not any("round(s)" in p for p in r["problems"])),
    ]
    for name, ok in checks:
        print(f"  [{'ok' if ok else 'FAIL'}] {name}")
    for p in r["problems"]:
        print(f"  problem: {p}")
    if r.get("logs"):
        print(f"  replica logs kept in {r['logs']}")
    print("load_cluster: " + ("all checks passed" if r["ok"] else "CHECKS FAILED"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.faults.load_cluster",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--prs", type=int, default=200, help="pull requests (default 200)")
    parser.add_argument("--pushes", type=int, default=3, help="pushes per PR (default 3)")
    parser.add_argument("--replicas", type=int, default=3, help="roundwise serve processes "
                        "(default 3)")
    parser.add_argument("--kills", type=int, default=2, help="SIGKILLs of a replica, each "
                        "restarted (default 2)")
    parser.add_argument("--db", default=DEFAULT_DB,
                        help="PostgreSQL database; a fresh schema is made in it "
                             f"(default {DEFAULT_DB})")
    parser.add_argument("--seed", type=int, default=10, help="random seed (default 10)")
    parser.add_argument("--keep", action="store_true",
                        help="keep the schema and the replicas' logs")
    parser.add_argument("--rate", type=float, default=20.0,
                        help="deliveries sent a second (default 20)")
    parser.add_argument("--lease", type=float, default=10.0,
                        help="ROUNDWISE_JOB_LEASE of the replicas, seconds (default 10)")
    parser.add_argument("--workers", type=int, default=0,
                        help="ROUNDWISE_WORKERS per replica (default: the server's default)")
    parser.add_argument("--duplicate-rate", type=float, default=0.1,
                        help="share of deliveries sent twice (default 0.1)")
    parser.add_argument("--out-of-order-rate", type=float, default=0.1,
                        help="share of pushes whose delivery is overtaken by the next push's "
                             "(default 0.1)")
    parser.add_argument("--github-latency", type=float, default=0.0,
                        help="seconds the fake GitHub takes to answer each call, after "
                             "applying it (default 0)")
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="seconds to wait for the queue to drain (default 600)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    if args.replicas < 1 or args.prs < 1 or args.pushes < 1 or args.rate <= 0:
        parser.error("--replicas, --prs, --pushes and --rate must be positive")
    problem = pg_problem(args.db)
    if problem:
        print(f"load_cluster: PostgreSQL is not reachable at {args.db} ({problem}); start a "
              f"server there or pass --db postgresql://USER@HOST:PORT/DB", file=sys.stderr)
        return 2
    configure_litellm()  # a composition root (the replicas' ``roundwise`` does its own)
    return asyncio.run(interruptible(run(args)))


async def interruptible(work) -> int:
    """``work``, cancelled (so the replicas are stopped and the schema dropped) on SIGTERM or
    Ctrl-C."""
    task = asyncio.ensure_future(work)
    for sig in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(sig, task.cancel)
    try:
        return await task
    except asyncio.CancelledError:
        print("load_cluster: interrupted", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
