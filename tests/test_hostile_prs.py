"""Hostile pull requests and floods must not stall the server for everyone (issue 19, 1-4).

Through the real server and the fake GitHub: while a round reviews a PR of thousands of
changed files, or reads a settings file whose aliases expand to gigabytes, ``/healthz`` is
still answered quickly; an oversized diff is refused by size and its round still completes
with a "too large" summary; a job that kills its worker each time is given up after its
attempts; a flood of slow bodies behind made-up signatures does not lock real deliveries out.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import sys
import tempfile
import time
from urllib.parse import urlsplit

from bot.config.bounds import ReviewLimits
from bot.forge import body as body_module
from bot.forge import unverified
from bot.github import client as github_client
from bot.server import serving

from .server_kit import NUMBER, REPO, Tap, open_pr, running_bot
from .test_hostile_input import request_head

LAG_LIMIT = 1.0  # seconds: generous on a loaded machine, far below what a stalled loop takes


async def slowest_healthz(bot, done: asyncio.Event) -> float:
    """The longest the server kept a ``/healthz`` prober waiting until ``done`` is set: each
    answer's time plus how late a 50 ms sleep between probes woke (a stalled loop delays both,
    the server's and the prober's, which share it)."""
    worst = 0.0
    while not done.is_set():
        started = time.monotonic()
        async with bot.session.get(f"{bot.url}/healthz") as resp:
            await resp.read()
        await asyncio.sleep(0.05)
        worst = max(worst, time.monotonic() - started - 0.05)
    return worst


async def while_idle(bot, timeout: float = 60.0) -> float:
    """Wait for the queue to drain while probing ``/healthz``; the slowest answer."""
    done = asyncio.Event()
    probe = asyncio.create_task(slowest_healthz(bot, done))
    try:
        await bot.idle(timeout)
    finally:
        done.set()
    return await probe


# -- item 4: a YAML bomb inside the size and alias limits ---------------------------------------

def yaml_bomb(levels: int = 21) -> str:
    """Each level an alias list of two of the one before: 2**levels leaves from 2*levels
    aliases and a few hundred bytes, turned into a string by the ``min_severity`` check."""
    names = ["a"] + [f"l{i}" for i in range(levels)]
    items = ["&a " + "x" * 60] + [f"&{q} [*{p},*{p}]" for p, q in itertools.pairwise(names)]
    return "min_severity: [" + ", ".join(items) + "]\n"


async def test_a_yaml_bomb_within_the_alias_limit_is_refused_before_it_expands(tmp_path):
    text = yaml_bomb()
    assert len(text) < 500 and text.count("*") <= 50
    async with running_bot(tmp_path) as bot:
        open_pr(bot.fake, default_files={".github/roundwise.yml": text})
        started = time.monotonic()
        assert (await bot.pull_request("opened"))[0] == 202
        worst = await while_idle(bot)
        assert worst < LAG_LIMIT
        assert time.monotonic() - started < 5
        assert [r["status"] for r in bot.rounds()] == ["complete"]
        [summary] = bot.bot_comments()
        assert "expands its aliases" in summary["body"]
        assert "using the defaults" in summary["body"]


# -- item 2: a job that kills its worker --------------------------------------------------------

async def test_a_round_that_kills_its_server_each_time_is_given_up_after_five_claims(tmp_path):
    """The server stops (as a kill leaves the ledger: the job ``running``) while the round
    waits on GitHub, five times; the sixth start gives the job up instead of running it."""
    for start in range(1, 7):
        async with running_bot(tmp_path) as bot:
            tap = Tap(bot.fake)
            tap.hold("GET", rf"/pulls/{NUMBER}$")
            open_pr(bot.fake)
            if start == 1:
                assert (await bot.pull_request("opened"))[0] == 202
            if start < 6:
                await asyncio.wait_for(tap.held.wait(), 10)
                [job] = bot.jobs("round")
                assert job["status"] == "running" and job["attempts"] == start
            else:
                await asyncio.sleep(0.3)  # workers polling: nothing is claimed any more
                [job] = bot.jobs("round")
                assert job["status"] == "failed" and job["attempts"] == 5
                assert "interrupted 5 times" in job["error"]
                assert not tap.held.is_set()
            tap.release()


# -- item 1: a pull request of thousands of changed files --------------------------------------

def many_files(count: int, lines: int = 1) -> dict[str, str]:
    return {f"pkg/m{i:04d}.py": "".join(f"print('m{i}', {n})\n" for n in range(lines))
            for i in range(count)}


async def test_a_pr_of_thousands_of_files_leaves_the_server_answering(tmp_path):
    async with running_bot(tmp_path) as bot:
        open_pr(bot.fake, head_files=many_files(3000))
        started = time.monotonic()
        assert (await bot.pull_request("opened"))[0] == 202
        worst = await while_idle(bot, timeout=120)
        took = time.monotonic() - started
        assert worst < LAG_LIMIT, f"/healthz took {worst:.2f}s while the round ran ({took:.1f}s)"
        assert [r["status"] for r in bot.rounds()] == ["complete"]
        [summary] = bot.bot_comments()  # every file reviewed (issue 40): none left out
        assert "not reviewed" not in summary["body"]
        reviewed = {c["path"] for c in bot.fake.review_comments(REPO, NUMBER)}
        assert reviewed and reviewed <= {f"pkg/m{i:04d}.py" for i in range(3000)}


async def test_start_up_removes_the_ruff_folders_a_killed_server_left(tmp_path, monkeypatch):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    child = await asyncio.create_subprocess_exec(sys.executable, "-c", "pass")
    await child.wait()
    gone = child.pid
    dead = scratch / f"roundwise-ruff-{gone}-x1"  # its process was killed mid-round
    (dead / "pkg").mkdir(parents=True)
    (dead / "pkg" / "big.py").write_text("x = 1\n" * 1000)
    live = scratch / f"roundwise-ruff-{os.getppid()}-x2"  # a live process's: kept
    live.mkdir()
    async with running_bot(tmp_path):
        assert not dead.exists() and live.exists()


# -- item 2: an oversized diff ------------------------------------------------------------------

async def test_an_oversized_diff_is_read_no_further_than_the_cap(tmp_path, monkeypatch):
    """A 3 MB diff (inside GitHub's 20,000 lines) against a 1 MB read cap: the bot stops
    reading it, asks for no files list (as large), and the round completes saying the PR is
    too large to review."""
    monkeypatch.setattr(github_client, "MAX_DIFF_BYTES", 1024 * 1024)
    files = {f"pkg/wide{i:02d}.py": "".join(f"print('{'x' * 290}', {n})\n" for n in range(500))
             for i in range(20)}
    async with running_bot(tmp_path) as bot:
        open_pr(bot.fake, head_files=files)
        assert (await bot.pull_request("opened"))[0] == 202
        await while_idle(bot)
        assert [r["status"] for r in bot.rounds()] == ["complete"]
        assert not bot.calls("GET", rf"/pulls/{NUMBER}/files")
        [summary] = bot.bot_comments()
        assert "too large to review" in summary["body"]
        assert bot.fake.review_comments(REPO, NUMBER) == []


async def test_a_diff_over_the_round_limit_is_reviewed_in_part(tmp_path):
    """Inside the read cap but over the round's byte limit: whole files in diff order are
    reviewed, and the summary says how many were left out and why."""
    files = {f"pkg/wide{i:02d}.py": "".join(f"print('{'x' * 290}', {n})\n" for n in range(100))
             for i in range(10)}
    async with running_bot(tmp_path, review_limits=ReviewLimits(max_bytes=100 * 1024)) as bot:
        open_pr(bot.fake, head_files=files)
        assert (await bot.pull_request("opened"))[0] == 202
        await while_idle(bot)
        assert [r["status"] for r in bot.rounds()] == ["complete"]
        [summary] = bot.bot_comments()
        assert "7 changed files" in summary["body"] and "100 KB of diff" in summary["body"]
        reviewed = {c["path"] for c in bot.fake.review_comments(REPO, NUMBER)}
        assert reviewed == {f"pkg/wide{i:02d}.py" for i in range(3)}



# -- item 3: slow bodies behind made-up signatures ---------------------------------------------

async def test_a_flood_of_slow_unsigned_bodies_does_not_lock_out_deliveries_or_healthz(
        tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(serving, "MAX_CONNECTIONS", 60)
    monkeypatch.setattr(unverified, "PER_PEER", 8)
    monkeypatch.setattr(body_module, "READ_TIMEOUT", 3.0)
    async with running_bot(tmp_path) as bot:
        url = urlsplit(bot.url)
        flood = []
        for _ in range(150):  # more than the connection cap, each trickling its body
            reader, writer = await asyncio.open_connection(url.hostname, url.port)
            writer.write(request_head(10_000) + b'{"zen": ')
            flood.append((reader, writer))
        await asyncio.sleep(0.3)
        for _ in range(5):
            started = time.monotonic()
            status, _ = await bot.deliver("ping", {"zen": "Keep it awesome.", "hook_id": 1})
            assert status == 200 and time.monotonic() - started < LAG_LIMIT
            async with bot.session.get(f"{bot.url}/healthz") as resp:
                assert resp.status == 200
        refused = 0
        for reader, writer in flood[:40]:  # the flood was told no at once, or cut off
            line = await asyncio.wait_for(reader.readline(), 5)
            refused += line.startswith((b"HTTP/1.1 429", b"HTTP/1.1 503"))
            writer.close()
        assert refused >= 30
        for _, writer in flood[40:]:
            writer.close()
        await asyncio.sleep(0.2)
    tracebacks = [r for r in caplog.records if r.exc_info or "Connection closed" in r.getMessage()]
    assert tracebacks == []
