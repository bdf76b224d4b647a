"""The dashboard's HTTP side: its routes under ``/dashboard``, mounted on an aiohttp app.

``mount(app, config, target)`` adds the pages (Overview ``/dashboard``,
Repository ``/dashboard/repo/OWNER/NAME``, Pull request ``/dashboard/repo/OWNER/NAME/pull/N``),
the sign-in routes and the stylesheet; the ledger is opened read-only at the first page. Pages are
GET only, filtered and paged by query parameters (so every view has a URL to share), checked
before any use (a bad one is 400), and shown only to a viewer (``bot.dashboard.access``):
anyone else gets the sign-in page with status 401, which names no repository; a repository
the viewer may not see is 404, as one that does not exist. Answers are never cached and carry
a content security policy that allows no script at all.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from importlib.resources import files
from urllib.parse import urlencode

import aiohttp
import jinja2
from aiohttp import web

from ..config.dashboard import DashboardConfig
from ..store.ledger_reads import OPEN_STATES, PAGE, LedgerReader, Page
from . import charts, views
from .access import Viewer, token_matches, viewer
from .oauth import SignInError, authorize_url, exchange, person
from .sessions import COOKIE, MAX_AGE, STATE_AGE, STATE_COOKIE, Sessions

__all__ = ["DASHBOARD", "Dashboard", "mount"]

log = logging.getLogger("roundwise.dashboard")

PREFIX = "/dashboard"
STATUSES = ("open", "closed", "merged")
STATES = ("New", "Open", "Resolved", "Reopened")
HOSTS = ("github", "gitlab")
MAX_PAGE = 100_000
CSP = ("default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self' {github}; "
       "frame-ancestors 'none'; base-uri 'none'")


@dataclass
class Dashboard:
    config: DashboardConfig
    target: str
    sessions: Sessions
    gitlab_url: str = "https://gitlab.com"
    metrics: Callable[[], dict] | None = None  # the serving process's counters, if any
    reader: LedgerReader | None = None
    http: aiohttp.ClientSession | None = None
    templates: jinja2.Environment = field(default_factory=lambda: jinja2.Environment(
        loader=jinja2.PackageLoader("bot.dashboard", "templates"),
        autoescape=True, trim_blocks=True, lstrip_blocks=True))

    _opening: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def read(self, load: Callable[[LedgerReader], dict]) -> dict:
        """A page's reads (``load(reader)``), off the event loop, on one connection. The
        ledger is opened at the first page, not at start-up: a server whose dashboard nobody
        opens spends nothing on it (and its start-up and shutdown wait on nothing more)."""
        if self.reader is None:
            async with self._opening:
                if self.reader is None:
                    self.reader = await asyncio.to_thread(LedgerReader, self.target)
        return await asyncio.to_thread(self.reader.together, load)

    def session(self) -> aiohttp.ClientSession:
        """The client for GitHub's sign-in calls, made at the first one."""
        if self.http is None:
            self.http = aiohttp.ClientSession()
        return self.http


DASHBOARD: web.AppKey[Dashboard] = web.AppKey("dashboard", Dashboard)


class BadQuery(ValueError):
    """A query parameter that cannot be used; the message says which and why."""


# -- answers --------------------------------------------------------------------------------

def _secure_headers(response: web.StreamResponse, config: DashboardConfig) -> None:
    response.headers["Content-Security-Policy"] = CSP.format(github=config.web_url)
    response.headers["Cache-Control"] = "no-store"
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "same-origin"
    response.headers["X-Frame-Options"] = "DENY"


def _page(request: web.Request, name: str, code: int = 200, **context) -> web.Response:
    dash = request.app[DASHBOARD]
    html = dash.templates.get_template(name).render(prefix=PREFIX, **context)
    response = web.Response(text=html, status=code, content_type="text/html")
    _secure_headers(response, dash.config)
    return response


def _sign_in_page(request: web.Request, code: int = 401, message: str | None = None
                  ) -> web.Response:
    dash = request.app[DASHBOARD]
    return _page(request, "signin.html", code, message=message,
                 github=dash.config.github_sign_in, token=bool(dash.config.token),
                 viewer=None)


def _not_found(request: web.Request, who: Viewer) -> web.Response:
    return _page(request, "error.html", 404, viewer=who, title="Not found",
                 message="There is nothing here that you may see.")


def _set_cookie(response: web.StreamResponse, name: str, value: str, max_age: int) -> None:
    response.set_cookie(name, value, max_age=max_age, path=PREFIX, httponly=True, secure=True,
                        samesite="Lax")


# -- query parameters -----------------------------------------------------------------------

def _choice(request: web.Request, name: str, allowed: tuple[str, ...]) -> str | None:
    value = request.query.get(name) or None
    if value is not None and value not in allowed:
        raise BadQuery(f"{name} must be one of {', '.join(allowed)}")
    return value


def _day(request: web.Request, name: str) -> str | None:
    value = request.query.get(name) or None
    if value is None:
        return None
    try:
        return date.fromisoformat(value[:10]).isoformat() if len(value) == 10 else \
            date.fromisoformat(value).isoformat()
    except ValueError:
        raise BadQuery(f"{name} must be a date, YYYY-MM-DD") from None


def _page_number(request: web.Request) -> int:
    value = request.query.get("page") or "1"
    if not value.isdigit() or not 1 <= int(value) <= MAX_PAGE:
        raise BadQuery(f"page must be a whole number from 1 to {MAX_PAGE}")
    return int(value)


def _pages(page: Page, request: web.Request) -> dict:
    """Links to the previous and next pages, keeping the other parameters."""
    number = page.offset // page.size + 1
    last = max(1, -(-page.total // page.size))

    def link(n: int) -> str:
        query = {k: v for k, v in request.query.items() if k != "page" and v}
        if n > 1:
            query["page"] = str(n)
        return f"{request.path}?{urlencode(query)}" if query else request.path

    return {"number": number, "last": last, "total": page.total,
            "prev": link(number - 1) if number > 1 else None,
            "next": link(number + 1) if number < last else None}


# -- pages ----------------------------------------------------------------------------------

async def _viewer(request: web.Request) -> Viewer | None:
    dash = request.app[DASHBOARD]
    return await viewer(request, dash.config, dash.sessions, dash.session())


def guarded(handler):
    """A page for viewers only, with its query parameters checked."""

    async def page(request: web.Request) -> web.StreamResponse:
        who = await _viewer(request)
        if who is None:
            return _sign_in_page(request)
        try:
            return await handler(request, who)
        except BadQuery as exc:
            return _page(request, "error.html", 400, viewer=who, title="Bad request",
                         message=str(exc))

    return page


def _visible(reader: LedgerReader, who: Viewer) -> list[str] | None:
    return None if who.repos is None else who.visible(reader.repo_names())


@guarded
async def overview(request: web.Request, who: Viewer) -> web.Response:
    dash = request.app[DASHBOARD]
    host = _choice(request, "host", HOSTS)
    number = _page_number(request)
    name = request.query.get("q") or ""

    def load(reader: LedgerReader) -> dict:
        repos = reader.repositories(_visible(reader, who), host=host, name=name,
                                    offset=(number - 1) * PAGE)
        shown = [row["repo"] for row in repos]
        return {"repos": repos, "judged": reader.verdicts_by_day(shown) if shown else [],
                "health": reader.jobs_health()}

    data = await dash.read(load)
    since = (datetime.now(UTC) - timedelta(weeks=16)).date().isoformat()
    per_repo = views.rates(data["judged"], "repo")
    for row in data["repos"]:
        row["rates"] = per_repo.get(row["repo"], views.Rates())
    weeks, series = views.weekly([row for row in data["judged"] if (row["day"] or "") >= since])
    health = data["health"]
    if dash.metrics is not None:
        health["counters"] = dash.metrics()
    return _page(request, "overview.html", viewer=who, repos=data["repos"],
                 pages=_pages(data["repos"], request),
                 trend=charts.rate_chart("Live quality by week", weeks, series),
                 health=health, host=host, q=name)


@guarded
async def repository(request: web.Request, who: Viewer) -> web.Response:
    dash = request.app[DASHBOARD]
    repo = request.match_info["repo"]
    if not who.sees(repo):
        return _not_found(request, who)
    status = _choice(request, "status", STATUSES)
    since, until = _day(request, "since"), _day(request, "until")
    number = _page_number(request)

    def load(reader: LedgerReader) -> dict:
        prs = reader.pull_requests(repo, status=status, since=since, until=until,
                                   offset=(number - 1) * PAGE)
        if not prs.total and not (status or since or until):
            return {"prs": None}
        return {"prs": prs, "verdicts": reader.verdicts_by_day([repo]),
                "convergence": reader.findings_by_round(repo),
                "learnings": reader.learnings(repo), "rules": reader.rule_verdicts(repo)}

    data = await dash.read(load)
    if data["prs"] is None:
        return _not_found(request, who)
    weeks, series = views.weekly(data["verdicts"])
    by_kind = sorted(views.rates(data["verdicts"], ("kind", "what")).items(),
                     key=lambda item: (item[0][0], str(item[0][1])))
    convergence = data["convergence"]
    return _page(
        request, "repository.html", viewer=who, repo=repo, prs=data["prs"],
        pages=_pages(data["prs"], request), status=status, since=since or "",
        until=until or "", by_kind=by_kind,
        trend=charts.rate_chart(f"Live quality of {repo} by week", weeks, series),
        convergence=charts.bar_chart(
            "Findings posted per round", [f"R{r['number']}" for r in convergence],
            [r["findings"] / r["rounds"] if r["rounds"] else 0 for r in convergence],
            " per PR"),
        learnings=data["learnings"], confidence=views.confidence_rows(data["rules"]),
        statuses=STATUSES)


@guarded
async def pull_request(request: web.Request, who: Viewer) -> web.Response:
    dash = request.app[DASHBOARD]
    repo = request.match_info["repo"]
    if not who.sees(repo):
        return _not_found(request, who)
    state = _choice(request, "state", STATES)
    number = _page_number(request)

    def load(reader: LedgerReader) -> dict:
        pr = reader.pull_request(repo, int(request.match_info["number"]))
        if pr is None:
            return {"pr": None}
        defects = reader.defects(pr["id"], state=state, offset=(number - 1) * PAGE)
        ids = [d["id"] for d in defects]
        shown = set(ids)
        return {"pr": pr, "defects": defects, "rounds": reader.rounds(pr["id"]),
                "history": reader.history(ids),
                "verdicts": [v for v in reader.verdicts(pr["id"]) if v["defect_id"] in shown],
                "comments": reader.first_comments(ids)}

    data = await dash.read(load)
    pr = data["pr"]
    if pr is None:
        return _not_found(request, who)
    numbers, rows = views.timeline(pr, data["rounds"], list(data["defects"]), data["history"],
                                   data["verdicts"], data["comments"], dash.config.web_url,
                                   dash.gitlab_url)
    return _page(request, "pull.html", viewer=who, repo=repo, pr=pr, numbers=numbers, rows=rows,
                 rounds={r["number"]: r for r in data["rounds"]}, defects=data["defects"],
                 pages=_pages(data["defects"], request), state=state, states=STATES,
                 open_states=OPEN_STATES,
                 pr_url=views.thread_url(repo, pr["number"], None, dash.config.web_url,
                                         dash.gitlab_url))


# -- signing in and out ---------------------------------------------------------------------

async def sign_in(request: web.Request) -> web.Response:
    return _sign_in_page(request, 200)


def _same_origin(request: web.Request) -> bool:
    """A form post from one of our own pages (browsers send ``Origin`` on every POST)."""
    origin = request.headers.get("Origin")
    site = request.headers.get("Sec-Fetch-Site")
    if site is not None and site not in ("same-origin", "none"):
        return False
    return origin is None or origin == f"{request.scheme}://{request.host}" or \
        origin.split("://", 1)[-1] == request.host


async def sign_in_with_token(request: web.Request) -> web.StreamResponse:
    dash = request.app[DASHBOARD]
    if not _same_origin(request):
        return _sign_in_page(request, 403, "That form did not come from this page.")
    if request.content_length is not None and request.content_length > 4096:
        return _sign_in_page(request, 413, "Too much data.")
    form = await request.post()
    offered = form.get("token")
    if not isinstance(offered, str) or not token_matches(dash.config, offered.strip()):
        return _sign_in_page(request, 401, "That token is not this dashboard's.")
    _session, cookie = dash.sessions.start("token", "operator", None)
    response = web.HTTPSeeOther(PREFIX)
    _set_cookie(response, COOKIE, cookie, MAX_AGE)
    return response


def _callback_url(request: web.Request, dash: Dashboard) -> str:
    base = dash.config.public_url or f"{request.scheme}://{request.host}"
    return f"{base}{PREFIX}/oauth/callback"


async def oauth_start(request: web.Request) -> web.StreamResponse:
    dash = request.app[DASHBOARD]
    if not dash.config.github_sign_in:
        return _sign_in_page(request, 404, "GitHub sign-in is not configured here.")
    state, cookie = dash.sessions.new_state()
    response = web.HTTPFound(authorize_url(dash.config.web_url, dash.config.client_id, 
                                           _callback_url(request, dash), state))
    _set_cookie(response, STATE_COOKIE, cookie, STATE_AGE)
    return response


async def oauth_callback(request: web.Request) -> web.StreamResponse:
    dash = request.app[DASHBOARD]
    if not dash.config.github_sign_in:
        return _sign_in_page(request, 404, "GitHub sign-in is not configured here.")
    if not dash.sessions.state_matches(request.query.get("state"),
                                       request.cookies.get(STATE_COOKIE)):
        return _sign_in_page(request, 400, "That sign-in was not started here, or took too "
                                           "long: sign in again.")
    if request.query.get("error"):  # access_denied: the person said no on GitHub
        reason = request.query.get("error_description") or request.query["error"]
        return _sign_in_page(request, 401, f"GitHub did not sign you in: {reason[:200]}")
    code = request.query.get("code") or ""
    if not code or len(code) > 256:
        return _sign_in_page(request, 400, "GitHub sent no sign-in code: sign in again.")
    try:
        token = await exchange(dash.session(), dash.config.web_url, dash.config.client_id,
                               dash.config.client_secret, code, _callback_url(request, dash))
        found = await person(dash.session(), dash.config.api_url, token)
    except SignInError as exc:
        return _sign_in_page(request, 401, str(exc))
    _session, cookie = dash.sessions.start(
        "github", found.login, frozenset(name.lower() for name in found.repos), token)
    log.info("dashboard: %s signed in with GitHub", found.login)
    response = web.HTTPSeeOther(PREFIX)
    _set_cookie(response, COOKIE, cookie, MAX_AGE)
    response.del_cookie(STATE_COOKIE, path=PREFIX)
    return response


async def sign_out(request: web.Request) -> web.StreamResponse:
    dash = request.app[DASHBOARD]
    if not _same_origin(request):
        return _sign_in_page(request, 403, "That form did not come from this page.")
    session = dash.sessions.find(request.cookies.get(COOKIE))
    if session is not None:
        dash.sessions.end(session)
    response = web.HTTPSeeOther(f"{PREFIX}/signin")
    response.del_cookie(COOKIE, path=PREFIX)
    return response


async def stylesheet(request: web.Request) -> web.Response:
    css = files("bot.dashboard").joinpath("templates/dashboard.css").read_text()
    response = web.Response(text=css, content_type="text/css")
    response.headers["Cache-Control"] = "max-age=3600"
    response.headers["X-Content-Type-Options"] = "nosniff"
    return response


# -- mounting -------------------------------------------------------------------------------

def mount(app: web.Application, config: DashboardConfig, target: str, *,
          gitlab_url: str = "https://gitlab.com", metrics: Callable[[], dict] | None = None,
          clock: Callable[[], float] = time.time) -> Dashboard:
    """Serve the dashboard for the ledger at ``target`` on ``app`` (see the module docstring).
    The caller has checked ``config.problem_on`` for the address it listens on."""
    dash = Dashboard(config=config, target=target, sessions=Sessions(clock),
                     gitlab_url=gitlab_url.rstrip("/"), metrics=metrics)
    app[DASHBOARD] = dash
    router = app.router
    router.add_get(PREFIX, overview)
    router.add_get(PREFIX + "/", overview)
    router.add_get(PREFIX + "/signin", sign_in)
    router.add_post(PREFIX + "/signin", sign_in_with_token)
    router.add_post(PREFIX + "/signout", sign_out)
    router.add_get(PREFIX + "/oauth/start", oauth_start)
    router.add_get(PREFIX + "/oauth/callback", oauth_callback)
    router.add_get(PREFIX + "/dashboard.css", stylesheet)
    router.add_get(PREFIX + r"/repo/{repo:[^?#]+?}/pull/{number:\d{1,9}}", pull_request)
    router.add_get(PREFIX + r"/repo/{repo:[^?#]+}", repository)

    async def stop(app: web.Application) -> None:
        if dash.http is not None:
            await dash.http.close()
        if dash.reader is not None:
            dash.reader.close()

    app.on_cleanup.append(stop)
    return dash
