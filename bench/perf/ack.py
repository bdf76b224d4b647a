"""Acknowledgement bench (a script, not a test): the real webhook path against a bare handler.

    python -m bench.perf.ack [--deliveries 200] [--rounds 9] [--clients 2]
                              [--baseline both|bare|durable|none]
                              [--db sqlite | --db postgresql://...]

Three servers run side by side, each in a process of its own on 127.0.0.1, started once and
warmed up (20 deliveries one by one, then one untimed burst), as a server that has been up a
while is. Each round then sends each of them ``--deliveries`` signed deliveries all at once
(``bench.perf.load_webhooks``' mix, fresh delivery ids every burst), alternating which goes first:

* ``bare``: an aiohttp handler that reads the body, checks its HMAC in constant time and answers
  202, nothing else: the floor any webhook server on this machine has;
* ``durable``: the same, then the delivery (id, event, body) inserted into the ``--db`` engine
  and committed before the 202, the deliveries that arrive during a commit sharing the next one
  (``GroupCommit``): the floor of a webhook server that, like the app, answers only once the
  delivery is durable. The app's ratio to it is the verdict (printed with why): against the
  bare handler the app's figures also count a write the bare handler never makes;
* ``app``: the real roundwise app (``bot.server.app.create_app``, workers off): verify, validate, record
  the delivery and queue its job in the store named by ``--db``.

Both run under the same ``web.AppRunner`` (no access log) and settle their heap as
``roundwise serve`` does (``bot.server.serving.settle_heap``), so the handler is the only difference. The deliveries come from ``--clients`` client processes (started once, each burst
split between them, all starting at the same instant), each sending its share at once over
non-blocking sockets and one selector, one connection per delivery as GitHub does, every
request's bytes (headers, body, signature) prepared before the burst: the clients do about as
little as a client can, so the latency is the server's. Each server reports its own CPU time around every burst, the clients theirs.

Per round it prints p50 and p99 (client-measured, ms) and the server's CPU per delivery (ms)
of each; then the medians over rounds and, against each reference, the ratio app p99 /
reference p99 two ways (of the medians, and the median of each round's own ratio, with its
min/median/max: the bursts of a round ran back to back, under the same load from elsewhere on
the machine) and the ratio of server CPU per delivery, and the clients' CPU per delivery beside
the bare server's (clients costlier than the bare server would make the bare p99 a measure of
the clients). Targets, against the durable reference (``--baseline bare``: the bare one): at
most 1.5 for the worse p99 ratio and at most 1.5 for the CPU ratio.

``--db sqlite`` (default): a fresh ledger file for the run. ``--db postgresql://...``: the app on
that database, when the server can run on it; otherwise the bench stops with the reason.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import hmac
import multiprocessing
import secrets
import selectors
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

from aiohttp import web

from bench.fake_github import FakeGitHub
from bench.perf.load_webhooks import APP_ID, deliveries, percentile, setup_fake
from bench.replay import payloads
from bench.replay.github import throwaway_key
from bot.config.env import Config
from bot.github import RetryPolicy
from bot.server.serving import settle_heap
from bot.store import is_postgres

TARGET = 1.5  # app / reference: the p99, and the server's CPU per delivery
BASELINES = {"both": ("bare", "durable"), "bare": ("bare",), "durable": ("durable",),
             "none": ()}
WARMUP = 20
CLIENTS = 2


def bare_app(secret: str) -> web.Application:
    """The baseline: constant-time HMAC check of the whole body, then 202."""
    key = secret.encode()

    async def hook(request: web.Request) -> web.Response:
        body = await request.read()
        expected = "sha256=" + hmac.new(key, body, hashlib.sha256).hexdigest()
        given = request.headers.get("X-Hub-Signature-256", "")
        if not hmac.compare_digest(expected.encode(), given.encode()):
            return web.Response(status=401)
        return web.Response(status=202)

    app = web.Application()
    app.router.add_post("/webhook", hook)
    return app


class GroupCommit:
    """The durable reference's writer: each verified delivery (id, event, body) inserted into
    a table of its own in the app's database engine and committed before its 202; the
    deliveries that arrive while a commit is under way share the next one (a group commit,
    as the app's own intake does), written in a worker thread as the app writes its batches.
    SQLite: a file beside the app's, WAL and ``synchronous=NORMAL`` as the ledger's;
    PostgreSQL: a throwaway schema in the app's database, dropped when the server stops."""

    def __init__(self, db: str):
        self.db = db
        self.pending: list[tuple[tuple, asyncio.Future]] = []
        self.wake = asyncio.Event()
        self.schema = f"ack_reference_{secrets.token_hex(4)}"
        if is_postgres(db):
            import psycopg

            self.conn = psycopg.connect(db.split("?", 1)[0], autocommit=True)
            self.conn.execute(f"create schema {self.schema}")
            self.conn.execute(f"create table {self.schema}.deliveries (id text primary key, "
                              "event text, body bytea, received_at timestamptz default now())")
            self.conn.autocommit = False
            self.insert = (f"insert into {self.schema}.deliveries (id, event, body) "
                           "values (%s, %s, %s) on conflict do nothing")
        else:
            import sqlite3

            self.conn = sqlite3.connect(str(Path(db).with_name("reference.db")),
                                        check_same_thread=False)
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=NORMAL")
            self.conn.execute("create table deliveries (id text primary key, event text, "
                              "body blob, received_at text default current_timestamp)")
            self.insert = "insert or ignore into deliveries (id, event, body) values (?, ?, ?)"
        self.task = asyncio.ensure_future(self._run())

    def _write(self, rows: list[tuple]) -> None:
        if is_postgres(self.db):
            with self.conn.cursor() as cur:
                cur.executemany(self.insert, rows)
        else:
            self.conn.executemany(self.insert, rows)
        self.conn.commit()

    async def _run(self) -> None:
        while True:
            await self.wake.wait()
            self.wake.clear()
            batch, self.pending = self.pending, []
            try:
                await asyncio.to_thread(self._write, [row for row, _ in batch])
            except Exception as exc:  # noqa: BLE001 - each waiting request answers 500
                for _, done in batch:
                    done.set_exception(exc)
                continue
            for _, done in batch:
                done.set_result(None)

    async def write(self, row: tuple) -> None:
        done = asyncio.get_running_loop().create_future()
        self.pending.append((row, done))
        self.wake.set()
        await done

    def close(self) -> None:
        self.task.cancel()
        if is_postgres(self.db):
            self.conn.rollback()
            self.conn.autocommit = True
            self.conn.execute(f"drop schema {self.schema} cascade")
        self.conn.close()


def durable_app(secret: str, db: str) -> web.Application:
    """The durable reference: the bare handler's check, then the delivery committed to the
    database (``GroupCommit``) before the 202, as the app must before it answers."""
    key = secret.encode()
    app = web.Application()

    async def hook(request: web.Request) -> web.Response:
        body = await request.read()
        expected = "sha256=" + hmac.new(key, body, hashlib.sha256).hexdigest()
        given = request.headers.get("X-Hub-Signature-256", "")
        if not hmac.compare_digest(expected.encode(), given.encode()):
            return web.Response(status=401)
        await app["writer"].write((request.headers.get("X-GitHub-Delivery", ""),
                                   request.headers.get("X-GitHub-Event", ""), body))
        return web.Response(status=202)

    async def writer(app: web.Application):
        app["writer"] = GroupCommit(db)
        yield
        app["writer"].close()

    app.cleanup_ctx.append(writer)
    app.router.add_post("/webhook", hook)
    return app


def serve(kind: str, config: Config, conn) -> None:
    """One server, in its own process; sends its port, or ``("error", reason)``; then answers
    "cpu" with its CPU seconds so far (every thread), until told to stop."""
    async def start() -> None:
        try:
            if kind == "bare":
                app = bare_app(config.webhook_secret)
            elif kind == "durable":
                app = durable_app(config.webhook_secret, config.db_path)
            else:
                from bot.review.llm_config import configure_litellm
                from bot.server.app import create_app

                configure_litellm()
                app = create_app(config, retry=RetryPolicy(attempts=1), start_workers=False)
            runner = web.AppRunner(app, access_log=None)
            await runner.setup()  # the app's start-up (store, lock) runs here
            await web.TCPSite(runner, "127.0.0.1", 0, backlog=1024).start()
        except Exception as exc:  # noqa: BLE001 - reported to the parent as the reason
            conn.send(("error", f"{type(exc).__name__}: {exc}"))
            return
        settle_heap()  # both servers, as ``roundwise serve`` settles its own
        conn.send(("port", runner.addresses[0][1]))
        loop = asyncio.get_running_loop()
        while await loop.run_in_executor(None, conn.recv) == "cpu":
            conn.send(time.process_time())
        await runner.cleanup()

    asyncio.run(start())


def request_bytes(port: int, event: str, payload: dict, secret: str) -> bytes:
    """A delivery as the bytes of one HTTP/1.1 request (its connection closes after it)."""
    body = payloads.encode(payload)
    head = {"Host": f"127.0.0.1:{port}", "Content-Type": "application/json",
            "Content-Length": str(len(body)), "Connection": "close",
            **payloads.headers(event, body, secret)}
    return ("POST /webhook HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in head.items())
            + "\r\n").encode() + body


def _status(response: bytes) -> int:
    return int(response[9:12]) if response[:5] == b"HTTP/" and response[9:12].isdigit() else 0


def send_at_once(port: int, requests: list[bytes]) -> list[tuple[float, int]]:
    """Every request on a connection of its own, all at once: non-blocking sockets and one
    selector, about the least CPU a client can spend per request. Per request: (ms from
    connecting to the end of the response, status; 0 when no HTTP answer came)."""
    selector = selectors.DefaultSelector()
    started: dict[int, float] = {}
    results: dict[int, tuple[float, int]] = {}
    received: dict[int, list[bytes]] = {}
    for i, request in enumerate(requests):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setblocking(False)
        started[i] = time.perf_counter()
        sock.connect_ex(("127.0.0.1", port))
        selector.register(sock, selectors.EVENT_WRITE, (i, request))
    while len(results) < len(requests):
        for key, events in selector.select(timeout=60):
            sock, (i, pending) = key.fileobj, key.data
            if events & selectors.EVENT_WRITE:
                try:
                    sent = sock.send(pending)
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    sent, pending = 0, b""
                    received[i] = []
                    selector.unregister(sock)
                    sock.close()
                    results[i] = ((time.perf_counter() - started[i]) * 1000, 0)
                    continue
                pending = pending[sent:]
                if pending:
                    selector.modify(sock, selectors.EVENT_WRITE, (i, pending))
                else:
                    received[i] = []
                    selector.modify(sock, selectors.EVENT_READ, (i, b""))
                continue
            try:
                chunk = sock.recv(65536)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                chunk = b""
            if chunk:
                received[i].append(chunk)
                continue
            selector.unregister(sock)  # the server closed: the response is complete
            sock.close()
            results[i] = ((time.perf_counter() - started[i]) * 1000,
                          _status(b"".join(received[i])))
    selector.close()
    return [results[i] for i in range(len(requests))]


def send_one_by_one(port: int, requests: list[bytes]) -> list[tuple[float, int]]:
    """Each request on its own connection, one after the other."""
    results = []
    for request in requests:
        started = time.perf_counter()
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(request)
            chunks = []
            while chunk := sock.recv(65536):
                chunks.append(chunk)
        results.append(((time.perf_counter() - started) * 1000, _status(b"".join(chunks))))
    return results


def client(conn) -> None:
    """A client process: for each ``(port, requests, start_at, concurrent)`` it is sent, it
    waits for ``start_at`` (wall clock), sends them and answers ``(results, CPU seconds)``."""
    while (job := conn.recv()) != "stop":
        port, requests, start_at, concurrent = job
        time.sleep(max(start_at - time.time(), 0))
        cpu = time.process_time()
        results = (send_at_once if concurrent else send_one_by_one)(port, requests)
        conn.send((results, time.process_time() - cpu))


class Clients:
    """``count`` client processes, started once, that share every burst."""

    def __init__(self, count: int):
        context = multiprocessing.get_context("spawn")
        self.pipes, self.processes = [], []
        for _ in range(count):
            ours, theirs = multiprocessing.Pipe()
            self.pipes.append(ours)
            self.processes.append(context.Process(target=client, args=(theirs,), daemon=True))
        for process in self.processes:
            process.start()

    async def burst(self, port: int, requests: list[bytes], *, concurrent: bool = True
                    ) -> tuple[list[float], list[int], float]:
        """Latencies (ms) and statuses of every request, and the clients' CPU seconds; one
        by one (``concurrent=False``) goes through the first client alone."""
        loop = asyncio.get_running_loop()
        count = len(self.pipes) if concurrent else 1
        start_at = time.time() + 0.05  # every client is waiting by then
        for i, pipe in enumerate(self.pipes[:count]):
            pipe.send((port, requests[i::count], start_at, concurrent))
        answers = [await loop.run_in_executor(None, pipe.recv) for pipe in self.pipes[:count]]
        results = [r for share, _ in answers for r in share]
        return [r[0] for r in results], [r[1] for r in results], sum(c for _, c in answers)

    def stop(self) -> None:
        for pipe in self.pipes:
            pipe.send("stop")
        for process in self.processes:
            process.join(10)


class CannotServe(RuntimeError):
    """The app could not start on the database asked for."""


class Server:
    """One server process (``bare`` or ``app``) on 127.0.0.1 and the pipe that talks to it."""

    def __init__(self, kind: str, config: Config):
        self.kind, self.config = kind, config
        self.pipe, theirs = multiprocessing.Pipe()
        self.process = multiprocessing.get_context("spawn").Process(
            target=serve, args=(kind, config, theirs))
        self.port = 0

    async def start(self) -> None:
        self.process.start()
        what, value = await asyncio.get_running_loop().run_in_executor(None, self.pipe.recv)
        if what == "error":
            await self.stop()
            raise CannotServe(value)
        self.port = value

    async def cpu(self) -> float:
        """The server process's CPU seconds so far."""
        self.pipe.send("cpu")
        return await asyncio.get_running_loop().run_in_executor(None, self.pipe.recv)

    async def burst(self, clients: Clients, batch: list[tuple[str, dict]], *,
                    concurrent: bool = True) -> dict:
        """Send ``batch``: latencies, statuses, the server's and the clients' CPU seconds."""
        requests = [request_bytes(self.port, event, payload, self.config.webhook_secret)
                    for event, payload in batch]
        before = await self.cpu()
        latencies, statuses, client_cpu = await clients.burst(self.port, requests,
                                                              concurrent=concurrent)
        return {"latencies": latencies, "statuses": statuses,
                "server_cpu": await self.cpu() - before, "client_cpu": client_cpu}

    async def stop(self) -> None:
        if self.process.is_alive() and self.port:
            self.pipe.send("stop")
        await asyncio.get_running_loop().run_in_executor(None, self.process.join, 30)


async def run(count: int, rounds: int, db: str, baselines: tuple[str, ...],
              clients: int = CLIENTS) -> list[dict]:
    """Both servers started once and warmed up (``WARMUP`` deliveries one by one, then one
    untimed burst), then ``rounds`` measured bursts each, alternating which goes first. Every
    burst has fresh delivery ids, so the app records and queues every one."""
    private, public = throwaway_key()
    fake = FakeGitHub(APP_ID, public)
    setup_fake(fake)
    results = []
    with tempfile.TemporaryDirectory() as folder:
        target = db if is_postgres(db) else str(Path(folder) / "ledger.db")
        config = Config(app_id=str(APP_ID), private_key=private,
                        webhook_secret=secrets.token_hex(16), api_url="http://127.0.0.1:9",
                        db_path=target, workers=1, bot_login=fake.bot_login)
        kinds = (*baselines, "app")
        servers = {kind: Server(kind, config) for kind in kinds}
        pool = Clients(clients)
        started = []
        try:
            for kind in ("app", *[k for k in kinds if k != "app"]):  # the app fails first
                await servers[kind].start()
                started.append(servers[kind])
                await servers[kind].burst(pool, deliveries(fake, WARMUP), concurrent=False)
                await servers[kind].burst(pool, deliveries(fake, count))
            for r in range(rounds):
                row = {"round": r + 1}
                for kind in kinds if r % 2 == 0 else kinds[::-1]:
                    got = await servers[kind].burst(pool, deliveries(fake, count))
                    row[kind] = {"p50": statistics.median(got["latencies"]),
                                 "p99": percentile(got["latencies"], 0.99),
                                 "ok": sum(s in (200, 202) for s in got["statuses"]),
                                 "cpu": got["server_cpu"] * 1000 / count,
                                 "client_cpu": got["client_cpu"] * 1000 / count}
                results.append(row)
        finally:
            for server in started:
                await server.stop()
            pool.stop()
    return results


WHY_DURABLE = ("the app answers 202 only once the delivery and its job are committed; the bare "
               "handler commits nothing, so against it the app's p99 and CPU also count a "
               "durable write the reference never makes (on PostgreSQL a network round trip "
               "and a WAL flush per batch); the durable reference makes the same write, so "
               "its ratio is the verdict")


def report(results: list[dict], count: int, clients: int = CLIENTS
           ) -> tuple[float | None, float | None]:
    """Print the table; the worse p99 ratio and the CPU ratio against the verdict's reference
    (``durable`` when it ran, else ``bare``; None without one)."""
    kinds = [k for k in ("bare", "durable", "app") if k in results[0]]
    print(f"{count} concurrent signed deliveries per server per round from {clients} client "
          "processes; latency ms, client-measured; cpu: the server's ms per delivery")
    print(f"{'round':>6}" + "".join(f"{k + ' p50':>13}{k + ' p99':>13}{k + ' ok':>12}"
                                    f"{k + ' cpu':>13}" for k in kinds))
    for row in results:
        print(f"{row['round']:>6}" + "".join(
            f"{row[k]['p50']:>13.1f}{row[k]['p99']:>13.1f}{row[k]['ok']:>12}"
            f"{row[k]['cpu']:>13.3f}" for k in kinds))
    medians = {k: {q: statistics.median(row[k][q] for row in results)
                   for q in ("p50", "p99", "cpu")} for k in kinds}
    print(f"{'median':>6}" + "".join(f"{medians[k]['p50']:>13.1f}{medians[k]['p99']:>13.1f}"
                                     f"{'':>12}{medians[k]['cpu']:>13.3f}" for k in kinds))
    client_cpu = statistics.median(row[k]["client_cpu"] for row in results for k in kinds)
    references = [k for k in ("bare", "durable") if k in medians]
    if not references:
        print(f"clients' CPU per delivery {client_cpu:.3f} ms (all {clients} together)")
        return None, None
    verdict = (None, None)
    for ref in references:
        of_medians = medians["app"]["p99"] / medians[ref]["p99"]
        paired = statistics.median(row["app"]["p99"] / row[ref]["p99"] for row in results)
        ratio = max(of_medians, paired)  # the worse of the two readings
        cpu_ratio = medians["app"]["cpu"] / medians[ref]["cpu"]
        spread = sorted(row["app"]["p99"] / row[ref]["p99"] for row in results)
        judged = ref == references[-1]
        mark = (lambda r: ("ok" if r <= TARGET else "OVER")) if judged else (lambda r: "info")
        print(f"app p99 / {ref} p99: {of_medians:.2f} (of the medians), {paired:.2f} (median "
              f"of each round's, the two bursts back to back; min/median/max "
              f"{spread[0]:.2f}/{statistics.median(spread):.2f}/{spread[-1]:.2f}); target <= "
              f"{TARGET:g}: {mark(ratio)}; p50 ratio "
              f"{medians['app']['p50'] / medians[ref]['p50']:.2f}")
        print(f"server CPU per delivery: app {medians['app']['cpu']:.3f} ms, {ref} "
              f"{medians[ref]['cpu']:.3f} ms, app / {ref} {cpu_ratio:.2f}; target <= "
              f"{TARGET:g}: {mark(cpu_ratio)}")
        if judged:
            verdict = (ratio, cpu_ratio)
    if "durable" in medians:
        print(f"the verdict is against the durable reference: {WHY_DURABLE}")
    print(f"clients' CPU per delivery: {client_cpu:.3f} ms (all {clients} together), "
          f"{client_cpu / medians[references[0]]['cpu']:.2f}x the {references[0]} server's")
    return verdict


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--deliveries", type=int, default=200, help="deliveries sent at once")
    parser.add_argument("--rounds", type=int, default=9, help="measured bursts per server")
    parser.add_argument("--clients", type=int, default=CLIENTS,
                        help="client processes sharing each burst")
    parser.add_argument("--baseline", choices=("both", "bare", "durable", "none"),
                        default="both", help="the references run beside the app: the bare "
                        "HMAC handler, the same plus a group-committed insert of each "
                        "delivery (durable), both (the default; the verdict is durable's), "
                        "or none")
    parser.add_argument("--db", default="sqlite",
                        help="sqlite (a fresh file per round) or postgresql://...")
    args = parser.parse_args(argv)
    clients = max(args.clients, 1)
    try:
        results = asyncio.run(run(args.deliveries, args.rounds, args.db,
                                  BASELINES[args.baseline], clients))
    except CannotServe as exc:
        print(f"bench.perf.ack: the app cannot run on {args.db}: {exc}", file=sys.stderr)
        return 2
    total_ok = all(row[k]["ok"] == args.deliveries for row in results
                   for k in ("bare", "durable", "app") if k in row)
    ratio, cpu_ratio = report(results, args.deliveries, clients)
    met = ratio is None or (ratio <= TARGET and cpu_ratio <= TARGET)
    return 0 if total_ok and met else 1


if __name__ == "__main__":
    raise SystemExit(main())
