"""``roundwise bench mine`` against the fake GitHub serving a recorded-shape PR history.

PR 1 was reviewed on its first head, force-pushed, reviewed again and merged (threads and
reviews served two per page); PR 2 was closed with no review; PR 3 is still open. The miner
reads them with a personal access token through the App's client, over HTTP.
"""

from __future__ import annotations

import asyncio
import json

import aiohttp

from bench.fake_github import FakeGitHub
from bench.tasks.mcr import load_task
from bench.tasks.mine import Miner, TokenApp, parse_prs
from roundwise.cli import main

from .server_kit import app_keys

REPO = "octo/hist"
BASE = "b" * 40
H1, H2 = "1" * 40, "2" * 40
BASE_FILES = {"app.py": "def f(x):\n    return x\n"}
HEAD1 = {"app.py": "def f(x):\n    y = x\n    z = 1\n    foo = y + z\n    return foo\n"}
HEAD2 = {"app.py": "def f(x):\n    y = int(x)\n    z = 1\n    foo = y + z\n    return foo\n"}
H = "human-signal"


class Clock:
    def __init__(self):
        self.now = 1_700_000_000.0

    def __call__(self):
        return self.now

    def tick(self):
        self.now += 60


def history(fake: FakeGitHub, clock: Clock) -> dict[str, int]:
    """The recorded PRs; returns the ids of the thread roots."""
    fake.add_installation(77, "octo")
    fake.add_repo(REPO, 77)
    fake.add_personal_token("pat-1", REPO)
    fake.add_pr(REPO, 1, "Parse input", "", "sam", "main", BASE, BASE_FILES)
    fake.push(REPO, 1, H1, HEAD1)
    clock.tick()
    a = fake.add_review_comment(REPO, 1, "rina", "app.py", 2, "`y` is never validated.")
    clock.tick()
    b = fake.add_review_comment(REPO, 1, "rina", "app.py", 4, "Rename `foo`, it says nothing.")
    clock.tick()
    fake.add_review(REPO, 1, "rina", "REQUEST_CHANGES", "Two things.")
    clock.tick()
    d = fake.add_review_comment(REPO, 1, "sam", "app.py", 3, "note to self: constant")
    clock.tick()
    fake.push(REPO, 1, H2, HEAD2, force=True)  # rewrites H1 away
    clock.tick()
    fake.add_review_comment(REPO, 1, "rina", "app.py", 5, "Still unclear: `foo` is there.",
                            in_reply_to=b["id"])
    clock.tick()
    fake.resolve_thread(REPO, 1, a["id"], "rina")
    c = fake.add_review_comment(REPO, 1, "rina", "app.py", 3, "Make `z` a named constant.")
    clock.tick()
    fake.add_review(REPO, 1, "rina", "APPROVE", "")
    fake.close_pr(REPO, 1, merged=True)
    clock.tick()
    fake.add_pr(REPO, 2, "Typo", "", "sam", "main", BASE, BASE_FILES)
    fake.push(REPO, 2, "4" * 40, {"app.py": "def f(x):\n    return  x\n"})
    fake.close_pr(REPO, 2, merged=False)
    clock.tick()
    fake.add_pr(REPO, 3, "WIP", "", "sam", "main", BASE, BASE_FILES)
    fake.push(REPO, 3, "5" * 40, {"app.py": "def f(x):\n    return x + 0\n"})
    return {"a": a["id"], "b": b["id"], "c": c["id"], "d": d["id"]}


async def test_mine_builds_tasks_from_paginated_history(tmp_path):
    clock = Clock()
    async with FakeGitHub(4242, app_keys()[1], clock=clock) as fake:
        ids = history(fake, clock)
        async with aiohttp.ClientSession() as session:
            client = TokenApp(session, "pat-1", fake.url).repo(0, REPO)
            miner = Miner(client, tmp_path, page_size=2, progress=False)
            numbers = await miner.numbers(since="2023-01-01")
            assert numbers == [1, 2, 3]  # GET /pulls, every page, oldest first
            result = await miner.run(numbers)
            assert result["written"] == [1]
            assert result["skipped"] == {"2": "no reviews", "3": "still open"}
            calls = [r.path for r in fake.requests]
            # 7 reviews (each comment comes in a one-comment review, as from the web UI, plus
            # CHANGES_REQUESTED and APPROVED), 2 a page: 4 pages, following Link.
            assert sum("/pulls/1/reviews" in p for p in calls) == 4
            graphql_pr1 = [r for r in fake.requests if r.path == "/graphql"]
            assert len(graphql_pr1) == 2  # 4 threads, 2 a page

            before = len(fake.requests)
            again = await miner.run(numbers)  # resumable: nothing read again
            assert (again["written"], again["resumed"]) == ([], [1, 2, 3])
            assert len(fake.requests) == before

    task = load_task(tmp_path / "octo__hist-1.json")
    data = json.loads((tmp_path / "octo__hist-1.json").read_text())
    # Rounds: H1 (reviewed, then force-pushed away) and H2 (reviewed, merged).
    assert [r.head_sha for r in task.rounds] == [H1, H2]
    assert [r["force_pushed"] for r in data["rounds"]] == [True, False]
    assert task.round(1).files == HEAD1 and task.round(2).files == HEAD2
    assert "+    y = int(x)" in task.round(2).diff
    assert [(e["kind"], e["author"], e.get("line")) for e in task.round(1).events
            if e["kind"] == "review_comment"] == \
        [("review_comment", "rina", 2), ("review_comment", "rina", 4),
         ("review_comment", "sam", 3)]
    assert [(e["kind"], e["state"]) for e in task.round(1).events if e["kind"] == "review"] \
        == [("review", "CHANGES_REQUESTED")]
    assert [(e["author"], e["in_reply_to"]) for e in task.round(2).events
            if e["kind"] == "review_comment"] == [("rina", ids["b"]), ("rina", None)]
    # Cards from rina's threads (sam's own note is not one): A resolved after its line
    # changed; B disputed after the push; C raised on the second head, still open.
    cards = {c["comment_ids"][0]: (c["raised_in_round"], c["states"], c["label_sources"],
                                   c["line_end"]) for c in task.defects}
    assert cards == {
        ids["a"]: (1, ["New", "Resolved"], [H, H], 2),
        ids["b"]: (1, ["New", "Open"], [H, H], 4),
        ids["c"]: (2, [None, "New"], [None, H], 3),
    }
    assert not (tmp_path / "octo__hist-2.json").exists()


async def test_mine_command_with_a_token(tmp_path, monkeypatch, capsys):
    clock = Clock()
    async with FakeGitHub(4242, app_keys()[1], clock=clock) as fake:
        history(fake, clock)
        monkeypatch.setenv("GITHUB_TOKEN", "pat-1")
        monkeypatch.setenv("GITHUB_API_URL", fake.url)
        out = tmp_path / "mined"
        code = await asyncio.to_thread(main, ["bench", "mine", "--repo", REPO, "--prs", "1-3",
                                              "--out", str(out), "--quiet"])
        assert code == 0
        assert sorted(p.name for p in out.iterdir()) == ["mine-skipped.json",
                                                          "octo__hist-1.json"]
        assert json.loads((out / "mine-skipped.json").read_text()) == \
            {"2": "no reviews", "3": "still open"}
        assert "1 task(s) written" in capsys.readouterr().out
        # Again with a token that no longer works: everything is resumed, nothing is read.
        monkeypatch.setenv("GITHUB_TOKEN", "revoked")
        code = await asyncio.to_thread(main, ["bench", "mine", "--repo", REPO, "--prs", "1-3",
                                              "--out", str(out), "--quiet"])
        assert code == 0
        printed = capsys.readouterr().out
        assert "0 task(s) written" in printed and "3 already done" in printed
        assert "skipped #2: no reviews" in printed
    assert list(parse_prs("4-6")) == [4, 5, 6] and list(parse_prs("9")) == [9]
