"""Listening: every command that opens a port (``serve``, ``dashboard``, ``setup``) says in
one line on stderr when it cannot, and exits 2; port 0 takes any free port and says which."""

from __future__ import annotations

import socket

from aiohttp import web

from bot.cli.dashboard import _run as run_dashboard
from bot.server.serving import listening


def taken_port() -> tuple[socket.socket, int]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    return sock, sock.getsockname()[1]


async def test_a_taken_port_is_one_line_on_stderr_and_exit_2(capsys):
    sock, port = taken_port()
    try:
        assert await run_dashboard(web.Application(), "127.0.0.1", port) == 2
    finally:
        sock.close()
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(
        f"roundwise dashboard: cannot listen on 127.0.0.1:{port} (")
    assert err[0].endswith("); choose another --port or --host")


async def test_port_zero_listens_on_a_free_port_and_says_which(capsys):
    runner = web.AppRunner(web.Application())
    await runner.setup()
    try:
        bound = await listening(runner, "127.0.0.1", 0, "never {where} {why}")
        assert isinstance(bound, int) and bound > 0
        with socket.create_connection(("127.0.0.1", bound), timeout=5):
            pass  # it accepts
    finally:
        await runner.cleanup()
    assert capsys.readouterr().err == ""
