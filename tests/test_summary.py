"""The sticky summary, rendered with a CommonMark + tables renderer (markdown-it-py, as GitHub's
GFM would) and checked by its structure: verdict, this round, the open table, folded history,
the agent prompt, notes and commands, and its size for a pull request with 500 defects."""

from __future__ import annotations

import re

import pytest
from markdown_it import MarkdownIt

from bot.pr import render as bot_render
from bot.pr.summary import MAX_BODY, Change, Row, agent_prompt, render

REPO = "octo/widgets"
HEAD = "c0ffee" + "1" * 34
MD = MarkdownIt("commonmark").enable("table")


def tables(tokens) -> list[list[list[str]]]:
    """Every table as rows of cell texts (header row first)."""
    out, row, cells, inside = [], None, [], False
    for tok in tokens:
        if tok.type == "table_open":
            out.append([])
        elif tok.type == "tr_open":
            row = []
        elif tok.type in ("th_open", "td_open"):
            inside = True
            cells = []
        elif tok.type == "inline" and inside:
            cells.append(tok.content)
        elif tok.type in ("th_close", "td_close"):
            row.append("".join(cells))
            inside = False
        elif tok.type == "tr_close":
            out[-1].append(row)
    return out


def links(tokens) -> list[tuple[str, str]]:
    """(href, text) of every link."""
    out = []
    for tok in tokens:
        for i, child in enumerate(tok.children or []):
            if child.type == "link_open":
                text = "".join(c.content for c in tok.children[i + 1:]
                               if c.type in ("text", "code_inline"))
                out.append((child.attrs["href"], text.split("  ")[0]))
    return out


def small_rows() -> tuple[list[Row], list[Change]]:
    rows = [
        Row("D1", "Resolved", "Minor", "E.3.1", "Leftover debug print `print(x)`.",
            "app/core.py", 7, 7, raised=1, last_change=2),
        Row("D2", "Open", "Major", "F.2", "Compares `List<String>` with `==` | wrong. "
            "Use equals() instead, which compares content.",
            "src/main/java/org/example/deep/pkg/Service.java", 40, 42, raised=1),
        Row("D3", "New", "Minor", "E.4", "No test covers scale().", "app/core.py", 5, 5,
            raised=2, last_change=2),
        Row("D4", "Open", "Normal", "F.4", "Swallowed exception.", "app/io.py", 3, 3,
            raised=1, ignored=True),
    ]
    evidence = ("the anchored lines changed: `print(x)` is gone from app/core.py:7 and "
                + "the surrounding function now logs through the module logger " * 4)
    changes = [Change("D1", "Open", "Resolved", "anchor-modified", evidence, "rule")]
    return rows, changes


def test_a_small_summary_renders_with_every_part_in_place():
    rows, changes = small_rows()
    body = render(rows, changes, repo=REPO, number=7, round_number=2, head=HEAD,
                  notes=["⚠️ a note"], marker=bot_render.SUMMARY_MARKER,
                  commands=bot_render.COMMANDS)
    tokens = MD.parse(body)
    html = MD.render(body)
    # the heading, then the one-line verdict
    heading = next(i for i, t in enumerate(tokens) if t.type == "heading_open")
    assert tokens[heading + 1].content == f"roundwise · round 2 · `{HEAD[:7]}`"
    assert tokens[heading + 4].content.startswith("🔴 **2 open defects, 1 Major**")
    # "This round" comes before the open table, with the evidence in full
    assert html.index("This round") < html.index("Open (2)")
    assert changes[0].evidence.strip()[-40:] in " ".join(body.split())
    open_table, history = tables(tokens)
    assert open_table[0] == ["id", "state", "severity", "type", "where", "what"]
    assert [r[0] for r in open_table[1:]] == ["D2", "D3"]  # most severe first
    assert open_table[1][3] == "Logic" and open_table[2][3] == "Verification/test"
    # the pipe stayed inside its cell, the generic type was not eaten as an HTML tag
    assert "| wrong" in open_table[1][5] or "wrong" in open_table[1][5]
    assert "List<String>" in html or "List&lt;String&gt;" in html
    href, text = next(x for x in links(tokens) if "Service.java" in x[0])
    assert href == f"https://github.com/{REPO}/blob/{HEAD}/src/main/java/org/example/deep/" \
                   "pkg/Service.java#L40-L42"
    assert text == "…/pkg/Service.java:40"  # short path text, no sideways scrolling
    # resolved and ignored are folded
    assert re.search(r"<details>\s*<summary>1 resolved and 1 ignored</summary>", html)
    assert [r[:2] for r in history[1:]] == [["D1", "Resolved"], ["D4", "Open (ignored)"]]
    # the agent prompt lists every open defect, in a code block inside its own details
    fence = next(t for t in tokens if t.type == "fence")
    assert fence.info == "text"
    assert re.findall(r"^\d+\. (D\d+) ", fence.content, re.MULTILINE) == ["D2", "D3"]
    assert "src/main/java/org/example/deep/pkg/Service.java:40-42" in fence.content
    assert "<summary>🤖 Fix with your coding agent</summary>" in html
    # notes and commands are paragraphs of their own
    assert "<p>⚠️ a note</p>" in html
    assert re.search(r"<p><sub>Commands: ", html)


def test_no_open_defects_says_so_and_offers_no_prompt():
    rows = [Row("D1", "Resolved", "Minor", "E.3.1", "x", "a.py", 1, 1, raised=1)]
    body = render(rows, [], repo=REPO, number=1, round_number=2, head=HEAD)
    assert "✅ **No open defects** · 1 resolved." in body
    assert "Fix with your coding agent" not in body and "Open (" not in body


def many_rows(n_open: int, n_resolved: int, n_ignored: int):
    rows, changes = [], []
    long_path = "services/payments/internal/adapters/persistence/repositories/ledger"
    text = ("The value returned by `fetch_balance()` is used without checking for None, so a "
            "missing account raises AttributeError deep in the settlement job | see "
            "`settle<Account>()`; check it at the call site and return a clear error. ") * 2
    for i in range(1, n_open + n_resolved + n_ignored + 1):
        state = "Open" if i <= n_open else "Resolved"
        sev = ("Critical", "Major", "Normal", "Minor")[i % 4]
        rows.append(Row(f"D{i}", state, sev, "F.2", text, f"{long_path}/module_{i:03}.py",
                        10 + i, 12 + i, raised=1, last_change=2,
                        ignored=i > n_open + n_resolved))
        if n_open < i <= n_open + n_resolved:
            changes.append(Change(f"D{i}", "Open", "Resolved", "anchor-modified",
                                  "the anchored code changed: " + text * 2, "rule"))
    return rows, changes


@pytest.mark.parametrize("n_open, n_resolved, n_ignored", [(300, 150, 50), (500, 0, 0)])
def test_a_500_defect_pr_fits_githubs_limit_and_keeps_every_open_row(n_open, n_resolved,
                                                                     n_ignored):
    rows, changes = many_rows(n_open, n_resolved, n_ignored)
    body = render(rows, changes, repo=REPO, number=7, round_number=2, head=HEAD,
                  marker=bot_render.SUMMARY_MARKER, commands=bot_render.COMMANDS)
    assert len(body) <= MAX_BODY
    tokens = MD.parse(body)
    open_table = tables(tokens)[0]
    assert open_table[0][0] == "id"
    assert sorted(r[0] for r in open_table[1:]) == sorted(f"D{i}" for i in range(1, n_open + 1))
    assert all(len(r) == 6 for r in open_table)  # no cell was broken by a pipe
    assert body.rstrip().endswith(bot_render.COMMANDS)  # nothing cut at the end
    html = MD.render(body)
    assert html.count("<details>") == html.count("</details>")
    # the history went before the open list did: it is a count, not a table
    if n_resolved:
        assert "resolved and" in html and "`/roundwise status` posts the whole ledger" in body


def test_the_agent_prompt_lists_each_open_defect_with_its_fix():
    rows = [Row("D1", "Open", "Minor", "E.3.1", "Leftover print.", "a.py", 3, 3, fix=""),
            Row("D2", "New", "Minor", "F.2", "Loose equality.", "b.js", 9, 9,
                fix="if (x === null) {"),
            Row("D3", "Resolved", "Minor", "F.2", "gone", "c.py", 1, 1)]
    prompt = agent_prompt(rows, REPO, 7, HEAD)
    assert "1. D1 a.py:3 (Minor, Organization): Leftover print." in prompt
    assert "Suggested fix: delete those lines." in prompt and "   | if (x === null) {" in prompt
    assert "D3" not in prompt


def test_a_note_is_shown_in_its_first_round_only_and_not_when_a_defect_says_it(tmp_path):
    from bot.pr.summary import notes_to_show
    from bot.store.ledger_sqlite import Ledger

    note = "This change adds new code to `app/core.py` but adds or updates no test."
    with Ledger(tmp_path / "l.db") as ledger:
        pr = ledger.pull_request(REPO, 7)["id"]
        ledger.begin_round(pr, "h1")
        assert notes_to_show(ledger, pr, 1, [note], []) == [note]
        ledger.save_plan(pr, 1, {"notes": [note]})
        ledger.finish_round(pr, 1)
        ledger.begin_round(pr, "h2")
        assert notes_to_show(ledger, pr, 2, [note], []) == []  # said once already
        other = "Another note."
        asks = [Row("D1", "Open", "Minor", "E.4", "Please add tests.", origin="human")]
        assert notes_to_show(ledger, pr, 2, [other], asks) == []  # a reviewer asked already
        assert notes_to_show(ledger, pr, 2, [other], []) == [other]


DIFF = """diff --git a/app/core.py b/app/core.py
--- a/app/core.py
+++ b/app/core.py
@@ -1,2 +1,3 @@
 def add(a, b):
-    return a + b
+    total = a + b
+    return total
diff --git a/docs/new.md b/docs/new.md
new file mode 100644
--- /dev/null
+++ b/docs/new.md
@@ -0,0 +1,2 @@
+# New
+--- not a header
"""


def test_the_pr_at_a_glance_groups_files_by_directory_with_lines_and_defects():
    from bot.pr.overview import diffstat, glance, this_push

    stats = diffstat(DIFF)
    assert [(s.path, s.added, s.removed) for s in stats] == [("app/core.py", 2, 1),
                                                            ("docs/new.md", 2, 0)]
    rows = [Row("D1", "Open", "Minor", "F.2", "x", "app/core.py", 2, 2),
            Row("D2", "Resolved", "Minor", "F.2", "y", "app/core.py", 3, 3)]
    body = render(rows, [], repo=REPO, number=7, round_number=1, head=HEAD,
                  overview=glance(stats, rows))
    html = MD.render(body)
    assert html.index("at a glance: 2 files, +4 −1") < html.index("Open (1)")
    table = tables(MD.parse(body))[0]
    assert table[1:] == [["`app/`", "`core.py`", "+2", "−1", "D1"],
                         ["`docs/`", "`new.md`", "+2", "−0", "—"]]
    assert this_push(stats[:1]) == ["**This push** changed 1 file: `app/core.py` (+2 −1).", ""]


def test_a_file_name_with_backticks_and_html_stays_inside_its_code_span():
    from markdown_it import MarkdownIt

    from bot.pr.overview import FileStat, glance, this_push

    name = "src/a`<b>bold</b>`|x.py"
    md = MarkdownIt("commonmark").enable("table")
    for lines in (glance([FileStat(name, 1, 0)], []), this_push([FileStat(name, 1, 0)])):
        html = md.render("\n".join(lines))
        assert "<b>" not in html and "&lt;b&gt;" in html  # no markup escapes the span
