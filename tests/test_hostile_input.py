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
import re
import socket
import struct
import time
from urllib.parse import urlsplit

import pytest

from bench.replay import payloads
from bot.forge import body as body_module
from bot.forge import unverified
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


def hang_up_at_once(bot, data: bytes) -> None:
    """Send ``data`` and reset the connection without reading a byte of the answer, without
    letting the server's loop (this test's) run in between."""
    url = urlsplit(bot.url)
    sock = socket.create_connection((url.hostname, url.port))
    sock.sendall(data)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


async def test_strangers_faults_are_one_log_line_each_never_a_traceback(tmp_path, monkeypatch,
                                                                        caplog):
    """Issue 40, item 5, with raw sockets: a header line over aiohttp's limit and 5,000
    headers are a 400 and one WARNING line each; clients hanging up while their body is being
    read, or while a 429 answers it unread, are one line each too."""
    caplog.set_level(logging.INFO)
    monkeypatch.setattr(unverified, "PER_PEER", 1)
    async with running_bot(tmp_path) as bot:
        malformed = [b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Long: " + b"a" * 20_000 + b"\r\n\r\n",
                     b"GET /healthz HTTP/1.1\r\nHost: x\r\n"
                     + b"".join(b"X-H%d: y\r\n" % i for i in range(5000)) + b"\r\n"]
        for request in malformed:
            reader, writer = await raw_connection(bot)
            writer.write(request)
            assert b" 400 " in await asyncio.wait_for(reader.readline(), 5)
            writer.close()
        reader, writer = await raw_connection(bot)  # holds this address's one slot
        writer.write(request_head(100_000) + b'{"zen": ')
        await writer.drain()
        await asyncio.sleep(0.2)
        for _ in range(20):  # refused with 429 at once, their bodies unread
            hang_up_at_once(bot, request_head(100_000) + b'{"zen": ' + b"x" * 3000)
        await asyncio.sleep(0.3)
        writer.transport.abort()  # and the one being read
        await asyncio.sleep(0.3)
        assert (await signed_ping(bot))[0] == 200
    faults = [r for r in caplog.records if r.name == "aiohttp.server"]
    assert [r.getMessage().split(":")[0] for r in faults] == [
        "refused a malformed request (from 127.0.0.1)"] * 2
    assert "Got more than 8190 bytes" in faults[0].getMessage()
    assert "Too many headers" in faults[1].getMessage()
    assert all(len(r.getMessage()) < 400 and "\n" not in r.getMessage() for r in faults)
    tracebacks = [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]
    assert tracebacks == []
    assert "Traceback" not in caplog.text


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


@pytest.mark.parametrize("exc, one_line", [
    (RuntimeError("Connection closed."), True),  # a refusal's unread body, its client gone
    (ConnectionResetError("Connection lost"), True),
    (ConnectionRefusedError("our own call"), False),  # not a stranger's: keeps its traceback
    (ValueError("a bug of ours"), False),
])
def test_aiohttp_s_records_of_a_stranger_s_hang_up_are_one_line(exc, one_line, caplog):
    """aiohttp logs a hang-up found while it drains a refused request's body as "Unhandled
    exception" with a traceback; on ``aiohttp.server`` (as ``GuardedRunner`` sets it up) such a
    record is one WARNING line, and any other keeps its traceback."""
    from bot.server.disconnects import install_stranger_faults

    install_stranger_faults()
    logger = logging.getLogger("aiohttp.server")
    try:
        raise exc
    except Exception:
        logger.exception("Unhandled exception")
    [record] = [r for r in caplog.records if r.name == "aiohttp.server"]
    assert (record.exc_info is None and record.levelno == logging.WARNING) is one_line
    if one_line:
        assert record.getMessage().startswith("a client hung up before its request was read")


def test_server_log_lines_carry_no_control_character_from_a_pull_request():
    """A file name with ESC, CR and a newline in a log message: one text line with escapes
    (a traceback of ours keeps its lines), and a JSON line whose message holds no DEL, C1 or
    bidi character either."""
    import io
    import json

    from bot.observe.printable import EscapingFormatter
    from bot.server.logs import TEXT_FORMAT, JsonFormatter

    name = "evil\x1b[2J\rfake 2026-01-01 INFO bot forged\n\u202egnp.py\x85"
    for formatter in (EscapingFormatter(TEXT_FORMAT), JsonFormatter()):
        stream = io.StringIO()
        handler = logging.StreamHandler(stream)
        handler.setFormatter(formatter)
        handler.addFilter(lambda record: setattr(record, "job", "") or True)
        logger = logging.getLogger("roundwise-test.escaping")  # whatever other tests set on "bot"
        logger.setLevel(logging.INFO)
        logger.addHandler(handler)
        logger.propagate = False
        try:
            logger.warning("cannot review %s", name)
            try:
                raise ValueError("ours")
            except ValueError:
                logger.exception("a bug of ours")
        finally:
            logger.removeHandler(handler)
        text = stream.getvalue()
        if isinstance(formatter, JsonFormatter):
            first, second = (json.loads(line) for line in text.splitlines())
            assert first["message"] == ("cannot review evil\\x1b[2J\\rfake 2026-01-01 INFO bot "
                                        "forged\\n\\u202egnp.py\\u0085")
            assert "Traceback" in second["exception"]
        else:
            lines = text.splitlines()
            assert lines[0].endswith("cannot review evil\\x1b[2J\\rfake 2026-01-01 INFO bot "
                                     "forged\\n\\u202egnp.py\\u0085")
            assert lines[2] == "Traceback (most recent call last):"
        assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e]", text)
