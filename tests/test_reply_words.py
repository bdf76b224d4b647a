"""Review-thread words beyond English: thanks, agreement, "still not", "fixed", "will fix"."""

import pytest

from tracker.discussion import (
    accepts,
    claims_fixed,
    opens_with_thanks,
    promises_fix,
    raises_concern,
    reply_signal,
    still_not_done,
)
from tracker.models import SignalKind

PRAISE = ["谢谢你！", "辛苦了，谢谢", "ありがとうございます！", "감사합니다 👍", "수고하셨습니다!",
          "Спасибо, отлично!", "¡Gracias, perfecto!", "Obrigado!", "Danke, sieht gut aus",
          "Merci, parfait !", "Thanks, LGTM!", "LGTM 👍 thanks"]


@pytest.mark.parametrize("body", PRAISE)
def test_thanks_alone_is_no_defect_in_any_language(body):
    assert not raises_concern(body, inline=True) and not raises_concern(body, inline=False)
    assert accepts(body) and opens_with_thanks(body)


@pytest.mark.parametrize("body", [
    "谢谢，请加一个测试", "ありがとうございます。テストを追加してください", "감사합니다. 테스트도 추가해 주세요",
    "Спасибо, но нужно добавить тест", "Gracias, pero falta el test", "Obrigado, mas precisa de um teste",
    "Danke, aber bitte noch einen Test", "Merci, mais il manque un test", "Thanks, but add a test",
])
def test_thanks_followed_by_a_request_is_still_a_remark(body):
    assert raises_concern(body, inline=False)
    assert not accepts(body)  # a "but" after the thanks: not an acceptance


@pytest.mark.parametrize("done, promised", [
    ("修正しました", "修正します"), ("已修复", "我会改"), ("수정했습니다", "수정하겠습니다"),
    ("Исправил", "Исправлю"), ("Corregido", "Lo arreglo"), ("Corrigido", "Vou corrigir"),
    ("Behoben", "Mache ich"), ("C'est fait", "Je vais corriger"), ("Fixed", "Will fix"),
])
def test_a_fix_claimed_and_a_fix_promised_are_told_apart(done, promised):
    assert claims_fixed(done) and not promises_fix(done)
    assert promises_fix(promised) and not claims_fixed(promised)
    assert reply_signal(done, by_author=True) is SignalKind.AUTHOR_CLAIMS_FIXED
    assert reply_signal(promised, by_author=True) is SignalKind.AUTHOR_PROMISES


@pytest.mark.parametrize("body", [
    "还是不对", "まだ直っていません", "아직 수정되지 않았습니다", "Всё ещё не работает",
    "Todavía falla", "Ainda está errado", "Immer noch kaputt", "Toujours pas corrigé",
])
def test_a_reviewer_saying_it_is_still_wrong_disputes_the_fix(body):
    assert still_not_done(body)
    assert reply_signal(body, by_author=False) is SignalKind.REVIEWER_DISPUTES
    assert reply_signal(body, by_author=False, after_push=False) is None


@pytest.mark.parametrize("body", ["有道理", "なるほど、確かに", "좋은 지적입니다", "Согласен",
                                  "Tiene sentido", "Faz sentido", "Einverstanden", "Bien vu"])
def test_a_reviewer_agreeing_accepts(body):
    assert reply_signal(body, by_author=False) is SignalKind.REVIEWER_ACCEPTS


def test_thanks_again_is_not_a_dispute():
    # "encore" (again) is no "still": thanking twice disputes nothing
    assert reply_signal("Merci encore !", by_author=False) is SignalKind.REVIEWER_ACCEPTS


def test_english_words_inside_other_words_and_long_praise_runs_are_read_safely():
    assert raises_concern("okay but why?", inline=True)
    assert raises_concern("thanksgiving release", inline=False)  # no "thanks" in it
    for run in ("👍" * 20_000 + "x", "ok " * 20_000 + "x", "谢谢" * 20_000 + "x"):
        assert raises_concern(run, inline=True)  # a word left over: not praise alone


@pytest.mark.parametrize("body", [
    "Hey, nice to see you work on this!! Please see comments.",
    "안녕하세요 혜영님 코드 깔끔하게 잘 작성해주셨네요. 몇 가지 더 다듬어보면 좋을 부분에 코멘트 남겼으니 참고하세요.",
    "几个小问题，留了一些评论，请查看。", "いくつかコメントしました。ご確認ください。",
    "Оставил несколько комментариев, посмотри пожалуйста.", "Dejé algunos comentarios.",
])
def test_a_short_pointer_to_the_inline_comments_is_no_remark_of_its_own(body):
    assert not raises_concern(body, inline=False)


def test_a_pointer_that_also_asks_about_code_is_a_remark():
    # next-step atdd-subway-admin-324: the review body's own ask is a defect card
    body = ("수고 많으셨습니다 👍 몇 가지 피드백 남겨드렸습니다. 확인해주세요. "
            "특히 컨트롤러에 `try..catch` 가 존재하는 것은 꼭 한번 개선해 보세요.")
    assert raises_concern(body, inline=False)
    assert raises_concern("Left a few comments. Also `load()` swallows errors.", inline=False)


@pytest.mark.parametrize("body, kind", [
    ("请补充测试", "E.4"), ("불필요한 import는 삭제하는게 좋겠네요", "E.3.1"),
    ("変数名を変えてください", "E.1.1"), ("インデントがずれています", "E.2"), ("Утечка памяти", "F.3"),
    ("这里可以简化", "E.3.2"), ("보안 문제가 있습니다", "F.7"), ("Off by one", "F.2"),
])
def test_the_type_of_a_persons_comment_is_guessed_in_other_languages_too(body, kind):
    from tracker.discussion import guess_type

    assert guess_type(body) == kind


@pytest.mark.parametrize("body", ["Please take a look at the error handling here.",
                                  "请查看这个函数的错误处理", "이 문서를 참고하세요"])
def test_asking_to_look_at_something_is_a_remark_not_a_pointer(body):
    assert raises_concern(body, inline=False)


@pytest.mark.parametrize("body", ["I don't agree", "No estoy de acuerdo", "Das stimmt nicht",
                                  "Je ne suis pas d'accord", "Не согласен", "不同意", "还是不行"])
def test_disagreeing_after_a_push_disputes_and_never_accepts(body):
    assert reply_signal(body, by_author=False) is SignalKind.REVIEWER_DISPUTES


def test_a_question_with_haishi_or_is_no_dispute():
    # 还是 also means "or": "map or list?" disputes nothing
    assert reply_signal("用map还是list?", by_author=False) is None
