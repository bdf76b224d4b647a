"""Every file of a big pull request is reviewed, and padding cannot pass the gate (issue 40,
items 1 and 2), through the real server and the fake GitHub.

GitHub refuses the diff past 300 files (406) and lists up to 3,000 files, 100 a page with Link
headers; the fake does the same. A 400-file PR is reviewed whole from its files list, page by
page. A round that could not review every file (the bot's caps, no patch from GitHub, beyond the
3,000 GitHub lists) says which in its summary and check run, and its check never passes
``fail_on``: it concludes ``action_required`` (or the repository's ``partial_review``).
"""

from __future__ import annotations

import pytest

from bot.config.bounds import ReviewLimits, binary_paths, bound_listed
from bot.forge.coverage import BINARY, CAPS, NO_PATCH, Unreviewed
from bot.pr.unreviewed import gate

from .server_kit import BASE_FILES, BASE_SHA, HEAD1, INSTALLATION, NUMBER, REPO, running_bot

CLEAN = "def f{i}(a):\n    return a + {i}\n"
REAL = "src/zz_real.py"  # sorts after every padding file
REAL_TEXT = "def g(a):\n    print('debug', a)\n    return a\n"  # a debug print: Minor


def padding(count: int) -> dict[str, str]:
    return {f"pad/p{i:04d}.py": CLEAN.format(i=i) for i in range(count)}


def setup_pr(fake, files: dict[str, str], settings: str = "") -> None:
    fake.add_installation(INSTALLATION, REPO.split("/")[0])
    fake.add_repo(REPO, INSTALLATION,
                  files={".github/roundwise.yml": settings} if settings else {})
    fake.add_pr(REPO, NUMBER, "Big change", "Many files.", "sam", "main", BASE_SHA, BASE_FILES)
    fake.push(REPO, NUMBER, HEAD1, files)


def the_check(bot) -> dict:
    [run] = [r for r in bot.fake.check_runs(REPO, HEAD1) if r["name"] == "roundwise"]
    assert run["status"] == "completed"
    return run


async def review(bot) -> tuple[dict, str]:
    assert (await bot.pull_request("opened"))[0] == 202
    await bot.idle(120)
    assert [r["status"] for r in bot.rounds()] == ["complete"]
    [summary] = bot.bot_comments()
    return the_check(bot), summary["body"]


async def test_a_400_file_pr_has_all_its_files_reviewed(tmp_path):
    async with running_bot(tmp_path) as bot:
        setup_pr(bot.fake, {**padding(399), REAL: REAL_TEXT})
        check, summary = await review(bot)
        # GitHub's diff was refused (406, past 300 files): the files list, 100 a page
        pages = bot.calls("GET", rf"/pulls/{NUMBER}/files")
        assert sorted(int(p.query.get("page", 1)) for p in pages) == [1, 2, 3, 4]
        assert all(p.query.get("per_page") == "100" for p in pages)
        found = {c["path"] for c in bot.fake.review_comments(REPO, NUMBER)}
        assert REAL in found  # the 400th file, in sorted order
        assert "not reviewed" not in summary and "not reviewed" not in check["output"]["title"]


async def test_the_files_pages_are_decoded_off_the_event_loop(tmp_path, monkeypatch):
    """A page of 100 patches is megabytes of JSON; ``json`` holds the thread that decodes
    it, so a page decoded on the loop held every delivery and ``/healthz`` meanwhile."""
    import threading

    from bot.github import files

    real = files._page
    decoded_on: list[str] = []

    def watched(status, headers, body):
        decoded_on.append(threading.current_thread().name)
        return real(status, headers, body)

    monkeypatch.setattr(files, "_page", watched)
    async with running_bot(tmp_path) as bot:
        setup_pr(bot.fake, {**padding(299), REAL: REAL_TEXT, "src/zz_other.py": CLEAN})
        await review(bot)
    assert len(decoded_on) == 4, decoded_on  # 301 files, 100 a page
    assert threading.main_thread().name not in decoded_on


async def test_padding_past_the_cap_never_passes_fail_on(tmp_path):
    """300 one-line files before the real one push it past a 300-file cap: the check is not
    ``success`` but ``action_required``, naming the real file; alone, the file fails it."""
    limits = ReviewLimits(max_files=300)
    async with running_bot(tmp_path / "padded", review_limits=limits) as bot:
        setup_pr(bot.fake, {**padding(300), REAL: REAL_TEXT}, "fail_on: Minor\n")
        check, summary = await review(bot)
        assert bot.fake.review_comments(REPO, NUMBER) == []  # the print was never seen
        assert check["conclusion"] == "action_required"
        assert check["output"]["title"].startswith("1 file not reviewed")
        assert f"<code>{REAL}</code>: over the bot's caps" in check["output"]["summary"]
        assert "1 changed file was not reviewed" in summary and f"<code>{REAL}</code>" in summary
    async with running_bot(tmp_path / "alone", review_limits=limits) as bot:
        setup_pr(bot.fake, {REAL: REAL_TEXT}, "fail_on: Minor\n")
        check, summary = await review(bot)
        assert check["conclusion"] == "failure"
        assert "not reviewed" not in summary


async def test_partial_review_neutral_and_no_fail_on_are_never_success(tmp_path):
    limits = ReviewLimits(max_files=2)
    for name, settings, expected in (("neutral", "fail_on: Major\npartial_review: neutral\n",
                                      "neutral"),
                                     ("none", "", "neutral")):
        async with running_bot(tmp_path / name, review_limits=limits) as bot:
            setup_pr(bot.fake, padding(3), settings)
            check, _ = await review(bot)
            assert check["conclusion"] == expected
            assert "<code>pad/p0002.py</code>" in check["output"]["summary"]


async def test_files_github_will_not_list_or_diff_keep_the_gate_shut(tmp_path):
    """Past the 3,000 files GitHub lists, and a file GitHub sends no patch for: named (or
    counted) in the summary and the check, which concludes ``action_required``."""
    files = padding(3004)
    async with running_bot(tmp_path) as bot:
        setup_pr(bot.fake, files, "fail_on: Critical\n")
        bot.fake.omit_patch(REPO, NUMBER, "pad/p0007.py")
        check, summary = await review(bot)
        assert check["conclusion"] == "action_required"
        text = check["output"]["summary"]
        assert "<code>pad/p0007.py</code>: no patch from GitHub" in text
        assert "4 more that GitHub does not list" in text and "4 more that GitHub" in summary
        assert check["output"]["title"].startswith("5 files not reviewed")


def test_bounds_name_what_they_cut_and_binary_files():
    diff = ("diff --git a/logo.png b/logo.png\nBinary files a/logo.png and b/logo.png differ\n"
            "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x\n+y\n"
            'diff --git "a/\\033b.py" "b/\\033b.py"\n--- "a/\\033b.py"\n+++ "b/\\033b.py"\n'
            "@@ -1 +1 @@\n-x\n+y\n")
    assert binary_paths(diff) == ["logo.png"]
    kept, note, cut = bound_listed(diff, ReviewLimits(max_files=2))
    assert cut == ["\x1bb.py"] and "1 changed file" in note and "a/a.py" in kept


@pytest.mark.parametrize("result, fail_on, left, partial, expected", [
    ("success", "Minor", [Unreviewed("a", CAPS)], None, "action_required"),
    ("neutral", "Minor", [Unreviewed("a", NO_PATCH)], "neutral", "neutral"),
    ("success", "Minor", [Unreviewed("a", CAPS)], "failure", "failure"),
    ("failure", "Minor", [Unreviewed("a", CAPS)], "neutral", "failure"),
    ("success", None, [Unreviewed("a", CAPS)], None, "neutral"),
    ("success", "Minor", [Unreviewed("a.png", BINARY)], None, "success"),  # no lines to read
])
def test_the_gate_never_passes_what_was_not_reviewed(result, fail_on, left, partial, expected):
    assert gate(result, fail_on, left, 0, partial) == expected


def test_on_gitlab_action_required_is_a_failed_status():
    """GitLab has no "action required": the gate's refusal must still block merging."""
    from bot.gitlab.forge import status_fields

    fields = {"name": "roundwise", "status": "completed", "conclusion": "action_required",
              "output": {"title": "3 files not reviewed · no open defects"}}
    assert status_fields(fields)["state"] == "failed"


async def test_files_that_sort_first_do_not_take_the_whole_file_checks_from_the_real_one(
        tmp_path):
    """Past 300 changed files the round fetches the head text of the 300 with the most changed
    lines, not the first 300 by name: ruff (which needs the whole file) still runs on the real
    file behind 300 one-function padding files."""
    real = "import os\n\n\ndef g(a):\n    x = a * 2\n    return x + 1\n"  # F401: os unused
    async with running_bot(tmp_path) as bot:
        setup_pr(bot.fake, {**padding(300), REAL: real})
        await review(bot)
        rules = {c["body"].split("`")[1] for c in bot.fake.review_comments(REPO, NUMBER)
                 if c["path"] == REAL and "`" in c["body"]}
        assert "ruff:F401" in rules, rules
