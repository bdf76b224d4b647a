"""``roundwise serve`` for GitLab alone, as an operator runs it (a real subprocess): an
unreachable ``GITLAB_URL``, a URL that is not GitLab, or a token GitLab refuses is one line and
exit 2 before the server listens; a good set-up names GitLab and its route in the ready line."""

from __future__ import annotations

import asyncio
import os
import re
import socket
import subprocess
import sys

from aiohttp import web

from bench.fake_gitlab import FakeGitLab

from .test_startup import refused, serve


def gitlab_env(tmp_path, url: str, token: str = "glpat-good") -> dict[str, str]:
    return {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "PYTHONUNBUFFERED": "1",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True", "GITLAB_TOKEN": token, "GITLAB_URL": url,
            "GITLAB_WEBHOOK_SECRET": "hook-secret", "ROUNDWISE_DB": str(tmp_path / "l.db")}


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_gitlab_url_is_one_line_and_exit_2(tmp_path):
    url = f"http://127.0.0.1:{closed_port()}"
    problems = refused(serve(gitlab_env(tmp_path, url), tmp_path))
    assert len(problems) == 1, problems
    assert problems[0].startswith(f"GITLAB_URL='{url}' cannot be reached (")
    assert "check the address" in problems[0]


async def _serve(env, tmp_path) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "roundwise", "serve", "--port", "0", env=env, cwd=tmp_path,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)


async def test_a_token_gitlab_refuses_is_one_line_and_exit_2(tmp_path):
    async with _fake("glpat-good") as fake:
        proc = await _serve(gitlab_env(tmp_path, fake.url, token="glpat-revoked"), tmp_path)
        out, err = await asyncio.wait_for(proc.communicate(), 60)
    done = subprocess.CompletedProcess([], proc.returncode, out.decode(), err.decode())
    problems = refused(done)
    assert problems == [(f"GITLAB_TOKEN was refused by GitLab at {fake.url} (401): it is "
                         "wrong, expired or revoked; create an access token (role Developer, "
                         "scope api)")]
    assert "glpat-revoked" not in done.stderr


async def test_a_url_that_is_not_gitlab_is_named(tmp_path):
    app = web.Application()  # answers every path 404, as a web server that is not GitLab
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"
    try:
        proc = await _serve(gitlab_env(tmp_path, url), tmp_path)
        out, err = await asyncio.wait_for(proc.communicate(), 60)
    finally:
        await runner.cleanup()
    problems = refused(subprocess.CompletedProcess([], proc.returncode, out.decode(),
                                                   err.decode()))
    assert problems == [(f"GITLAB_URL='{url}' does not serve GitLab's API (GET /api/v4/user "
                         "answered 404): use the instance's address, e.g. "
                         "https://gitlab.example.com")]


async def test_a_gitlab_only_server_names_gitlab_in_its_ready_line(tmp_path):
    async with _fake("glpat-good") as fake:
        proc = await _serve(gitlab_env(tmp_path, fake.url), tmp_path)
        try:
            ready = ""
            while " ready on " not in ready:
                ready = (await asyncio.wait_for(proc.stderr.readline(), 60)).decode()
                assert ready, "the server exited"
        finally:
            proc.terminate()
            await proc.wait()
    assert re.search(rf"ready on http://127\.0\.0\.1:\d+: GitLab at {re.escape(fake.url)} "
                     r"\(POST /gitlab/webhook\); ledger ", ready), ready
    assert "GitHub" not in ready


def test_serve_help_names_both_webhook_routes():
    done = subprocess.run([sys.executable, "-m", "roundwise", "serve", "--help"],
                          capture_output=True, text=True, check=True)
    text = " ".join(done.stdout.split())
    assert "POST /webhook (GitHub" in text and "POST /gitlab/webhook (GitLab" in text


class _fake:
    def __init__(self, token: str):
        self.fake = FakeGitLab(token=token)

    async def __aenter__(self) -> FakeGitLab:
        await self.fake.start()
        return self.fake

    async def __aexit__(self, *exc) -> None:
        await self.fake.stop()
