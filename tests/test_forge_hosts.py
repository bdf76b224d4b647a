"""The forge registry is the one place a code-host backend is added (``bot.server.hosts``).

A fake backend, registered in-process for one test, must come out everywhere the registry
feeds: its settings in ``bot.server.hosts.settings()`` (so the settings table check names them when
``docs/configuration.md`` lacks them), its settings read by ``load_config`` (its problems listed
with the others', and, configured, it serves alone: the GitHub App's settings are then not
required), its webhook route mounted by the real server on 127.0.0.1, its client started on the
server's session, and its own kind of job handled by it before the host-neutral handlers.
"""

from __future__ import annotations

import asyncio

import aiohttp
import pytest
from aiohttp import web

from bot.config.env import Config, ConfigError
from bot.forge.appkeys import STATE
from bot.forge.host import Host
from bot.server import hosts
from bot.server.app import create_app
from bot.server.serving import GuardedRunner

from .test_surface import readme_problems


class FakeService:
    def __init__(self, token: str):
        self.token = token
        self.session = None
        self.handled: list[str] = []

    async def start(self, session, retry) -> None:
        self.session = session

    def owns(self, job) -> bool:
        return (job.repo or "").startswith("fakehub:")

    def forge(self, job):
        raise NotImplementedError

    def jobs(self, handlers, rest):
        async def handle(job) -> None:
            if job.kind == "fakehub_ping":
                self.handled.append(job.repo)
                return
            await rest(job)
        return handle


def _read(env_, problems, required):
    token = env_.get("FAKEHUB_TOKEN") or ""
    if token and not token.startswith("fh_"):
        problems.append("FAKEHUB_TOKEN must start with fh_")
    return token or None


mounted: list[FakeService] = []


def _mount(app, config):
    token = config.forges.get("fakehub")
    if not token:
        return None

    async def hook(request: web.Request) -> web.Response:
        return web.json_response({"fakehub": True}, status=202)

    app.router.add_post("/fakehub/webhook", hook)
    mounted.append(FakeService(token))
    return mounted[-1]


FAKE = Host(name="fakehub", settings={"FAKEHUB_TOKEN": ("the fake host's token", "unset")},
            read=_read, mount=_mount)


@pytest.fixture
def fake_registered(monkeypatch):
    monkeypatch.setattr(hosts, "HOSTS", (*hosts.HOSTS, FAKE))
    mounted.clear()


def test_a_registered_backend_settings_join_the_settings_and_readme_check(fake_registered):
    names = list(hosts.settings())
    assert names.index("GITLAB_TOKEN") < names.index("FAKEHUB_TOKEN") < names.index("ROUNDWISE_DB")
    assert readme_problems(hosts.SETTINGS) == []
    assert any("FAKEHUB_TOKEN" in line for line in readme_problems(hosts.settings()))


def test_a_registered_backend_is_read_and_serves_alone(fake_registered):
    config = hosts.load_config({"FAKEHUB_TOKEN": "fh_1"})  # no GitHub App: not required
    assert config.forges["fakehub"] == "fh_1" and config.app_id == "" and config.gitlab is None
    with pytest.raises(ConfigError) as raised:
        hosts.load_config({"FAKEHUB_TOKEN": "nope"})
    assert "FAKEHUB_TOKEN must start with fh_" in str(raised.value)
    with pytest.raises(ConfigError, match="GITHUB_APP_ID is not set"):
        hosts.load_config({})  # nothing configured: GitHub's App is required, as before


async def test_the_server_mounts_a_registered_backend_and_gives_it_its_jobs(
        fake_registered, tmp_path):
    config = Config(app_id="", private_key="", webhook_secret="", db_path=str(tmp_path / "l.db"),
                    workers=1, forges={"fakehub": "fh_1"})
    app = create_app(config, poll=0.05)
    runner = GuardedRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    url = f"http://127.0.0.1:{runner.addresses[0][1]}"
    try:
        [service] = mounted
        state = app[STATE]
        assert service.session is state.session and state.github is None
        async with aiohttp.ClientSession() as session:
            async with session.post(f"{url}/fakehub/webhook", data=b"{}") as response:
                assert (response.status, await response.json()) == (202, {"fakehub": True})
            async with session.post(f"{url}/webhook", data=b"{}") as response:
                assert response.status in (404, 405)  # no App, no GitHub route
        state.queue.store.enqueue("fakehub_ping", repo="fakehub:a/b", number=1,
                                  installation_id=None, payload={}, delivery_id=None,
                                  head_sha=None)
        for _ in range(200):
            if [job.status for job in state.queue.store.jobs()] == ["done"]:
                break
            await asyncio.sleep(0.05)
        assert service.handled == ["fakehub:a/b"]
        assert [job.status for job in state.queue.store.jobs()] == ["done"]
    finally:
        await runner.cleanup()
