"""The words of review threads beyond English: thanks, approval, agreement, "still not",
"fixed", "will fix", and a request.

``tracker.discussion`` reads people's comments with English patterns; reviews on repositories
never seen are also written in Chinese, Japanese, Korean, Russian, Spanish, Portuguese, German
and French. Without these words a Korean "감사합니다!" is tracked as a defect, a Chinese "还是不对"
never disputes a fix, and a Japanese "修正します" (will fix) reads as a claim that it is fixed.
Each constant is one regex alternation, per meaning, grouped by language; discussion.py ORs it
into its English pattern. Latin and Cyrillic words sit between word boundaries; Chinese,
Japanese and Korean have no spaces between words, so theirs match anywhere.
"""

from __future__ import annotations


def _words(*words: str) -> str:
    """An alternation of whole words (Latin or Cyrillic script)."""
    return r"\b(?:" + "|".join(words) + r")\b"


def _anywhere(*words: str) -> str:
    """An alternation of words matched anywhere (scripts written without spaces)."""
    return "(?:" + "|".join(words) + ")"


def _either(*parts: str) -> str:
    return "(?:" + "|".join(parts) + ")"


THANKS = _either(
    _anywhere("谢谢你", "谢谢您", "谢谢", "感谢", "多谢", "辛苦了", "ありがとうございます", "ありがとう",
              "感謝", "감사합니다", "감사해요", "고맙습니다", "고마워요", "수고하셨습니다", "수고하셨어요"),
    _words("спасибо", "благодарю", "gracias", "obrigad[oa]", "valeu", "danke", "vielen dank",
           "merci"),
)

GOOD = _either(
    _anywhere("很好", "不错", "好的", "没问题", "可以了", "完美", "太棒了", "いいですね", "良いですね",
              "良さそう", "問題ありません", "問題ないです", "完璧", "了解しました", "了解です",
              "承知しました", "좋습니다", "좋아요", "좋네요", "문제없", "확인했습니다", "완벽"),
    _words("отлично", "хорошо", "супер", "здорово", "perfecto", "genial", "excelente",
           "buen trabajo", "se ve bien", "perfeito", "ótimo", "bom trabalho", "perfekt",
           "sieht gut aus", "gute arbeit", "prima", "parfait", "très bien", "beau travail",
           "ça me va", "nickel"),
)

STILL_NOT = _either(  # "still not", and "I do not agree" (a fix not accepted)
    _anywhere("还是不", "还是有", "还是没", "仍然", "依然", "还没", "尚未", "まだ", "아직", "여전히", "不同意",
              "同意しません", "동의하지 않", "동의하기 어렵"),
    _words("всё ещё", "все ещё", "все еще", "всё еще", "до сих пор", "ещё не", "еще не",
           "todavía", "aún no", "sigue sin", "ainda", "immer noch", "noch nicht",
           "toujours pas", "pas encore", "не согласен", "не согласна", "no estoy de acuerdo",
           "não concordo", "nicht einverstanden", "stimmt nicht", "pas d'accord"),
)

BUT = _either(  # weaker than STILL_NOT: "but", "should", "please" in a reply after a push
    _anywhere("但是", "不过", "可是", "应该", "请", "でも", "しかし", "べき", "ください",
              "하지만", "그런데", "근데", "해야", "주세요"),
    _words("но", "однако", "должн\\w*", "пожалуйста", "pero", "sin embargo", "debería", "por favor",
           "mas", "porém", "deveria", "aber", "jedoch", "sollte", "bitte", "mais", "cependant",
           "devrait"),
)

FIXED = _either(
    _anywhere("已修复", "已修改", "已更新", "已处理", "已解决", "改好了", "修好了", "搞定", "修正了",
              "修正しました", "対応しました", "直しました", "変更しました", "修正済み", "수정했",
              "반영했", "변경했", "고쳤", "해결했", "수정 완료", "반영 완료"),
    _words("исправил[аои]?", "исправлено", "поправил[аи]?", "сделано", "готово", "arreglado",
           "corregido", "solucionado", "corrigido", "ajustado", "resolvido", "behoben",
           "erledigt", "korrigiert", "gefixt", "corrigé", "c'est fait", "réglé"),
)

PROMISE = _either(
    _anywhere("我会", "会改", "稍后", "马上改", "下次提交", "対応します", "修正します", "直します",
              "変更します", "수정하겠", "반영하겠", "고치겠", "변경하겠", "수정할게", "반영할게"),
    _words("исправлю", "поправлю", "сделаю", "переделаю", "lo arreglo", "lo cambio", "lo corrijo",
           "lo haré", "vou corrigir", "vou alterar", "vou ajustar", "vou mudar", "mache ich",
           "ändere ich", "kümmere mich", "je vais", "je corrige", "je m'en occupe"),
)

AGREE = _either(
    _anywhere("有道理", "同意", "好主意", "说得对", "なるほど", "確かに", "おっしゃる通り", "동의",
              "맞습니다", "맞네요", "좋은 지적", "일리가"),
    _words("согласен", "согласна", "справедливо", "логично", "резонно", "de acuerdo",
           "tiene sentido", "buen punto", "concordo", "faz sentido", "bom ponto",
           "einverstanden", "das stimmt", "guter punkt", "macht sinn", "ergibt sinn", "d'accord",
           "bonne remarque", "bien vu"),
)

POINTER = _either(  # "I left some comments": a pointer to the inline comments, no ask of its own
    _anywhere("留了评论", "留了一些评论", "见评论", "看一下评论", "コメントしました", "コメントを残しました",
              "コメントを書きました", "코멘트 남겼", "코멘트를 남겼", "피드백 남겼", "피드백을 남겼",
              "피드백 남겨", "리뷰 남겼", "코멘트 남겨"),
    _words("оставил[аи]? (несколько |пару )?комментари\\w*", "см\\. комментари\\w*",
           "dejé (algunos |unos )?comentarios", "deixei (alguns )?comentários",
           "habe (ein paar |einige )?kommentare", "siehe kommentare",
           "j'ai laissé (quelques )?commentaires", "voir (les )?commentaires"),
)

REQUEST = _either(  # a comment that opens with thanks still raises a concern with these
    _anywhere("？", "请", "需要", "应该", "必须", "为什么", "不要", "建议", "能否", "ください", "べき",
              "必要", "なぜ", "しないで", "方がいい", "ほうがいい", "주세요", "해야", "필요", "왜",
              "좋겠"),
    _words("нужно", "надо", "должн\\w*", "почему", "пожалуйста", "ошибк\\w*", "удали\\w*",
           "добавь\\w*", "лучше", "не", "debería", "hay que", "falta", "por qué", "por favor",
           "quitar", "eliminar", "añadir", "agregar", "mejor", "deveria", "precisa", "por que",
           "erro", "remover", "adicionar", "melhor", "não", "sollte", "muss", "fehlt", "warum",
           "bitte", "fehler", "entfernen", "hinzufügen", "besser", "nicht", "devrait", "faut",
           "manque", "pourquoi", "erreur", "supprimer", "ajouter", "mieux", "pas"),
)
