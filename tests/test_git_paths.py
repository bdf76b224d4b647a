"""File names git quotes in its diff text (non-ASCII, emoji, quotes, backslashes, tabs) come
back as the names they are (issue 19, item 13): in ``roundwise review`` on a real git repository
and in the replay of a task whose diff is real ``git diff`` output."""

from __future__ import annotations

import json
import subprocess

from bench.replay.github import Harness, bench_repo, replay_task
from bench.tasks.mcr import SCHEMA, parse_task
from roundwise.cli import main

# Eleven names; git quotes all but the last two (the space only earns a trailing tab).
NAMES = ["src/café.py", "src/日本語.py", "src/emoji😀.py", 'src/quo"te.py', "src/back\\slash.py",
         "src/tab\tname.py", "src/ñ/ü.py", "src/mixed é \"q\".py", "src/x\\y\\z.py",
         "src/sp ace.py", "src/plain.py"]
PRINTS = "def f(x):\n    print(x)\n    return x\n"
CLEAN = "def f(x):\n    return x\n"


def git(repo, *args) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True).stdout


def write(repo, names, text):
    for name in names:
        path = repo / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_roundwise_review_reports_the_real_file_names(repo, capsys):
    write(repo, NAMES, PRINTS)
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "prints everywhere")
    assert '"b/src/caf\\303\\251.py"' in git(repo, "diff", "main", "HEAD")  # git quotes it
    assert main(["review", "--repo", str(repo), "--base", "main", "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    printed = {d["path"] for d in report["defects"] if d["rule"] == "debug-print"}
    assert printed == set(NAMES)
    # the next commit removes them: every one is resolved, none raised again elsewhere
    write(repo, NAMES, CLEAN)
    git(repo, "commit", "-qam", "no prints")
    assert main(["review", "--repo", str(repo), "--base", "main", "--format", "json"]) == 0
    second = json.loads(capsys.readouterr().out)
    states = {d["path"]: d["state"] for d in second["defects"] if d["rule"] == "debug-print"}
    assert states == dict.fromkeys(NAMES, "Resolved")


async def test_the_replay_of_a_task_with_a_tab_in_a_path_completes(repo, tmp_path):
    names = ["src/tab\tname.py", "src/café.py"]
    heads, diffs = [], []
    for text in (PRINTS, CLEAN):
        write(repo, names, text)
        git(repo, "add", ".")
        git(repo, "commit", "-qm", "round")
        heads.append(git(repo, "rev-parse", "HEAD").strip())
        diffs.append(git(repo, "diff", "main", "HEAD"))
    assert '"b/src/tab\\tname.py"' in diffs[0]
    task = parse_task({"schema": SCHEMA, "task_id": "quoted-paths", "repo": "o/quoted",
                       "language": "python", "defects": [],
                       "pr": {"number": 3, "title": "quoted", "base_sha": "a" * 40},
                       "rounds": [{"round": i + 1, "head_sha": head, "diff": diff,
                                   "files": dict.fromkeys(names, text)}
                                  for i, (head, diff, text) in enumerate(
                                      zip(heads, diffs, (PRINTS, CLEAN)))]})
    async with Harness(tmp_path / "ledger.db") as h:
        records = await replay_task(h, task)
        pr = h.ledger.find_pull_request(bench_repo(task), 3)
        assert [r["status"] for r in h.ledger.rounds(pr["id"])] == ["complete", "complete"]
        defects = h.ledger.defects(pr["id"])
        assert {d.path for d in defects} == set(names)
        assert {str(d.state) for d in defects} == {"Resolved"}
        inline = {c["path"] for c in h.fake.review_comments(bench_repo(task), 3)}
        assert inline == set(names)
    assert len(records) == 2
