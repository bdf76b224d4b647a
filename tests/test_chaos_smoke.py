"""``python -m bench.faults.chaos`` at smoke size: a real ``roundwise serve`` killed and restarted
under GitHub faults still reviews every head once and leaves nothing stuck."""

from __future__ import annotations

import json
import subprocess
import sys

from bot.pr import render


def test_chaos_smoke():
    run = subprocess.run(
        [sys.executable, "-m", "bench.faults.chaos", "--prs", "3", "--pushes", "2", "--kills", "2",
         "--deadline", "60", "--seed", "3"],
        check=False, capture_output=True, text=True, timeout=90)
    figures = json.loads(run.stdout)
    assert run.returncode == 0, (figures, run.stderr[-2000:])
    assert figures["kills"] == 2 and figures["server_starts"] == 3
    assert figures["stuck_jobs"] == 0 and figures["duplicate_defects"] == 0
    assert figures["unfinished_rounds"] == 0
    assert figures["final_heads_unreviewed"] == [] and figures["reviews"] >= 3
    assert sum(figures["faults_injected"].values()) > 0
    assert figures["final_head_checks_in_progress"] == 0


async def test_the_soak_tells_a_stale_review_from_the_final_head():
    """The bot reviewed a PR's first push but not its last: the soak's check says so (its shas
    used to share their first 7 characters across a PR's pushes, so it could not)."""
    from bench.fake_github import FakeGitHub
    from bench.faults import chaos

    from .server_kit import app_keys

    first, last = chaos.sha(1, 1), chaos.sha(1, 2)
    assert first[:7] != last[:7]
    async with FakeGitHub(chaos.APP_ID, app_keys()[1]) as fake:  # its bot is chaos.BOT
        fake.add_installation(chaos.INSTALLATION, "chaos")
        fake.add_repo(chaos.REPO, chaos.INSTALLATION, files={"README.md": "chaos\n"})
        fake.add_pr(chaos.REPO, 1, "Change 1", "", "dev", "main",
                    fake._repo(chaos.REPO).branches["main"], {})
        fake.push(chaos.REPO, 1, first, chaos.files_at(1, 1))
        fake.add_issue_comment(chaos.REPO, 1, chaos.BOT, f"{render.SUMMARY_MARKER}\n"
                               f"### roundwise · round 1 · `{first[:7]}`")
        fake.push(chaos.REPO, 1, last, chaos.files_at(1, 2))  # never reviewed
        figures = chaos.check(fake, 1, {1: {first}})
    assert figures["final_heads_unreviewed"] == [1]
