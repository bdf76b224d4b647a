"""``roundwise review --ignore/--resolve/--unmute`` on a real local git repository: recorded in
the branch's ledger like the App's commands, so a false finding cannot block a CI gate, and a
kind people keep dismissing is held back until unmuted."""

import json
import subprocess

from roundwise.cli import main


def git(repo, *args):
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def commit(repo, text, message):
    (repo / "calc.py").write_text(text)
    git(repo, "commit", "-qam", message)


def fn(name, body="    print(a)\n"):
    return f"\n\ndef {name}(a):\n{body}    return a\n"


BASE = "def add(a, b):\n    return a + b\n"


def run(repo, capsys, *extra, fmt="json"):
    code = main(["review", "--repo", str(repo), "--base", "main", "--format", fmt, *extra])
    captured = capsys.readouterr()
    out = json.loads(captured.out) if fmt == "json" and captured.out.strip() else captured.out
    return code, out, captured.err


def test_ignore_unblocks_the_gate_and_stays_ignored(repo, capsys):
    commit(repo, BASE + fn("one", "    breakpoint()\n"), "debug")
    code, report, _ = run(repo, capsys, "--fail-on", "Major")
    assert code == 1 and [d["rule"] for d in report["defects"]] == ["debugger-statement"]
    key = report["defects"][0]["key"]
    code, report, err = run(repo, capsys, "--fail-on", "Major", "--ignore", key.lower())
    assert code == 0  # the false finding no longer fails CI
    assert f"{key} ignored (recorded in" in err
    assert [d["ignored"] for d in report["defects"]] == [True]
    commit(repo, BASE + fn("one", "    breakpoint()\n") + fn("two", "    return a * 2\n"), "more")
    code, report, _ = run(repo, capsys, "--fail-on", "Major")
    assert code == 0 and len(report["defects"]) == 1  # the same check does not re-raise it
    ledger = repo / ".git" / "roundwise" / "ledger.db"
    import sqlite3

    rows = sqlite3.connect(ledger).execute(
        "select rule, evidence, decided_by from state_history order by id").fetchall()
    assert ("ignored", "ignored by dev", "human") in rows


def test_the_text_report_counts_what_it_leaves_out_as_the_app_does(repo, capsys):
    commit(repo, BASE + fn("one", "    breakpoint()\n") + fn("two"), "debug")
    _, text, _ = run(repo, capsys, fmt="text")
    assert text.splitlines()[-1] == "2 open defects"
    keys = [line.split()[0] for line in text.splitlines() if line[:1] == "D"]
    _, text, _ = run(repo, capsys, "--ignore", keys[0], fmt="text")
    assert keys[0] not in text.splitlines()[2]  # the table leaves the ignored one out...
    assert text.splitlines()[-1] == f"1 open defect, 1 ignored ({keys[0]})"  # ...and says so
    _, text, _ = run(repo, capsys, "--ignore", keys[1], fmt="text")
    assert text.splitlines()[1:] == [f"no open defects, 2 ignored ({keys[0]}, {keys[1]})"]


def test_resolve_marks_a_defect_resolved_as_the_command_does(repo, capsys):
    commit(repo, BASE + fn("one"), "print")
    _, report, _ = run(repo, capsys)
    key = report["defects"][0]["key"]
    code, report, _ = run(repo, capsys, "--resolve", key, "--fail-on", "Minor")
    assert code == 0
    [d] = report["defects"]
    assert d["state"] == "Resolved" and "dev ran roundwise review --resolve" in d["evidence"]


def test_unknown_key_is_one_line_and_exit_2(repo, capsys):
    commit(repo, BASE + fn("one"), "print")
    run(repo, capsys)
    code, _, err = run(repo, capsys, "--ignore", "D9")
    assert code == 2
    assert err.strip().splitlines() == ["roundwise: no defect D9 on this branch (tracked: D1)"]
    code, _, err = run(repo, capsys, "--unmute", "debug-print")
    assert code == 2 and "debug-print findings are not held back here" in err


def test_dismissed_kind_held_back_then_unmuted_locally(repo, capsys):
    commit(repo, BASE + fn("one") + fn("two") + fn("three"), "prints")
    _, report, _ = run(repo, capsys)
    keys = [d["key"] for d in report["defects"]]
    assert len(keys) == 3
    run(repo, capsys, *[x for k in keys for x in ("--ignore", k)])
    commit(repo, BASE + fn("one") + fn("two") + fn("three") + fn("four"), "another print")
    code, text, _ = run(repo, capsys, fmt="text")
    assert "held back: 1 finding, not tracked" in text
    assert "debug-print is muted (roundwise review --unmute debug-print)" in text
    capsys.readouterr()
    assert main(["stats", "--ledger", str(repo / ".git" / "roundwise" / "ledger.db"),
                 "--json"]) == 0
    learnt = json.loads(capsys.readouterr().out)["learnings"]
    assert [(r["kind"], r["dismissed"], r["judged"], r["muted"]) for r in learnt] == \
        [("debug-print", 3, 3, True)]
    commit(repo, BASE + fn("one") + fn("two") + fn("three") + fn("four") + fn("five", ""),
           "one more")
    code, report, err = run(repo, capsys, "--unmute", "debug-print")
    assert code == 0 and "debug-print unmuted" in err
    new = [d for d in report["defects"] if d["state"] == "New" and not d["ignored"]]
    assert [d["rule"] for d in new] == ["debug-print"] and report["held"] == []
