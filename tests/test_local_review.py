"""`roundwise review` on a real local git repository, run twice across new commits."""

import json
import subprocess

import pytest

from bot.cli import main


def git(repo, *args):
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path):
    git(tmp_path, "init", "-q", "-b", "main")
    git(tmp_path, "config", "user.email", "dev@example.com")
    git(tmp_path, "config", "user.name", "dev")
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-qm", "base")
    git(tmp_path, "checkout", "-qb", "feature")
    return tmp_path


def commit(repo, text, message):
    (repo / "calc.py").write_text(text)
    git(repo, "commit", "-qam", message)


def review(repo, capsys, fmt="json"):
    code = main(["review", "--repo", str(repo), "--base", "main", "--format", fmt])
    assert code == 0
    out = capsys.readouterr().out
    return json.loads(out) if fmt != "text" else out


def test_second_run_reports_resolved_and_open_like_the_bot(repo, capsys):
    commit(repo, "def add(a, b):\n    return a + b\n\n\ndef div(a, b):\n"
                 "    print('dividing', a, b)\n    # TODO: handle b == 0\n    return a / b\n",
           "add div")
    first = review(repo, capsys)
    assert first["round"] == 1 and first["branch"] == "feature"
    rules = {d["rule"]: d for d in first["defects"]}
    assert rules["debug-print"]["state"] == "New" and rules["debug-print"]["line_start"] == 6
    assert rules["todo-comment"]["state"] == "New"
    # the author removes the print but keeps the TODO
    commit(repo, "def add(a, b):\n    return a + b\n\n\ndef div(a, b):\n"
                 "    # TODO: handle b == 0\n    return a / b\n", "drop print")
    second = review(repo, capsys)
    assert second["round"] == 2
    by_key = {d["key"]: d for d in second["defects"]}
    printed = by_key[rules["debug-print"]["key"]]
    todo = by_key[rules["todo-comment"]["key"]]
    assert (printed["state"], printed["previous"]) == ("Resolved", "New")
    assert todo["state"] == "Open" and todo["line_start"] == 6
    assert len(second["defects"]) == len(first["defects"])  # nothing re-raised as New
    # the same head again is not a new round
    assert review(repo, capsys)["round"] == 2
    assert (repo / ".git" / "roundwise" / "ledger.db").exists()


def test_text_and_sarif_output(repo, capsys):
    commit(repo, "def add(a, b):\n    console = 1\n    # FIXME later\n    return a + b\n", "x")
    text = review(repo, capsys, "text")
    assert text.startswith("roundwise round 1 of feature")
    assert "New" in text and "calc.py:3" in text
    sarif = review(repo, capsys, "sarif")
    assert sarif["version"] == "2.1.0"
    results = sarif["runs"][0]["results"]
    todo = [r for r in results if r["ruleId"] == "todo-comment"]
    assert todo and todo[0]["locations"][0]["physicalLocation"]["region"]["startLine"] == 3


def test_unknown_ref_is_a_clear_error(repo, capsys):
    code = main(["review", "--repo", str(repo), "--base", "no-such-branch"])
    assert code == 2
    assert "roundwise:" in capsys.readouterr().err
