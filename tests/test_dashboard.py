"""The dashboard through the real server, the real ledger and the fake GitHub's OAuth flow.

Two repositories in two installations get real rounds through signed webhooks; then people
look: signed out, as a person who can access one of them, as a stranger, with the operator's
token, and with forged, expired and stale cookies. No answer to anyone without access names
a repository they may not see. (The same in a browser: ``test_dashboard_browser``.)
"""

from __future__ import annotations

import asyncio
import re
import time
from contextlib import asynccontextmanager
from urllib.parse import parse_qs, urlsplit

import aiohttp
import pytest

from bot.config.dashboard import DashboardConfig, DashboardError
from bot.dashboard.routes import DASHBOARD
from bot.dashboard.sessions import COOKIE, MAX_AGE, RECHECK, STATE_COOKIE

from .server_kit import HEAD2, INSTALLATION, NUMBER, REPO, ROUND2_FILES, open_pr, running_bot

OTHER = "acme/secret-plans"
OTHER_INSTALLATION = 88
CLIENT_ID = "Iv23liDashboardTest"
SECRET = "s3cret-client-secret"
TOKEN = "operator-token-0123456789"


def settings(fake, **extra) -> DashboardConfig:
    fake.oauth_app(CLIENT_ID, SECRET)
    return DashboardConfig(client_id=CLIENT_ID, client_secret=SECRET, token=TOKEN,
                           api_url=fake.url, **extra)


@asynccontextmanager
async def ledger_of_two(tmp_path, **extra):
    """The server with two reviewed pull requests, one in each installation, and the people:
    alice can access the first installation, bob nothing of this App."""
    async with running_bot(tmp_path, dashboard=lambda fake: settings(fake, **extra)) as bot:
        open_pr(bot.fake)
        bot.fake.add_installation(OTHER_INSTALLATION, "acme")
        open_pr(bot.fake, repo=OTHER)
        for repo in (REPO, OTHER):
            await bot.pull_request("opened", repo=repo)
        await bot.idle()
        bot.fake.push(REPO, NUMBER, HEAD2, ROUND2_FILES)
        await bot.pull_request("synchronize")
        await bot.idle()
        bot.fake.add_person("alice", {INSTALLATION: [REPO]})
        bot.fake.add_person("bob", {})
        yield bot


async def get(bot, path: str, cookie: str | None = None, **headers) -> tuple[int, str]:
    if cookie:
        headers["Cookie"] = f"{COOKIE}={cookie}"
    async with aiohttp.ClientSession() as fresh, \
            fresh.get(f"{bot.url}{path}", headers=headers, allow_redirects=False) as resp:
        return resp.status, await resp.text()


async def sign_in(bot, login: str | None) -> tuple[int, str, dict]:
    """The whole web flow as a browser runs it, without one: our start, GitHub's authorise
    page, our callback. The session cookie (or the page shown instead) and the cookies set."""
    bot.fake.signed_in = login
    async with aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar()) as browser:
        async with browser.get(f"{bot.url}/dashboard/oauth/start",
                               allow_redirects=False) as resp:
            assert resp.status == 302
            state_cookie = resp.cookies[STATE_COOKIE]
            assert state_cookie["httponly"] and state_cookie["secure"]
            authorize = resp.headers["Location"]
        async with browser.get(authorize, allow_redirects=False) as resp:
            assert resp.status == 302
            callback = resp.headers["Location"]
        async with browser.get(callback, allow_redirects=False,
                               headers={"Cookie": f"{STATE_COOKIE}={state_cookie.value}"}
                               ) as resp:
            return resp.status, await resp.text(), {k: v for k, v in resp.cookies.items()}


async def session_of(bot, login: str) -> str:
    status, _page, cookies = await sign_in(bot, login)
    assert status == 303, _page
    cookie = cookies[COOKIE]
    assert cookie["httponly"] and cookie["secure"] and cookie["samesite"] == "Lax"
    assert cookie["path"] == "/dashboard"
    return cookie.value


def timeline(page: str) -> dict[str, dict[int, str]]:
    """The pull request page's grid: defect key -> round -> the state its cell shows."""
    heads = [int(n) for n in re.findall(r'<th class="round"[^>]*>R(\d+)</th>', page)]
    out = {}
    for row in page.split("<tr>")[2:]:
        key = re.search(r"<strong>(D\d+)</strong>", row).group(1)
        cells = re.findall(r'<td class="cell (\w+)', row)
        out[key] = {n: state.capitalize() for n, state in zip(heads, cells, strict=True)
                    if state != "none"}
    return out


PAGES = ["/dashboard", f"/dashboard/repo/{REPO}", f"/dashboard/repo/{OTHER}",
         f"/dashboard/repo/{REPO}/pull/{NUMBER}", f"/dashboard/repo/{OTHER}/pull/{NUMBER}"]


def names_in(text: str) -> set[str]:
    return {name for name in ("widgets", "secret-plans", "octo/", "acme") if name in text}


async def test_signed_out_and_strangers_get_nothing(tmp_path):
    async with ledger_of_two(tmp_path) as bot:
        for path in PAGES:
            status, text = await get(bot, path)
            assert status == 401 and "Sign in with GitHub" in text, path
            assert names_in(text) == set(), path
            status, text = await get(bot, path, Authorization="Bearer not-the-token-at-all")
            assert status == 401 and names_in(text) == set(), path
        bob = await session_of(bot, "bob")  # signed in, but no installation of the App
        status, text = await get(bot, "/dashboard", bob)
        assert status == 200 and "No repository you can see" in text
        for path in PAGES[1:]:
            status, text = await get(bot, path, bob)
            assert status == 404 and names_in(text) == set(), path


async def test_a_person_sees_only_the_repositories_they_can_access(tmp_path):
    async with ledger_of_two(tmp_path) as bot:
        alice = await session_of(bot, "alice")
        status, text = await get(bot, "/dashboard", alice)
        assert status == 200 and REPO in text and "secret-plans" not in text
        status, text = await get(bot, f"/dashboard/repo/{REPO}", alice)
        assert status == 200 and "Scale values" in text
        status, text = await get(bot, f"/dashboard/repo/{REPO}/pull/{NUMBER}", alice)
        assert status == 200
        # the timeline holds the ledger's states, round by round (a defect resolved at 2)
        pr = bot.ledger.find_pull_request(REPO, NUMBER)
        ledger = bot.ledger.states_by_round(pr["id"])
        assert timeline(text) == ledger
        assert "Resolved" in {state for rounds in ledger.values() for state in rounds.values()}
        for path in (f"/dashboard/repo/{OTHER}", f"/dashboard/repo/{OTHER}/pull/{NUMBER}",
                     "/dashboard?q=secret"):
            status, text = await get(bot, path, alice)
            assert "secret-plans" not in text, path
        # the same name in another case is the same repository on GitHub
        status, _ = await get(bot, f"/dashboard/repo/{REPO.upper()}", alice)
        assert status in (200, 404)


async def test_access_is_asked_again_after_an_hour(tmp_path):
    async with ledger_of_two(tmp_path) as bot:
        alice = await session_of(bot, "alice")
        sessions = bot.app[DASHBOARD].sessions
        bot.fake.revoke("alice", INSTALLATION)
        status, text = await get(bot, "/dashboard", alice)
        assert REPO in text  # within the hour, what GitHub said at sign-in stands
        sessions.clock = lambda: time.time() + RECHECK + 5
        status, text = await get(bot, "/dashboard", alice)
        assert status == 200 and REPO not in text
        status, _ = await get(bot, f"/dashboard/repo/{REPO}", alice)
        assert status == 404
        bot.fake.expire_user_tokens()  # GitHub no longer takes the token: signed out
        sessions.clock = lambda: time.time() + 2 * RECHECK + 10
        status, text = await get(bot, "/dashboard", alice)
        assert status == 401 and names_in(text) == set()


async def test_forged_expired_and_unknown_cookies_are_refused(tmp_path):
    async with ledger_of_two(tmp_path) as bot:
        alice = await session_of(bot, "alice")
        assert (await get(bot, "/dashboard", alice))[0] == 200
        body, _, signature = alice.rpartition(".")
        forged = [alice[:-2] + ("AA" if not alice.endswith("AA") else "BB"),
                  f"{body}.{signature[::-1]}", "x" * 40, alice + "x" * 600]
        from itsdangerous import URLSafeTimedSerializer

        forged.append(URLSafeTimedSerializer("guessed-key", salt="roundwise-dashboard-session")
                      .dumps("some-session"))
        for cookie in forged:
            status, text = await get(bot, "/dashboard", cookie)
            assert status == 401 and names_in(text) == set()
        bot.app[DASHBOARD].sessions.clock = lambda: time.time() + MAX_AGE + 5
        status, text = await get(bot, "/dashboard", alice)
        assert status == 401 and names_in(text) == set()


async def test_github_refusals_end_on_the_sign_in_page(tmp_path):
    async with ledger_of_two(tmp_path) as bot:
        bot.fake.deny_next()  # the person pressed Cancel on GitHub
        status, text, cookies = await sign_in(bot, "alice")
        assert status == 401 and "denied your application access" in text
        assert COOKIE not in cookies
        # a code GitHub does not know: 200 with bad_verification_code, shown as a refusal
        status, text = await get(bot, "/dashboard/oauth/start")
        async with aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar()) as browser:
            async with browser.get(f"{bot.url}/dashboard/oauth/start",
                                   allow_redirects=False) as resp:
                state_cookie = resp.cookies[STATE_COOKIE].value
                state = parse_qs(urlsplit(resp.headers["Location"]).query)["state"][0]
            jar = {"Cookie": f"{STATE_COOKIE}={state_cookie}"}
            async with browser.get(f"{bot.url}/dashboard/oauth/callback?code=made-up&"
                                   f"state={state}", headers=jar,
                                   allow_redirects=False) as resp:
                assert resp.status == 401
                assert "incorrect or expired" in await resp.text()
            # a state that is not the one this browser was given
            async with browser.get(f"{bot.url}/dashboard/oauth/callback?code=x&state=other",
                                   headers=jar, allow_redirects=False) as resp:
                assert resp.status == 400 and COOKIE not in resp.cookies
        assert [r for r in bot.fake.requests if r.path == "/login/oauth/access_token"]


async def test_the_operator_token(tmp_path):
    async with ledger_of_two(tmp_path) as bot:
        status, text = await get(bot, "/dashboard", Authorization=f"Bearer {TOKEN}")
        assert status == 200 and REPO in text and OTHER in text
        async with aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar()) as browser:
            async with browser.post(f"{bot.url}/dashboard/signin", data={"token": "wrong" * 5},
                                    allow_redirects=False) as resp:
                assert resp.status == 401 and COOKIE not in resp.cookies
            async with browser.post(f"{bot.url}/dashboard/signin", data={"token": TOKEN},
                                    headers={"Origin": "https://evil.example"},
                                    allow_redirects=False) as resp:
                assert resp.status == 403 and COOKIE not in resp.cookies
            async with browser.post(f"{bot.url}/dashboard/signin", data={"token": TOKEN},
                                    headers={"Origin": bot.url},
                                    allow_redirects=False) as resp:
                assert resp.status == 303
                cookie = resp.cookies[COOKIE].value
        status, text = await get(bot, f"/dashboard/repo/{OTHER}/pull/{NUMBER}", cookie)
        assert status == 200 and "Scale values" in text


async def test_pages_filter_page_and_refuse_bad_parameters(tmp_path):
    async with ledger_of_two(tmp_path) as bot:
        auth = {"Authorization": f"Bearer {TOKEN}"}
        status, text = await get(bot, "/dashboard?q=widg", **auth)
        assert REPO in text and OTHER not in text
        status, text = await get(bot, f"/dashboard/repo/{REPO}?status=merged", **auth)
        assert status == 200 and "No pull request matches" in text
        status, text = await get(bot, f"/dashboard/repo/{REPO}?since=2999-01-01", **auth)
        assert status == 200 and "No pull request matches" in text
        pr = bot.ledger.find_pull_request(REPO, NUMBER)
        now = {d.key: str(d.state) for d in bot.ledger.defects(pr["id"])}
        for state in ("Open", "Resolved"):
            status, text = await get(bot, f"/dashboard/repo/{REPO}/pull/{NUMBER}?state={state}",
                                     **auth)
            assert set(timeline(text)) == {k for k, v in now.items() if v == state}
        status, text = await get(bot, f"/dashboard/repo/{REPO}/pull/{NUMBER}?state=Reopened",
                                 **auth)
        assert status == 200 and "No defect is Reopened now" in text
        for bad in ("?page=0", "?page=x", "?status=<script>", "?since=yesterday"):
            status, text = await get(bot, f"/dashboard/repo/{REPO}{bad}", **auth)
            assert status == 400 and "<script>" not in text, bad
        status, _ = await get(bot, "/dashboard?host=bitbucket", **auth)
        assert status == 400
        async with aiohttp.ClientSession() as s, s.get(f"{bot.url}/dashboard",
                                                       headers=auth) as resp:
            policy = resp.headers["Content-Security-Policy"]
            assert "script-src" not in policy and "default-src 'none'" in policy
            assert resp.headers["Cache-Control"] == "no-store"


def test_settings_are_checked():
    with pytest.raises(DashboardError, match="both GITHUB_CLIENT_ID and GITHUB_CLIENT_SECRET"):
        DashboardConfig.from_env({"GITHUB_CLIENT_ID": "Iv23li0"})
    with pytest.raises(DashboardError, match="shorter than 16"):
        DashboardConfig.from_env({"ROUNDWISE_DASHBOARD_TOKEN": "short"})
    open_one = DashboardConfig.from_env({})
    assert open_one.problem_on("127.0.0.1") is None and open_one.problem_on("::1") is None
    assert "listen on 127.0.0.1" in open_one.problem_on("0.0.0.0")
    assert DashboardConfig.from_env({"ROUNDWISE_DASHBOARD_TOKEN": "x" * 16}) \
        .problem_on("0.0.0.0") is None
    assert DashboardConfig(api_url="https://ghe.example/api/v3").web_url == \
        "https://ghe.example"


async def test_serve_leaves_an_open_dashboard_off_a_public_address(tmp_path):
    from bot.server.app import create_app

    from .server_kit import config_for

    async with running_bot(tmp_path) as bot:
        public = create_app(config_for(bot.fake, tmp_path / "other.db"), start_workers=False,
                            listen_host="0.0.0.0")
        assert DASHBOARD not in public
        local = create_app(config_for(bot.fake, tmp_path / "third.db"), start_workers=False)
        assert DASHBOARD in local
        await asyncio.sleep(0)


async def test_the_check_runs_details_link_opens_the_pull_requests_page(tmp_path):
    async with ledger_of_two(tmp_path, public_url="https://rw.example") as bot:
        runs = bot.fake.check_runs(REPO, HEAD2)
        assert runs and {run["details_url"] for run in runs} == \
            {f"https://rw.example/dashboard/repo/{REPO}/pull/{NUMBER}"}
    async with ledger_of_two(tmp_path / "without") as bot:  # no public URL: GitHub's default
        assert all(not run["details_url"] for run in bot.fake.check_runs(REPO, HEAD2))


def test_the_dashboard_command_refuses_what_it_cannot_serve(tmp_path, monkeypatch, capsys):
    from roundwise.cli import main

    for name in ("GITHUB_CLIENT_ID", "GITHUB_CLIENT_SECRET", "ROUNDWISE_DASHBOARD_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)  # no .env here
    assert main(["dashboard", "--db", str(tmp_path / "missing.db")]) == 2
    assert "no ledger at" in capsys.readouterr().err
    from bot.store.ledger_sqlite import Ledger

    Ledger(tmp_path / "ledger.db").close()
    assert main(["dashboard", "--db", str(tmp_path / "ledger.db"), "--host", "0.0.0.0"]) == 2
    assert "listen on 127.0.0.1" in capsys.readouterr().err
    monkeypatch.setenv("ROUNDWISE_DASHBOARD_TOKEN", "short")
    assert main(["dashboard", "--db", str(tmp_path / "ledger.db")]) == 2
    assert "shorter than 16" in capsys.readouterr().err


def test_the_dashboard_command_refuses_a_file_that_is_no_ledger(tmp_path, monkeypatch, capsys):
    from roundwise.cli import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.db").write_text("not a database")
    assert main(["dashboard", "--db", str(tmp_path / "notes.db")]) == 2
    assert "the ledger cannot be read (DatabaseError" in capsys.readouterr().err


async def test_the_repository_page_shows_the_confidence_people_s_verdicts_give(tmp_path):
    from bot.dashboard.views import confidence_rows
    from tracker import calibration

    async with ledger_of_two(tmp_path) as bot:
        auth = {"Authorization": f"Bearer {TOKEN}"}
        status, text = await get(bot, f"/dashboard/repo/{REPO}", **auth)
        assert "Confidence here" not in text  # nothing judged yet
        pr = bot.ledger.find_pull_request(REPO, NUMBER)
        [row] = [h for h in bot.ledger.history(pr["id"], "D1") if h["round"] == 2]
        d1 = bot.ledger.defect(pr["id"], "D1")
        bot.ledger.replace_verdicts(pr["id"], [
            {"pr_id": pr["id"], "defect_id": d1.id, "defect_key": "D1", "round": 2,
             "kind": "state", "transition": f"New→{row['state']}", "rule": row["rule"],
             "verdict": "contradicted", "signal": "thread unresolved", "signal_round": 2,
             "by": "rita", "evidence": "", "decided_at": row["at"], "at": row["at"]}] * 3)
        status, text = await get(bot, f"/dashboard/repo/{REPO}", **auth)
        assert status == 200 and "Confidence here" in text
        [shown] = confidence_rows([{"rule": row["rule"], "confirmed": 0, "contradicted": 3}])
        table = calibration.current()
        assert shown["here"] < shown["development"] == table.rule_rate(row["rule"])
        assert f"{shown['here'] * 100:.0f}%" in text and f"<code>{row['rule']}</code>" in text
