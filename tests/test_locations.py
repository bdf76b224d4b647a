"""A remark on the whole PR read by structure: the place it names, links to or quotes; and the
signals around each decision that the confidence weighs."""

from __future__ import annotations

from bench.tasks.diffs import git_diff
from tracker import rules
from tracker.decide import RoundInput, decide_round
from tracker.lifecycle import State
from tracker.locations import Place, locate
from tracker.models import Defect

OLD = {
    "scrapy/middleware/stats.py": "import os\nfrom x import unused\n\n\ndef f():\n    return 1\n",
    "src/quota.js": "const a = 1;\nconsole.log(a);\nexport default a;\n",
    "tests/test_stats.py": "def test_f():\n    assert f() == 1\n",
}


def remark(body: str, key: str = "D1") -> Defect:
    return Defect(key=key, description=body, origin="human", state=State.NEW, raised_round=1,
                  state_round=1)


def decide(defect: Defect, new: dict[str, str]):
    return decide_round([defect], RoundInput.from_diff(2, git_diff(OLD, new), new))[0]


def test_places_by_link_path_and_line_quoted_code_and_file_name():
    body = ("see https://github.com/o/r/blob/0123abc/src/quota.js#L2-L3 and "
            "`console.log(a);` and also stats.py")
    places = locate(body, OLD)
    assert places[0] == Place("src/quota.js", 2, 3, "links to")
    assert Place("src/quota.js", 2, 2, "quotes") in places
    assert Place("scrapy/middleware/stats.py", None, None, "names") in places


def test_a_ci_runners_absolute_path_means_the_prs_file():
    body = ('"/home/runner/work/scrapy/scrapy/scrapy/middleware/stats.py:2:1: F401 '
            "'x.unused' imported but unused\"")
    assert locate(body, OLD) == [Place("scrapy/middleware/stats.py", 2, 2, "names")]


def test_nothing_is_located_from_names_that_are_not_the_prs_files_or_lines_past_the_end():
    assert locate("see other/file.py:3 and README.md", OLD) == []
    # a line past the file's end is no line: the file is still named
    assert locate("src/quota.js:99", OLD) == [Place("src/quota.js", None, None, "names")]
    assert locate("`a` is a bad name", OLD) == []  # too short to be code
    assert locate("`return 1` twice?", {"a.py": "return 1\n", "b.py": "return 1\n"}) == []


def test_a_lint_report_is_resolved_by_the_push_that_fixes_the_line_it_names():
    body = "/home/runner/work/x/x/scrapy/middleware/stats.py:2:1: F401 imported but unused"
    fixed = dict(OLD, **{"scrapy/middleware/stats.py": "import os\n\n\ndef f():\n    return 1\n"})
    decision = decide(remark(body), fixed)
    assert decision.state is State.RESOLVED
    assert decision.evidence.startswith("the remark names scrapy/middleware/stats.py:2; ")
    assert decision.path == "scrapy/middleware/stats.py"  # anchored there from now on
    other = dict(OLD, **{"src/quota.js": "const a = 2;\nconsole.log(a);\nexport default a;\n"})
    assert decide(remark(body), other).state is State.OPEN  # that line untouched


def test_a_remark_naming_files_without_lines_follows_those_files(monkeypatch):
    body = "The checks fail in quota.js, please have a look"
    changed = dict(OLD, **{"src/quota.js": "const a = 1;\nexport default a;\n"})
    ruled = decide(remark(body), changed)
    assert (ruled.state, ruled.rule) == (State.RESOLVED, "remark-file-changed")
    elsewhere = dict(OLD, **{"tests/test_stats.py": "def test_f():\n    assert f() == 2\n"})
    ruled = decide(remark(body), elsewhere)
    assert (ruled.state, ruled.rule) == (State.OPEN, "remark-file-unchanged")
    monkeypatch.setitem(rules.SWITCHES, "remark_located", False)
    assert decide(remark(body), changed).rule != "remark-file-changed"


def test_every_live_decision_carries_its_signals():
    defect = Defect(key="D1", description="Why log here?", origin="human", state=State.NEW,
                    raised_round=1, state_round=1, path="src/quota.js", line_start=1,
                    line_end=1, code="const a = 1;")
    new = dict(OLD, **{"src/quota.js": "const a = 1;\nconsole.debug(a);\nexport default a;\n",
                       "tests/test_stats.py": "def test_f():\n    assert 2\n"})
    profile = decide(defect, new).profile
    assert profile["anchored"] and profile["file_changed"] and profile["near_changed"]
    assert not profile["anchor_changed"]
    assert profile["other_files"] and profile["tests_changed"] and profile["question"]
    assert not profile["said_fixed"]
