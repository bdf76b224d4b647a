"""What a review comment is about: the code it names, the fix it proposes, the kind of request.

"Something changed near the comment" is not "the comment was addressed". To decide whether a
defect is still open the tracker needs to know what the comment points at: the identifiers,
calls and literals it quotes in backticks, the code-looking words in its prose (``camelCase``,
``snake_case``, ``a.b``, ``name()``), the replacement in a ```` ```suggestion ```` block, and
whether it asks about formatting (where a whitespace-only change *is* the fix).

Comment bodies are untrusted text; nothing here executes or follows them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .discussion import plain_text, suggestion
from .roundcache import per_text
from .scope import token_set

MAX_BODY = 20_000  # longer bodies are read up to here

_URL = re.compile(r"\b(?:https?://|www\.)\S+", re.IGNORECASE)
_BACKTICKS = re.compile(r"`([^`\n]{1,200})`")
_FENCED = re.compile(r"```[^\n]*\n(.*?)```", re.DOTALL)
# Identifiers are ASCII: in Chinese or Japanese prose no space ends one ("把userId改成userKey"),
# and ``\w`` would run on into the next words.
_CALL = re.compile(r"(?<![A-Za-z0-9_$])([A-Za-z_$][A-Za-z0-9_$]*)\s*\(")
_DOTTED = re.compile(r"(?<![A-Za-z0-9_$])[A-Za-z_$][A-Za-z0-9_$]*(?:\.[A-Za-z_$][A-Za-z0-9_$]*)+"
                     r"(?![A-Za-z0-9_$])")
_WORD = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
_FORMAT = re.compile(
    r"\b(indent\w*|whitespace|white space|spaces?|tabs?|blank lines?|new ?lines?|line breaks?|"
    r"formatt?\w*|column|align\w*|trailing|wrap\w*|line length|prettier|black|lint\w*|"
    r"style)\b"
    r"|格式|缩进|空格|空行|换行|フォーマット|インデント|空白|改行|整形|포맷|포매팅|들여쓰기|공백|줄바꿈|빈 줄"
    r"|\b(форматирован\w*|отступ\w*|пробел\w*|formato|sangr[ií]a|indentaci[oó]n|"
    r"formata[cç][aã]o|indenta[cç][aã]o|recuo|formatierung|einr[uü]ckung|leerzeichen|leerzeile|"
    r"formatage|mise en forme)\b",
    re.IGNORECASE,
)
# A request about blank lines themselves: one too many (the default) or one missing. Short
# comments only: a long one that mentions a blank line in passing is about something else.
_BLANK_LINE = re.compile(r"\b(blank|empty|stray)[ -]?lines?\b", re.IGNORECASE)
_BLANK_MISSING = re.compile(
    r"\b(missing|add|adding|insert|needs?|requires?|put|leave|keep)\b(\W+\w+){0,2}\W+"
    r"(blank|empty)[ -]?lines?\b|\b(blank|empty)[ -]?lines?\W+(is\W+)?"
    r"(missing|needed|required)\b", re.IGNORECASE)
_END_OF_FILE = re.compile(r"\b(end of (the )?file|EOF|final|trailing)\b", re.IGNORECASE)
MAX_BLANK_REQUEST = 200  # characters: a blank-line nit is short


def blank_line_request(prose: str) -> str | None:
    """Whether a comment asks about blank lines: "extra" (remove one), "missing" (add one),
    or None (not about blank lines, or about the file's final newline)."""
    text = prose.strip()
    if len(text) > MAX_BLANK_REQUEST or not _BLANK_LINE.search(text) or \
            _END_OF_FILE.search(text):
        return None
    return "missing" if _BLANK_MISSING.search(text) else "extra"


_KINDS = {
    "docs": re.compile(r"\b(doc|docs|documentation|document|documented|readme|docstrings?|"
                       r"javadoc|jsdoc|doc ?comments?|code comments?)\b"
                       r"|문서|주석|文档|注释|ドキュメント|документаци\w*|documentaci[oó]n|"
                       r"documenta[cç][aã]o|\bdoku(mentation|mentiert|mentieren)?\b|"
                       r"\bdocument(er|ez|ée?)\b", re.IGNORECASE),
    "lint": re.compile(r"\b(\w*lint\w*|eslint|flake8|ruff|prettier|checkstyle|formatt\w*|"
                       r"code style)\b|代码规范|代码风格|コーディング規約|コードスタイル|코드 스타일|"
                       r"코딩 컨벤션|\b(линтер\w*|стиль кода|estilo de c[oó]digo|codestil|"
                       r"style de code)\b", re.IGNORECASE),
    "tests": re.compile(r"\b(tests?|testing|unit ?tests?|coverage|covered)\b"
                        r"|테스트|测试|テスト|\bтест\w*|\bpruebas?\b|\btestes\b|\btestfall\w*|"
                        r"\bunit-?tests?\b|\btesté\b", re.IGNORECASE),
    "changelog": re.compile(r"\b(change ?logs?|release ?notes?|news ?(entry|entries|fragments?|"
                            r"files?|items?)|newsfragments?|towncrier|changesets?|reno note|"
                            r"what'?s new)\b|\b(changes|history)\.(md|rst|txt)\b"
                            r"|변경\s*(이력|로그)|更新日志|变更日志|发布说明|変更履歴|リリースノート"
                            r"|\bregistro de (cambios|altera[cç][oõ]es)\b|журнал\w* изменений"
                            r"|\b(änderungsprotokoll|versionshinweise|journal des modifications|"
                            r"notes de version)\b",
                            re.IGNORECASE),
}
_ENGLISH = {
    "the", "this", "that", "and", "for", "with", "not", "are", "was", "should", "here", "can",
    "use", "you", "instead", "which", "will", "from", "have", "has", "but", "its", "would",
    "could", "there", "what", "why", "how", "also", "just", "like", "then", "than", "into",
    "only", "when", "where", "need", "needs", "make", "sure", "been", "being", "does", "did",
    "done", "dont", "isn", "let", "get", "set", "new", "old", "all", "any", "one", "two", "add",
    "remove", "return", "true", "false", "null", "none", "self", "var", "const", "def", "else",
    "while", "try", "catch", "think", "maybe", "please", "thanks", "nit", "same", "above",
    "below", "other", "more", "less", "some", "them", "they", "these", "those", "our", "your",
    "it's", "don't", "doesn", "because", "if", "is", "it", "to", "of", "in", "on", "be", "we",
    "or", "as", "at", "by", "an", "a", "so", "do", "no", "my", "me", "i", "up", "out", "about",
    "function", "method", "class", "variable", "value", "code", "line", "lines", "file", "test",
    "tests", "name", "type", "call", "error", "case", "way", "thing", "things", "still", "now",
}


@dataclass
class Subject:
    """What one comment is about, as the rules use it."""

    named: set[str] = field(default_factory=set)  # code tokens the comment names
    quoted: set[str] = field(default_factory=set)  # of those, the ones quoted in backticks
    words: set[str] = field(default_factory=set)  # every meaningful word, for matching code
    suggestion: list[str] | None = None
    spans: tuple[str, ...] = ()  # the code quoted in backticks, span by span, in order
    about_format: bool = False
    blank_lines: str | None = None  # "extra" or "missing": the request is about blank lines
    kinds: set[str] = field(default_factory=set)  # kinds of file it asks about: docs, tests...

    def on(self, code_tokens) -> set[str]:
        """The comment's named tokens and words that occur in a piece of code's tokens."""
        return {w for w in self.named | self.words if w in code_tokens}


def _code_like(word: str) -> bool:
    """Whether a prose word looks like an identifier rather than English."""
    if "_" in word.strip("_") or any(c.isdigit() for c in word):
        return True
    inner = word[1:]
    return any(c.isupper() for c in inner) and any(c.islower() for c in word)


@per_text(maxsize=256)
def read_subject(body: str | None) -> Subject:
    """The subject of a comment body (a person's comment or the bot's finding text), read
    once per body: the defects that say the same share it (read-only)."""
    body = (body or "")[:MAX_BODY]
    proposed = suggestion(body)
    prose = _URL.sub(" ", plain_text(body))
    named: set[str] = set()
    spans = tuple(_BACKTICKS.findall(prose))
    for span in spans:
        found = [t for t in token_set(span) if len(t) > 1]
        if len(found) == 1 and found[0].lower() in _ENGLISH:
            continue  # a lone common word in backticks (`new`) is too vague to look for
        named |= set(found)  # quoted as code: code, even keywords like "try"
    quoted = set(named)
    for block in _FENCED.findall(body):
        if not block.lstrip().startswith("suggestion"):
            named |= {t for t in token_set(block) if _code_like(t)}
    named |= {m for m in _CALL.findall(prose) if len(m) > 2 and m.lower() not in _ENGLISH}
    for dotted in _DOTTED.findall(prose):
        if not re.search(r"\.(com|org|io|net|html?|md|rst|txt)$", dotted, re.IGNORECASE):
            named |= {p for p in dotted.split(".") if len(p) > 1 and p.lower() not in _ENGLISH}
    named |= {w for w in _WORD.findall(prose) if _code_like(w) and len(w) > 2}
    words = {w for w in _WORD.findall(prose) if len(w) > 2 and w.lower() not in _ENGLISH}
    kinds = {kind for kind, pattern in _KINDS.items() if pattern.search(prose)}
    return Subject(named=named, quoted=quoted, words=words | named, suggestion=proposed,
                   spans=spans, about_format=bool(_FORMAT.search(prose)), kinds=kinds,
                   blank_lines=blank_line_request(prose))
