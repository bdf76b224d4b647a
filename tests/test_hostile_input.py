"""One tenant must not hurt the others (issue 9, items 7-10), through the real server.

Unsigned bodies cost little (no inflating, a size cap, a read deadline, a connection cap, idle
connections closed); signed but hostile payloads are a 400, never a 500; a repository's settings
file cannot stall or break rounds; hostile comment paths and lines are confined; forced reviews
need write access or authorship and are rate-limited.
"""

from __future__ import annotations

import asyncio
import gzip
import logging
import time
from urllib.parse import urlsplit

import pytest

from bench.replay import payloads
from bot.forge import body as body_module
from bot.server import serving

from .server_kit import HEAD1, HEAD2, NUMBER, REPO, ROUND2_FILES, open_pr, running_bot


async def raw_connection(bot):
    url = urlsplit(bot.url)
    return await asyncio.open_connection(url.hostname, url.port)


def request_head(length: int, signature: str = "sha256=" + "0" * 64, extra: str = "") -> bytes:
    return (f"POST /webhook HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"X-GitHub-Event: ping\r\nX-GitHub-Delivery: d\r\nX-Hub-Signature-256: {signature}"
            f"\r\nContent-Length: {length}\r\n{extra}\r\n").encode()


async def signed_ping(bot) -> tuple[int, float]:
    started = time.monotonic()
    status, _ = await bot.deliver("ping", {"zen": "Keep it logically awesome.", "hook_id": 1})
    return status, time.monotonic() - started


# -- item 7: unauthenticated memory and connections ---------------------------------------------


async def test_compressed_and_oversized_bodies_are_refused_before_reading(tmp_path):
    async with running_bot(tmp_path) as bot:
        payload = payloads.encode({"zen": "x", "hook_id": 1})
        bomb = gzip.compress(b"{" + b" " * 50_000_000 + b"}")
        headers = payloads.headers("ping", bomb, bot.config.webhook_secret)
        headers["Content-Encoding"] = "gzip"
        async with bot.session.post(f"{bot.url}/webhook", data=bomb, headers=headers) as resp:
            assert resp.status == 415
        reader, writer = await raw_connection(bot)  # says 30 MB, sends nothing
        writer.write(request_head(30 * 1024 * 1024))
        await writer.drain()
        status_line = await asyncio.wait_for(reader.readline(), 2)
        assert b" 413 " in status_line
        writer.close()
        status, _ = await bot.post(payload, payloads.headers("ping", payload,
                                                             bot.config.webhook_secret))
        assert status == 200


async def test_a_slow_or_abandoned_body_is_cut_off_in_one_log_line(tmp_path, monkeypatch,
                                                                    caplog):
    monkeypatch.setattr(body_module, "READ_TIMEOUT", 0.5)
    async with running_bot(tmp_path) as bot:
        reader, writer = await raw_connection(bot)
        writer.write(request_head(1000) + b'{"zen": ')
        await writer.drain()
        started = time.monotonic()
        status_line = await asyncio.wait_for(reader.readline(), 3)
        assert b" 408 " in status_line and time.monotonic() - started < 2
        writer.close()

        reader, writer = await raw_connection(bot)  # the client goes away mid-body
        writer.write(request_head(100_000) + b"x" * 1000)
        await writer.drain()
        writer.close()
        await asyncio.sleep(0.3)
        assert (await signed_ping(bot))[0] == 200
    tracebacks = [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]
    assert tracebacks == []


async def test_idle_connections_are_closed_and_capped(tmp_path, monkeypatch):
    monkeypatch.setattr(serving, "IDLE_TIMEOUT", 0.5)
    monkeypatch.setattr(serving, "MAX_CONNECTIONS", 20)
    async with running_bot(tmp_path) as bot:
        idle = [await raw_connection(bot) for _ in range(40)]  # never send a request
        await asyncio.sleep(0.05)
        status, took = await signed_ping(bot)
        assert status == 200 and took < 1.0  # GitHub still gets in
        await asyncio.sleep(1.0)
        closed = 0
        for reader, writer in idle:
            if await asyncio.wait_for(reader.read(100), 2) == b"":
                closed += 1
            writer.close()
        assert closed == 40  # over the cap, or idle past the timeout: all closed


# -- item 10: signed but hostile values -------------------------------------------------------


@pytest.mark.parametrize("hostile", ["deep", "huge"])
async def test_deep_json_and_huge_integers_are_400(tmp_path, hostile, caplog):
    async with running_bot(tmp_path) as bot:
        open_pr(bot.fake)
        payload = payloads.pull_request(bot.fake, REPO, NUMBER, "opened")
        if hostile == "huge":
            payload["installation"]["id"] = 2 ** 70
            body = payloads.encode(payload)
        else:
            body = payloads.encode(payload)[:-1] + b', "x": ' + b"[" * 100_000 \
                + b"]" * 100_000 + b"}"
        status, answer = await bot.post(body, payloads.headers("pull_request", body,
                                                               bot.config.webhook_secret))
        assert status == 400 and "bad payload" in answer["error"]
        assert bot.jobs() == []
    assert not [r for r in caplog.records if r.exc_info]


async def test_hostile_review_comment_values_are_confined(tmp_path):
    """Line -5, a path out of the repository and a span of ten million lines: the comments
    are taken (or set aside) and later rounds still complete, quickly."""
    async with running_bot(tmp_path) as bot:
        fake = bot.fake
        open_pr(fake)
        await bot.pull_request("opened")
        await bot.idle()
        base = fake.add_review_comment(REPO, NUMBER, "rev", "app/core.py", 7,
                                       "This must handle an empty list, please fix.")
        hostile = [
            {"line": -5, "original_line": -5},
            {"path": "../../other/contents/secret.txt"},
            {"start_line": 1, "line": 10_000_000},
            {"commit_id": "../../../../other/secret/contents/x"},
        ]
        for i, change in enumerate(hostile):
            comment = {**base, "id": base["id"] + 1000 + i, **change,
                       "body": f"Bug {i}: this crashes on an empty list, please fix it."}
            status, _ = await bot.deliver("pull_request_review_comment",
                                          payloads.review_comment(fake, REPO, NUMBER, comment))
            assert status == 202
        await bot.idle()
        started = time.monotonic()
        fake.push(REPO, NUMBER, HEAD2, ROUND2_FILES)
        await bot.pull_request("synchronize")
        await bot.idle()
        assert time.monotonic() - started < 5
        assert [r["status"] for r in bot.rounds()] == ["complete", "complete"]
        assert all(j["status"] == "done" for j in bot.jobs())
        outside = [r.path for r in fake.requests if "other" in r.path or (
            r.path.startswith("/repos/") and not r.path.startswith(f"/repos/{REPO}/"))]
        assert outside == []
        pr = bot.ledger.find_pull_request(REPO, NUMBER)
        for defect in bot.ledger.defects(pr["id"]):
            assert defect.line_start is None or defect.line_start >= 1
            assert defect.path is None or not defect.path.startswith("..")


# -- item 8: repository settings -------------------------------------------------------------

BOMB = "a: &a [x,x,x,x,x,x,x,x,x]\n" + "".join(
    f"{n}: &{n} [{','.join(['*' + p] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi"))


@pytest.mark.parametrize("text,note", [
    (BOMB, "aliases"),
    ("require_tests: true\n" + "# padding\n" * 700_000, "larger than 64 KB"),
    ("require_tests:\n" + "".join("  " * i + f"k{i}:\n" for i in range(1, 60)), "nested"),
])
async def test_a_hostile_settings_file_falls_back_to_the_defaults(tmp_path, text, note):
    async with running_bot(tmp_path) as bot:
        open_pr(bot.fake, default_files={".github/roundwise.yml": text})
        started = time.monotonic()
        await bot.pull_request("opened")
        await bot.idle()
        assert time.monotonic() - started < 5
        assert [r["status"] for r in bot.rounds()] == ["complete"]
        [summary] = bot.bot_comments()
        assert note in summary["body"] and "using the defaults" in summary["body"]


# -- item 9: forced reviews --------------------------------------------------------------------


async def test_forced_reviews_need_access_and_are_rate_limited(tmp_path):
    async with running_bot(tmp_path) as bot:
        fake = bot.fake
        open_pr(fake)  # the author is "sam"
        fake.set_permission(REPO, "mallory", "read")
        await bot.pull_request("opened")
        await bot.idle()
        for _ in range(2):
            await bot.comment("mallory", "/roundwise review")
        await bot.idle()
        assert len(bot.rounds()) == 1  # a reader who is not the author forces nothing
        refusals = [c for c in bot.bot_comments() if c["body"].startswith("@mallory")]
        assert len(refusals) == 1 and "write access" in refusals[0]["body"]
        asked = [c for c in fake.issue_comments(REPO, NUMBER) if c["user"]["login"] == "mallory"]
        assert [c["reactions"]["-1"] for c in asked] == [0, 1]  # the second: a 👎 (issue 19)
        for _ in range(4):
            await bot.comment("sam", "/roundwise review")
            await bot.idle()
        assert [r["head_sha"] for r in bot.rounds()] == [HEAD1] * 4  # 1 + three forced
        assert any("forced reviews in the last hour" in c["body"] for c in bot.bot_comments())
