"""Noise that falls over rounds, through the real server and the fake GitHub: ``converge``
holds back later rounds' minor findings; a kind of finding people keep dismissing is held back
in the repository until ``/roundwise unmute``; ``paths`` skips files, drops rules and gives the
model per-glob instructions."""

from __future__ import annotations

import json

import pytest

from bench.scripted_llm import ScriptedLLM, message_text, system_text
from bot.pr import render
from bot.review.llm_config import LLMConfig
from roundwise.cli import main
from tracker import learnings

from .server_kit import (
    HEAD2,
    HEAD3,
    NUMBER,
    REPO,
    push,
    running_bot,
    setup_pr,
)

pytestmark = pytest.mark.asyncio

HEAD4 = "4" * 40


def summary(bot) -> str:
    [comment] = [c for c in bot.bot_comments() if c["body"].startswith(render.SUMMARY_MARKER)]
    return comment["body"]


def inline(bot) -> dict[str, str]:
    """Each posted defect's inline comment body, by key."""
    out = {}
    for c in bot.bot_comments("review"):
        if not c.get("in_reply_to_id") and c["body"].startswith("**D"):
            out[c["body"][2:].split("**")[0]] = c["body"]
    return out


def fn(name: str, body: str) -> str:
    return f"\n\ndef {name}(values):\n{body}    return values\n"


# -- convergence ------------------------------------------------------------------------------

ONE = {"app/core.py": "def add(a, b):\n    return a + b\n" + fn("one", "    print(values)\n")}
TWO = {"app/core.py": ONE["app/core.py"] + fn("two", "    print(values)\n")
       + fn("three", "    breakpoint()\n")}


@pytest.mark.parametrize("converge", [True, False])
async def test_converge_holds_back_minor_findings_of_later_rounds(tmp_path, converge):
    settings = "converge: {after_round: 1, min_severity: Major}\n" if converge else ""
    async with running_bot(tmp_path) as bot:
        setup_pr(bot.fake, settings or "max_comments: 20\n", ONE)
        await bot.pull_request("opened")
        await bot.idle()
        assert bot.states() == {"D1": "New"}  # round 1 is never held back
        await push(bot, HEAD2, TWO)  # a new Minor print and a new Major breakpoint
        states, body = bot.states(), summary(bot)
        if not converge:
            assert states == {"D1": "Open", "D2": "New", "D3": "New"}
            assert "held back" not in body
            return
        assert states == {"D1": "Open", "D2": "New"}  # the breakpoint only
        assert "breakpoint" in inline(bot)["D2"]
        assert len(inline(bot)) == 2  # D1 from round 1, D2: the print was not posted
        assert "<summary>🔕 1 finding held back this round (not posted inline, not tracked)" \
               "</summary>" in body
        assert "| Minor | [`app/core.py:" in body
        assert "below Major after round 1 (`converge`)" in body
        assert "- 🔕 1 new finding held back, not posted: 1 below Major after round 1 " \
               "(`converge`)." in body
        assert "🧭 Converging: after round 1, new findings below Major are held back" in body
        assert "**2 open defects" in body  # the held-back print is not counted as open
        [run] = [r for r in bot.fake.check_runs(REPO, HEAD2) if r["name"] == "roundwise"]
        assert run["output"]["title"].startswith("2 open")


# -- learnings: dismissed N times -> held back -> unmuted -> posted again -----------------------

THREE = {"app/core.py": "def add(a, b):\n    return a + b\n" + "".join(
    fn(name, "    print(values)\n") for name in ("one", "two", "three"))}
FOUR = {"app/core.py": THREE["app/core.py"] + fn("four", "    print(values)\n")}
FIVE = {**FOUR, "app/more.py": "VALUE = 1\n"}


async def test_dismissed_kind_is_held_back_until_unmuted(tmp_path):
    async with running_bot(tmp_path) as bot:
        fake = bot.fake
        setup_pr(fake, "max_comments: 20\n", THREE)
        fake.set_permission(REPO, "maintainer", "write")
        await bot.pull_request("opened")
        await bot.idle()
        assert bot.states() == {"D1": "New", "D2": "New", "D3": "New"}
        # people dismiss all three: two /roundwise ignore, one 👎 (read at the next round)
        await bot.comment("maintainer", "/roundwise ignore D1")
        await bot.comment("maintainer", "/roundwise ignore D2")
        await bot.idle()
        pr_id = bot.ledger.find_pull_request(REPO, NUMBER)["id"]
        d3_root = bot.ledger.thread_root(pr_id, "D3")["id"]
        fake.add_reaction(REPO, NUMBER, d3_root, "rina", "-1")

        await push(bot, HEAD2, FOUR)  # a fourth print: its kind is now held back
        assert set(bot.states()) == {"D1", "D2", "D3"}
        body = summary(bot)
        assert ("🔇 Holding back `debug-print` findings: dismissed 3 of 3 times in this "
                "repository; `/roundwise unmute debug-print` to undo.") in body
        assert body.count("🔇 Holding back") == 1
        assert "`debug-print` muted here" in body and "🔕 1 finding held back" in body
        rows = {r["kind"]: r for r in bot.ledger.learnings(REPO)}
        assert (rows["debug-print"]["dismissed"], rows["debug-print"]["judged"],
                rows["debug-print"]["muted"]) == (3, 3, 1)

        # the same ledger, read by `roundwise stats`
        assert main(["stats", "--ledger", bot.config.db_path, "--json"]) == 0

        await bot.comment("maintainer", "/roundwise unmute debug-print")
        await bot.idle()
        assert any("`debug-print` findings will be posted again in octo/widgets" in c["body"]
                   for c in bot.bot_comments())
        assert "🔇 Holding back" not in summary(bot)  # the notice goes with the unmute
        await push(bot, HEAD3, FIVE)  # the fourth print is reviewed again: posted now
        assert bot.states()["D4"] == "New"
        assert "print" in inline(bot)["D4"]
        assert "held back" not in summary(bot)
        rows = {r["kind"]: r for r in bot.ledger.learnings(REPO)}
        assert (rows["debug-print"]["muted"], rows["debug-print"]["unmuted_by"]) == \
            (0, "maintainer")


async def test_roundwise_stats_shows_what_is_held_back(tmp_path, capsys):
    async with running_bot(tmp_path) as bot:
        fake = bot.fake
        setup_pr(fake, "max_comments: 20\n", THREE)
        fake.set_permission(REPO, "maintainer", "write")
        await bot.pull_request("opened")
        await bot.idle()
        for key in ("D1", "D2", "D3"):
            await bot.comment("maintainer", f"/roundwise ignore {key}")
        await bot.idle()
        capsys.readouterr()
        assert main(["stats", "--ledger", bot.config.db_path, "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        [row] = [r for r in out["learnings"] if r["kind"] == "debug-print"]
        assert (row["repo"], row["dismissed"], row["judged"], row["muted"]) == \
            (REPO, 3, 3, True)
        assert main(["stats", "--ledger", bot.config.db_path]) == 0
        text = capsys.readouterr().out
        assert any(line.split() == [REPO, "debug-print", "3", "3", "yes"]
                   for line in text.splitlines())


async def test_two_dismissals_do_not_mute(tmp_path):
    async with running_bot(tmp_path) as bot:
        setup_pr(bot.fake, "max_comments: 20\n", THREE)
        bot.fake.set_permission(REPO, "maintainer", "write")
        await bot.pull_request("opened")
        await bot.idle()
        for key in ("D1", "D2"):
            await bot.comment("maintainer", f"/roundwise ignore {key}")
        await bot.idle()
        await push(bot, HEAD2, FOUR)
        assert bot.states()["D4"] == "New"  # 2 dismissals are below the threshold
        assert "held back" not in summary(bot)


# -- path instructions ------------------------------------------------------------------------

PATHS = """paths:
  - {glob: "migrations/**", skip: true}
  - {glob: "src/api/**", instructions: "Every handler must check the caller's token first."}
  - {glob: "scripts/**", ignore_rules: [debug-print]}
"""
PATH_FILES = {
    "migrations/0001_init.py": "def up():\n    print('migrating')\n",
    "src/api/users.py": "def get_user(request):\n    print(request)\n    return request.user\n",
    "scripts/seed.py": "def seed():\n    print('seeding')\n",
    "app/core.py": "def add(a, b):\n    print(a)\n    return a + b\n",
}


async def test_path_instructions_reach_the_model_and_skips_are_honoured(tmp_path):
    def model(request: dict) -> str:
        if "defect verifier" in system_text(request):
            return json.dumps({"verdicts": []})
        return json.dumps({"findings": [
            {"path": "migrations/0001_init.py", "line_start": 2, "description": "Migration "
             "prints instead of logging.", "type": "E.3.1", "severity": "Minor",
             "confidence": 0.9}]})

    async with ScriptedLLM(model) as llm_server:
        llm = LLMConfig(model="openai/scripted", api_base=llm_server.url, api_key="sk-test")
        async with running_bot(tmp_path, llm=llm) as bot:
            setup_pr(bot.fake, PATHS, PATH_FILES)
            await bot.pull_request("opened")
            await bot.idle()
            prompts = [message_text(r) for r in llm_server.requests
                       if "defect verifier" not in system_text(r)
                       and "round_diff" in message_text(r)]
            pr_id = bot.ledger.find_pull_request(REPO, NUMBER)["id"]
            found = {(d.path, d.rule) for d in bot.ledger.defects(pr_id)}
    assert prompts
    joined = "\n".join(prompts)
    assert ('<path_instructions glob="src/api/**">\nEvery handler must check the caller\'s '
            "token first.\n</path_instructions>") in joined
    assert "migrations/0001_init.py" not in joined.split("</tracked_defects>")[-1]
    # the offline reviewer: no finding in skipped files, none of the dropped rule in scripts/,
    # and the model's finding in a skipped file is dropped too
    assert ("app/core.py", "debug-print") in found and ("src/api/users.py", "debug-print") in found
    assert not any(path.startswith(("migrations/", "scripts/")) for path, _ in found)


async def test_path_instructions_are_left_out_for_files_they_do_not_match(tmp_path):
    async with ScriptedLLM() as llm_server:
        llm = LLMConfig(model="openai/scripted", api_base=llm_server.url, api_key="sk-test")
        async with running_bot(tmp_path, llm=llm) as bot:
            setup_pr(bot.fake, PATHS, {"app/core.py": PATH_FILES["app/core.py"]})
            await bot.pull_request("opened")
            await bot.idle()
    assert llm_server.requests
    assert not any("<path_instructions glob=" in message_text(r) for r in llm_server.requests)


async def test_bad_paths_and_converge_settings_are_reported_and_defaults_apply(tmp_path):
    from bot.config.repo_settings import SettingsError, parse_settings

    s = parse_settings(PATHS + "converge: {after_round: 3, min_severity: normal}\n")
    assert (s.converge_after, s.converge_severity) == (3, "Normal")
    assert [r.glob for r in s.paths] == ["migrations/**", "src/api/**", "scripts/**"]
    assert s.skipped("migrations/a/b.sql") and not s.skipped("src/api/users.py")
    assert parse_settings("converge: true\n").converge_after == 2
    for bad in ("converge: {after_round: -1}\n", "converge: {min_severity: huge}\n",
                "converge: {after: 2}\n", "paths: [{skip: true}]\n",
                "paths: [{glob: x, skip: maybe}]\n", "paths: [{glob: x, colour: red}]\n",
                "paths: {glob: x}\n"):
        with pytest.raises(SettingsError):
            parse_settings(bad)
    async with running_bot(tmp_path) as bot:
        setup_pr(bot.fake, "paths: [{glob: x, colour: red}]\n", ONE)
        await bot.pull_request("opened")
        await bot.idle()
        assert "⚠️ .github/roundwise.yml: paths entry 1: unknown key(s) colour" in summary(bot)
        assert bot.states() == {"D1": "New"}


# -- an ignored finding stays ignored ---------------------------------------------------------


async def test_an_ignored_finding_is_not_raised_again_next_round(tmp_path):
    async with running_bot(tmp_path) as bot:
        setup_pr(bot.fake, "max_comments: 20\n", ONE)
        bot.fake.set_permission(REPO, "maintainer", "write")
        await bot.pull_request("opened")
        await bot.idle()
        await bot.comment("maintainer", "/roundwise ignore D1")
        await bot.idle()
        await push(bot, HEAD2, {**ONE, "app/other.py": "X = 1\n"})
        assert bot.states() == {"D1": "New"}  # was re-raised as D2 by the same check
        await push(bot, HEAD3, TWO)  # a second print elsewhere is a new finding
        assert sorted(bot.states()) == ["D1", "D2", "D3"]
        assert "breakpoint" in inline(bot)["D3"] or "breakpoint" in inline(bot)["D2"]


async def test_a_muted_kind_still_posts_its_major_findings(tmp_path):
    secret = "def connect():\n    password = 'hunter2-production-secret'\n    return password\n"
    files = {f"app/s{i}.py": secret for i in range(3)}
    async with running_bot(tmp_path) as bot:
        setup_pr(bot.fake, "max_comments: 20\n", files)
        bot.fake.set_permission(REPO, "maintainer", "write")
        await bot.pull_request("opened")
        await bot.idle()
        pr_id = bot.ledger.find_pull_request(REPO, NUMBER)["id"]
        found = {d.key: d for d in bot.ledger.defects(pr_id)}
        rules = {d.rule for d in found.values()}
        assert len(found) == 3 and len(rules) == 1
        [rule] = rules
        assert all(d.severity in ("Major", "Blocker", "Critical") for d in found.values())
        for key in found:
            await bot.comment("maintainer", f"/roundwise ignore {key}")
        await bot.idle()
        assert set(learnings.muted(bot.ledger, REPO)) == {rule}  # dismissed 3 of 3
        await push(bot, HEAD2, {**files, "app/s3.py": secret})
        new = [d for d in bot.ledger.defects(pr_id) if d.key not in found]
        assert [d.path for d in new] == ["app/s3.py"]  # posted all the same
        assert "held back" not in summary(bot)
