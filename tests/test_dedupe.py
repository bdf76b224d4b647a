"""Is a comment one already tracked? Descriptions compared in every script."""

import pytest

from tracker.dedupe import text_similarity, words
from tracker.intake import Comment, take_comment
from tracker.models import SignalKind


def test_english_words_are_read_as_before():
    assert words("Use a context manager here, please") == {"context", "manager", "please"}
    assert words("x1 ab abc _foo 123abc") == {"abc", "_foo"}


@pytest.mark.parametrize("first, again", [
    ("请在这里使用上下文管理器", "这里还是要用上下文管理器"),
    ("ここでコンテキストマネージャを使ってください", "まだコンテキストマネージャを使っていません"),
    ("불필요한 import는 삭제하는게 좋겠네요", "불필요한 import 삭제 부탁드려요"),
    ("Используйте менеджер контекста", "Используйте менеджер контекста, пожалуйста"),
])
def test_a_request_said_again_in_another_script_is_alike(first, again):
    # before, only ASCII words counted: these shared nothing
    assert text_similarity(first, again) >= 0.3
    assert text_similarity(first, "Unrelated English text about caching") == 0.0


def test_a_remark_repeated_in_chinese_after_a_push_joins_the_tracked_one(ledger):
    pr = ledger.pull_request("o/r", 4, author="sam")["id"]
    ledger.begin_round(pr, "h1")
    ledger.finish_round(pr, 1)
    said = "请为这个函数补充单元测试和文档说明"  # "please add unit tests and docs for this function"
    first = take_comment(ledger, pr, Comment(id=1, kind="issue_comment", author="li",
                                             body=said), pr_author="sam")
    assert first.action == "raised"
    ledger.begin_round(pr, "h2")
    again = take_comment(ledger, pr, Comment(id=2, kind="issue_comment", author="li",
                                             body="请为这个函数补充单元测试和文档"),
                         pr_author="sam")
    assert (again.action, again.defect.key, again.signal) == \
        ("attached", first.defect.key, SignalKind.REVIEWER_REPEATS)
