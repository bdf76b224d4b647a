"""The README's GitLab replay, `roundwise bench run --forge gitlab`, end to end: the real bot
and the fake GitLab on loopback, tracking exactly as the replay through the fake GitHub."""

import json
import os

from roundwise.cli import main
from tests.conftest import ROOT


def bench_run(capsys, out, *args) -> dict:
    code = main(["bench", "run", "--quiet", *args, "--out", str(out)])
    capsys.readouterr()
    assert code == 0
    return json.loads((out / "summary.json").read_text())


def test_the_readmes_gitlab_replay_tracks_as_the_github_one(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)  # the README's command, with its relative path
    gitlab = bench_run(capsys, tmp_path / "gl", "--forge", "gitlab", "--tasks", "bench/examples")
    github = bench_run(capsys, tmp_path / "gh", "--tasks", "bench/examples")
    assert gitlab["tasks"] == github["tasks"] == 3 and gitlab["rounds"] == 8
    assert gitlab["tracking"] == github["tracking"]
    assert gitlab["detection"] == github["detection"]
    assert gitlab["github"]["requests"]["total"] > 0  # the bot's requests to the fake GitLab, counted


def test_repo_settings_reach_every_gitlab_project(tmp_path, capsys):
    settings = tmp_path / "roundwise.yml"
    settings.write_text("static_checks: false\n")
    tasks = str(ROOT / "bench" / "examples" / "example-java-order-store.json")
    plain = bench_run(capsys, tmp_path / "plain", "--forge", "gitlab", "--tasks", tasks)
    quiet = bench_run(capsys, tmp_path / "quiet", "--forge", "gitlab", "--tasks", tasks,
                      "--repo-settings", str(settings))
    assert plain["own"]["round_1"]["findings"] > 0
    assert quiet["own"]["round_1"]["findings"] == 0  # the checks the file turned off
    assert os.path.exists(tmp_path / "quiet" / "report.md")
