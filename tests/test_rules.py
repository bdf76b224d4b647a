"""The tracker's rule table, one rule at a time, on small diffs shaped like the real failures.

Each test builds two versions of a file, the git diff between them (as GitHub's compare would
give it), and a tracked defect made from a reviewer's comment; then checks the state, the rule
that decided and, where it matters, the evidence.
"""

import pytest

from bench.tasks.diffs import git_diff
from bot.store.ledger_sqlite import Ledger
from tracker import rules
from tracker.anchors import DiffMap
from tracker.decide import RoundInput, decide_round
from tracker.intake import Comment, take_comment
from tracker.lifecycle import State
from tracker.models import Defect, Signal
from tracker.rules import renamed_only
from tracker.scope import definition, enclosing
from tracker.subject import read_subject

JAVA = """package shop;

public class Slider {
    private Bindable selectedValue;

    ~Slider()
    {
        selectedValue.ValueChanged -= onChange;
    }

    public void load() {
        int x = 1;
        run(x);
    }
}
"""


@pytest.fixture
def switched_on(monkeypatch):
    """Turn on rules that are off by default (below the three-repository bar) for one test."""
    def turn_on(*names):
        for name in names:
            assert rules.SWITCHES[name] is False, f"{name} is on by default: test it as it is"
            monkeypatch.setitem(rules.SWITCHES, name, True)
    return turn_on


def comment_defect(body, path, start, end=None, *, old, key="D1"):
    code = "\n".join(old.splitlines()[start - 1 : (end or start)])
    return Defect(key=key, description=body, origin="human", state=State.NEW, raised_round=1,
                  state_round=1, path=path, line_start=start, line_end=end or start, code=code)


def decide(defect, files_old, files_new, signals=()):
    diff = git_diff(files_old, files_new)
    return decide_round([defect], RoundInput.from_diff(2, diff, files_new, list(signals)))[0]


def test_scope_is_found_with_a_real_parser_in_several_languages():
    assert enclosing("a/Slider.java", JAVA, 13) == (11, 14)  # the method around line 13
    assert enclosing("a/Slider.java", JAVA, 4) == (3, 15)  # a field: the class
    py = "import os\n\n\ndef f(x):\n    y = x\n    return y\n"
    assert enclosing("m.py", py, 5) == (4, 6)
    ts = "export function add(a: number) {\n  const b = a + 1;\n  return b;\n}\n"
    assert enclosing("m.ts", ts, 2) == (1, 4)
    cs = "class A {\n    void F() {\n        G();\n    }\n}\n"
    assert enclosing("A.cs", cs, 3) == (2, 4)
    c = "static int verify_signature(int k)\n{\n\treturn k;\n}\n"
    assert definition("t.c", c, "verify_signature") == (1, 4)  # C names sit in declarators
    assert enclosing("notes.txt", "a\nb\n", 1) is None  # unknown language: no scope


def test_the_subject_is_the_code_a_comment_names():
    s = read_subject("Can we name it `initialValue`? Also `foo.bar()` and see https://x.io/Abc")
    assert {"initialValue", "foo", "bar"} <= s.named and "Abc" not in s.named
    assert read_subject("Please, do not indent the `#ifdef` macros.").about_format
    assert "tests" in read_subject("Please add tests for this").kinds
    assert read_subject("```suggestion\n    x = 1\n```").suggestion == ["    x = 1"]


@pytest.mark.parametrize(("body", "kind"), [
    ("테스트 코드를 추가해 주세요", "tests"), ("请补充测试", "tests"), ("Добавьте тесты", "tests"),
    ("Agregue pruebas unitarias", "tests"), ("주석을 달아주세요", "docs"), ("请更新文档", "docs"),
    ("변경 이력을 남겨 주세요", "changelog"), ("変更履歴を追加してください", "changelog"),
    ("Добавьте запись в журнал изменений", "changelog"), ("Bitte dokumentieren", "docs"),
    ("Il faut documenter cette option", "docs"), ("Bitte einen Testfall hinzufügen", "tests"),
    ("Eintrag im Änderungsprotokoll fehlt", "changelog"),
    ("Ajoute une entrée dans les notes de version", "changelog"), ("请遵守代码规范", "lint"),
    ("코딩 컨벤션을 지켜주세요", "lint"), ("Прогони линтер", "lint"),
])
def test_the_kind_of_request_is_read_in_other_languages_too(body, kind):
    assert read_subject(body).kinds == {kind}


@pytest.mark.parametrize("body", [
    "Please add a changeset.", "Needs a news fragment", "Add a newsfragment for towncrier",
    "Could you add an entry to CHANGES.rst?", "Mention it in the release notes",
])
def test_the_change_log_is_asked_for_in_the_common_tools_words(body):
    assert read_subject(body).kinds == {"changelog"}


def test_words_that_only_contain_a_kind_do_not_ask_for_it():
    assert read_subject("Use `latest` here, and the contest rules").kinds == set()
    assert read_subject("The history of this function changes here").kinds == set()


def test_a_rename_on_the_line_leaves_the_flagged_construct_in_place():
    old = {"Slider.java": JAVA}
    new = {"Slider.java": JAVA.replace("        selectedValue.ValueChanged -= onChange;",
                                       "        SelectedValue.ValueChanged -= onChange;")}
    d = comment_defect("don't use a finalizer here, just implement IDisposable", "Slider.java",
                       6, 9, old=JAVA)
    assert decide(d, old, new).state is State.OPEN
    assert renamed_only(["a.b -= c;"], ["A.b -= c;"]) == {"a": "A"}
    assert renamed_only(["f()"], ["g()"]) is None  # the whole line changed: not cosmetic


def test_a_changed_keyword_or_type_is_an_edit_not_a_rename():
    # osu-14571: "why was this changed" on `out var userId`, fixed by reverting to `out int`
    old = {"Game.cs": "class G {\n  void F() {\n    if (int.TryParse(a, out var id))\n"
                      "      Show(id);\n  }\n}\n"}
    new = {"Game.cs": old["Game.cs"].replace("out var id", "out int id")}
    d = comment_defect("why was this changed", "Game.cs", 3, old=old["Game.cs"])
    decision = decide(d, old, new)
    assert (decision.state, decision.rule) == (State.RESOLVED, "anchor-modified")
    assert renamed_only(["out var id"], ["out int id"]) is None
    assert renamed_only(["out var id, x"], ["out var key, x"]) == {"id": "key"}


def test_words_changed_inside_a_string_are_an_edit_not_a_rename():
    # Leaflet-8420: a typo fixed in a test's name ("befor" -> "before") was read as a rename
    old = {"spec.js": 'describe("x", function () {\n\tit("throws if map is not set befor", '
                      'function () {\n\t\trun();\n\t});\n});\n'}
    new = {"spec.js": old["spec.js"].replace("set befor", "set before")}
    d = comment_defect('```suggestion\n\tit("throws if view is not set before", function () {'
                       '\n```', "spec.js", 2, old=old["spec.js"])
    decision = decide(d, old, new)
    assert (decision.state, decision.rule) == (State.RESOLVED, "anchor-modified")
    assert renamed_only(['f("a b")'], ['f("a c")']) is None
    assert renamed_only(['f("a b", x, y)'], ['g("a b", x, y)']) == {"f": "g"}


def test_a_rename_of_what_the_prose_names_in_lower_case_is_the_fix():
    # osu-21650: "lime is already being used by difficulty points", fixed Lime -> Green1
    old = {"Part.cs": "class P {\n  void Load(OsuColour colours) => Colour = colours.Lime;\n}\n"}
    new = {"Part.cs": old["Part.cs"].replace("colours.Lime", "colours.Green1")}
    d = comment_defect("lime is already being used by difficulty points", "Part.cs", 2,
                       old=old["Part.cs"])
    assert decide(d, old, new).state is State.RESOLVED
    other = comment_defect("this colour clashes with the timing points", "Part.cs", 2,
                           old=old["Part.cs"])
    assert decide(other, old, new).state is State.OPEN  # a rename the comment did not name


def test_a_rename_is_the_fix_when_the_comment_asks_for_it():
    old = {"m.py": "def f():\n    usr_cnt = count()\n    return usr_cnt + other\n"}
    new = {"m.py": "def f():\n    user_count = count()\n    return user_count + other\n"}
    d = comment_defect("please rename this to something readable", "m.py", 2, old=old["m.py"])
    assert decide(d, old, new).state is State.RESOLVED


def test_the_thing_asked_for_appearing_away_from_the_anchor_resolves():
    text = ("def read(card):\n    data = bytearray(len + 5)\n    resp = card.transmit(data)\n"
            "    decode(resp)\n    copy(data, resp)\n    return data\n")
    fixed = text.replace("    resp = card.transmit(data)\n",
                         "    buf = bytearray(MAX_RESP_SIZE)\n    resp = card.transmit(buf)\n")
    d = comment_defect("read into a buffer of `MAX_RESP_SIZE` instead", "card.py", 5,
                       old=text)
    decision = decide(d, {"card.py": text}, {"card.py": fixed})
    assert (decision.state, decision.rule) == (State.RESOLVED, "subject-introduced")
    assert "MAX_RESP_SIZE" in decision.evidence


def test_named_code_removed_from_the_anchor_resolves_and_standing_keeps_it_open():
    text = "def t():\n    assert_does_not_throw(lambda: run())\n    x = 1\n"
    d = comment_defect("why add `assert_does_not_throw`?", "t.py", 2, old=text)
    gone = text.replace("assert_does_not_throw(lambda: run())", "run()")
    decision = decide(d, {"t.py": text}, {"t.py": gone})
    assert (decision.state, decision.rule) == (State.RESOLVED, "subject-removed")
    nearby = text.replace("    x = 1\n", "    x = 2\n")
    assert decide(d, {"t.py": text}, {"t.py": nearby}).state is State.OPEN


def test_whitespace_only_is_a_fix_only_for_a_comment_about_formatting():
    c = "int m[] = {\n\t\t#ifndef NO_X\n\t\tX,\n\t\t#endif\n\t\tY,\n};\n"
    fixed = c.replace("\t\t#ifndef", "#ifndef").replace("\t\t#endif", "#endif")
    fmt = comment_defect("Please, do not indent the `#ifdef` and `#endif` macros.", "t.c", 2, 4,
                         old=c)
    assert decide(fmt, {"t.c": c}, {"t.c": fixed}).rule == "format-fixed"
    other = comment_defect("this list misses a mechanism", "t.c", 2, 4, old=c)
    assert (decide(other, {"t.c": c}, {"t.c": fixed}).state,
            decide(other, {"t.c": c}, {"t.c": fixed}).rule) == (State.OPEN, "whitespace-only")


def test_code_re_indented_under_a_new_guard_is_an_edit_not_a_move():
    old = "def f(x):\n    total = compute_the_total(x)\n    return total\n"
    new = ("def f(x):\n    if x is not None:\n        total = compute_the_total(x)\n"
           "    return total\n")
    d = comment_defect("this crashes when x is None", "m.py", 2, old=old)
    decision = decide(d, {"m.py": old}, {"m.py": new})
    assert decision.state is State.RESOLVED
    assert decision.rule in ("anchor-modified", "anchor-rewrapped")  # an edit, never a move


def test_a_renamed_file_is_followed_not_read_as_deleted():
    body = "".join(f"line_{i} = compute({i})\n" for i in range(1, 30))
    edited = body.replace("line_20 = compute(20)", "line_20 = compute(20) + 1")
    d = comment_defect("this value looks wrong", "old/name.py", 5, old=body)
    decision = decide(d, {"old/name.py": body, "new/name.py": None},
                      {"old/name.py": None, "new/name.py": edited})
    assert (decision.state, decision.path, decision.line_start) == (State.OPEN, "new/name.py", 5)
    assert DiffMap(git_diff({"a.py": body, "b.py": None},
                            {"a.py": None, "b.py": edited})).renames == {"a.py": "b.py"}


def test_a_remark_naming_a_function_follows_that_function():
    c = ("static void sign(void)\n{\n\tint buf[512];\n}\n\n"
         "static void verify_signature(void)\n{\n\tint sig[512];\n}\n")
    remark = Defect(key="D1", description="The same modifications need to be done in "
                    "`verify_signature()`", origin="human", state=State.NEW, raised_round=1,
                    state_round=1)
    elsewhere = c.replace("int buf[512];", "int *buf = alloc();")
    assert (decide(remark, {"t.c": c}, {"t.c": elsewhere}).state,
            decide(remark, {"t.c": c}, {"t.c": elsewhere}).rule) == \
        (State.OPEN, "remark-subject-unchanged")
    fixed = c.replace("int sig[512];", "int *sig = alloc();")
    assert decide(remark, {"t.c": c}, {"t.c": fixed}).rule == "remark-subject-edited"


def test_a_remark_naming_code_that_a_push_removes_is_resolved(switched_on):
    switched_on("remark_named_in_changes")  # below the bar, off by default
    old = {"A.java": "class A {\n  void f() {\n    try { g(); } catch (E e) { }\n  }\n}\n"}
    new = {"A.java": "class A {\n  void f() {\n    g();\n  }\n}\n"}
    remark = Defect(key="D1", description="Please avoid the `try..catch` in the controller",
                    origin="human", state=State.NEW, raised_round=1, state_round=1)
    assert decide(remark, old, new).rule == "remark-subject-changed"


def test_tests_that_use_the_function_resolve_a_request_for_tests():
    src = "def get_user_profile(uid):\n    return load(uid)\n"
    d = comment_defect("Please add tests for get_user_profile", "app.py", 1, old=src)
    unrelated = {"tests/test_other.py": "def test_x():\n    assert other()\n"}
    assert decide(d, {"app.py": src, "tests/test_other.py": None},
                  {"app.py": src, **unrelated}).state is State.OPEN
    covering = {"tests/test_app.py": "def test_hit():\n    assert get_user_profile(1)\n"}
    decision = decide(d, {"app.py": src, "tests/test_app.py": None}, {"app.py": src, **covering})
    assert (decision.state, decision.rule) == (State.RESOLVED, "tests-added")


def test_every_decision_carries_a_confidence():
    old = {"m.py": "a = 1\nb = 2\n"}
    d = comment_defect("b should be 3", "m.py", 2, old=old["m.py"])
    decision = decide(d, old, {"m.py": "a = 1\nb = 3\n"})
    assert decision.state is State.RESOLVED and 0.5 <= decision.confidence < 1
    kept = decide(d, old, old)
    assert kept.state is State.OPEN and kept.confidence >= 0.8


def test_two_different_asks_on_one_line_are_two_defects(tmp_path):
    with Ledger(tmp_path / "l.db") as ledger:
        pr = ledger.pull_request("o/r", 1, title="t", author="amy")
        ledger.begin_round(pr["id"], "a" * 40, "b" * 40)
        first = take_comment(ledger, pr["id"], Comment(1, "review_comment", "rev", "Rename "
                             "this to `total`", path="m.py", line=3), pr_author="amy",
                             code="x = f(y)")
        second = take_comment(ledger, pr["id"], Comment(2, "review_comment", "rev2", "and "
                              "check that y is not None before calling f", path="m.py",
                              line=3), pr_author="amy", code="x = f(y)")
        again = take_comment(ledger, pr["id"], Comment(3, "review_comment", "rev3", "Rename "
                             "this to `total` please", path="m.py", line=3), pr_author="amy",
                             code="x = f(y)")
        assert (first.action, second.action) == ("raised", "raised")
        assert first.defect.key != second.defect.key
        assert (again.action, again.defect.key) == ("attached", first.defect.key)


def test_signals_only_note_a_claim_they_do_not_resolve():
    old = {"m.py": "a = 1\nb = 2\n"}
    d = comment_defect("b is wrong", "m.py", 2, old=old["m.py"])
    claim = Signal("author_claims_fixed", "D1", "amy", "done")
    decision = decide(d, old, old, [claim])
    assert decision.state is State.OPEN and "claim, not evidence" in decision.evidence


def test_replies_are_read_by_who_wrote_them_and_when():
    from tracker.discussion import reply_signal
    from tracker.models import SignalKind as K

    assert reply_signal("Done, thanks!", by_author=True) is K.AUTHOR_CLAIMS_FIXED
    assert reply_signal("Sounds fair, go ahead", by_author=False) is K.REVIEWER_ACCEPTS
    assert reply_signal("Good point, I missed that", by_author=False) is K.REVIEWER_ACCEPTS
    still = "Umm.. this isn't resolved. The file is still empty."
    assert reply_signal(still, by_author=False, after_push=True) is K.REVIEWER_DISPUTES
    # The same words before any push only elaborate on the request: no dispute of a fix.
    assert reply_signal(still, by_author=False, after_push=False) is None
    assert reply_signal("Also, this should use the shared helper.", by_author=False,
                        after_push=False) is None
    assert reply_signal("", by_author=False) is None


def test_an_elaboration_in_the_same_round_does_not_reopen_a_resolved_defect(tmp_path):
    from tracker.models import DecidedBy, Decision

    with Ledger(tmp_path / "l.db") as ledger:
        pr = ledger.pull_request("o/r", 1, title="t", author="amy")
        ledger.begin_round(pr["id"], "a" * 40, "b" * 40)
        raised = take_comment(ledger, pr["id"], Comment(1, "review_comment", "rev", "Use a set "
                              "here", path="m.py", line=3), pr_author="amy", code="x = [1]")
        key = raised.defect.key
        ledger.record_decision(pr["id"], 1, Decision(key, State.RESOLVED, "thread_resolved",
                                                     "rev resolved it",
                                                     decided_by=DecidedBy.HUMAN))
        more = take_comment(ledger, pr["id"], Comment(2, "review_comment", "rev", "I mean it "
                            "should still be ordered though", path="m.py", line=3,
                            in_reply_to=1), pr_author="amy")
        assert more.signal is None and ledger.defect(pr["id"], key).state is State.RESOLVED
        ledger.finish_round(pr["id"], 1)
        ledger.begin_round(pr["id"], "c" * 40, "b" * 40)
        after = take_comment(ledger, pr["id"], Comment(3, "review_comment", "rev", "This is "
                             "still not right", path="m.py", line=3, in_reply_to=1),
                             pr_author="amy")
        assert after.signal is not None and str(after.signal) == "reviewer_disputes"
        assert ledger.defect(pr["id"], key).state is State.REOPENED


def test_a_fix_away_from_the_anchor_counts_inside_its_class_only():
    src = ("class Listener {\n  void onMessage(Event e) {\n    processAttachments(e);\n  }\n\n"
           "  void processAttachments(Event e) {\n    send(e);\n  }\n}\n\n"
           "class Other {\n  void run(Event e) {\n    log(e);\n  }\n}\n")
    d = comment_defect("the blocking send happens on the event thread; run "
                       "`processAttachments` on another thread", "L.java", 7, old=src)
    inside = src.replace("    processAttachments(e);\n",
                         "    runAsync(() -> processAttachments(e));\n")
    decision = decide(d, {"L.java": src}, {"L.java": inside})
    assert (decision.state, decision.rule) == (State.RESOLVED, "subject-touched")
    elsewhere = src.replace("    log(e);\n", "    log(e);\n    processAttachments(e);\n")
    assert decide(d, {"L.java": src}, {"L.java": elsewhere}).state is State.OPEN


def test_an_outdated_review_comment_keeps_its_original_anchor():
    from bench.score.tracking import event_comment
    from bot.jobs.payloads import comment_from_payload

    payload = {"id": 5, "user": {"login": "rev"}, "body": "rename this", "path": "a.py",
               "line": None, "start_line": None, "original_line": 12, "original_start_line": 10,
               "commit_id": "a" * 40, "original_commit_id": "b" * 40, "side": "RIGHT"}
    c = comment_from_payload(payload, "review_comment", set())
    assert (c.path, c.start_line, c.line, c.commit_id) == ("a.py", 10, 12, "b" * 40)
    fresh = comment_from_payload({**payload, "line": 14, "start_line": 13}, "review_comment",
                                 set())
    assert (fresh.start_line, fresh.line, fresh.commit_id) == (13, 14, "a" * 40)
    event = {"kind": "review_comment", "id": 5, "path": "a.py", "line": None,
             "original_line": 7, "body": "x"}
    assert event_comment(event).line == 7


def test_a_small_edit_inside_a_wide_selection_is_not_its_fix():
    body = "".join(f"    step_{i}(data)\n" for i in range(1, 11))
    src = "def run(data):\n" + body + "    return data\n"
    d = comment_defect("validate `data` before all of these steps", "m.py", 2, 11, old=src)
    one = src.replace("    step_4(data)\n", "    step_4(data, strict=True)\n")
    assert decide(d, {"m.py": src}, {"m.py": one}).state is State.OPEN
    rewritten = src.replace(body, "".join(f"    step_{i}(checked)\n" for i in range(1, 5))
                            + "".join(f"    step_{i}(data)\n" for i in range(5, 11)))
    assert decide(d, {"m.py": src}, {"m.py": rewritten}).state is State.RESOLVED


TJ = ("class Links {\n  static Future<String> replace(List<String> links) {\n"
      "    List<Future<String>> deadFutures = links.stream()\n"
      "      .map(link -> check(link))\n      .toList();\n\n"
      "    return Future.allOf(deadFutures.toArray(new Future[0]))\n"
      "      .thenApply(ignored -> deadFutures.stream()\n        .map(Future::join)\n"
      "        .toList());\n  }\n}\n")
TJ_COMMENT = ("`toArray(new Foo[0])` is an anti-pattern. use method references instead "
              "`toArray(Foo[]::new)`")


def test_a_line_rewritten_with_its_block_but_only_renamed_still_stands(switched_on):
    switched_on("still_standing")  # below the bar, off by default
    # TJ-Bot-1366: the block around the line was re-indented and a variable renamed; the
    # construct the comment is about, toArray(new Foo[0]), still stands: not removed.
    rewritten = (TJ.replace("deadFutures", "brokenFutures").replace("\n      .", "\n          .")
                 .replace("\n        .", "\n              .").replace("ignored", "_"))
    d = comment_defect(TJ_COMMENT, "Links.java", 7, old=TJ)
    decision = decide(d, {"Links.java": TJ}, {"Links.java": rewritten})
    assert decision.state is State.OPEN, decision
    fixed = rewritten.replace("toArray(new Future[0])", "toArray(Future[]::new)")
    assert decide(d, {"Links.java": TJ}, {"Links.java": fixed}).state is State.RESOLVED


def test_a_keyword_quoted_with_the_code_names_no_construct_to_follow():
    # `new` edited elsewhere in the class is no evidence that toArray(new Foo[0]) was fixed
    elsewhere = TJ.replace("      .map(link -> check(link))\n",
                           "      .map(link -> new Check(link))\n")
    d = comment_defect(TJ_COMMENT, "Links.java", 7, old=TJ)
    decision = decide(d, {"Links.java": TJ}, {"Links.java": elsewhere})
    assert decision.state is State.OPEN, decision


def test_what_the_comment_asks_for_must_arrive_in_the_file_or_its_name(switched_on):
    switched_on("asked_for")  # below the bar, off by default
    # pytest-12968: "we _do_ need to document the `breaking` change", on a changelog entry
    # filed as an improvement. Rewording the entry is not it; renaming it to .breaking is.
    old = {"changelog/12960.improvement.rst": "Dropped compat.is_generator.\n"}
    reworded = {"changelog/12960.improvement.rst": "Test functions with yield now error.\n"}
    d = comment_defect("No need to mention that, but we do need to document the `breaking` "
                       "change to yield tests",
                       "changelog/12960.improvement.rst", 1,
                       old=old["changelog/12960.improvement.rst"])
    decision = decide(d, old, reworded)
    assert (decision.state, decision.rule) == (State.OPEN, "asked-still-absent")
    renamed = {"changelog/12960.improvement.rst": None,
               "changelog/12960.breaking.rst": "Dropped compat.is_generator.\n"}
    decision = decide(d, old, renamed)
    assert (decision.state, decision.rule) == (State.RESOLVED, "asked-for-arrived")
    code = {"A.java": "class A {\n  Item[] all() {\n    return items.toArray(new Item[0]);\n"
                      "  }\n}\n"}
    edited = {"A.java": code["A.java"].replace("items.toArray", "list.toArray")}
    placeholder = comment_defect("use `toArray(Foo[]::new)` here", "A.java", 3, old=code["A.java"])
    assert decide(placeholder, code, edited).rule != "asked-still-absent"  # Foo stands in


NUMERIC = ("export type Zero = 0 | -0;\n"
           "export type Natural<T extends number> = T extends Zero ? T : Positive<T>;\n"
           "export type Positive<T extends number> = T extends Zero ? never : T;\n")


def test_a_type_alias_is_a_definition():
    assert definition("source/numeric.d.ts", NUMERIC, "Natural") == (2, 2)


def test_a_remark_about_a_word_naming_a_type_this_round_removed_is_resolved(switched_on):
    switched_on("remark_word_removed")  # below the bar, off by default
    # type-fest-319: 'the exact definition of "natural number" seems to be unclear', and the
    # push renames the type Natural to NonNegative
    remark = Defect(key="D1", description='Also, the exact definition of "natural number" '
                    "seems to be unclear", origin="human", state=State.NEW, raised_round=1,
                    state_round=1)
    renamed = NUMERIC.replace("Natural", "NonNegative")
    decision = decide(remark, {"source/numeric.d.ts": NUMERIC},
                      {"source/numeric.d.ts": renamed})
    assert (decision.state, decision.rule) == (State.RESOLVED, "remark-subject-removed")
    assert "Natural" in decision.evidence
    kept = NUMERIC.replace("T : Positive<T>", "T : Positive<T> // zero included")
    assert decide(remark, {"source/numeric.d.ts": NUMERIC},
                  {"source/numeric.d.ts": kept}).state is State.OPEN


LISTENER = ("class Listener {\n    Listener(Config config) {\n        super(config);\n    }\n"
            "\n\n    @Override\n    void onMessage(Event event) {\n        handle(event);\n"
            "    }\n}\n")  # lines 5-6: two blank lines after the constructor


def test_a_request_to_remove_a_blank_line_is_met_only_when_it_is_gone(switched_on):
    switched_on("blank_lines")  # below the bar (2 repositories), off by default
    # TJ-Bot-518: "extra blank line" on the second blank line; the round rewrote the
    # constructor above (the function around the comment changed), the two blank lines stood
    d = comment_defect("extra blank line", "Listener.java", 6, old=LISTENER)
    javadoc = LISTENER.replace("    Listener(Config config) {\n",
                               "    /** Creates one. */\n    Listener(Config config) {\n")
    kept = decide(d, {"Listener.java": LISTENER}, {"Listener.java": javadoc})
    assert (kept.state, kept.rule) == (State.OPEN, "blank-line-unchanged"), kept
    gone = javadoc.replace("    }\n\n\n    @Override", "    }\n\n    @Override")
    fixed = decide(d, {"Listener.java": LISTENER}, {"Listener.java": gone})
    assert (fixed.state, fixed.rule) == (State.RESOLVED, "blank-line-fixed"), fixed
    assert "2 stood there, 1 now" in fixed.evidence
    # the same words on a line with code on it are about the code: other rules decide
    on_code = comment_defect("extra blank line", "Listener.java", 9, old=LISTENER)
    edited = LISTENER.replace("handle(event);", "handle(event, true);")
    assert decide(on_code, {"Listener.java": LISTENER}, {"Listener.java": edited}).rule == \
        "anchor-modified"


def test_a_request_for_a_missing_blank_line_is_met_when_one_is_added_next_to_it(switched_on):
    switched_on("blank_lines")
    # beets-3334: "the missing blank line above this one", fixed by inserting it above
    old = "class T:\n    def a(self):\n        check(1)\n    def b(self):\n        check(2)\n"
    d = comment_defect("Travis will complain about the missing blank line above this one.",
                       "t.py", 4, old=old)
    added = old.replace("check(1)\n    def b", "check(1)\n\n    def b")
    fixed = decide(d, {"t.py": old}, {"t.py": added})
    assert (fixed.state, fixed.rule) == (State.RESOLVED, "blank-line-fixed"), fixed
    elsewhere = old + "\n\ndef c():\n    pass\n"
    still = decide(d, {"t.py": old}, {"t.py": elsewhere})
    assert (still.state, still.rule) == (State.OPEN, "blank-line-unchanged"), still


LINKS = ("class Links {\n    Future<Void> all(List<String> links) {\n"
         "        List<Future<?>> dead = links.stream().map(this::check).toList();\n"
         "        return Future.allOf(dead.toArray(new Future[0]))\n"
         "            .then(done -> report(dead));\n    }\n}\n")
TO_ARRAY = "`toArray(new Foo[0])` is an anti-pattern. use method references instead " \
    "`toArray(Foo[]::new)`"


def test_a_replacement_request_stays_open_while_the_quoted_code_stands(switched_on):
    switched_on("replace_request")  # below the bar (1 repository), off by default
    # TJ-Bot-1366: the line was rewritten for another reason (a variable renamed, the
    # chain re-indented) and the quoted anti-pattern still stood on it
    d = comment_defect(TO_ARRAY, "Links.java", 4, old=LINKS)
    renamed = LINKS.replace("dead", "broken").replace("            .then", "                .then")
    kept = decide(d, {"Links.java": LINKS}, {"Links.java": renamed})
    assert (kept.state, kept.rule) == (State.OPEN, "replaced-code-stands"), kept
    assert "still stands near Links.java:" in kept.evidence
    done = LINKS.replace("new Future[0]", "Future[]::new")
    fixed = decide(d, {"Links.java": LINKS}, {"Links.java": done})
    assert (fixed.state, fixed.rule) == (State.RESOLVED, "replacement-arrived"), fixed
    # with the rule off the edit on the line is taken as the fix, as the bar decided
    rules.SWITCHES["replace_request"] = False
    assert decide(d, {"Links.java": LINKS}, {"Links.java": renamed}).state is State.RESOLVED


def test_a_replacement_request_needs_the_old_code_on_the_line_and_the_new_one_absent(
        switched_on):
    switched_on("replace_request")
    renamed = LINKS.replace("dead", "broken")
    # one quoted span only ("does `req.name` need canonicalizing?"): no replacement asked
    one = comment_defect("`toArray(new Foo[0])` is slow here", "Links.java", 4, old=LINKS)
    assert decide(one, {"Links.java": LINKS}, {"Links.java": renamed}).rule != \
        "replaced-code-stands"
    # the quoted code is not on the commented line: the comment is about something else
    away = comment_defect(TO_ARRAY, "Links.java", 5, old=LINKS)
    edited = LINKS.replace("report(dead)", "report(dead, true)")
    assert decide(away, {"Links.java": LINKS}, {"Links.java": edited}).rule != \
        "replaced-code-stands"
    # the replacement was already in the file: not a request for something new
    both = LINKS.replace("    }\n}\n", "    }\n    Object[] a(List<Foo> l) {\n"
                                      "        return l.toArray(Foo[]::new);\n    }\n}\n")
    held = comment_defect(TO_ARRAY, "Links.java", 4, old=both)
    assert decide(held, {"Links.java": both}, {"Links.java": both.replace(
        "dead", "broken")}).rule != "replaced-code-stands"


def test_code_patterns_treat_stand_in_names_as_wildcards():
    from collections import Counter

    from tracker.rules import _code_pattern, _pattern_in
    pattern = _code_pattern("toArray(new Foo[0])", Counter())
    assert pattern == ["toArray", "(", "new", None, "[", "0", "]", ")"]
    assert _pattern_in(pattern, "x.toArray(new CompletableFuture[0]);")
    assert not _pattern_in(pattern, "x.toArray(new CompletableFuture[1]);")
    assert not _pattern_in(pattern, "x.toArray(CompletableFuture[]::new);")
    # a lone capital is a stand-in only where the file does not use it as a name
    assert _code_pattern("List<T>", Counter())[2] is None
    assert _code_pattern("List<T>", Counter({"T": 3}))[2] == "T"
    assert _code_pattern("?.", Counter()) is None  # no name in it: too little to look for
    assert _code_pattern("Foo", Counter()) is None


def test_blank_line_requests_are_read_from_short_comments_only():
    from tracker.subject import read_subject

    cases = {
        "extra blank line": "extra",
        "empty line in the middle of the flow": "extra",
        "Looks like a stray blank line got added here.": "extra",
        "nit: please add an empty line here": "missing",
        "A blank line is missing before the return": "missing",
        "Missing newline at end of file": None,  # the final newline: not a blank line
        "No blank line at the end of the file, please.": None,
        "Use a constant here": None,
        "This should skip an empty line in the input. " * 6: None,  # long: about the code
    }
    for body, want in cases.items():
        assert read_subject(body).blank_lines == want, body


@pytest.mark.parametrize("body", ["变量命名不清楚", "名前を変えてください", "이름을 바꿔주세요",
                                  "Переименуй переменную", "Hay que renombrar esto",
                                  "Bitte umbenennen", "Il faut renommer ça"])
def test_a_rename_asked_for_in_another_language_is_the_fix(body):
    old = {"Slider.java": JAVA}
    new = {"Slider.java": JAVA.replace("        selectedValue.ValueChanged -= onChange;",
                                       "        SelectedValue.ValueChanged -= onChange;")}
    d = comment_defect(body, "Slider.java", 6, 9, old=JAVA)
    assert decide(d, old, new).state is State.RESOLVED
    unasked = comment_defect("这里逻辑有问题", "Slider.java", 6, 9, old=JAVA)  # "the logic is off"
    assert decide(unasked, old, new).state is State.OPEN  # a rename it did not ask for


@pytest.mark.parametrize("body", ["宏不要缩进", "マクロはインデントしないでください", "매크로는 들여쓰기 하지 마세요",
                                  "Не делай отступ у макросов", "Sin sangría en las macros",
                                  "Keine Einrückung bei Makros", "Pas d'indentation : mise en forme"])
def test_a_formatting_remark_in_another_language_is_met_by_a_whitespace_fix(body):
    c = "int m[] = {\n\t\t#ifndef NO_X\n\t\tX,\n\t\t#endif\n\t\tY,\n};\n"
    fixed = c.replace("\t\t#ifndef", "#ifndef").replace("\t\t#endif", "#endif")
    d = comment_defect(body, "t.c", 2, 4, old=c)
    assert decide(d, {"t.c": c}, {"t.c": fixed}).rule == "format-fixed"


def test_identifiers_in_prose_without_spaces_end_where_the_ascii_ends():
    # Korean and Chinese put particles and words right after a name: "LineRequest를",
    # "把userId改成userKey" name LineRequest, userId and userKey, not one long token
    assert {"LineRequest"} <= read_subject("map이 아닌 LineRequest를 활용하는게 어떨까요?").named
    named = read_subject("把userId改成userKey吧，还有fetchData()也要改").named
    assert {"userId", "userKey", "fetchData"} <= named
    assert not any("改" in n or "를" in n for n in named)


@pytest.mark.parametrize("before, after", [
    ("x := int32(v) + offset", "x := int64(v) + offset"),  # Go
    ("let v: Vec<u8> = read(a);", "let v: Box<u8> = read(a);"),  # Rust
    ("val count: Int = size(items)", "val count: Long = size(items)"),  # Kotlin
    ("String name = user.getName();", "Object name = user.getName();"),  # Java
    ("foreach ($items as $item) { add($item); }", "for ($items as $item) { add($item); }"),
])
def test_a_changed_built_in_type_or_keyword_of_other_languages_is_an_edit(before, after):
    assert renamed_only([before], [after]) is None
    assert renamed_only(["total = add(count, size)"], ["sum = add(count, size)"]) == \
        {"total": "sum"}  # a plain rename still reads as one


def test_a_line_added_inside_a_python_docstring_answers_a_docs_remark():
    old = 'def wait(timeout):\n    """Wait for the job.\n\n    Returns the result.\n    """\n' \
          '    query = """\n    select 1\n    """\n    return run(query, timeout)\n'
    remark = Defect(key="D1", description="Please document what the timeout means.",
                    origin="human", state=State.NEW, raised_round=1, state_round=1)
    documented = old.replace("    Returns the result.\n",
                             "    timeout: seconds to wait before giving up.\n"
                             "    Returns the result.\n")
    decision = decide(remark, {"m.py": old}, {"m.py": documented})
    assert (decision.state, decision.rule) == (State.RESOLVED, "remark-kind-changed")
    # a line added to a string assigned to a name is no documentation
    sql = old.replace("    select 1\n", "    select 1\n    where timeout > 0\n")
    decision = decide(remark, {"m.py": old}, {"m.py": sql})
    assert (decision.state, decision.rule) == (State.OPEN, "remark-kind-unchanged")


RUST = ("pub fn parse_header(line: &str) -> Option<u32> {\n    line.parse().ok()\n}\n\n"
        "#[cfg(test)]\nmod tests {\n    use super::*;\n}\n")


def test_tests_kept_in_the_code_s_own_file_answer_a_request_for_tests():
    from tracker.inline_tests import inline_test_lines

    d = comment_defect("Please add a test for `parse_header` with an empty line.", "lib.rs", 1,
                       old=RUST)
    tested = RUST.replace("    use super::*;\n", "    use super::*;\n\n    #[test]\n"
                          "    fn empty() {\n        assert_eq!(parse_header(\"\"), None);\n    }\n")
    decision = decide(d, {"lib.rs": RUST}, {"lib.rs": tested})
    assert (decision.state, decision.rule) == (State.RESOLVED, "tests-added"), decision
    # code that uses it outside the tests module is no test
    used = RUST.replace("\n\n#[cfg(test)]", "\n\npub fn first(s: &str) -> Option<u32> {\n"
                        "    parse_header(s)\n}\n\n#[cfg(test)]")
    assert decide(d, {"lib.rs": RUST}, {"lib.rs": used}).rule != "tests-added"
    assert inline_test_lines("m.py", '"""\n>>> add(1, 2)\n3\n"""\n') == frozenset({2})
    assert inline_test_lines("t.zig", 'fn f() void {}\ntest "f" {\n    f();\n}\nfn g() void {}\n') \
        == frozenset({2, 3, 4})
    assert inline_test_lines("m.go", "func f() {}\n") == frozenset()
