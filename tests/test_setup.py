"""``roundwise setup`` end to end: a real subprocess, its real page, and the fake GitHub.

The test plays the browser: it opens the setup page, submits its form to the fake's "new App
from manifest" page, follows the redirect back, and then checks that the ``.env`` written is
private, that ``roundwise serve``'s configuration loads from it, and that the App it names can
authenticate to the fake GitHub (which became that App, as GitHub would).
"""

from __future__ import annotations

import asyncio
import html
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import aiohttp
import yaml

from bench.fake_github import FakeGitHub
from bot.cli.setup import DEFAULT_MANIFEST, build_manifest
from bot.config.envfile import load_env_file, parse_env
from bot.github import GitHubApp
from bot.server.hosts import load_config

from .conftest import ROOT
from .server_kit import APP_ID, app_keys


class SetupProcess:
    """``roundwise setup --port 0`` in a subprocess; ``url`` is the page it announces."""

    def __init__(self, cwd: Path, *args: str):
        env = {"PATH": os.environ["PATH"], "HOME": str(cwd), "PYTHONUNBUFFERED": "1",
               "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
        self.proc = subprocess.Popen([sys.executable, "-m", "roundwise", "setup", "--port", "0",
                                      *args], cwd=cwd, env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        match = re.search(r"Open (http://127\.0\.0\.1:\d+)/", line)
        assert match, line + self.proc.stderr.read()
        self.url = match.group(1)

    def finish(self) -> tuple[int, str, str]:
        out, err = self.proc.communicate(timeout=30)
        return self.proc.returncode, out, err


def form_of(page: str) -> tuple[str, dict]:
    action = html.unescape(re.search(r'<form action="([^"]+)" method="post">', page).group(1))
    manifest = html.unescape(re.search(r'name="manifest" value="([^"]*)"', page).group(1))
    return action, json.loads(manifest)


async def test_setup_creates_the_app_and_serve_reads_what_it_wrote(tmp_path):
    async with FakeGitHub(APP_ID, app_keys()[1]) as fake:
        setup = await asyncio.to_thread(
            SetupProcess, tmp_path, "--url", "https://bot.example.com/", "--org", "octo-org",
            "--github", fake.url, "--api-url", fake.url)
        async with aiohttp.ClientSession() as browser:
            async with browser.get(setup.url + "/") as resp:
                assert resp.status == 200
                action, manifest = form_of(await resp.text())
            assert action.startswith(f"{fake.url}/organizations/octo-org/settings/apps/new"
                                     "?state=")
            assert manifest["url"] == "https://bot.example.com"
            assert manifest["hook_attributes"] == {"url": "https://bot.example.com/webhook",
                                                   "active": True}
            assert manifest["redirect_url"] == f"{setup.url}/redirect"
            assert manifest["callback_urls"] == [
                "https://bot.example.com/dashboard/oauth/callback"]  # the dashboard's sign-in
            assert "installation" not in manifest["default_events"]
            # a redirect with another state is refused and does not end the flow
            async with browser.get(f"{setup.url}/redirect?code=abc&state=forged") as resp:
                assert resp.status == 400
            assert not (tmp_path / ".env").exists()
            # the browser submits the form; GitHub sends it back with a code
            async with browser.post(action, data={"manifest": json.dumps(manifest)}) as resp:
                assert resp.status == 200, await resp.text()
                assert str(resp.url).startswith(f"{setup.url}/redirect?code=")
                assert "installations/new" in await resp.text()
        code, out, err = await asyncio.to_thread(setup.finish)
        assert code == 0, err
        env_file = tmp_path / ".env"
        assert env_file.stat().st_mode & 0o777 == 0o600
        values = parse_env(env_file.read_text())
        assert values["GITHUB_APP_ID"] == str(fake.app_id) != str(APP_ID)
        assert values["GITHUB_PRIVATE_KEY"].startswith("-----BEGIN RSA PRIVATE KEY-----\n")
        assert values["ROUNDWISE_BOT_LOGIN"] == "roundwise[bot]"
        assert values["GITHUB_CLIENT_ID"] == fake.client_id
        assert values["ROUNDWISE_PUBLIC_URL"] == "https://bot.example.com"
        for secret in (values["GITHUB_WEBHOOK_SECRET"], values["GITHUB_PRIVATE_KEY"][40:80],
                       values["GITHUB_CLIENT_SECRET"]):
            assert secret not in out and secret not in err  # never printed
        conversions = [r for r in fake.requests if r.path.startswith("/app-manifests/")]
        assert len(conversions) == 1 and conversions[0].method == "POST"
        # roundwise serve's configuration comes from the file, and the App works
        environ: dict[str, str] = {}
        load_env_file(env_file, environ)
        config = load_config(environ)
        assert config.api_url == fake.url
        assert config.dashboard.github_sign_in  # people can sign in to the dashboard
        async with aiohttp.ClientSession() as session:
            app = GitHubApp(session, config.app_id, config.private_key, config.api_url)
            async with session.get(f"{fake.url}/app", headers={
                    "Authorization": f"Bearer {app.jwt()}"}) as resp:
                assert resp.status == 200
                me = await resp.json()
        assert me["id"] == fake.app_id
        # the code worked once
        async with aiohttp.ClientSession() as session, session.post(
                f"{fake.url}{conversions[0].path}") as resp:
            assert resp.status == 404


def test_setup_refuses_to_overwrite_an_env_file_and_a_bad_url(tmp_path):
    (tmp_path / ".env").write_text("GITHUB_APP_ID=1\n")
    done = subprocess.run([sys.executable, "-m", "roundwise", "setup", "--url",
                           "https://bot.example.com"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 2 and ".env exists" in done.stderr
    assert (tmp_path / ".env").read_text() == "GITHUB_APP_ID=1\n"
    done = subprocess.run([sys.executable, "-m", "roundwise", "setup", "--url", "bot.example",
                           "--env-file", str(tmp_path / "new.env")], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2 and "--url 'bot.example'" in done.stderr


def test_app_yml_is_the_built_in_manifest_with_subscribable_events_only():
    app_yml = yaml.safe_load((ROOT / "app.yml").read_text())
    assert {k: v for k, v in app_yml.items() if k not in ("url", "hook_attributes")} == \
        DEFAULT_MANIFEST
    # Apps receive installation events without subscribing; checks are subscribable
    assert "installation" not in app_yml["default_events"]
    assert {"check_run", "check_suite"} <= set(app_yml["default_events"])
    assert app_yml["default_permissions"]["checks"] == "write"
    built = build_manifest(app_yml, "https://x.example/", "http://127.0.0.1:3000/redirect")
    assert (built["url"], built["hook_attributes"]["url"]) == ("https://x.example",
                                                               "https://x.example/webhook")


def test_the_env_file_also_works_as_docker_run_reads_it(tmp_path):
    """``docker run --env-file`` splits at the first ``=`` and keeps quotes: still loads."""
    from bot.config.envfile import write_env

    write_env(tmp_path / ".env", {"GITHUB_APP_ID": "1234", "GITHUB_WEBHOOK_SECRET": "ab12cd",
                                  "GITHUB_PRIVATE_KEY": app_keys()[0],
                                  "ROUNDWISE_BOT_LOGIN": "my-app[bot]"}, header="secrets")
    literal = dict(line.split("=", 1) for line in (tmp_path / ".env").read_text().splitlines()
                   if line and not line.startswith("#"))
    assert literal["GITHUB_WEBHOOK_SECRET"] == "ab12cd"  # plain values are not quoted
    assert literal["GITHUB_PRIVATE_KEY"].startswith('"-----BEGIN')
    config = load_config(literal)
    assert config.private_key == app_keys()[0] and config.bot_login == "my-app[bot]"
