"""With a network-database ledger, the server never calls the ledger on the event loop.

The server is the real app on the fake GitHub, its ledger a SQLite ``Ledger`` wrapped to say
``threaded`` (as ``PostgresLedgerStore`` does) and to note every ledger call made on the event
loop's thread. Rounds, people's comments and replies, commands and ``/healthz`` then run; no
call may be on the loop, and many must have been made (in threads).
"""

from __future__ import annotations

import threading

import aiohttp

from bench.replay import payloads
from bot.server import app as app_module
from bot.store import open_queue_store
from bot.store.ledger_sqlite import Ledger
from tracker.store import LedgerStore

from .server_kit import HEAD2, NUMBER, REPO, ROUND2_FILES, open_pr, running_bot

GUARDED = {n for n, v in vars(LedgerStore).items() if callable(v) and not n.startswith("_")}


class LoopGuard:
    """A ledger that says ``threaded`` and records the ledger calls made on the loop thread."""

    threaded = True

    def __init__(self, inner: Ledger, loop_thread: threading.Thread):
        self.inner = inner
        self.loop_thread = loop_thread
        self.on_loop: list[str] = []
        self.off_loop = 0

    def __getattr__(self, name):
        attr = getattr(self.inner, name)
        if name not in GUARDED or name == "close":
            return attr

        def guarded(*args, **kwargs):
            if threading.current_thread() is self.loop_thread:
                self.on_loop.append(name)
            else:
                self.off_loop += 1
            return attr(*args, **kwargs)
        return guarded


async def test_rounds_comments_and_commands_call_a_threaded_ledger_off_the_loop(
        tmp_path, monkeypatch):
    guards: list[LoopGuard] = []

    def open_guarded(target: str) -> LoopGuard:
        guards.append(LoopGuard(Ledger(target), threading.current_thread()))
        return guards[-1]

    def open_queue(target: str, ledger: LoopGuard | None = None):
        # the queue's calls stay direct (on the loop), on a connection of their own: one
        # SQLite connection used at once from the loop and from the ledger's threads fails
        # now and then ("no such savepoint")
        return open_queue_store(target)

    monkeypatch.setattr(app_module, "open_ledger_store", open_guarded)
    monkeypatch.setattr(app_module, "open_queue_store", open_queue)
    async with running_bot(tmp_path, workers=1) as bot:
        open_pr(bot.fake)
        assert (await bot.pull_request("opened"))[0] == 202
        await bot.idle()
        assert bot.states() == {"D1": "New", "D2": "New"}
        root = bot.bot_comments("review")[0]
        reply = bot.fake.add_review_comment(REPO, NUMBER, "octocat", root["path"],
                                            root["line"], "done, fixed it",
                                            in_reply_to=root["id"])
        person = bot.fake.add_review_comment(REPO, NUMBER, "reviewer", "app/core.py", 6,
                                             "Should this reject a negative factor?")
        for comment in (reply, person):
            assert (await bot.deliver("pull_request_review_comment", payloads.review_comment(
                bot.fake, REPO, NUMBER, comment)))[0] == 202
        await bot.comment("octocat", "/roundwise status")
        bot.fake.push(REPO, NUMBER, HEAD2, ROUND2_FILES)
        assert (await bot.pull_request("synchronize"))[0] == 202
        await bot.idle()
        assert [r["status"] for r in bot.rounds()] == ["complete", "complete"]
        assert "D3" in bot.states()  # the person's comment became a defect
        assert all(j["status"] == "done" for j in bot.jobs())
        async with aiohttp.ClientSession() as session, session.get(
                f"{bot.url}/healthz") as resp:
            assert resp.status == 200
    [guard] = guards
    assert guard.on_loop == []
    assert guard.off_loop > 30
