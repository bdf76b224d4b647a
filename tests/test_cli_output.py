"""``roundwise review``'s output as tools read it: text columns, a closed pipe, and SARIF.

The SARIF checks are written from the SARIF 2.1.0 specification (OASIS, sections 3.13-3.49):
the required properties, the enumerations, the cross-references between results and rules,
and the constraints between properties (a result whose ``kind`` is not ``fail`` has level
``none``); the schema file itself is not copied in.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from urllib.parse import urlparse

import pytest

from bot.cli.sarif import BASELINE_STATE, CODE_FINGERPRINT, DEFECT_FINGERPRINT
from bot.cli.textreport import as_text, shorten
from bot.store.ledger_sqlite import Ledger

from .test_local_review import commit

PRINT = "    print('dividing', a, b)\n"
TODO = ("    # TODO: handle b == 0 and also every other degenerate input that a caller could "
        "possibly pass in here\n")
BASE = "def add(a, b):\n    return a + b\n\n\ndef div(a, b):\n"


def run(repo, fmt: str) -> str:
    done = subprocess.run([sys.executable, "-m", "roundwise", "review", "--repo", str(repo),
                           "--base", "main", "--format", fmt], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def three_rounds(repo) -> list[dict]:
    """print + TODO (New), print removed (Resolved, TODO Open), print back (Reopened)."""
    sarifs = []
    for text in (BASE + PRINT + TODO + "    return a / b\n",
                 BASE + TODO + "    return a / b\n",
                 BASE + PRINT + TODO + "    return a / b\n"):
        commit(repo, text, "step")
        sarifs.append(json.loads(run(repo, "sarif")))
    return sarifs


# -- SARIF 2.1.0, checked against the specification ------------------------------------------------

LEVELS = {"none", "note", "warning", "error"}  # 3.27.10, 3.50.3
KINDS = {"notApplicable", "pass", "fail", "review", "open", "informational"}  # 3.27.9
BASELINE_STATES = {"new", "unchanged", "updated", "absent"}  # 3.27.24
COLUMN_KINDS = {"utf16CodeUnits", "unicodeCodePoints"}  # 3.14.19


def is_absolute_uri(text: str) -> bool:
    parsed = urlparse(text)
    return bool(parsed.scheme and (parsed.netloc or parsed.path))


def message_ok(message) -> bool:  # 3.11: a message has text or an id
    return isinstance(message, dict) and (isinstance(message.get("text"), str)
                                          or isinstance(message.get("id"), str))


def validate_sarif(log: dict) -> None:
    """Every constraint of SARIF 2.1.0 that roundwise's output touches; raises on the first."""
    assert log["version"] == "2.1.0"  # 3.13.2
    assert is_absolute_uri(log["$schema"])  # 3.13.3
    assert isinstance(log["runs"], list)  # 3.13.4
    for run_ in log["runs"]:
        driver = run_["tool"]["driver"]  # 3.14.6, 3.18.2
        assert isinstance(driver["name"], str) and driver["name"]  # 3.19.8
        assert isinstance(driver["version"], str)  # 3.19.13
        if "semanticVersion" in driver:  # 3.19.14: Semantic Versioning 2.0
            assert re.fullmatch(r"\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.-]+)?",
                                driver["semanticVersion"])
        if "informationUri" in driver:  # 3.19.17
            assert is_absolute_uri(driver["informationUri"])
        rules = driver.get("rules", [])
        ids = [r["id"] for r in rules]  # 3.49.3: id is required
        assert len(ids) == len(set(ids)), "rule ids must be unique within a driver"
        for rule in rules:
            for name in ("shortDescription", "fullDescription"):  # 3.49.9, 3.49.10
                if name in rule:
                    assert isinstance(rule[name]["text"], str) and rule[name]["text"]
            if "help" in rule:  # 3.49.13: a multiformatMessageString has text
                assert isinstance(rule["help"]["text"], str) and rule["help"]["text"]
            if "defaultConfiguration" in rule:  # 3.50.3
                assert rule["defaultConfiguration"]["level"] in LEVELS
            assert isinstance(rule.get("properties", {}), dict)  # 3.8: property bag
        if "columnKind" in run_:
            assert run_["columnKind"] in COLUMN_KINDS
        bases = run_.get("originalUriBaseIds", {})  # 3.14.14
        if "automationDetails" in run_:  # 3.17
            assert isinstance(run_["automationDetails"].get("id", ""), str)
        for result in run_.get("results", []):
            assert message_ok(result["message"])  # 3.27.11: message is required
            if "ruleIndex" in result:  # 3.27.6: ruleIndex refers into driver.rules
                assert 0 <= result["ruleIndex"] < len(rules)
                assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
            if "ruleId" in result:
                assert result["ruleId"] in ids
            kind = result.get("kind", "fail")
            assert kind in KINDS
            level = result.get("level", "warning")
            assert level in LEVELS
            if kind != "fail":  # 3.27.10: any other kind SHALL have level none (or absent)
                assert level == "none"
            if "baselineState" in result:
                assert result["baselineState"] in BASELINE_STATES
            for name in ("partialFingerprints", "fingerprints"):  # 3.27.16, 3.27.17
                assert all(isinstance(k, str) and isinstance(v, str)
                           for k, v in result.get(name, {}).items())
            for location in result.get("locations", []):  # 3.28
                physical = location["physicalLocation"]  # 3.29
                artifact = physical["artifactLocation"]  # 3.4
                assert isinstance(artifact["uri"], str) and not is_absolute_uri(artifact["uri"]) \
                    or "uriBaseId" not in artifact  # 3.4.4: with a base id, a relative uri
                if "uriBaseId" in artifact:
                    assert artifact["uriBaseId"] in bases
                region = physical.get("region", {})  # 3.30
                if "startLine" in region:
                    assert region["startLine"] >= 1  # 3.30.5
                    assert region.get("endLine", region["startLine"]) >= region["startLine"]


def test_the_checks_catch_what_the_spec_forbids():
    good = {"$schema": "https://json.schemastore.org/sarif-2.1.0.json", "version": "2.1.0",
            "runs": [{"tool": {"driver": {"name": "t", "version": "1", "rules": [{"id": "r"}]}},
                      "results": [{"ruleId": "r", "ruleIndex": 0, "message": {"text": "m"}}]}]}
    validate_sarif(good)
    for breaking in (lambda r: r.update(kind="pass", level="error"),
                     lambda r: r.update(baselineState="gone"),
                     lambda r: r.update(ruleIndex=3),
                     lambda r: r.pop("message"),
                     lambda r: r.update(ruleId="other")):
        bad = json.loads(json.dumps(good))
        breaking(bad["runs"][0]["results"][0])
        with pytest.raises((AssertionError, KeyError)):
            validate_sarif(bad)


def test_sarif_is_valid_with_rule_metadata_fingerprints_and_baseline_states(repo):
    first, second, third = three_rounds(repo)
    for log in (first, second, third):
        validate_sarif(log)
    driver = third["runs"][0]["tool"]["driver"]
    from bot.server.startup import version

    assert driver["version"] == version()
    rules = {r["id"]: r for r in driver["rules"]}
    printed = rules["debug-print"]
    assert printed["name"] == "DebugPrint"
    assert "debug print" in printed["help"]["text"] and "{m}" not in printed["help"]["text"]
    assert printed["properties"]["security-severity"] == "3.0"  # Minor
    assert printed["defaultConfiguration"]["level"] == "note"

    def by_rule(log):
        return {r["ruleId"]: r for r in log["runs"][0]["results"]}

    states = [{rule: r["baselineState"] for rule, r in by_rule(log).items()}
              for log in (first, second, third)]
    assert states[0] == {"debug-print": "new", "todo-comment": "new"}
    assert states[1] == {"debug-print": "absent", "todo-comment": "unchanged"}
    assert states[2] == {"debug-print": "updated", "todo-comment": "unchanged"}
    gone = by_rule(second)["debug-print"]
    assert (gone["kind"], gone["level"]) == ("pass", "none")
    # one defect keeps its identity across runs; the code's fingerprint is the ledger's
    prints = [by_rule(log)["debug-print"]["partialFingerprints"] for log in
              (first, second, third)]
    assert len({p[DEFECT_FINGERPRINT] for p in prints}) == 1
    assert prints[0][CODE_FINGERPRINT] == prints[2][CODE_FINGERPRINT]  # the print came back
    assert by_rule(first)["todo-comment"]["partialFingerprints"][DEFECT_FINGERPRINT] != \
        prints[0][DEFECT_FINGERPRINT]
    with Ledger(repo / ".git" / "roundwise" / "ledger.db") as ledger:
        (pr,) = list(ledger.db["pull_requests"].rows)
        stored = {d.rule: d.fingerprint for d in ledger.defects(pr["id"])}
    assert by_rule(third)["debug-print"]["partialFingerprints"][CODE_FINGERPRINT] == \
        stored["debug-print"]
    assert set(BASELINE_STATE) == {"New", "Open", "Reopened", "Resolved"}


# -- text --------------------------------------------------------------------------------------------


def test_text_wraps_in_full_and_keeps_its_columns(repo):
    three_rounds(repo)
    text = run(repo, "text")
    lines = text.splitlines()
    header = lines[1]
    assert header.split() == ["KEY", "STATE", "WAS", "SEVERITY", "WHERE"]
    rows = [line for line in lines[2:] if re.match(r"D\d+ ", line)]
    assert len(rows) == 2
    columns = [header.index(name) for name in ("STATE", "WAS", "SEVERITY", "WHERE")]
    for row in rows:  # every value starts at its column, "(was ...)" or not
        for column in columns:
            assert row[column - 1] == " " and row[column] != " ", (row, column)
    reopened = next(r for r in rows if "Reopened" in r)
    assert reopened.split()[1:3] == ["Reopened", "Resolved"]
    # the description is there in full, wrapped, not cut at 120 characters
    body = " ".join(line.strip() for line in lines[2:])
    assert "finish it in this PR or track it in an issue." in body


def test_shorten_cuts_at_a_word_with_an_ellipsis():
    assert shorten("short text", 20) == "short text"
    cut = shorten("the quick brown fox jumps over the lazy dog", 20)
    assert cut == "the quick brown fox…" and len(cut) <= 20
    assert shorten("a  b\n c", 10) == "a b c"


def test_text_report_marks_a_cut_evidence():
    report = {"round": 2, "branch": "b", "base": "a" * 40, "head": "c" * 40, "defects": [{
        "key": "D1", "state": "Open", "previous": "New", "path": "x.py", "line_start": 1,
        "severity": "Major", "description": "word " * 60, "ignored": False,
        "evidence": "evidence " * 80}]}
    text = as_text(report, width=80)
    assert all(len(line) <= 80 for line in text.splitlines())
    assert text.count("word") == 60
    assert "…" in text and "evidence: evidence" in text


# -- a closed pipe -----------------------------------------------------------------------------------


def test_a_closed_pipe_ends_quietly(repo):
    commit(repo, BASE + PRINT + TODO + "    return a / b\n", "step")
    proc = subprocess.Popen([sys.executable, "-m", "roundwise", "review", "--repo", str(repo),
                             "--base", "main", "--format", "json"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdout.close()  # the reader is gone before the first byte is written
    err = proc.stderr.read().decode()
    proc.wait(timeout=120)
    assert proc.returncode == 141 and err == ""
    # and through a real `head`
    done = subprocess.run(f"'{sys.executable}' -m roundwise review --repo '{repo}' --base main "
                          "--format sarif | head -n 2", shell=True, capture_output=True,
                          text=True, timeout=120, check=False)
    schema = '  "$schema": "https://json.schemastore.org/sarif-2.1.0.json",'
    assert done.stdout.splitlines() == ["{", schema]
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr


# -- control characters from the code under review (issue 40, item 6) --------------------------------


def test_a_file_name_with_terminal_escapes_is_printed_escaped(repo):
    """A file named with ESC sequences and a CR: the text report names it with visible escapes,
    so the terminal or CI log showing it is not recoloured nor has its line overwritten."""
    name = "evil\x1b[2J\x1b]0;owned\x07\rok.py"
    (repo / name).write_text("def f(a):\n    print('debug', a)\n    return a\n")
    subprocess.run(["git", "-C", str(repo), "add", "."], check=True, capture_output=True)
    subprocess.run(["git", "-C", str(repo), "commit", "-qm", "evil"], check=True,
                   capture_output=True)
    text = run(repo, "text")
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f]", text), repr(text)
    assert "evil\\x1b[2J\\x1b]0;owned\\x07\\rok.py:2" in text


def test_text_report_escapes_descriptions_evidence_and_fixes():
    report = {"round": 2, "branch": "b", "base": "a" * 40, "head": "c" * 40, "defects": [{
        "key": "D1", "state": "Open", "previous": "New", "path": "x\u202ey.py", "line_start": 1,
        "severity": "Major", "description": "bad\x1b[31m red\r\nsecond line\x9b",
        "ignored": False, "evidence": "still \x1b[0m here", "fix": "x = 1\x08\r\n\ty = 2\n"}],
        "held": [{"severity": "Minor", "path": "h\x1b.py", "line_start": 3, "why": "muted",
                  "kind": "k\x1b"}]}
    text = as_text(report, width=80)
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e]", text), repr(text)
    for shown in ("x\\u202ey.py:1", "bad\\x1b[31m red", "second line\\u009b", "still \\x1b[0m here",
                  "x = 1\\x08", "\ty = 2", "h\\x1b.py:3", "k\\x1b is muted"):
        assert shown in text, (shown, text)
    assert "\\r" not in text  # a CRLF description is two lines, not an escaped CR


def test_every_command_s_stdout_is_escaped_and_json_stays_json(capsys):
    """``roundwise``'s stdout escapes control characters whatever the subcommand prints; a
    JSON document with raw DEL, C1 or bidi characters (``ensure_ascii=False``) stays valid and
    decodes to the same text."""
    import io

    from bot.cli.printable import PrintableWriter

    out = io.StringIO()
    writer = PrintableWriter(out)
    value = {"path": "a\x7fb\x85c\u202ed", "text": "x\ty"}
    print(json.dumps(value, ensure_ascii=False), file=writer)
    print("plain \x1b[31mred\r\n", end="", file=writer)
    assert json.loads(out.getvalue().splitlines()[0]) == value
    assert out.getvalue().splitlines()[1] == "plain \\x1b[31mred\\r"
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e]", out.getvalue())
