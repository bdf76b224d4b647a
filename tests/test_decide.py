"""Deterministic state decisions: each rule on a small real diff, plus verdict merging."""

import pytest

from bench.tasks.diffs import git_diff
from tracker.decide import RoundInput, Verdict, apply_verdict, decide_round
from tracker.lifecycle import State
from tracker.models import DecidedBy, Defect, Signal, SignalKind

BASE = "".join(f"stmt_{i}()\n" for i in range(1, 31))


def defect(key="D1", line=10, end=None, state=State.OPEN, **kw):
    kw.setdefault("code", "\n".join(BASE.splitlines()[line - 1 : (end or line)]))
    return Defect(key=key, description=kw.pop("description", "a problem"), origin="bot",
                  state=state, raised_round=1, state_round=1, path="m.py", line_start=line,
                  line_end=end or line, **kw)


def decide(d, new, signals=(), number=2, files=None, old=BASE):
    diff = git_diff({"m.py": old}, {"m.py": new, **(files or {})})
    snapshot = {"m.py": new, **(files or {})}
    return decide_round([d], RoundInput.from_diff(number, diff, snapshot, list(signals)))[0]


def test_untouched_anchor_stays_open_even_when_the_author_claims_a_fix():
    new = BASE.replace("stmt_25()\n", "other()\n")
    claim = Signal(SignalKind.AUTHOR_CLAIMS_FIXED, "D1", "sam", "fixed!")
    d = decide(defect(), new, [claim])
    assert d.state is State.OPEN and d.rule == "anchor-untouched"
    assert "says it is fixed, but that is a claim" in d.evidence
    assert d.signals == ["author_claims_fixed by sam"]


def test_modified_anchor_is_a_resolved_candidate_with_its_new_position():
    new = "import x\n" + BASE.replace("stmt_10()\n", "fixed_10()\n")
    d = decide(defect(), new)
    assert (d.state, d.rule, d.candidate) == (State.RESOLVED, "anchor-modified", True)
    assert (d.line_start, d.line_end) == (11, 11) and d.code == "fixed_10()"


def test_deleted_anchor_resolves_and_whitespace_only_does_not():
    assert decide(defect(), BASE.replace("stmt_10()\n", "")).rule == "anchor-deleted"
    d = decide(defect(), BASE.replace("stmt_10()\n", "    stmt_10()  \n"))
    assert (d.state, d.rule) == (State.OPEN, "whitespace-only")


def test_code_moved_unchanged_stays_open_and_follows_the_code():
    lines = BASE.splitlines(keepends=True)
    moved = lines[:9] + lines[10:25] + [lines[9]] + lines[25:]
    d = decide(defect(code="stmt_10()  # slow query"), "".join(moved),
               old=BASE.replace("stmt_10()\n", "stmt_10()  # slow query\n"))
    assert d.state is State.RESOLVED  # different text: not a pure move
    old = BASE.replace("stmt_10()\n", "cache_lookup_after_query()\n")
    lines = old.splitlines(keepends=True)
    moved = "".join(lines[:9] + lines[10:25] + [lines[9]] + lines[25:])
    d = decide(defect(code="cache_lookup_after_query()"), moved, old=old)
    assert (d.state, d.rule, d.line_start) == (State.OPEN, "anchor-moved", 25)


def test_an_edit_on_the_adjacent_line_does_not_resolve_what_the_comment_is_on():
    new = BASE.replace("stmt_11()\n", "stmt_11(fixed=True)\n")
    d = decide(defect(), new)
    assert (d.state, d.rule) == (State.OPEN, "anchor-untouched")
    d = decide(defect(type="E.4"), new)
    assert (d.state, d.rule) == (State.OPEN, "anchor-untouched")


def test_missing_tests_are_resolved_by_test_code_only_when_that_rule_is_switched_on():
    from tracker import rules

    files = {"tests/test_m.py": "def test_x():\n    pass\n"}
    assert decide(defect(type="E.4"), BASE, files=files).state is State.OPEN  # off by default
    saved = dict(rules.SWITCHES)
    rules.SWITCHES["tests_added"] = True
    try:
        d = decide(defect(type="E.4"), BASE, files=files)
    finally:
        rules.SWITCHES.update(saved)
    assert (d.state, d.rule) == (State.RESOLVED, "tests-added")
    assert "tests/test_m.py" in d.evidence


def test_applied_suggestion_resolves():
    body = "Rename it:\n```suggestion\nbetter_name_10()\n```"
    new = BASE.replace("stmt_9()\n", "better_name_10()\n")  # applied one line off
    d = decide(defect(description=body), new)
    assert (d.state, d.rule) == (State.RESOLVED, "suggestion-applied")
    assert d.line_start == 9


def test_human_thread_resolution_and_unresolution_win():
    resolved = Signal(SignalKind.THREAD_RESOLVED, "D1", "rina")
    d = decide(defect(), BASE.replace("stmt_25()\n", "x()\n"), [resolved])
    assert (d.state, d.decided_by, d.candidate) == (State.RESOLVED, DecidedBy.HUMAN, False)
    unresolved = Signal(SignalKind.THREAD_UNRESOLVED, "D1", "rina")
    d = decide(defect(state=State.RESOLVED), BASE, [unresolved])
    assert (d.state, d.decided_by) == (State.REOPENED, DecidedBy.HUMAN)


def test_resolved_defect_stays_resolved_until_its_code_comes_back():
    fixed = BASE.replace("stmt_10()\n", "safe_10()\n")
    settled = defect(state=State.RESOLVED, code="safe_10()", resolved_code="leaky_open_10()")
    assert decide(settled, fixed.replace("stmt_20()\n", "y()\n"), old=fixed).rule == \
        "stays-resolved"
    back = fixed.replace("stmt_20()\n", "leaky_open_10()\n")
    d = decide(settled, back, old=fixed)
    assert (d.state, d.rule, d.candidate) == (State.REOPENED, "fingerprint-reappeared", True)
    assert d.line_start == 20


def test_fix_undone_reopens_when_the_new_text_resembles_the_old():
    bad = "describe('a strictly empty object. In other words it accepts {} only')"
    fix = "describe('a strictly empty object {}')"
    old = BASE.replace("stmt_10()\n", fix + "\n")
    settled = defect(state=State.RESOLVED, code=fix, resolved_code=bad)
    undone = old.replace(fix, "describe('a strictly empty plain object. In other words it "
                              "accepts the {} value only')")
    assert decide(settled, undone, old=old).rule == "fix-undone"
    tidy = old.replace(fix, "describe('a strictly empty plain object {}')")
    assert decide(settled, tidy, old=old).rule == "stays-resolved"


def test_a_fix_edited_again_toward_the_fix_is_not_compared_with_the_old_code_in_full(
        monkeypatch):
    """The fixed line edited again, closer to the fix than a count of shared characters
    lets it be to the old code: only its likeness to the fix is worked out in full
    (difflib's ratio, once), and it stays resolved; undone, it is reopened as before."""
    import difflib

    calls = []
    ratio = difflib.SequenceMatcher.ratio
    monkeypatch.setattr(difflib.SequenceMatcher, "ratio",
                        lambda self: calls.append(1) or ratio(self))
    bad, fix = "value = compute(3, weight)", "value = compute(3, weight)  # checked"
    old = BASE.replace("stmt_10()\n", fix + "\n")
    settled = defect(state=State.RESOLVED, code=fix, resolved_code=bad)
    again = old.replace(fix, "value = compute(3, weight)  # checked twice")
    assert decide(settled, again, old=old).rule == "stays-resolved"
    assert len(calls) == 1
    calls.clear()
    d = decide(settled, old.replace(fix, "value = compute(3, weight)  #"), old=old)
    assert (d.rule, len(calls)) == ("fix-undone", 2)
    assert "(similarity 0.96 to it, 0.88 to the fix)" in d.evidence


def test_a_remark_naming_no_code_is_not_resolved_by_any_push():
    d = Defect(key="D1", description="you could fold all of this into a single action",
               origin="human", state=State.NEW, raised_round=1, state_round=1)
    assert decide(d, BASE).rule == "pr-unchanged"
    pushed = decide(d, BASE + "more()\n")
    assert (pushed.state, pushed.rule) == (State.OPEN, "pr-unaddressed")


def test_a_remark_about_the_changelog_is_resolved_by_a_changelog_change_only():
    d = Defect(key="D1", description="please add a changelog entry", origin="human",
               state=State.NEW, raised_round=1, state_round=1)
    code_only = decide(d, BASE + "more()\n")
    assert (code_only.state, code_only.rule) == (State.OPEN, "remark-kind-unchanged")
    entry = decide(d, BASE, files={"changelog/12.feature.rst": "Adds scaling.\n"})
    assert (entry.state, entry.rule) == (State.RESOLVED, "remark-kind-changed")


@pytest.mark.parametrize("remark, answers, does_not", [
    # a changeset (JavaScript monorepos) answers a changelog remark; a news module does not
    ("Please add a changeset for this.", ".changeset/brave-dogs.md", "src/news/feed.js"),
    # a requirements file is not documentation; a guide page in MDX is
    ("Please document the new option.", "website/guide/options.mdx", "requirements.txt"),
])
def test_the_kind_of_file_a_remark_asks_for_is_read_by_the_common_conventions(
        remark, answers, does_not):
    d = Defect(key="D1", description=remark, origin="human",
               state=State.NEW, raised_round=1, state_round=1)
    entry = decide(d, BASE, files={answers: "Some text.\n"})
    assert (entry.state, entry.rule) == (State.RESOLVED, "remark-kind-changed")
    other = decide(d, BASE, files={does_not: "Some text.\n"})
    assert (other.state, other.rule) == (State.OPEN, "remark-kind-unchanged")


def test_ignored_defects_get_no_decision():
    rnd = RoundInput.from_diff(2, "", {})
    assert decide_round([defect(ignored=True)], rnd) == []


def test_verdicts_can_confirm_or_overturn_candidates_only():
    cand = decide(defect(), BASE.replace("stmt_10()\n", "other()\n"))
    kept = apply_verdict(cand, Verdict("D1", State.OPEN, "still calls the DB first"))
    assert (kept.state, kept.rule, kept.decided_by) == (State.OPEN, "anchor-modified+overturned",
                                                        DecidedBy.LLM)
    assert "verifier: still calls the DB first" in kept.evidence and "was edited" in kept.evidence
    sure = apply_verdict(cand, Verdict("D1", State.RESOLVED, "query now guarded"))
    assert sure.rule == "anchor-modified+confirmed"
    odd = apply_verdict(cand, Verdict("D1", State.REOPENED, "?"))
    assert odd is cand  # a verdict outside what the rules allow is ignored
    firm = decide(defect(), BASE)
    assert apply_verdict(firm, Verdict("D1", State.RESOLVED, "x")) is firm  # not a candidate


def test_an_anchor_on_a_newer_commit_is_mapped_from_that_commit():
    # A person commented on a push the bot never reviewed (commit "c2"): the diff from the
    # last reviewed head would shift the anchor wrongly; the diff from c2 is used instead.
    reviewed, c2 = BASE, "new_first()\n" + BASE
    head = "new_first()\n" + BASE.replace("stmt_10()\n", "fixed_10()\n")
    d = defect(line=11, anchor_sha="c2", code="stmt_10()")  # line 11 at c2
    rnd = RoundInput.from_diff(3, git_diff({"m.py": reviewed}, {"m.py": head}), {"m.py": head})
    rnd.diffs_from["c2"] = RoundInput.from_diff(3, git_diff({"m.py": c2}, {"m.py": head})).diff
    decision = decide_round([d], rnd)[0]
    assert (decision.state, decision.rule, decision.line_start) == \
        (State.RESOLVED, "anchor-modified", 11)
    wrong = decide_round([defect(line=11, code="stmt_10()")], rnd)[0]  # as if at the reviewed
    assert wrong.rule != "anchor-modified"  # head: line 11 there is stmt_11(), untouched


def test_a_round_works_out_each_file_once_not_once_per_defect(monkeypatch):
    """Thirty defects in one edited file: its old text is rebuilt and the file tokenised once
    for the round; the decisions are those of deciding each defect alone."""
    import tracker.anchors
    import tracker.scope

    def defects():
        return [defect(f"D{n}", n, description=f"stmt_{n} is wrong") for n in range(1, 31)]

    new = BASE.replace("stmt_3()\n", "stmt_3(fixed)\n").replace("stmt_20()\n", "")
    alone = [decide(d, new) for d in defects()]
    tracker.scope.file_tokens.cache_clear()
    calls = []
    reverse_apply, tokens = tracker.anchors.reverse_apply, tracker.scope.tokens
    monkeypatch.setattr(tracker.anchors, "reverse_apply",
                        lambda *a: calls.append("old text") or reverse_apply(*a))
    monkeypatch.setattr(tracker.scope, "tokens",
                        lambda text: calls.append("file tokens") or tokens(text))
    together = decide_round(defects(), RoundInput.from_diff(
        2, git_diff({"m.py": BASE}, {"m.py": new}), {"m.py": new}))
    assert [(d.key, d.state, d.rule, d.evidence, d.line_start, d.code) for d in together] == \
        [(d.key, d.state, d.rule, d.evidence, d.line_start, d.code) for d in alone]
    assert sorted(calls) == ["file tokens", "old text"]
