"""The dashboard in a real browser: Playwright driving Debian's Chromium (``/usr/bin/chromium``,
which ``.ci/run`` installs) through the real server and the fake GitHub's OAuth flow.

A person who can access one of two repositories signs in with GitHub, sees only that one,
opens its pull request and reads the timeline the ledger holds; a stranger and a signed-out
browser see no repository name anywhere; a forged or expired cookie gets the sign-in page.
Skipped, with the reason, where Chromium or Playwright is missing.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from bot.dashboard.routes import DASHBOARD
from bot.dashboard.sessions import COOKIE, MAX_AGE

from .server_kit import NUMBER, REPO
from .test_dashboard import OTHER, ledger_of_two, timeline

CHROMIUM = Path("/usr/bin/chromium")
playwright_api = pytest.importorskip("playwright.async_api",
                                     reason="needs playwright (pip install -e '.[test]')")
pytestmark = pytest.mark.skipif(not CHROMIUM.exists() or shutil.which(str(CHROMIUM)) is None,
                                reason="needs Debian's Chromium at /usr/bin/chromium "
                                       "(apt-get install chromium; .ci/run does)")


class Browser:
    """One Chromium for a test; ``page()`` opens a fresh profile (no cookies)."""

    def __init__(self, bot):
        self.bot = bot

    async def __aenter__(self):
        self._pw = await playwright_api.async_playwright().start()
        self._browser = await self._pw.chromium.launch(
            executable_path=str(CHROMIUM), args=["--no-sandbox", "--disable-gpu"])
        return self

    async def __aexit__(self, *exc):
        await self._browser.close()
        await self._pw.stop()

    async def page(self):
        context = await self._browser.new_context()
        return context, await context.new_page()


async def seen(page) -> str:
    """Everything the browser holds of the page: its markup and its text."""
    return await page.content() + await page.inner_text("body")


def no_names(text: str) -> bool:
    return not any(name in text for name in ("widgets", "secret-plans", "octo/", "acme"))


async def test_a_person_signs_in_sees_one_repository_and_its_timeline(tmp_path):
    async with ledger_of_two(tmp_path) as bot, Browser(bot) as browser:
        bot.fake.signed_in = "alice"
        _context, page = await browser.page()
        await page.goto(f"{bot.url}/dashboard")
        assert no_names(await seen(page))
        await page.click("text=Sign in with GitHub")  # through the fake GitHub and back
        await page.wait_for_url(f"{bot.url}/dashboard")
        text = await seen(page)
        assert REPO in text and "secret-plans" not in text
        await page.click(f"text={REPO}")
        await page.wait_for_url(f"**/dashboard/repo/{REPO}")
        await page.click("text=Scale values")
        await page.wait_for_url(f"**/dashboard/repo/{REPO}/pull/{NUMBER}")
        pr = bot.ledger.find_pull_request(REPO, NUMBER)
        assert timeline(await page.content()) == bot.ledger.states_by_round(pr["id"])
        await page.click("td.cell.resolved summary")  # a cell opens on its evidence
        assert await page.locator("td.cell.resolved dl").first.is_visible()
        await page.goto(f"{bot.url}/dashboard/repo/{OTHER}/pull/{NUMBER}")
        assert no_names((await seen(page)).replace(REPO, ""))
        await page.screenshot(path=str(tmp_path / "pull.png"))


async def test_strangers_and_signed_out_browsers_get_nothing(tmp_path):
    async with ledger_of_two(tmp_path) as bot, Browser(bot) as browser:
        _context, signed_out = await browser.page()
        for path in ("/dashboard", f"/dashboard/repo/{REPO}",
                     f"/dashboard/repo/{OTHER}/pull/{NUMBER}"):
            answer = await signed_out.goto(f"{bot.url}{path}")
            assert answer.status == 401 and no_names(await seen(signed_out)), path
        bot.fake.signed_in = "bob"  # a GitHub account with no installation of the App
        _context, stranger = await browser.page()
        await stranger.goto(f"{bot.url}/dashboard/signin")
        await stranger.click("text=Sign in with GitHub")
        await stranger.wait_for_url(f"{bot.url}/dashboard")
        assert "No repository you can see" in await seen(stranger)
        for path in (f"/dashboard/repo/{REPO}", f"/dashboard/repo/{OTHER}/pull/{NUMBER}"):
            answer = await stranger.goto(f"{bot.url}{path}")
            assert answer.status == 404 and no_names(await seen(stranger)), path


async def test_a_forged_or_expired_cookie_is_refused(tmp_path):
    async with ledger_of_two(tmp_path) as bot, Browser(bot) as browser:
        bot.fake.signed_in = "alice"
        context, page = await browser.page()
        await page.goto(f"{bot.url}/dashboard/signin")
        await page.click("text=Sign in with GitHub")
        await page.wait_for_url(f"{bot.url}/dashboard")
        [cookie] = [c for c in await context.cookies() if c["name"] == COOKIE]
        assert cookie["httpOnly"] and cookie["secure"] and cookie["sameSite"] == "Lax"
        forged = {**cookie, "value": cookie["value"][:-3] + "AAA"}
        _other, thief = await browser.page()
        await _other.add_cookies([forged])
        answer = await thief.goto(f"{bot.url}/dashboard")
        assert answer.status == 401 and no_names(await seen(thief))
        bot.app[DASHBOARD].sessions.clock = lambda: time.time() + MAX_AGE + 5
        answer = await page.goto(f"{bot.url}/dashboard")
        assert answer.status == 401 and no_names(await seen(page))
