"""Anchors across rounds, on real unified diffs (hand-written and generated)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.tasks.diffs import file_diff, git_diff
from tracker.anchors import (
    Anchor,
    DiffError,
    DiffMap,
    Status,
    distinctive,
    find_code,
    fingerprint,
    similarity,
)

OLD = "".join(f"line {i}\n" for i in range(1, 21))


def lines(text, start, end):
    return text.splitlines()[start - 1 : end]


def test_insertion_above_shifts_the_anchor_and_keeps_it_untouched():
    new = "header 1\nheader 2\n" + OLD
    mapped = DiffMap(file_diff("a.py", OLD, new)).map(Anchor("a.py", 10, 12))
    assert mapped.status is Status.UNTOUCHED
    assert (mapped.anchor.start, mapped.anchor.end) == (12, 14)
    assert lines(new, 12, 14) == ["line 10", "line 11", "line 12"]


def test_changed_line_inside_the_range_is_modified_with_removed_and_added_text():
    new = OLD.replace("line 11\n", "line eleven\n")
    mapped = DiffMap(file_diff("a.py", OLD, new)).map(Anchor("a.py", 10, 12))
    assert mapped.status is Status.MODIFIED
    assert mapped.removed == ["line 11"]
    assert mapped.added == ["line eleven"]
    assert (mapped.anchor.start, mapped.anchor.end) == (10, 12)


def test_insertion_between_anchored_lines_is_a_modification():
    new = OLD.replace("line 11\n", "line 11\ninserted\n")
    mapped = DiffMap(file_diff("a.py", OLD, new)).map(Anchor("a.py", 10, 12))
    assert mapped.status is Status.MODIFIED
    assert mapped.added == ["inserted"] and mapped.removed == []
    assert (mapped.anchor.start, mapped.anchor.end) == (10, 13)


def test_insertion_right_after_the_range_is_only_nearby():
    new = OLD.replace("line 12\n", "line 12\nafter\n")
    mapped = DiffMap(file_diff("a.py", OLD, new)).map(Anchor("a.py", 10, 12))
    assert mapped.status is Status.UNTOUCHED
    assert mapped.nearby_change is True
    far = OLD.replace("line 18\n", "line 18\nfar away\n")
    assert DiffMap(file_diff("a.py", OLD, far)).map(Anchor("a.py", 10, 12)).nearby_change is False


def test_removing_every_anchored_line_is_a_deletion():
    new = OLD.replace("line 10\nline 11\n", "")
    mapped = DiffMap(file_diff("a.py", OLD, new)).map(Anchor("a.py", 10, 11))
    assert mapped.status is Status.DELETED
    assert mapped.removed == ["line 10", "line 11"]
    assert mapped.anchor.start == 10  # where the code used to begin; line 12 moved up here
    assert lines(new, 10, 10) == ["line 12"]


@pytest.mark.parametrize("new, anchor, said", [
    (OLD.replace("line 11\n", "line eleven\n"), (11, 11),
     "the line was rewritten (now a.py:11)"),
    (OLD.replace("line 11\n", "line eleven\n"), (10, 12),
     "one of its lines was rewritten (now a.py:10-12)"),
    (OLD.replace("line 11\n", "line 11\ninserted\n"), (10, 12),
     "a line was added to it (now a.py:10-13)"),
    (OLD.replace("line 11\n", "a\nb\nc\n"), (10, 12), "1 line of it became 3 lines (now a.py:10-14)"),
    (OLD.replace("line 10\nline 11\n", ""), (10, 11), "the 2 lines it is on were removed (near a.py:10)"),
    (OLD.replace("line 12\n", "line 12\nafter\n"), (10, 12),
     "the lines it is on did not change (now a.py:10-12); the code next to it changed"),
])
def test_what_became_of_the_lines_is_said_in_a_reviewers_words(new, anchor, said):
    """Evidence as a reviewer writes it: no "0 line(s) removed, 1 added", no "a.py:11-11"."""
    assert DiffMap(file_diff("a.py", OLD, new)).map(Anchor("a.py", *anchor)).describe() == said


def test_deleted_file_has_no_anchor_left():
    mapped = DiffMap(file_diff("a.py", OLD, None)).map(Anchor("a.py", 3, 4))
    assert mapped.status is Status.DELETED and mapped.anchor is None
    assert "deleted" in mapped.describe()


def test_rename_with_edit_maps_into_the_new_path():
    diff = (
        "diff --git a/old.py b/new.py\nsimilarity index 90%\nrename from old.py\nrename to new.py\n"
        "index 1111111..2222222 100644\n--- a/old.py\n+++ b/new.py\n"
        "@@ -1,3 +1,4 @@\n+import os\n a\n b\n c\n"
    )
    mapped = DiffMap(diff).map(Anchor("old.py", 2, 2))
    assert mapped.status is Status.UNTOUCHED
    assert mapped.anchor == Anchor("new.py", 3, 3)
    assert mapped.renamed_from == "old.py"


def test_pure_rename_without_hunks_keeps_lines():
    diff = ("diff --git a/r.txt b/s.txt\nsimilarity index 100%\nrename from r.txt\n"
            "rename to s.txt\n")
    mapped = DiffMap(diff).map(Anchor("r.txt", 5, 6))
    assert mapped.status is Status.UNTOUCHED
    assert mapped.anchor == Anchor("s.txt", 5, 6)


def test_binary_file_change_counts_as_modified():
    diff = ("diff --git a/logo.png b/logo.png\nindex 1111111..2222222 100644\n"
            "Binary files a/logo.png and b/logo.png differ\n")
    assert DiffMap(diff).map(Anchor("logo.png", 1, 1)).status is Status.MODIFIED


def test_no_newline_at_end_of_file_marker():
    old = "a\nb\nc"
    new = "a\nb\nc\nd\n"
    diff = file_diff("f.txt", old, new)
    assert "\\ No newline at end of file" in diff
    dm = DiffMap(diff)
    assert dm.map(Anchor("f.txt", 1, 2)).status is Status.UNTOUCHED
    # "c" lost its missing newline: git shows it removed and added again
    assert dm.map(Anchor("f.txt", 3, 3)).status is Status.MODIFIED


def test_untouched_file_and_unknown_path():
    dm = DiffMap(git_diff({"a.py": OLD}, {"a.py": OLD.replace("line 1\n", "LINE 1\n")}))
    mapped = dm.map(Anchor("other.py", 4, 9))
    assert mapped.status is Status.UNTOUCHED and mapped.anchor == Anchor("other.py", 4, 9)


def test_bad_diff_and_bad_anchor_raise_clear_errors():
    with pytest.raises(DiffError):
        DiffMap("diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n-a\n")
    with pytest.raises(ValueError, match="bad anchor range"):
        Anchor("x.py", 5, 3)


def test_fingerprint_ignores_indentation_and_blank_lines():
    assert fingerprint("  if x:\n\n      return 1\n") == fingerprint("if x:\n return 1")
    assert fingerprint("if x:\n  return 1") != fingerprint("if x:\n  return 2")
    assert not distinctive("}\n")
    assert distinctive("cache.get(key)")


def test_find_code_prefers_the_occurrence_near_a_line():
    text = "x = cache.get(k)\n" + "pass\n" * 20 + "x = cache.get(k)\n"
    assert find_code(text, "x = cache.get(k)") == (1, 1)
    assert find_code(text, "x = cache.get(k)", near=20) == (22, 22)
    assert find_code(text, "missing()") is None
    assert similarity("abc", "abc") == 1.0 and similarity("abc", "xyz") < 0.5


# -- property: mapped lines point at the same text -------------------------------------------

edits = st.lists(
    st.tuples(st.sampled_from(["insert", "delete", "replace"]), st.integers(0, 39),
              st.integers(1, 4)),
    max_size=8,
)


def apply_edits(old_lines, ops):
    new = list(old_lines)
    for n, (op, at, count) in enumerate(ops):
        at = min(at, len(new))
        if op == "insert":
            new[at:at] = [f"new {n}.{k}" for k in range(count)]
        elif op == "delete":
            del new[at : at + count]
        else:
            new[at : at + count] = [f"changed {n}.{k}" for k in range(count)]
    return new


@settings(max_examples=300, deadline=None)
@given(
    ops=edits,
    start=st.integers(1, 30),
    length=st.integers(0, 6),
    dupes=st.booleans(),
)
def test_untouched_anchors_point_at_the_same_text(ops, start, length, dupes):
    # With duplicated lines the diff's alignment is ambiguous; the property must hold anyway.
    old_lines = [f"row {i % 7 if dupes else i}" for i in range(1, 41)]
    new_lines = apply_edits(old_lines, ops)
    old = "\n".join(old_lines) + "\n"
    new = "\n".join(new_lines) + "\n" if new_lines else ""
    dm = DiffMap(file_diff("f.py", old, new))
    end = min(start + length, 40)
    mapped = dm.map(Anchor("f.py", start, end))
    if mapped.status is Status.UNTOUCHED:
        assert lines(new, mapped.anchor.start, mapped.anchor.end) == old_lines[start - 1 : end]
    else:
        assert mapped.removed or mapped.added
    fm = dm.files.get("f.py")
    if fm is not None:
        for line in range(1, 41):
            target = fm.map_line(line)
            if target is not None:
                assert new_lines[target - 1] == old_lines[line - 1]


def test_lines_are_numbered_as_git_numbers_them_whatever_separators_they_hold():
    from tracker.anchors import excerpt, find_code, reverse_apply
    from tracker.lines import split_lines

    text = "int a;\n\x0c\nint f() {\n  s = \"\u2028\";\r\n  return 1;\n}\n"
    assert split_lines(text) == ["int a;", "\x0c", "int f() {", '  s = "\u2028";',
                                 "  return 1;", "}"]
    assert "".join(split_lines(text, keepends=True)) == text
    assert split_lines("a\nb") == ["a", "b"] and split_lines("") == [] == split_lines(None)
    assert excerpt(text, 5, 5) == ["  return 1;"]  # str.splitlines would give line 4 here
    assert find_code(text, "return 1;") == (5, 5)
    new = text.replace("return 1;", "return 2;")
    diff = ("--- a/f.c\n+++ b/f.c\n@@ -4,3 +4,3 @@\n"
            "   s = \"\u2028\";\r\n-  return 1;\n+  return 2;\n }\n")
    assert DiffMap(diff).map(Anchor("f.c", 5, 5)).status is Status.MODIFIED
    assert reverse_apply(new, DiffMap(diff).files["f.c"].patched) == text


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["keep", "drop", "edit", "add"]), min_size=1, max_size=40),
       st.integers(1, 40), st.integers(0, 12))
def test_an_anchor_maps_to_the_ends_of_its_surviving_lines(edits, start, length):
    """Only the first and last surviving lines of a range are looked up; they bound exactly
    the lines that mapping every line of the range finds."""
    old = [f"line {i}" for i in range(1, len(edits) + 1)]
    new = []
    for text, edit in zip(old, edits, strict=True):
        new += {"keep": [text], "drop": [], "edit": [text + "!"], "add": [text, "new"]}[edit]
    fm = DiffMap(file_diff("a.py", "\n".join(old) + "\n", "\n".join(new) + "\n")).files.get(
        "a.py")
    if fm is None:
        return
    start = min(start, len(old))
    end = min(start + length, len(old))
    every = [n for n in map(fm.map_line, range(start, end + 1)) if n is not None]
    assert fm._kept_ends(start, end) == sorted({every[0], every[-1]}) if every else \
        fm._kept_ends(start, end) == []


@settings(max_examples=80, deadline=None)
@given(st.lists(st.sampled_from(["a = 1", "  a  = 1", "b()", "", "c(a)"]), max_size=30),
       st.lists(st.sampled_from(["a = 1", "b()", "c(a)"]), min_size=1, max_size=3),
       st.none() | st.integers(1, 30))
def test_find_code_through_the_line_index_finds_what_a_scan_finds(text, code, near):
    import re

    norm = [(i + 1, n) for i, ln in enumerate(text) if (n := re.sub(r"\s+", " ", ln).strip())]
    found = [(norm[j][0], norm[j + len(code) - 1][0]) for j in range(len(norm) - len(code) + 1)
             if [n for _, n in norm[j : j + len(code)]] == code]
    if not found:
        expected = None
    elif near is None:
        expected = found[0]
    else:
        expected = min(found, key=lambda f: abs(f[0] - near))
    assert find_code("\n".join(text), code, near=near) == expected


def test_normalised_lines_and_their_places_are_those_of_a_line_by_line_walk():
    """``normalised_lines`` builds at C speed (and finds a repeated line's other places when
    asked): the same non-blank lines, numbers and places as normalising each line with the
    whitespace regex and indexing them one by one, on random texts with repeats, blanks, CRLF
    and Unicode spaces."""
    import random
    import re

    from tracker.anchors import file_lines, normalised_lines

    spaces = re.compile(r"\s+")
    rng = random.Random(5)
    pieces = ["", "  ", "x = 1", "  x  =  1", "return x", "}", "\t}\r", "f(y)\x0c", "\u00a0y"]
    for _ in range(200):
        text = "\n".join(rng.choice(pieces) for _ in range(rng.randint(0, 60)))
        text += rng.choice(["", "\n", "\r\n"])
        norm = [(i + 1, n) for i, line in enumerate(file_lines(text))
                if (n := spaces.sub(" ", line).strip())]
        where: dict[str, list[int]] = {}
        for j, (_, n) in enumerate(norm):
            where.setdefault(n, []).append(j)
        got_norm, got_where = normalised_lines(text)
        assert got_norm == norm
        assert dict(got_where.items()) == where and got_where.get("absent") is None
