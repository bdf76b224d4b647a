"""What the server tests share: the real roundwise app and the fake GitHub, both on loopback.

``running_bot(tmp_path)`` starts ``bench.fake_github.FakeGitHub`` and ``bot.server.app.create_app`` on
127.0.0.1 (a throwaway App key, a fresh ledger file, small retry waits) and yields a ``Bot``
that signs and POSTs deliveries, waits for the job queue to drain and reads the ledger through
a second connection. ``Tap`` records the headers the fake receives and can hold requests until
the test lets them go (a delay hook on the test side; the fake itself is not changed).
``open_pr`` sets up a small pull request whose first push the offline reviewer flags and whose
second push resolves that. The real webhook fixtures are read with ``fixture`` and re-pointed
at the fake's repository with ``repoint``.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import json
import re
import secrets
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from bench.fake_github import FakeGitHub
from bench.replay import payloads
from bench.replay.github import throwaway_key
from bot.config.env import Config
from bot.forge.appkeys import STATE
from bot.github import RetryPolicy
from bot.pr import render
from bot.server.app import create_app
from bot.server.serving import GuardedRunner
from bot.store.ledger_sqlite import Ledger

from .conftest import WEBHOOKS, needs_webhook_fixtures

APP_ID = 4242
INSTALLATION = 77
REPO = "octo/widgets"
NUMBER = 7
BASE_SHA = "b" * 40
HEAD1 = "1" * 40
HEAD2 = "2" * 40
HEAD3 = "3" * 40
FAST_RETRY = RetryPolicy(attempts=4, backoff=0.02, max_wait=3.0, secondary_wait=0.1)

BASE_FILES = {"app/core.py": "def add(a, b):\n    return a + b\n"}
# Round 1: new code, no tests (E.4 ``missing-tests``) and a leftover print.
ROUND1_FILES = {"app/core.py": (
    "def add(a, b):\n    return a + b\n\n\n"
    "def scale(values, factor):\n"
    "    result = [v * factor for v in values]\n"
    "    print(result)\n"
    "    total = sum(result)\n"
    "    if total < 0:\n"
    "        raise ValueError('negative total')\n"
    "    count = len(result)\n"
    "    mean = total / count if count else 0\n"
    "    low = min(result, default=0)\n"
    "    high = max(result, default=0)\n"
    "    return [v for v in result if low <= v <= high or v == mean]\n"
)}
# Round 2: the same code, now with tests.
ROUND2_FILES = {**ROUND1_FILES, "tests/test_core.py": (
    "from app.core import scale\n\n\n"
    "def test_scale():\n    assert scale([1, 2], 3) == [3, 6]\n"
)}


@functools.cache
def app_keys() -> tuple[str, str]:
    """One throwaway RSA key pair for every test of the session (private, public PEM)."""
    return throwaway_key()


def fixture(name: str) -> dict[str, Any]:
    """A real GitHub payload from the shared fixtures, e.g. ``pull_request.opened``."""
    path = WEBHOOKS / (name if name.endswith(".json") else f"{name}.payload.json")
    return json.loads(path.read_text())


def repoint(payload: dict[str, Any], fake: FakeGitHub, repo: str = REPO,
            number: int | None = NUMBER) -> dict[str, Any]:
    """A copy of a real payload aimed at the fake's repository, installation and PR; the rest
    of GitHub's shape (sender, links, extra fields) stays as recorded."""
    out = copy.deepcopy(payload)
    out["repository"] = fake.repo_json(repo)
    inst = fake.installation_json(fake.installation_of(repo))
    out["installation"] = {"id": inst["id"], "node_id": inst["node_id"]}
    if number is not None and isinstance(out.get("pull_request"), dict):
        pr = fake.pr_json(repo, number)
        for key in ("number", "head", "base", "draft", "state", "user"):
            out["pull_request"][key] = pr[key]
        if "number" in out:
            out["number"] = number
    if number is not None and isinstance(out.get("issue"), dict):  # the PR as an issue
        out["issue"]["number"] = number
        out["issue"]["pull_request"] = fake.issue_json(repo, number)["pull_request"]
    return out


SOURCES = [pytest.param("fixtures", marks=needs_webhook_fixtures), "builders"]


def sample(fake: FakeGitHub, name: str, source: str) -> dict[str, Any]:
    """A delivery body by its fixture name (``event.action...``): GitHub's recorded payload
    re-pointed at the fake's PR when ``source`` is "fixtures", else one ``bench.replay.payloads``
    builds from the fake's state (so the suite still runs without the shared fixtures)."""
    if source == "fixtures":
        payload = fixture(name)
        return payload if name.startswith(("ping", "check_")) or "." not in name or \
            name == "pull_request.ready_for_review" else repoint(payload, fake)
    event, _, rest = name.partition(".")
    action = rest.split(".")[0]
    if event == "pull_request":
        payload = payloads.pull_request(fake, REPO, NUMBER, action)
        if action == "ready_for_review":  # as sent to a repository webhook: no installation
            del payload["installation"]
        return payload
    if event == "issue_comment":
        comment = fake.add_issue_comment(REPO, NUMBER, "Codertocat", "Looks good")
        return payloads.issue_comment(fake, REPO, NUMBER, comment)
    if event == "ping":
        return {"zen": "Design for failure.", "hook_id": 1,
                "hook": {"type": "App", "id": 1, "events": ["pull_request"]},
                "sender": fake.user_json("Codertocat")}
    return {"action": action, event: {"id": 1, "status": action},
            "repository": fake.repo_json(REPO), "sender": fake.user_json("Codertocat")}


class Tap:
    """Sees every request the fake handles (with its headers) and can hold some back.

    ``hold(method, regex)`` makes matching requests wait until ``release()``; ``held`` is set
    as soon as one is waiting.
    """

    def __init__(self, fake: FakeGitHub):
        self.seen: list[tuple[str, str, dict[str, str]]] = []
        self.held = asyncio.Event()
        self._gate = asyncio.Event()
        self._holds: list[tuple[str, re.Pattern[str]]] = []
        original = fake._handle

        async def handle(request: web.Request, path: str, body: Any, parsed: bool):
            self.seen.append((request.method, path, dict(request.headers)))
            if any(m == request.method and p.search(path) for m, p in self._holds):
                self.held.set()
                await self._gate.wait()
            return await original(request, path, body, parsed)

        fake._handle = handle

    def hold(self, method: str, regex: str) -> None:
        self._holds.append((method, re.compile(regex)))

    def release(self) -> None:
        self._holds.clear()
        self._gate.set()


def open_pr(fake: FakeGitHub, *, draft: bool = False, default_files: dict | None = None,
            head_files: dict | None = None, repo: str = REPO, number: int = NUMBER) -> None:
    """An installation, a repository and PR ``number`` with its first push (HEAD1)."""
    if INSTALLATION not in fake._installations:
        fake.add_installation(INSTALLATION, repo.split("/")[0])
    # The small PR's first finding is "no tests": make the repository ask for them.
    settings = {".github/roundwise.yml": "require_tests: true\n"}
    fake.add_repo(repo, INSTALLATION, files=settings if default_files is None else default_files)
    fake.add_pr(repo, number, "Scale values", "Adds scale().", "sam", "main", BASE_SHA,
                BASE_FILES, draft=draft)
    fake.push(repo, number, HEAD1, head_files or ROUND1_FILES)


@dataclass
class Bot:
    """The running server, the fake behind it, and ways to drive and observe both."""

    fake: FakeGitHub
    config: Config
    app: web.Application
    url: str
    session: aiohttp.ClientSession
    ledger: Ledger

    @property
    def state(self):
        return self.app[STATE]

    async def post(self, body: bytes, headers: dict[str, str]) -> tuple[int, dict]:
        async with self.session.post(f"{self.url}/webhook", data=body, headers=headers) as resp:
            return resp.status, await resp.json()

    async def deliver(self, event: str, payload: dict, delivery_id: str | None = None
                      ) -> tuple[int, dict]:
        body = payloads.encode(payload)
        return await self.post(body, payloads.headers(event, body, self.config.webhook_secret,
                                                      delivery_id))

    async def pull_request(self, action: str, delivery_id: str | None = None,
                           repo: str = REPO, number: int = NUMBER) -> tuple[int, dict]:
        return await self.deliver("pull_request",
                                  payloads.pull_request(self.fake, repo, number, action),
                                  delivery_id)

    async def comment(self, user: str, body: str, repo: str = REPO,
                      number: int = NUMBER) -> tuple[int, dict]:
        """A person writes a PR comment; its ``issue_comment`` delivery is sent."""
        comment = self.fake.add_issue_comment(repo, number, user, body)
        return await self.deliver("issue_comment",
                                  payloads.issue_comment(self.fake, repo, number, comment))

    async def idle(self, timeout: float = 20.0) -> None:
        """Wait until no job is queued or running."""
        deadline = time.monotonic() + timeout
        while self.ledger.db.execute(
                "select count(*) from jobs where status in ('queued', 'running')"
        ).fetchone()[0]:
            if time.monotonic() > deadline:
                raise TimeoutError(f"jobs still pending: {self.jobs()}")
            await asyncio.sleep(0.02)

    def delivery(self, delivery_id: str) -> dict | None:
        """The delivery's row as the queue store keeps it."""
        found = self.state.queue.store.delivery(delivery_id)
        return vars(found) if found else None

    def jobs(self, kind: str | None = None) -> list[dict]:
        where, args = ("kind = ?", [kind]) if kind else ("1", [])
        return list(self.ledger.db["jobs"].rows_where(where, args, order_by="id"))

    def rounds(self, repo: str = REPO, number: int = NUMBER) -> list[dict]:
        pr = self.ledger.find_pull_request(repo, number)
        return self.ledger.rounds(pr["id"]) if pr else []

    def states(self, repo: str = REPO, number: int = NUMBER) -> dict[str, str]:
        pr = self.ledger.find_pull_request(repo, number)
        return {d.key: str(d.state) for d in self.ledger.defects(pr["id"])} if pr else {}

    def bot_comments(self, kind: str = "issue", repo: str = REPO, number: int = NUMBER
                     ) -> list[dict]:
        view = self.fake.issue_comments if kind == "issue" else self.fake.review_comments
        return [c for c in view(repo, number) if c["user"]["login"] == self.fake.bot_login]

    def bot_reviews(self, repo: str = REPO, number: int = NUMBER) -> list[dict]:
        """The bot's round reviews (GitHub also wraps each thread reply in a bodiless review)."""
        return [r for r in self.fake.reviews(repo, number)
                if r["user"]["login"] == self.fake.bot_login and r["body"]]

    def calls(self, method: str, regex: str) -> list:
        pattern = re.compile(regex)
        return [r for r in self.fake.requests if r.method == method and pattern.search(r.path)]

    async def metrics(self) -> str:
        async with self.session.get(f"{self.url}/metrics") as resp:
            assert resp.status == 200
            return await resp.text()


#: the PR the check-run, one-truth and noise tests review: ``scale`` with a breakpoint (Major)
#: and a debug print (Minor) in round 1; round 2 drops the breakpoint, round 3 the print
SCALE_CORE = "def add(a, b):\n    return a + b\n\n\ndef scale(values, factor):\n"
SCALE_ROUND1 = {"app/core.py": SCALE_CORE + "    breakpoint()\n    result = [v * factor for v in "
                "values]\n    print(result)\n    return result\n"}
SCALE_ROUND2 = {"app/core.py": SCALE_CORE + "    result = [v * factor for v in values]\n"
                                      "    print(result)\n    return result\n"}
SCALE_ROUND3 = {"app/core.py": SCALE_CORE + "    result = [v * factor for v in values]\n"
                                      "    return result\n"}


def setup_pr(fake: FakeGitHub, settings: str = "", files: dict | None = None) -> None:
    """The installation, the repository (``settings`` as its ``.github/roundwise.yml``, none
    when empty) and the PR's first push (HEAD1) of ``files``, else ``SCALE_ROUND1``."""
    fake.add_installation(INSTALLATION, REPO.split("/")[0])
    fake.add_repo(REPO, INSTALLATION,
                  files={".github/roundwise.yml": settings} if settings else {})
    fake.add_pr(REPO, NUMBER, "Scale values", "Adds scale().", "sam", "main", BASE_SHA,
                BASE_FILES)
    fake.push(REPO, NUMBER, HEAD1, files or SCALE_ROUND1)


async def push(bot: Bot, head: str, files: dict) -> None:
    """``files`` pushed to the PR as ``head``, and the round it starts worked off."""
    bot.fake.push(REPO, NUMBER, head, files)
    await bot.pull_request("synchronize")
    await bot.idle()


def config_for(fake: FakeGitHub, db_path: Path, **overrides) -> Config:
    fields = {"app_id": str(APP_ID), "private_key": app_keys()[0],
              "webhook_secret": secrets.token_hex(16), "api_url": fake.url,
              "db_path": str(db_path), "workers": 2, "bot_login": fake.bot_login}
    fields.update(overrides)
    return Config(**fields)


@asynccontextmanager
async def running_bot(tmp_path: Path, *, start_workers: bool = True,
                      retry: RetryPolicy = FAST_RETRY, fake_options: dict | None = None,
                      dashboard=None, **config) -> AsyncIterator[Bot]:
    """The fake GitHub and the real server on loopback, torn down afterwards. ``dashboard``:
    a function of the fake giving the dashboard's settings (its GitHub is the fake's URL)."""
    async with FakeGitHub(APP_ID, app_keys()[1], **(fake_options or {})) as fake:
        if dashboard is not None:
            config["dashboard"] = dashboard(fake)
        cfg = config_for(fake, tmp_path / "ledger.db", **config)
        app = create_app(cfg, retry=retry, start_workers=start_workers, poll=0.05)
        runner = GuardedRunner(app, access_log=None)  # as ``roundwise serve`` runs it
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        try:
            async with aiohttp.ClientSession() as session:
                with Ledger(cfg.db_path) as observer:
                    yield Bot(fake, cfg, app, f"http://127.0.0.1:{port}", session, observer)
        finally:
            await runner.cleanup()


def metric(text: str, name: str, **labels: str) -> float:
    """One sample's value from Prometheus text (0 when absent)."""
    wanted = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        key, _, value = line.rpartition(" ")
        series, _, rest = key.partition("{")
        if series != name:
            continue
        found = ",".join(sorted(rest.rstrip("}").split(","))) if rest else ""
        if found == wanted:
            return float(value)
    return 0.0


def assert_one_review_posted(fake, head: str, keys: list[str], repo: str = REPO,
                             number: int = NUMBER) -> None:
    """What GitHub shows after a round that a crash interrupted and another process finished:
    one review for ``head``, each defect's inline comment once, one summary, created once."""
    reviews = [r for r in fake.reviews(repo, number) if r["body"]]
    assert [r["commit_id"] for r in reviews] == [head]
    inline = fake.review_comments(repo, number)
    assert sorted(render.read_marker(c["body"]) for c in inline) == \
        [("new", key, 1) for key in keys]
    [summary] = fake.issue_comments(repo, number)
    assert summary["body"].startswith(render.SUMMARY_MARKER)
    creates = [r for r in fake.requests
               if r.method == "POST" and r.path.endswith(f"/issues/{number}/comments")]
    assert len(creates) == 1
