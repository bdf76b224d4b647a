"""``roundwise serve`` as an operator runs it: a real subprocess, real exit codes, real HTTP.

Each mistake an operator can make in the environment stops the server before it listens, with
one line naming the setting and exit status 2; a good environment gives one ready line saying
where it listens and with what, and the server answers on that port until SIGTERM.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

from bench.scripted_llm import ScriptedLLM

from .server_kit import app_keys


def base_env(tmp_path: Path, **changes: str | None) -> dict[str, str]:
    """A clean, valid environment: no provider keys leak in from the machine running tests."""
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path),
           "LITELLM_LOCAL_MODEL_COST_MAP": "True", "PYTHONUNBUFFERED": "1",
           "GITHUB_APP_ID": "4242", "GITHUB_PRIVATE_KEY": app_keys()[0],
           "GITHUB_WEBHOOK_SECRET": "s3cret", "ROUNDWISE_DB": str(tmp_path / "ledger.db")}
    env.update(changes)
    return {k: v for k, v in env.items() if v is not None}


def serve(env: dict[str, str], cwd: Path, *args: str, timeout: float = 60,
          **popen) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "roundwise", "serve", "--port", "0", *args],
                          env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          check=False, **popen)


def refused(done: subprocess.CompletedProcess) -> list[str]:
    """The problem lines of a refused start (exit status 2, nothing on stdout)."""
    assert done.returncode == 2, (done.returncode, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert lines[0] == "roundwise cannot start:", done.stderr
    assert "Traceback" not in done.stderr
    return [line.removeprefix("  - ") for line in lines[1:]]


def ec_key() -> str:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    return ec.generate_private_key(ec.SECP256R1()).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()).decode()


@pytest.mark.parametrize(("changes", "names"), [
    ({"GITHUB_APP_ID": "abc"}, ["GITHUB_APP_ID='abc' is not an App id"]),
    ({"GITHUB_APP_ID": "12ab"}, ["GITHUB_APP_ID='12ab' is not an App id"]),
    ({"GITHUB_PRIVATE_KEY": "EC"}, ["not an RSA key"]),
    ({"ROUNDWISE_MODEL": "openai/gpt-4o"},
     ["ROUNDWISE_MODEL='openai/gpt-4o' needs OPENAI_API_KEY, which is not set"]),
    ({"ROUNDWISE_MODEL": "anthropic/claude-3-5-sonnet-20240620"},
     ["needs ANTHROPIC_API_KEY"]),
    ({"ROUNDWISE_MODEL": "openai/gpt-4o", "OPENAI_API_KEY": "sk-x",
      "ROUNDWISE_FALLBACK_MODEL": "anthropic/claude-3-haiku-20240307"},
     ["ROUNDWISE_FALLBACK_MODEL='anthropic/claude-3-haiku-20240307' needs ANTHROPIC_API_KEY"]),
    ({"ROUNDWISE_LOG_FORMAT": "xml"}, ["ROUNDWISE_LOG_FORMAT='xml' must be text or json"]),
    ({"ROUNDWISE_CHECK_MODEL": "sure"}, ["ROUNDWISE_CHECK_MODEL='sure' is not a boolean"]),
    ({"ROUNDWISE_DB": "/nonexistent-folder/ledger.db"},
     [("ROUNDWISE_DB='/nonexistent-folder/ledger.db': the folder /nonexistent-folder does not "
       "exist")]),
])
def test_each_bad_value_is_one_line_and_exit_2(tmp_path, changes, names):
    if changes.get("GITHUB_PRIVATE_KEY") == "EC":
        changes = {**changes, "GITHUB_PRIVATE_KEY": ec_key()}
    problems = refused(serve(base_env(tmp_path, **changes), tmp_path))
    assert len(problems) == len(names), problems
    for problem, name in zip(problems, names, strict=True):
        assert name in problem


def test_a_key_from_roundwise_api_key_satisfies_an_openai_compatible_model(tmp_path):
    from bot.server.hosts import load_config
    from bot.server.startup import check_model

    env = base_env(tmp_path, ROUNDWISE_MODEL="openai/local", ROUNDWISE_API_KEY="sk-local",
                   ROUNDWISE_API_BASE="http://127.0.0.1:9/v1")
    assert check_model(load_config(env).llm, environ={}) == []
    env.pop("ROUNDWISE_API_KEY")
    assert "OPENAI_API_KEY" in check_model(load_config(env).llm, environ={})[0]


def as_nobody(func, *args) -> str:
    """``func(*args)`` run as uid/gid 65534 in a forked child (root may write anywhere)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: drop privileges, run, report, exit without cleanup
        try:
            os.setgid(65534)
            os.setuid(65534)
            os.write(write, (func(*args) or "").encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as out:
        answer = out.read()
    os.waitpid(pid, 0)
    return answer


def test_an_unwritable_ledger_folder_is_named(tmp_path):
    """The Docker case: a /data volume owned by root, the server running as another user."""
    from bot.server.startup import check_ledger

    root = Path(tempfile.mkdtemp(prefix="roundwise-ro-"))
    try:
        data = root / "data"
        data.mkdir()
        root.chmod(0o755)
        data.chmod(0o755 if os.geteuid() == 0 else 0o555)
        path = str(data / "roundwise.db")
        if os.geteuid() == 0:
            problem = as_nobody(check_ledger, path)
        else:
            problem = refused(serve(base_env(root, ROUNDWISE_DB=path), root))[0]
        assert problem.startswith(f"ROUNDWISE_DB='{path}': {data} is not writable by uid "), \
            problem
        assert "docker-compose.yml" in problem
        assert not (data / "roundwise.db").exists()
        assert check_ledger(str(tmp_path / "ok.db")) is None
    finally:
        (root / "data").chmod(0o755)
        shutil.rmtree(root)


def test_a_ledger_that_cannot_be_created_stops_serve_with_one_line(tmp_path):
    # /proc takes no new files, whoever asks: sqlite's own refusal, named, without a traceback
    problems = refused(serve(base_env(tmp_path, ROUNDWISE_DB="/proc/roundwise.db"), tmp_path))
    assert len(problems) == 1 and problems[0].startswith("ROUNDWISE_DB='/proc/roundwise.db': ")


class Server:
    """``roundwise serve --port 0`` in a subprocess, its ready line parsed for the port."""

    def __init__(self, env: dict[str, str], cwd: Path, *args: str):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "roundwise", "serve", "--port", "0", *args], env=env, cwd=cwd,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = self.proc.stderr.readline()
            if not line:
                raise AssertionError(f"server exited: {''.join(self.lines)}")
            self.lines.append(line)
            if " ready on " in line:
                self.ready = line.strip()
                self.port = int(re.search(r"ready on http://[^:]+:(\d+)", line).group(1))
                return
        raise AssertionError("no ready line")

    def get(self, path: str) -> tuple[int, str]:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=5) as resp:
            return resp.status, resp.read().decode()

    def stop(self) -> str:
        self.proc.send_signal(signal.SIGTERM)
        _, err = self.proc.communicate(timeout=30)
        return "".join(self.lines) + err


def test_the_ready_line_names_where_and_what_and_the_home_page_answers(tmp_path):
    from bot.server.startup import version

    server = Server(base_env(tmp_path), tmp_path)
    try:
        ready = server.ready
        assert f"roundwise {version()} ready on http://127.0.0.1:{server.port}:" in ready
        assert f"ledger {tmp_path / 'ledger.db'}" in ready
        assert "offline reviewer" in ready and "model none" in ready
        status, page = server.get("/")
        assert status == 200 and "roundwise" in page and version() in page
        assert 'href="/docs"' in page and "Health: <strong>ok</strong>" in page
        status, docs = server.get("/docs")
        assert status == 200 and docs.startswith("# roundwise") and "Install the App" in docs
        assert json.loads(server.get("/healthz")[1])["status"] == "ok"
    finally:
        log = server.stop()
    assert server.proc.returncode == 0, log
    assert "Traceback" not in log


def test_version_flag(tmp_path):
    from bot.server.startup import version

    done = subprocess.run([sys.executable, "-m", "roundwise", "--version"], capture_output=True,
                          text=True, cwd=tmp_path, check=True)
    assert done.stdout.strip() == f"roundwise {version()}" and re.search(r"\d+\.\d+", version())


def test_settings_come_from_a_dot_env_file_and_the_environment_wins(tmp_path):
    from bot.config.envfile import write_env

    env = base_env(tmp_path)
    key = env.pop("GITHUB_PRIVATE_KEY")
    write_env(tmp_path / ".env", {"GITHUB_PRIVATE_KEY": key, "GITHUB_APP_ID": "999",
                                  "ROUNDWISE_WORKERS": "3"})
    assert (tmp_path / ".env").stat().st_mode & 0o777 == 0o600
    server = Server(env, tmp_path)  # GITHUB_APP_ID=4242 in the environment wins over 999
    try:
        assert "3 worker(s)" in server.ready
    finally:
        log = server.stop()
    assert "read 2 setting(s) from .env" in log
    # a file named explicitly must exist
    problems = refused(serve(env, tmp_path, "--env-file", str(tmp_path / "missing.env")))
    assert problems == [f"{tmp_path / 'missing.env'}: no such file"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_check_model_makes_one_tiny_call_and_refuses_a_silent_model(tmp_path):
    async def with_model():
        async with ScriptedLLM() as llm:
            env = base_env(tmp_path, ROUNDWISE_MODEL="openai/scripted",
                           ROUNDWISE_API_BASE=llm.url, ROUNDWISE_API_KEY="sk-test",
                           ROUNDWISE_CHECK_MODEL="1")
            server = await asyncio.to_thread(Server, env, tmp_path)
            log = await asyncio.to_thread(server.stop)
            return server, log, llm.requests

    server, log, requests = asyncio.run(with_model())
    assert len(requests) == 1 and requests[0]["max_tokens"] == 1
    assert "llm reviewer, model openai/scripted" in server.ready, log
    dead = f"http://127.0.0.1:{free_port()}/v1"
    env = base_env(tmp_path, ROUNDWISE_MODEL="openai/scripted", ROUNDWISE_API_BASE=dead,
                   ROUNDWISE_API_KEY="sk-test", ROUNDWISE_CHECK_MODEL="1",
                   ROUNDWISE_LLM_TIMEOUT="5")
    problems = refused(serve(env, tmp_path))
    assert len(problems) == 1
    assert problems[0].startswith(f"ROUNDWISE_CHECK_MODEL: the model openai/scripted at {dead} "
                                  "did not answer a one-token call")


async def test_a_client_hanging_up_mid_body_is_one_warning_line(tmp_path, caplog):
    from .server_kit import running_bot

    async with running_bot(tmp_path) as bot:
        port = int(bot.url.rsplit(":", 1)[1])
        with caplog.at_level("INFO"):
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            # signed (the server reads nothing of an unsigned body), then cut off
            writer.write(b"POST /webhook HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n"
                         b"X-Hub-Signature-256: sha256=00\r\n"
                         b"X-GitHub-Delivery: d-123\r\n\r\n{\"action\": ")
            await writer.drain()
            await asyncio.sleep(0.2)
            writer.close()
            deadline = time.monotonic() + 5
            while not any("disconnected" in r.getMessage() for r in caplog.records):
                assert time.monotonic() < deadline, [r.getMessage() for r in caplog.records]
                await asyncio.sleep(0.05)
        assert [r.levelname for r in caplog.records if r.levelno >= 30] == ["WARNING"]
        (line,) = [r.getMessage() for r in caplog.records if "disconnected" in r.getMessage()]
        assert "POST /webhook" in line and "delivery d-123" in line
        assert not any(r.exc_info for r in caplog.records)
        assert bot.jobs() == []


async def test_json_logs_put_the_delivery_and_pr_on_every_line_of_a_job(tmp_path):
    import aiohttp

    from bench.fake_github import FakeGitHub
    from bench.replay import payloads

    from .server_kit import APP_ID, NUMBER, REPO, open_pr

    async with FakeGitHub(APP_ID, app_keys()[1]) as fake:
        open_pr(fake)
        env = base_env(tmp_path, GITHUB_API_URL=fake.url, ROUNDWISE_LOG_FORMAT="json",
                       ROUNDWISE_BOT_LOGIN=fake.bot_login)
        server = await asyncio.to_thread(Server, env, tmp_path)
        try:
            ready = json.loads(server.ready)
            assert ready["level"] == "info" and " ready on " in ready["message"]
            assert "delivery" not in ready
            body = payloads.encode(payloads.pull_request(fake, REPO, NUMBER, "opened"))
            headers = payloads.headers("pull_request", body, "s3cret", "delivery-json-1")
            async with aiohttp.ClientSession() as session, session.post(
                    f"http://127.0.0.1:{server.port}/webhook", data=body,
                    headers=headers) as resp:
                assert resp.status == 202, await resp.text()
            records = []
            while not any(r.get("logger") == "bot.jobs.handlers" for r in records):
                line = await asyncio.to_thread(server.proc.stderr.readline)
                assert line, records
                records.append(json.loads(line))  # every line is one JSON object
        finally:
            server.stop()
    job_lines = [r for r in records if r.get("logger", "").startswith("bot.")]
    assert job_lines
    for record in job_lines:
        assert record["delivery"] == "delivery-json-1" and record["pr"] == f"{REPO}#{NUMBER}"


def test_a_model_litellm_does_not_know_is_one_line_without_litellm_s_banner(tmp_path):
    done = serve(base_env(tmp_path, ROUNDWISE_MODEL="nosuchprovider/foo"), tmp_path)
    [problem] = refused(done)
    assert problem.startswith("ROUNDWISE_MODEL='nosuchprovider/foo': litellm does not know")
    # litellm prints a red "Provider List" banner to stdout unless told not to
    assert done.stdout == "" and "Provider List" not in done.stderr + done.stdout
