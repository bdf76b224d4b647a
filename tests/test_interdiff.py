"""The interdiff: after a rebase, the author's own change between two reviewed heads."""

from tracker.anchors import DiffMap
from tracker.decide import RoundInput, decide_round
from tracker.interdiff import interdiff, rebase_text, unified
from tracker.lifecycle import State
from tracker.models import Defect

BASE = "".join(f"upstream_{i}()\n" for i in range(1, 21))


def test_rebase_applies_upstream_changes_around_the_prs_own_lines():
    head = BASE.replace("upstream_10()\n", "upstream_10()\nflagged(x)\n")
    new_base = BASE.replace("upstream_2()\n", "upstream_2()\nnew_upstream()\n") \
        .replace("upstream_11()", "upstream_11(changed)")
    rebased = rebase_text(BASE, head, new_base)
    # upstream's insertion and its edit next to the PR's line both apply; the PR's line stays
    assert rebased == new_base.replace("upstream_10()\n", "upstream_10()\nflagged(x)\n")


def test_on_overlapping_edits_the_prs_lines_win():
    head = BASE.replace("upstream_5()", "pr_edit_5()")
    new_base = BASE.replace("upstream_5()", "upstream_edit_5()").replace("upstream_15()",
                                                                       "up_15()")
    rebased = rebase_text(BASE, head, new_base)
    assert "pr_edit_5()" in rebased and "upstream_edit_5()" not in rebased
    assert "up_15()" in rebased  # the non-overlapping upstream edit still applies
    assert rebase_text(BASE, head, BASE) == head  # no upstream change: nothing to do


def test_upstream_edits_move_a_defect_and_resolve_nothing_while_the_authors_fix_does():
    head_old = BASE.replace("upstream_10()\n", "upstream_10()\nflagged_call(x)\n")
    base_new = BASE.replace("upstream_2()\n", "upstream_2()\nnew_a()\nnew_b()\n") \
        .replace("upstream_11()", "upstream_11(changed)")
    head_new = base_new.replace("upstream_10()\n", "upstream_10()\nflagged_call(x)\n")
    old_pr, new_pr = unified("m.py", BASE, head_old), unified("m.py", base_new, head_new)
    d = Defect(key="D1", description="`flagged_call` is wrong here", origin="human",
               state=State.NEW, raised_round=1, state_round=1, path="m.py", line_start=11,
               line_end=11, code="flagged_call(x)")

    moved = interdiff(old_pr, new_pr, {"m.py": head_old}, {"m.py": head_new})
    assert moved.round == ""  # the author changed nothing of their own
    decision = decide_round([d], RoundInput(2, DiffMap(moved.round), {"m.py": head_new},
                                            upstream=DiffMap(moved.upstream)))[0]
    assert (decision.state, decision.line_start) == (State.OPEN, 13)

    # The plain diff between the heads would show upstream's edit next to the defect.
    assert "upstream_11(changed)" in unified("m.py", head_old, head_new)

    fixed = head_new.replace("flagged_call(x)", "safe_call(x, y)")
    moved = interdiff(old_pr, unified("m.py", base_new, fixed), {"m.py": head_old},
                      {"m.py": fixed})
    decision = decide_round([d], RoundInput(2, DiffMap(moved.round), {"m.py": fixed},
                                            upstream=DiffMap(moved.upstream)))[0]
    assert (decision.state, decision.rule) == (State.RESOLVED, "subject-removed")


def test_files_the_pr_adds_or_deletes_survive_the_rebase():
    assert rebase_text(None, "new file\n", None) == "new file\n"  # added by the PR
    assert rebase_text("gone\n", None, "gone, edited upstream\n") is None  # deleted by it
    assert unified("a.py", None, "x\n").startswith("diff --git a/a.py b/a.py\nnew file mode")
    assert unified("a.py", "x", "x") == ""
