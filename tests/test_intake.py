"""People's comments into the ledger: defects, replies, disputes, thread resolutions."""

from tracker.discussion import accepts, claims_fixed, raises_concern, suggestion
from tracker.intake import Comment, take_comment, take_thread
from tracker.lifecycle import State
from tracker.models import DecidedBy, Decision, SignalKind


def setup(ledger):
    pr = ledger.pull_request("o/r", 3, author="sam")["id"]
    ledger.begin_round(pr, "h1")
    ledger.finish_round(pr, 1)
    return pr


def inline(cid, body, author="rina", reply=None, line=12):
    return Comment(id=cid, kind="review_comment", author=author, body=body, path="a.py",
                   line=line, in_reply_to=reply)


def test_reviewer_inline_comment_becomes_a_human_defect(ledger):
    pr = setup(ledger)
    out = take_comment(ledger, pr, inline(100, "This leaks the file handle; use with."),
                       pr_author="sam", code="f = open(p)")
    assert out.action == "raised"
    d = out.defect
    assert (d.key, d.origin.value, d.author, d.path, d.line_start, d.state) == \
        ("D1", "human", "rina", "a.py", 12, State.NEW)
    assert d.raised_round == 1 and d.code == "f = open(p)" and d.type == "F.3"
    again = take_comment(ledger, pr, inline(100, "edited text"), pr_author="sam")
    assert again.action == "updated" and again.defect.description == "edited text"
    assert len(ledger.defects(pr)) == 1


def test_praise_author_notes_and_bot_comments_are_not_defects(ledger):
    pr = setup(ledger)
    assert take_comment(ledger, pr, inline(1, "LGTM 👍"), pr_author="sam").action == "ignored"
    assert take_comment(ledger, pr, inline(2, "note to self", author="sam"),
                        pr_author="sam").action == "ignored"
    bot = Comment(id=3, kind="review_comment", author="roundwise[bot]", body="x", by_bot=True)
    assert take_comment(ledger, pr, bot, pr_author="sam").action == "ignored"
    meta = Comment(id=4, kind="review", author="rina", body="See the inline comments.")
    assert take_comment(ledger, pr, meta, pr_author="sam").action == "ignored"
    assert ledger.defects(pr) == []


def test_pr_level_concern_is_an_unanchored_defect(ledger):
    pr = setup(ledger)
    out = take_comment(ledger, pr, Comment(id=9, kind="issue_comment", author="rina",
                                           body="Please add a changelog entry."),
                       pr_author="sam")
    assert out.action == "raised" and out.defect.path is None and out.defect.type == "E.1.1"


def test_author_claim_is_a_signal_not_a_resolution(ledger):
    pr = setup(ledger)
    take_comment(ledger, pr, inline(100, "Off by one here."), pr_author="sam")
    out = take_comment(ledger, pr, inline(101, "Fixed, thanks!", author="sam", reply=100),
                       pr_author="sam")
    assert out.signal is SignalKind.AUTHOR_CLAIMS_FIXED
    assert ledger.defect(pr, "D1").state is State.NEW
    signals = ledger.signals(pr, since_round=1)
    assert [(s.kind, s.defect_key, s.author) for s in signals] == \
        [(SignalKind.AUTHOR_CLAIMS_FIXED, "D1", "sam")]


def test_reviewer_dispute_undoes_a_rule_resolution_of_the_same_round(ledger):
    pr = setup(ledger)
    take_comment(ledger, pr, inline(100, "Mixed formatting."), pr_author="sam")
    ledger.begin_round(pr, "h2")
    ledger.record_decision(pr, 2, Decision("D1", State.RESOLVED, "anchor-modified", "changed"))
    ledger.finish_round(pr, 2)
    out = take_comment(ledger, pr, inline(102, "Still two styles in this block.", reply=100),
                       pr_author="sam")
    assert out.signal is SignalKind.REVIEWER_DISPUTES
    d = ledger.defect(pr, "D1")
    assert d.state is State.OPEN and d.state_round == 2
    last = ledger.history(pr, "D1")[-1]
    assert (last["rule"], last["decided_by"]) == ("reviewer-disputes", "human")
    assert "Still two styles" in last["evidence"]


def test_reviewer_reply_in_an_untracked_thread_raises_a_defect(ledger):
    pr = setup(ledger)
    take_comment(ledger, pr, inline(100, "Should I split this?", author="sam"), pr_author="sam")
    out = take_comment(ledger, pr, inline(101, "You must keep the data flowing.", reply=100),
                       pr_author="sam")
    assert out.action == "raised" and out.defect.key == "D1"
    follow = take_comment(ledger, pr, inline(102, "ok, done", author="sam", reply=100),
                          pr_author="sam")
    assert follow.defect.key == "D1" and follow.signal is SignalKind.AUTHOR_CLAIMS_FIXED


def test_thread_resolution_by_a_person_and_unresolution(ledger):
    pr = setup(ledger)
    take_comment(ledger, pr, Comment(id=100, kind="review_comment", author="rina",
                                     body="Wrong default.", path="a.py", line=3,
                                     node_id="PRRC_100"), pr_author="sam")
    out = take_thread(ledger, pr, resolved=True, by="rina", node_id="PRRT_7",
                      comment_ids=[100])
    d = out.defect
    assert d.state is State.RESOLVED and d.thread_node_id == "PRRT_7"
    assert ledger.history(pr, "D1")[-1]["decided_by"] == str(DecidedBy.HUMAN)
    back = take_thread(ledger, pr, resolved=False, by="rina", node_id="PRRT_7")
    assert back.defect.state is State.NEW  # still the round it was raised in
    assert take_thread(ledger, pr, resolved=True, by="x", node_id="PRRT_404").action == "ignored"


def test_comment_text_heuristics():
    assert raises_concern("", inline=True) and not raises_concern("", inline=False)
    assert raises_concern("```suggestion\nx = 1\n```", inline=False)
    assert not raises_concern("Looking good - thanks Milan!", inline=False)
    assert raises_concern("The point of the interceptor is to dump on abort.", inline=False)
    assert claims_fixed("Done.") and not claims_fixed("Why?")
    assert accepts("LGTM, thanks") and not accepts("Thanks, but this is still wrong")
    assert suggestion("nit\n```suggestion\n    return x\n```\n") == ["    return x"]
    assert suggestion("```suggestion\n```") == [] and suggestion("plain") is None


def test_impossible_line_numbers_anchor_nothing_and_the_next_round_still_decides(ledger):
    from tracker.decide import RoundInput, decide_round

    pr = setup(ledger)
    below = take_comment(ledger, pr, inline(20, "This leaks the file handle.", line=-3),
                         pr_author="sam").defect
    assert below.line_start is None and not below.anchored
    backwards = Comment(id=21, kind="review_comment", author="rina", path="a.py", line=4,
                        start_line=9, body="This retry loop never ends.")
    kept = take_comment(ledger, pr, backwards, pr_author="sam").defect
    assert (kept.line_start, kept.line_end) == (4, 4)  # the line stands, the start is dropped
    diff = ("--- a/a.py\n+++ b/a.py\n@@ -4,1 +4,1 @@\n-while True:\n+for _ in range(3):\n")
    states = {d.key: d.state for d in decide_round(
        ledger.defects(pr), RoundInput.from_diff(2, diff, {"a.py": "x\n" * 3 + "for _ in range(3):\n"}))}
    assert states == {below.key: State.OPEN, kept.key: State.RESOLVED}
    import dataclasses  # a row written before lines were checked anchors nothing either

    old_row = dataclasses.replace(kept, line_start=-3, line_end=-3)
    assert not old_row.anchored
    assert decide_round([old_row], RoundInput.from_diff(2, diff, {}))[0].state is State.OPEN


def test_a_64_kb_mention_flood_is_read_in_bounded_work(ledger, monkeypatch):
    """A person's comment of 65,536 characters of @mentions (GitHub's limit) is taken in
    whole (the defect keeps it), but the keyword readings see at most its first
    ``MAX_READ`` characters, so the work they do does not grow with the comment: measured
    in characters handed to the regular expressions, not in time."""
    import re

    from tracker import discussion

    seen: list[int] = []
    class Counted:
        def __init__(self, pattern):
            self.pattern = pattern

        def search(self, text, *args):
            seen.append(len(text))
            return self.pattern.search(text, *args)

        def match(self, text, *args):
            seen.append(len(text))
            return self.pattern.match(text, *args)

        def sub(self, repl, text, *args):
            seen.append(len(text))
            return self.pattern.sub(repl, text, *args)

        def findall(self, text, *args):
            seen.append(len(text))
            return self.pattern.findall(text, *args)

    for name, value in vars(discussion).items():
        # ```suggestion is looked for in the whole body: a literal, found at memchr speed
        if isinstance(value, re.Pattern) and name != "_SUGGESTION":
            monkeypatch.setattr(discussion, name, Counted(value))
    real_re_search = re.search

    def counted_re_search(pattern, text, *args):
        seen.append(len(text))
        return real_re_search(pattern, text, *args)

    monkeypatch.setattr(discussion.re, "search", counted_re_search)
    flood = "".join(f"@user{n} " for n in range(9000))[:65_536]
    pr = setup(ledger)
    out = take_comment(ledger, pr, Comment(id=7, kind="issue_comment", author="rina",
                                           body="Please check " + flood),
                       pr_author="sam")
    assert out.action == "raised" and len(out.defect.description) == 65_536
    bound = getattr(discussion, "MAX_READ", 4096)
    assert seen and max(seen) <= bound
    assert sum(seen) <= 40 * bound  # a bounded number of bounded readings
