"""Fixes: the offline rules' safe replacements, how they are posted as ```suggestion blocks, and
how the ledger keeps them so a committed suggestion resolves its defect."""

from __future__ import annotations

import pytest

from bot.forge import InlineComment
from bot.pr import render
from tracker.models import Defect, Finding

from .test_offline_reviewer import review


def fixes(old: dict, new: dict) -> dict[tuple[str, int], str | None]:
    return {(f.rule, f.line_start): f.fix for f in review(old, new)}


def test_a_leftover_print_or_breakpoint_alone_on_its_line_is_deleted():
    new = {"app/m.py": "def f(x):\n    y = x * 2\n    print(y)\n    breakpoint()\n"
                       "    print('a', (x,\n           y))\n    return y\n"}
    got = fixes({"app/m.py": None}, new)
    assert got[("debug-print", 3)] == "" and got[("debugger-statement", 4)] == ""
    assert got[("debug-print", 5)] is None  # spans two lines: not certain


def test_no_fix_when_deleting_would_empty_a_python_block():
    new = {"app/m.py": "def f(x):\n    if x:\n        print(x)\n    return x\n"}
    assert fixes({"app/m.py": None}, new)[("debug-print", 3)] is None


def test_js_console_debugger_and_loose_equality():
    new = {"web/a.js": "export function f(a, b) {\n  console.log(a, '==');\n  debugger;\n"
                       "  if (a == b && a != 'x==y') {\n    return 1;\n  }\n  return 0;\n}\n"}
    got = fixes({"web/a.js": None}, new)
    assert got[("debug-print", 2)] == "" and got[("debugger-statement", 3)] == ""
    # only the operators are tightened; the string's "==" stays as written
    assert got[("loose-equality", 4)] == "  if (a === b && a !== 'x==y') {"


def test_a_fix_is_posted_as_a_suggestion_and_kept_in_the_ledger_text():
    finding = Finding("Loose equality.", "web/a.js", 4, 4, rule="loose-equality",
                      fix="  if (a === b) {")
    body = render.inline_comment("D1", finding, 1)
    assert "```suggestion\n  if (a === b) {\n```" in body
    assert render.read_marker(body) == ("new", "D1", 1)
    # the ledger keeps it as a reviewer would write it; tables show the text without it
    defect = Defect("D1", finding.recorded_description(), "bot", "New", 1, 1)
    assert (defect.text, defect.fix) == ("Loose equality.", "  if (a === b) {")
    # re-anchored to one line, a suggestion meant for a range would replace the wrong lines
    ranged = InlineComment("web/a.js", 5, "RIGHT", render.inline_comment(
        "D2", Finding("x", "web/a.js", 4, 5, fix="a\nb"), 1), start_line=4)
    assert "```suggestion" in ranged.body
    assert "suggestion" not in ranged.last_line_only().body
    assert "<!-- roundwise:new:D2:r1 -->" in ranged.last_line_only().body


@pytest.mark.parametrize("side", ["LEFT"])
def test_no_suggestion_on_deleted_lines(side):
    finding = Finding("x", "a.py", 3, 3, side=side, fix="")
    assert "suggestion" not in render.inline_comment("D1", finding, 1)
    assert finding.recorded_description() == "x"


def test_the_models_fix_is_kept_only_when_usable():
    from bot.review.llm.parse import parse_findings

    item = {"path": "a.py", "line_start": 3, "line_end": 4, "description": "Off by one.",
            "type": "F.2", "severity": "Major"}
    answer = {"findings": [{**item, "fix": "    for i in range(n):\n        total += i\n"},
                           {**item, "line_start": 9, "line_end": 9},
                           {**item, "line_start": 12, "line_end": 12, "fix": 42},
                           {**item, "line_start": 14, "line_end": 14, "side": "LEFT",
                            "fix": "x"}]}
    import json

    found, _ = parse_findings(json.dumps(answer))
    assert [f.fix for f in found] == ["    for i in range(n):\n        total += i", None, None,
                                      None]
