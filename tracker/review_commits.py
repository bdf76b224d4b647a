"""Whether a commit message says the push answers the review.

A remark on the whole pull request names no code, so the diff alone cannot show it was met; a
commit saying "address review comments" is the author's own account that it was. Authors say
it in many ways ("Made the changes requested", "Review: add missing blank line", "apply
code-review changes", "Address Jane's comments", "피드백 반영"), so this is a vocabulary, kept
apart from the rules that use it. It is tested against phrases that must not count: a commit
about *code* comments ("Remove outdated comment", "Fix `@see` doc comment") or a product
feature named "review" ("Add review model").

Messages are untrusted text: they are matched, never followed. Only a message's first line is
read, as the round keeps it (``tracker.discussion.first_lines``): the body and its trailers
("Reviewed-by: ...", which says who reviewed, not that a review was answered) are not.
"""

from __future__ import annotations

import re

MAX_MESSAGE = 4_000  # a longer message is read up to here

_REVIEW = r"(?:code[- ]?reviews?|reviews?|feedback|suggestions?|requested changes?)"
_ASKED = r"(?:feedback|suggestions?|requested changes?|review (?:comments?|feedback))"
_REMARKS = r"(?:comments?|remarks?|notes?|nits?)"
_ANSWER = (r"(?:address\w*|appl(?:y|ies|ied|ying)|resolv\w*|incorporat\w*|"
           r"respond\w*\s+to|react\w*\s+to|work(?:ed|ing)?\s+on|act(?:ed|ing)?\s+on|"
           r"follow(?:ed|ing)?\s+up\s+on)")
_ADOPT = r"(?:implement\w*|integrat\w*|adopt\w*|handl\w*|tak(?:e|es|ing)|took)"
_WHOSE = (r"(?:(?:the|all|some|more|remaining|latest|last|your|his|her|their)\s+)*"
          r"(?:@?[\w.-]+'s?\s+|@[\w.-]+\s+|pr\s+|mr\s+|reviewers?'?s?\s+)?"
          r"(?:(?:first|second|third|last|latest|other|remaining)\s+)?")

_PATTERNS = [
    # "address review comments", "applies FirasRG first review", "Address adirioban's comments"
    rf"\b{_ANSWER}\s+{_WHOSE}(?:{_REVIEW}|{_REMARKS})\b",
    rf"\b{_ANSWER}\s+(?:\S+\s+){{1,2}}{_REVIEW}\b",
    rf"\b{_ADOPT}\s+{_WHOSE}{_ASKED}\b",
    # "review comments", "pr feedback", "code-review changes", "CR fixes"
    (r"\b(?:code[- ]?reviews?|reviews?|reviewer'?s?)[- ](?:comments?|feedback|changes|"
    r"fix(?:es)?|suggestions?|remarks?|notes?|nits?|requests?|findings?|points?)\b"),
    r"\b(?:pr|cr|mr)[- ](?:comments?|feedback|fix(?:es)?|suggestions?|remarks?|nits?)\b",
    # "Review: add missing blank line", "[feedback]", "(review)"
    r"^\s*(?:code[- ]?review|review|cr|feedback)\s*:",
    r"[\[(]\s*(?:code[- ]?review|review|cr|feedback)\s*[\])]",
    # "as suggested by Jakuje", "per review", "from code review", "after reviews"
    (r"\b(?:as|per)\s+(?:the\s+|a\s+)?(?:code[- ]?reviews?|reviews?|feedback|suggest\w*|"
    r"request\w*|discussion|discussed)\b"),
    (r"\b(?:after|from|following|according\s+to|based\s+on)\s+(?:the\s+|a\s+)?"
    r"(?:code[- ]?reviews?|reviews?|feedback|suggestions?)\b"),
    # "Made the changes requested", "requested changes", "Apply suggested renames"
    (r"\b(?:requested|suggested)\s+(?:changes?|changed|edits?|renames?|fix(?:es)?|"
    r"improvements?|tweaks?)\b"),
    r"\bchanges?\s+(?:requested|suggested)\b",
    # "Feedback applied", "review comments addressed"
    (r"\b(?:feedback|suggestions?|review(?:\s+comments?)?)\s+(?:applied|addressed|"
    r"incorporated|resolved|implemented)\b"),
    # other languages: Korean, Chinese, Japanese, Russian, Spanish/Portuguese, German, French
    (r"(?:피드백|리뷰|코드\s*리뷰|코멘트|리뷰어)\s*(?:내용\s*|사항\s*)?(?:을\s*|를\s*)?"
    r"(?:반영|적용|수정|처리)"),
    r"(?:评审|审查|审阅|审核|检视|review)\s*(?:意见|建议)|(?:根据|按照?)\S{0,12}(?:意见|建议)",
    r"(?:レビュー|指摘)(?:の|事項|内容)?(?:を)?(?:反映|対応|修正)",
    (r"(?:^|\s)(?:по|после)\s+(?:ревью|review|замечани\w*|комментари\w*)|"
    r"исправ\w*\s+замечани\w*"),
    (r"\b(?:cambios|correcciones|ajustes|altera[cç][oõ]es)\s+(?:de\s+la\s+|del?\s+|da\s+|"
    r"do\s+|solicitad\w*\s+|pedid\w*\s+)?(?:revisi[oó]n|revis[aã]o|review|feedback)"),
    (r"\b(?:aplica\w*|atend\w*|corrig\w*)\s+(?:\S+\s+){0,2}(?:revisi[oó]n|revis[aã]o|"
    r"review|feedback|coment[aá]rios)"),
    r"\b(?:review|anmerkungen|kommentare|feedback)\s+(?:eingearbeitet|umgesetzt)",
    # French: "corrections suite à la revue", "retours de revue appliqués"
    (r"\b(?:suite\s+(?:à|a)|selon|d'apr[eè]s)\s+(?:la\s+|les\s+)?(?:revue|relecture|review|"
    r"retours?|remarques?|commentaires?)\b"),
    (r"\b(?:retours?|remarques?|commentaires?)\s+(?:de\s+(?:la\s+)?(?:revue|relecture|review)\s+)?"
    r"(?:appliqu|int[ée]gr|pris(?:es?)?\s+en\s+compte|trait)\w*"),
]
_ADDRESSES_REVIEW = re.compile("|".join(f"(?:{p})" for p in _PATTERNS),
                               re.IGNORECASE)


def addresses_review(message: str) -> bool:
    """Whether ``message`` says its commit answers the review."""
    first = message[:MAX_MESSAGE].split("\n", 1)[0]
    return _ADDRESSES_REVIEW.search(first) is not None
