"""One comment, several requests: the splitter, the keys its defects get, and how intake tracks
them (a real SQLite ledger; the server path is ``test_split_requests_server.py``)."""

from __future__ import annotations

import pytest

from bot.store.ledger_sqlite import Ledger
from tracker import keys, rules
from tracker.decide import RoundInput, decide_round
from tracker.intake import Comment, take_comment, take_thread
from tracker.ledger_base import LedgerError
from tracker.models import Finding
from tracker.requests import Place, own_place, split_requests, wants_files

from .test_rules import git_diff


@pytest.mark.parametrize("body, requests", [
    # "also" opens a second request
    (("Please rename this to `openDialog`. Also, please remove the comment above, it only "
     "repeats the name."),
     ["Please rename this to `openDialog`.",
      "Also, please remove the comment above, it only repeats the name."]),
    # a second paragraph with "also" among its first words and a modal
    ("Add the test's name to the message.\n\nWe also should add an entry to the changelog.",
     ["Add the test's name to the message.", "We also should add an entry to the changelog."]),
    # a numbered list whose items each ask
    ("1. Rename `foo` to `bar`.\n2. Remove the unused import.",
     ["Rename `foo` to `bar`.", "Remove the unused import."]),
    # a bulleted list under a lead-in: the lead-in goes with the first item
    ("A few things:\n- please add a docstring\n- drop the debug print",
     ["A few things:\n\nplease add a docstring", "drop the debug print"]),
    # a suggestion, then a separate request
    ("```suggestion\nreturn total\n```\nAlso please add a test for the empty list.",
     ["```suggestion\nreturn total\n```", "Also please add a test for the empty list."]),
    # Chinese: "rename foo to bar. In addition, please delete the comment above."
    ("请把 `foo` 改名为 `bar`。另外，请删除上面的注释。",
     ["请把 `foo` 改名为 `bar`。", "另外，请删除上面的注释。"]),
    # Korean: "how about one method per HTTP method? And removing the repeated setup too"
    ("http method로 메서드를 만들면 어떨까요?\n\n그리고 중복된 setUp 코드도 제거해보면 좋을 것 같습니다.",
     ["http method로 메서드를 만들면 어떨까요?", "그리고 중복된 setUp 코드도 제거해보면 좋을 것 같습니다."]),
    # German: "Please rename the method. Also, the log line should go."
    ("Bitte benenne die Methode um. Außerdem sollte die Log-Zeile weg.",
     ["Bitte benenne die Methode um.", "Außerdem sollte die Log-Zeile weg."]),
])
def test_a_comment_asking_for_several_things_is_cut_into_its_requests(body, requests):
    assert split_requests(body) == requests


@pytest.mark.parametrize("body", [
    # one request in several sentences: a question, then how
    ("Can we test the behaviour instead? How about adding an effect in `Test()` and checking "
    "that it runs once?"),
    # a request and its reason; "also" opening a statement, not a request
    ("Don't join on this directly, that computes it sequentially. Also, this has a bug: the "
    "map is not thread-safe."),
    # a list of reasons, none of them a request
    ("Using a weak random generator is unwise:\n\n1. It violates the RFC.\n1. It defeats the "
    "point of masking.\n1. Clients run on users' devices."),
    # a request, then an example in a code block
    ("Can you define the client as a static field please?\n\ni.e.\n\n```java\n"
    "private static final HttpClient CLIENT = HttpClient.newHttpClient();\n```"),
    # a suggestion and the reason for it
    ("```suggestion\n    def canonical_name(self) -> str:\n```\nI think this should be "
    "'name' and not 'package', which is too vague."),
    # an imperative and its explanation in one paragraph
    "Please use `a.css` and `b.css` in examples, as that's the convention elsewhere.",
    "",
])
def test_a_comment_asking_one_thing_stays_one_request(body):
    assert split_requests(body) == [body.strip()]


def test_a_long_list_is_bounded():
    body = "\n".join(f"- please rename `v{i}`" for i in range(20))
    parts = split_requests(body)
    assert len(parts) == 8 and "v19" in parts[-1]


def test_keys_of_requests():
    assert keys.canonical("d3B") == "D3b" and keys.canonical("d12") == "D12"
    assert keys.group("D3b") == "D3" and keys.part("D3b") == "b" and keys.part("D3") == ""
    assert keys.part_key("D4", 1) == "D4b"
    assert sorted(["D10", "D3b", "D2", "D3a"], key=keys.order) == ["D2", "D3a", "D3b", "D10"]
    assert keys.fits("D5", "D5") and keys.fits("D5a", "D5") and keys.fits("D4b", "D5")
    assert not keys.fits("D6", "D5") and not keys.fits("D4", "D5") and not keys.fits("D4a", "D5")


FILES = {
    "app/core.py": "import os\n\n\ndef total(values):\n    return sum(values)\n",
    "app/web.py": "PORT = 8080\nHOST = 'localhost'\n\n\ndef serve():\n    run(HOST, PORT)\n",
}


def test_a_request_is_anchored_at_the_code_it_quotes_or_the_lines_it_names():
    quoted = "Also remove this duplicate:\n```python\nPORT = 8080\nHOST = 'localhost'\n```"
    assert own_place(quoted, "app/core.py", FILES) == Place("app/web.py", 1, 2)
    assert own_place("Also drop line 1, `os` is unused.", "app/core.py", FILES) == \
        Place("app/core.py", 1, 1)
    assert own_place("see L4-L5", "app/core.py", FILES) == Place("app/core.py", 4, 5)
    assert own_place("see line 99", "app/core.py", FILES) is None  # past the file's end
    assert own_place("rename `total`", "app/core.py", FILES) is None  # the comment's own lines
    assert own_place("see https://github.com/o/r/blob/main/app/core.py#L2", "app/core.py",
                     FILES) is None  # a link's line is a reference, not the request's place
    assert wants_files(f"Rename `total`. {quoted}") and not wants_files(quoted)


def _ledger(ledger):
    pr = ledger.pull_request("o/r", 1, author="sam")
    ledger.begin_round(pr["id"], "a" * 40)
    return ledger, pr["id"]


TWO = ("Please rename `total` to `sum_values`.\n\nAlso, please remove the unused import "
       "on line 1.")


def test_a_comment_with_two_requests_is_two_defects_acted_on_together(any_ledger):
    # on SQLite and on PostgreSQL
    ledger, pr_id = _ledger(any_ledger)
    ledger.add_defect(pr_id, Finding("an earlier finding", "app/core.py", 4), 1)
    out = take_comment(ledger, pr_id, Comment(7, "review_comment", "rina", TWO,
                                              path="app/core.py", line=5),
                       pr_author="sam", code="    return sum(values)", files=FILES)
    assert out.action == "raised" and [d.key for d in out.defects] == ["D2a", "D2b"]
    first, second = out.defects
    assert (first.line_start, first.code) == (5, "    return sum(values)")
    assert (second.path, second.line_start, second.code) == ("app/core.py", 1, "import os")
    assert "rename" in first.description and "import" in second.description
    assert ledger.next_key(pr_id) == "D3"  # one comment, one number
    assert ledger.defect(pr_id, "d2B").key == "D2b"
    assert ledger.defect_by_comment(pr_id, 7).key == "D2a"
    assert ledger.thread_root(pr_id, "D2b")["id"] == 7  # the thread of its comment

    # the next push removes the import only: one Resolved, one Open
    ledger.finish_round(pr_id, 1)
    ledger.begin_round(pr_id, "b" * 40)
    new = {**FILES, "app/core.py": FILES["app/core.py"].replace("import os\n", "")}
    decisions = {d.key: d for d in decide_round(
        ledger.defects(pr_id), RoundInput.from_diff(2, git_diff(FILES, new), new, []))}
    assert decisions["D2a"].state.value == "Open" and decisions["D2b"].state.value == "Resolved"
    ledger.record_round(pr_id, 2, decisions.values())

    # a reply in the thread speaks of both; resolving the thread resolves both
    reply = take_comment(ledger, pr_id, Comment(8, "review_comment", "rina",
                                                "Still not right, please look again.",
                                                in_reply_to=7), pr_author="sam")
    assert [d.key for d in reply.defects] == ["D2a", "D2b"]
    assert [d.state.value for d in reply.defects] == ["Open", "Open"]  # D2b disputed
    done = take_thread(ledger, pr_id, resolved=True, by="rina", comment_ids=[7])
    assert {d.key: d.state.value for d in done.defects} == {"D2a": "Resolved",
                                                            "D2b": "Resolved"}

    # an edit of the comment follows request by request
    edit = take_comment(ledger, pr_id, Comment(7, "review_comment", "rina",
                                               TWO.replace("`sum_values`", "`add_up`"),
                                               path="app/core.py", line=5), pr_author="sam")
    assert edit.action == "updated" and "add_up" in ledger.defect(pr_id, "D2a").description
    assert "add_up" not in ledger.defect(pr_id, "D2b").description


def test_the_switch_keeps_a_comment_one_defect(tmp_path, monkeypatch):
    monkeypatch.setitem(rules.SWITCHES, "split_requests", False)
    ledger, pr_id = _ledger(Ledger(tmp_path / "l.db"))
    out = take_comment(ledger, pr_id, Comment(7, "review_comment", "rina", TWO,
                                              path="app/core.py", line=5),
                       pr_author="sam", files=FILES)
    assert [d.key for d in out.defects] == ["D1"]


def test_a_request_key_out_of_turn_is_refused(any_ledger):
    ledger, pr_id = _ledger(any_ledger)
    with pytest.raises(LedgerError):
        ledger.add_defect(pr_id, Finding("x"), 1, key="D2a")
    ledger.add_defect(pr_id, Finding("x"), 1, key="D1a")
    with pytest.raises(LedgerError):
        ledger.add_defect(pr_id, Finding("y"), 1, key="D3")
    ledger.add_defect(pr_id, Finding("y"), 1, key="D1b")
    assert ledger.next_key(pr_id) == "D2"
    assert ledger.add_defect(pr_id, Finding("z"), 1).key == "D2"


# -- the bench: a card is scored against its own request --------------------------------------

CORE1 = "import os\n\n\ndef total(values):\n    return sum(values)\n"
CORE2 = "\n\ndef total(values):\n    return sum(values)\n"  # the import went; the rest stands


def _two_request_task():
    from bench.tasks.mcr import parse_task
    from tests.test_rules import git_diff
    return parse_task({
        "schema": "mcr-task/1", "task_id": "o__r-1", "repo": "o/r", "language": "Python",
        "pr": {"number": 1, "title": "t", "author": "sam", "base_sha": "0" * 40},
        "rounds": [
            {"round": 1, "head_sha": "1" * 40, "files": {"app/core.py": CORE1},
             "diff": git_diff({}, {"app/core.py": CORE1}),
             "events": [{"kind": "review_comment", "id": 7, "author": "rina", "path":
                         "app/core.py", "line": 5, "side": "RIGHT", "body": TWO}]},
            {"round": 2, "head_sha": "2" * 40, "files": {"app/core.py": CORE2},
             "diff": git_diff({}, {"app/core.py": CORE2}), "events": []},
        ],
        "defects": [
            {"id": "D1", "description": "The unused `os` import should be removed.",
             "path": "app/core.py", "line_start": 1, "line_end": 1, "raised_in_round": 1,
             "type": "E.3.1", "severity": "Minor", "states": ["New", "Resolved"],
             "comment_ids": [7]},
            {"id": "D2", "description": "`total` should be renamed `sum_values`.",
             "path": "app/core.py", "line_start": 5, "line_end": 5, "raised_in_round": 1,
             "type": "E.1.1", "severity": "Minor", "states": ["New", "Open"],
             "comment_ids": [7]},
        ]}, "two-requests")


def test_the_bench_scores_each_card_against_its_own_request(monkeypatch):
    from bench.score.tracking import replay_tasks
    [replay] = replay_tasks([_two_request_task()])
    cards = {c["id"]: c for c in replay.task.defects}
    # the cards are listed in another order than the comment asks: the anchor and words decide
    assert (replay.key_for(cards["D1"]), replay.key_for(cards["D2"])) == ("D1b", "D1a")
    assert {p.defect: p.answer for p in replay.pairs()} == {"D1": "Resolved", "D2": "Open"}

    monkeypatch.setitem(rules.SWITCHES, "split_requests", False)
    [replay] = replay_tasks([_two_request_task()])  # one defect for both: one answer is wrong
    answers = {p.defect: p.answer for p in replay.pairs()}
    assert answers["D1"] == answers["D2"]


def test_a_bench_run_record_scores_each_card_against_its_own_request():
    from bench.score.scoring import RoundScore, _track_pair
    task = _two_request_task()
    record = {"defects": [
        {"key": "D1a", "path": "app/core.py", "line_start": 5, "line_end": 5, "state": "Open",
         "description": "Please rename `total` to `sum_values`.", "comment_ids": [7]},
        {"key": "D1b", "path": "app/core.py", "line_start": 1, "line_end": 1,
         "state": "Resolved", "description": "Also, please remove the unused import on line 1.",
         "comment_ids": [7]}]}
    rs = RoundScore(task, record, "mcr", 2, [], [])
    got = {c["id"]: _track_pair(task, c, 2, rs, []).answer for c in task.defects}
    assert got == {"D1": "Resolved", "D2": "Open"}


def test_a_request_repeating_a_settled_defect_sends_it_back_not_raised_as_new(tmp_path):
    ledger, pr_id = _ledger(Ledger(tmp_path / "l.db"))
    asked = "Please guard `count` against zero before dividing."
    first = take_comment(ledger, pr_id, Comment(7, "review_comment", "rina", asked,
                                                path="app/core.py", line=5),
                         pr_author="sam", code="    return sum(values)", files=FILES)
    [key] = [d.key for d in first.defects]
    ledger.finish_round(pr_id, 1)
    ledger.begin_round(pr_id, "b" * 40)
    from tracker.lifecycle import State
    from tracker.models import Decision
    ledger.record_decision(pr_id, 2, Decision(key, State.RESOLVED, "anchor-modified", "edited"))
    # after the push: the same request again, and a new one
    out = take_comment(ledger, pr_id, Comment(9, "review_comment", "rina",
                                              f"{asked}\n\nAlso, please rename `total` to "
                                              "`sum_values`.", path="app/core.py", line=5),
                       pr_author="sam", code="    return sum(values)", files=FILES)
    states = {d.key: d.state.value for d in out.defects}
    assert states == {"D2": "New", key: "Open"}  # one new request keeps a plain key
    assert ledger.history(pr_id, key)[-1]["rule"] == "reviewer-repeats"
    assert ledger.defect_by_comment(pr_id, 9).key == "D2"
    assert len(ledger.defects(pr_id)) == 2


@pytest.mark.parametrize("body", [
    # a list that describes what a fix would do, not what to do
    ("Clean the path first.\n\nThis approach would:\n1. Convert `./a` to `a`\n"
    "2. Convert `b/../a` to `a`\n3. Still reject `../etc`"),
    # alternatives: one request offered two ways
    "Retries were removed. Either:\n- Verify the client retries, OR\n- Keep the retry loop",
    "Please cache the result. Alternatively, please also compute it once at start-up.",
])
def test_a_list_that_describes_or_offers_alternatives_stays_one_request(body):
    assert split_requests(body) == [body]
