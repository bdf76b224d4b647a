"""``roundwise setup``: create the GitHub App in one click with GitHub's App-manifest flow.

GitHub registers an App from a manifest only when a signed-in person's browser POSTs it as a
form, so this serves a page on 127.0.0.1 whose button posts ``app.yml`` (turned into JSON, with
the public URL given on the command line) to GitHub's "new App from manifest" page for a user or
an organisation. GitHub then redirects the browser back to this page with a temporary ``code``,
which is exchanged (``POST /app-manifests/{code}/conversions``) for the App's id, webhook secret,
private key and OAuth client (the dashboard's GitHub sign-in); those and the public URL are
written to a ``.env`` file (mode 0600) that ``roundwise serve``
reads. A random ``state`` ties the redirect to the page that started it. Secrets are never
printed or logged.
"""

from __future__ import annotations

import asyncio
import html
import json
import secrets
import sys
from pathlib import Path
from typing import Any

import aiohttp
import yaml
from aiohttp import web

from ..config.env import DEFAULT_API_URL
from ..config.envfile import write_env
from ..server.serving import listening

__all__ = ["DEFAULT_MANIFEST", "SetupError", "add_commands", "build_manifest", "run_setup"]

DEFAULT_GITHUB = "https://github.com"

#: what ``app.yml`` says; used when no ``app.yml`` is at hand (an installed package)
DEFAULT_MANIFEST: dict[str, Any] = {
    "name": "roundwise",
    "description": "Multi-round pull request review with memory of every defect across pushes.",
    "public": False,
    "default_permissions": {"pull_requests": "write", "contents": "read", "issues": "write",
                            "checks": "write", "metadata": "read"},
    "default_events": ["pull_request", "pull_request_review", "pull_request_review_comment",
                       "pull_request_review_thread", "issue_comment", "check_run",
                       "check_suite"],
}


class SetupError(RuntimeError):
    """The flow cannot go on; the message says why and what to do."""


def load_manifest(path: str | None) -> dict[str, Any]:
    """``app.yml`` at ``path`` (default: ./app.yml when present, else the built-in copy)."""
    candidate = Path(path) if path else Path("app.yml")
    if not candidate.exists():
        if path:
            raise SetupError(f"{path}: no such file")
        return json.loads(json.dumps(DEFAULT_MANIFEST))
    try:
        data = yaml.safe_load(candidate.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise SetupError(f"{candidate} cannot be read as YAML: {exc}") from None
    if not isinstance(data, dict):
        raise SetupError(f"{candidate} is not a GitHub App manifest (expected a mapping)")
    return data


def build_manifest(base: dict[str, Any], public_url: str, redirect_url: str,
                   name: str | None = None) -> dict[str, Any]:
    """The manifest GitHub receives: ``base`` pointed at ``public_url`` and back at us."""
    public_url = public_url.rstrip("/")
    manifest = {k: v for k, v in base.items() if k not in ("url", "hook_attributes",
                                                            "redirect_url", "setup_url")}
    if name:
        manifest["name"] = name
    manifest["url"] = public_url
    manifest["hook_attributes"] = {"url": f"{public_url}/webhook", "active": True}
    manifest["redirect_url"] = redirect_url
    # people sign in to the dashboard with the App's OAuth client (bot.dashboard.oauth)
    manifest["callback_urls"] = [f"{public_url}/dashboard/oauth/callback"]
    return manifest


def _new_app_url(github: str, org: str | None, state: str) -> str:
    where = f"/organizations/{org}/settings/apps/new" if org else "/settings/apps/new"
    return f"{github.rstrip('/')}{where}?state={state}"


def _page(title: str, body: str) -> web.Response:
    return web.Response(content_type="text/html", text=(
        f"<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title}</title>"
        f"</head><body><h1>{title}</h1>{body}</body></html>\n"))


class ManifestFlow:
    """The local page, the redirect handler and the conversion; ``done`` ends the command."""

    def __init__(self, manifest_base: dict[str, Any], public_url: str, *, github: str,
                 api_url: str, org: str | None, env_path: Path, name: str | None = None):
        self.base = manifest_base
        self.public_url = public_url
        self.github = github
        self.api_url = api_url.rstrip("/")
        self.org = org
        self.env_path = env_path
        self.name = name
        self.state = secrets.token_urlsafe(24)
        self.done = asyncio.Event()
        self.result: dict[str, Any] | None = None
        self.error: str | None = None
        self.local_url = ""

    def manifest(self) -> dict[str, Any]:
        return build_manifest(self.base, self.public_url, f"{self.local_url}/redirect",
                              self.name)

    async def index(self, request: web.Request) -> web.Response:
        manifest = json.dumps(self.manifest())
        owner = f"the organisation <b>{html.escape(self.org)}</b>" if self.org else \
            "your personal account"
        return _page("Create the roundwise GitHub App", f"""
<p>This creates a GitHub App for {owner} whose webhooks go to
<code>{html.escape(self.public_url)}/webhook</code>. GitHub asks you to confirm the name, then
sends you back here; the App's id, webhook secret and private key are then written to
<code>{html.escape(str(self.env_path))}</code>.</p>
<form action="{html.escape(_new_app_url(self.github, self.org, self.state))}" method="post">
<input type="hidden" name="manifest" value="{html.escape(manifest)}">
<button type="submit">Create the GitHub App on GitHub</button>
</form>
<details><summary>The manifest</summary><pre>{html.escape(json.dumps(self.manifest(),
                                                                   indent=2))}</pre></details>
""")

    async def redirect(self, request: web.Request) -> web.Response:
        code = request.query.get("code", "")
        if not secrets.compare_digest(request.query.get("state", ""), self.state):
            return web.Response(status=400, text="state mismatch: this redirect did not come "
                                                 "from this setup page; nothing was written")
        if not code:
            return web.Response(status=400, text="no code in the redirect")
        try:
            app = await self.convert(code)
        except SetupError as exc:
            self.error = str(exc)
            self.done.set()
            return web.Response(status=502, text=str(exc))
        self.result = app
        self.done.set()
        install = f"{app.get('html_url', '')}/installations/new"
        return _page(f"Created {html.escape(app.get('name', 'the App'))}", f"""
<p>App id {app['id']}; its credentials are in <code>{html.escape(str(self.env_path))}</code>
(mode 0600). Start the server with <code>roundwise serve</code>, then
<a href="{html.escape(install)}">install the App</a> on your repositories.</p>""")

    async def convert(self, code: str) -> dict[str, Any]:
        """Exchange ``code`` for the App's configuration and write the ``.env`` file."""
        url = f"{self.api_url}/app-manifests/{code}/conversions"
        headers = {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28",
                   "User-Agent": "roundwise-setup"}
        try:
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as s, \
                    s.post(url, headers=headers) as resp:
                body = await resp.json(content_type=None)
                status = resp.status
        except (TimeoutError, aiohttp.ClientError, ValueError) as exc:
            raise SetupError(f"the code could not be exchanged at {url}: {exc}") from None
        if status != 201 or not isinstance(body, dict):
            message = body.get("message") if isinstance(body, dict) else body
            raise SetupError(f"GitHub refused the code ({status}: {message}); codes last an "
                             "hour and work once: start again")
        missing = [k for k in ("id", "pem", "webhook_secret") if not body.get(k)]
        if missing:
            raise SetupError(f"GitHub's answer lacks {', '.join(missing)}")
        values = {"GITHUB_APP_ID": str(body["id"]), "GITHUB_WEBHOOK_SECRET":
                  body["webhook_secret"], "GITHUB_PRIVATE_KEY": body["pem"]}
        if body.get("slug"):
            values["ROUNDWISE_BOT_LOGIN"] = f"{body['slug']}[bot]"
        if body.get("client_id") and body.get("client_secret"):  # the dashboard's sign-in
            values["GITHUB_CLIENT_ID"] = body["client_id"]
            values["GITHUB_CLIENT_SECRET"] = body["client_secret"]
        values["ROUNDWISE_PUBLIC_URL"] = self.public_url.rstrip("/")
        if self.api_url != DEFAULT_API_URL:
            values["GITHUB_API_URL"] = self.api_url
        write_env(self.env_path, values,
                  header=f"roundwise: the GitHub App {body.get('name', '')} "
                         f"({body.get('html_url', '')}), written by roundwise setup.\n"
                         "Secrets: keep this file private (mode 0600), never commit it.")
        return body


async def run_setup(flow: ManifestFlow, host: str = "127.0.0.1", port: int = 3000,
                    announce=print) -> int:
    app = web.Application()
    app.router.add_get("/", flow.index)
    app.router.add_get("/redirect", flow.redirect)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        bound = await listening(runner, host, port, "roundwise setup: cannot listen on {where} "
                                "({why}); choose another --port")
        if bound is None:
            return 2
        flow.local_url = f"http://{host}:{bound}"
        announce(f"Open {flow.local_url}/ in a browser signed in to GitHub and press the "
                 "button; waiting for GitHub to send you back (Ctrl-C to stop).")
        await flow.done.wait()
        await asyncio.sleep(0.2)  # let the last page reach the browser
    finally:
        await runner.cleanup()
    if flow.error:
        print(f"roundwise setup: {flow.error}", file=sys.stderr)
        return 2
    app_info = flow.result or {}
    announce(f"Created the GitHub App {app_info.get('name')} (id {app_info.get('id')}); its "
             f"settings are in {flow.env_path} (mode 0600). Next: roundwise serve, then install "
             f"the App: {app_info.get('html_url', '')}/installations/new")
    return 0


def add_commands(sub) -> None:
    """Register ``roundwise setup`` on the ``roundwise`` parser."""
    setup = sub.add_parser(
        "setup", help="create the GitHub App from app.yml in one click; writes .env",
        description="Serve a page on 127.0.0.1 whose button creates the GitHub App from "
                    "app.yml (GitHub's App-manifest flow), pointed at your public URL; when "
                    "GitHub sends the browser back, the App's id, webhook secret and private key "
                    "are written to .env (mode 0600), which roundwise serve reads.",
    )
    setup.add_argument("--url", required=True,
                       help="the public https URL where GitHub reaches roundwise serve; "
                            "webhooks go to URL/webhook")
    setup.add_argument("--org", help="create the App for this organisation (default: your "
                                     "personal account)")
    setup.add_argument("--name", help="the App's name (default: app.yml's; GitHub lets you "
                                      "change it before creating)")
    setup.add_argument("--manifest", help="the manifest (default: ./app.yml, else the built-in)")
    setup.add_argument("--env-file", default=".env", help="where to write the settings "
                                                          "(default: .env)")
    setup.add_argument("--force", action="store_true", help="replace an existing --env-file")
    setup.add_argument("--port", type=int, default=3000,
                       help="local port of the setup page (default 3000; 0: any)")
    setup.add_argument("--github", default=DEFAULT_GITHUB,
                       help="GitHub's web address (GitHub Enterprise: https://HOST)")
    setup.add_argument("--api-url", default=None,
                       help="the REST API (default: https://api.github.com, or HOST/api/v3 "
                            "with --github)")
    setup.set_defaults(func=cmd_setup)


def cmd_setup(args) -> int:
    url = args.url.rstrip("/")
    if not url.startswith(("https://", "http://")):
        print(f"roundwise setup: --url {url!r} must be the public https:// address of the "
              "server", file=sys.stderr)
        return 2
    env_path = Path(args.env_file)
    if env_path.exists() and not args.force:
        print(f"roundwise setup: {env_path} exists; it may hold another App's key. Move it "
              "away, or pass --force to replace it", file=sys.stderr)
        return 2
    api_url = args.api_url or (DEFAULT_API_URL if args.github == DEFAULT_GITHUB
                               else f"{args.github.rstrip('/')}/api/v3")
    try:
        base = load_manifest(args.manifest)
    except SetupError as exc:
        print(f"roundwise setup: {exc}", file=sys.stderr)
        return 2
    flow = ManifestFlow(base, url, github=args.github, api_url=api_url, org=args.org,
                        env_path=env_path, name=args.name)

    def announce(line: str) -> None:
        print(line, flush=True)

    return asyncio.run(run_setup(flow, port=args.port, announce=announce))
