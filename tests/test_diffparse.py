"""The tracker's diff parse (``tracker.diffparse``) is unidiff's, line for line, and reads a
hunk only when asked.

Every round diff of the development tasks and of the bundled examples, and diffs written to
hit unidiff's corners (no newline at the end, blank lines in a hunk, CRLF, binary files,
renames, a deleted file, a hunk of one line), are parsed both ways: the files, their flags and
paths, the hunks and every line (type, value, old and new number) must be the same.
"""

from __future__ import annotations

import json

import pytest
import unidiff

from bench.perf.bigdiff import GitDiffs, big_files
from tracker.anchors import DiffMap
from tracker.diffparse import hunk_lines, parse

from .conftest import EXAMPLES, SHARED_DATA

CORNERS = [
    # no newline at the end of the file, on both sides
    ("diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1,2 +1,2 @@\n x = 1\n-y = 2\n"
     "\\ No newline at end of file\n+y = 3\n\\ No newline at end of file\n"),
    # a blank line in a hunk (an editor stripped its space), CRLF lines, a one-line hunk
    "--- a/b.txt\n+++ b/b.txt\n@@ -1,3 +1,3 @@\n first\r\n\n-old\r\n+new\r\n@@ -9 +9 @@\n-z\n+Z\n",
    # binary, rename with edits, deletion, addition, mode change
    ("diff --git a/img.png b/img.png\nindex 1111111..2222222 100644\nBinary files a/img.png "
     "and b/img.png differ\n"
     "diff --git a/old.py b/new.py\nsimilarity index 90%\nrename from old.py\nrename to new.py\n"
     "--- a/old.py\n+++ b/new.py\n@@ -1 +1,2 @@\n keep\n+added\n"
     "diff --git a/gone.py b/gone.py\ndeleted file mode 100644\n--- a/gone.py\n+++ /dev/null\n"
     "@@ -1,2 +0,0 @@\n-a\n-b\n"
     "diff --git a/born.py b/born.py\nnew file mode 100644\n--- /dev/null\n+++ b/born.py\n"
     "@@ -0,0 +1 @@\n+hello\n"
     "diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n"),
    # a trailing blank line after the last hunk, a removed line that looks like a header
    "--- a/c.py\n+++ b/c.py\n@@ -1,2 +1,1 @@ def f():\n--- not a header\n keep\n\n",
    # runs of hunks broken by a marker and by a blank line, then a second file
    ("--- a/e.py\n+++ b/e.py\n@@ -1 +1 @@\n-a\n+b\n\\ No newline at end of file\n"
     "@@ -5 +5 @@\n-c\n+d\n@@ -9 +9 @@\n-e\n+f\n\n@@ -12 +12 @@\n-g\n+h\n"
     "--- a/f.py\n+++ b/f.py\n@@ -1 +1 @@\n-i\n+j\n@@ -3 +3 @@\n-k\n+l\n"),
    # no newline at the end of the diff text itself
    "--- a/d.py\n+++ b/d.py\n@@ -1 +1 @@\n-a\n+b",
]


BROKEN = [
    "--- a/a\n+++ b/a\n@@ -1,2 +1,2 @@\n x\n",  # shorter than its header says
    "--- a/a\n+++ b/a\n@@ -1 +1 @@\n-x\n-y\n+z\n",  # longer
    "--- a/a\n+++ b/a\n@@ -1 +1 @@\n*x\n",  # not a hunk line
    "@@ -1 +1 @@\n x\n",  # a hunk outside any file
]


@pytest.mark.parametrize("text", BROKEN)
def test_broken_diffs_fail_as_unidiff_fails_on_them(text):
    with pytest.raises(unidiff.UnidiffParseError):
        unidiff.PatchSet(text)
    with pytest.raises(unidiff.UnidiffParseError):
        parse(text)


def _task_diffs() -> list[str]:
    diffs = []
    for folder in (SHARED_DATA / "mcr-dev", SHARED_DATA / "mcr-dev-2", EXAMPLES):
        for path in sorted(folder.rglob("*.json")) if folder.is_dir() else []:
            try:
                task = json.loads(path.read_text())
            except (ValueError, UnicodeDecodeError):
                continue
            for rnd in task.get("rounds", []) if isinstance(task, dict) else []:
                if isinstance(rnd, dict) and isinstance(rnd.get("diff"), str):
                    diffs.append(rnd["diff"])
    return diffs


def _shape(patch) -> list:
    return [(f.source_file, f.target_file, f.is_binary_file, f.is_added_file,
             f.is_removed_file, f.is_rename, f.path, f.added, f.removed,
             [((h.source_start, h.source_length, h.target_start, h.target_length,
                h.section_header, h.added, h.removed),
               [(ln.line_type, ln.value, ln.source_line_no, ln.target_line_no)
                for ln in hunk_lines(h)]) for h in f])
            for f in patch]


@pytest.mark.parametrize("text", CORNERS)
def test_corner_diffs_parse_as_unidiff_parses_them(text):
    assert _shape(parse(text)) == _shape(unidiff.PatchSet(text))


def test_every_task_diff_parses_as_unidiff_parses_it():
    diffs = _task_diffs()
    if not diffs:
        pytest.skip("no task diffs here (../shared/data and bench/examples absent)")
    compared = 0
    for text in diffs:
        try:
            expected = unidiff.PatchSet(text)
        except unidiff.UnidiffParseError:
            with pytest.raises(unidiff.UnidiffParseError):
                parse(text)
            continue
        assert _shape(parse(text)) == _shape(expected)
        compared += 1
    assert compared >= len(diffs) // 2


def test_a_hunk_is_read_only_when_an_anchor_needs_it(tmp_path):
    repo = GitDiffs(tmp_path / "repo")
    repo.start(big_files("hunks", 0, changed=2000))
    text = repo.diff(big_files("hunks", 1, changed=2000))
    patch = parse(text)
    hunks = [h for f in patch for h in f]
    assert len(hunks) > 100 and not any(h._roundwise_body.read for h in hunks)  # none read
    diff = DiffMap(text)
    from tracker.anchors import Anchor

    path = min(diff.files)
    diff.map(Anchor(path, 30, 31))
    read = [i for fm in diff.files.values() for i in fm._lines]
    assert 0 < len(read) <= 2  # the hunk at the anchor (and its neighbour), not the others


def test_old_texts_rebuilt_from_either_parse_are_the_same():
    """``reverse_apply`` reads a hunk's body as text when it can: the old text it rebuilds is
    the one unidiff's own lines give, for every file of every diff here."""
    from tracker.anchors import reverse_apply

    new_text = "".join(f"n{k}\n" for k in range(400))
    checked = 0
    for text in CORNERS + _task_diffs():
        try:
            expected = unidiff.PatchSet(text)
        except unidiff.UnidiffParseError:
            continue
        for fast, full in zip(parse(text), expected):
            assert reverse_apply(new_text, fast) == reverse_apply(new_text, full)
            checked += 1
    assert checked >= len(CORNERS)
