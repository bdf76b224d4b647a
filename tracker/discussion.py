"""Reading people's comments: does a comment raise a problem, claim a fix, accept or dispute one?

Used both by the bot (webhook comments) and by offline replays (a task's events). These are
plain-text heuristics with no I/O; they only turn comments into findings and signals, the
tracker still decides states from code. Bodies are untrusted text: nothing here executes or
follows them.
"""

from __future__ import annotations

import re

from . import reply_words as other
from .models import Finding, Origin, SignalKind
from .suggestions import suggestion  # noqa: F401 - read here by the rules and the bench

_QUOTE = re.compile(r"^>.*$", re.MULTILINE)
_FENCE = re.compile(r"```.*?```", re.DOTALL)
_SUGGESTION = re.compile(r"```suggestion\b", re.IGNORECASE)

_PRAISE = (
    r"(?:(?:lgtm|looks good( to me)?|looking good|looks great|great( work| job)?|nice( work| job)?|thanks?( you)?"
    r"( so much| a lot)?|thank you|perfect|awesome|excellent|approved?|ship it|\+1|:\+1:|👍|🎉|"
    r"well done|good job|merging|merged|cool|ok|okay|done)(?!\w)|" + other.THANKS + "|" + other.GOOD + ")"
)
_PRAISE_RE = re.compile(_PRAISE, re.IGNORECASE)
_WORD_CHAR = re.compile(r"\w")


def _praise_only(text: str) -> bool:
    """Whether a comment is nothing but praise and thanks ("Thanks, LGTM!", "감사합니다 👍"):
    what is left once every such phrase is taken out holds no word."""
    return bool(_PRAISE_RE.search(text)) and not _WORD_CHAR.search(_PRAISE_RE.sub(" ", text))


_META = re.compile(
    r"(see (my |the )?(inline )?comments|left (a few |some )?(comments|feedback|notes)|few comments|"
    r"check ?out the requested changes|requested changes|please see comments|"
    r"additional comments|comments? below|added (some )?comments|" + other.POINTER + ")",
    re.IGNORECASE,
)
_CONCERN = re.compile(
    r"(\?|\bshould\b|\bshouldn'?t\b|\bplease\b|\bneed(s|ed)?\b|\bmust\b|\bmissing\b|\binstead\b|"
    r"\bdon'?t\b|\bdo not\b|\bwhy\b|\bcould\b|\bwould\b|\bbug\b|\bwrong\b|\bbroken\b|\bfail|"
    r"\bremove\b|\badd\b|\bavoid\b|\bconsider\b|\bprefer\b|\bnit\b|\btypo\b|\bincorrect\b|"
    r"\bunnecessary\b|\bredundant\b|\bsame (comment|here|as)\b|\bstill\b|\bcan be\b|\bcan we\b|"
    r"\bleak|\bunused\b|\binstead\b|\brename\b|\bmove\b|\bbetter\b|\bnot\b|\bisn'?t\b|:-1:|👎|"
    + other.REQUEST + ")",
    re.IGNORECASE,
)
_FIXED = re.compile(
    r"(\b(fixed|done|addressed|resolved|updated|changed|applied|removed|renamed|implemented|"
    r"corrected|reverted|moved)\b|\bgood (catch|point)\b|\bmy bad\b|\bnice catch\b|"
    r"исправил|исправлено|수정했|반영했|修正|已修复|已修改|" + other.FIXED + ")",
    re.IGNORECASE,
)
_STILL = re.compile(
    r"(\bstill\b|\bnot (yet|quite|fixed|done|resolved)\b|\bagain\b|\bdoesn'?t\b|\bisn'?t\b|"
    r"\bnope\b|\bbut\b|\bhowever\b|\bdifferent\b|\bsame (problem|issue)\b|\bshould\b|\bplease\b|"
    r"\bdisagree|\b(don'?t|do not) agree\b|" + other.STILL_NOT + "|" + other.BUT + ")",
    re.IGNORECASE,
)
_STILL_NOT = re.compile(
    r"(\bstill\b|\bnot (yet|quite|fixed|done|resolved)\b|\bisn'?t (fixed|resolved|right)\b|"
    r"\bnope\b|\bdisagree|\b(don'?t|do not) agree\b|" + other.STILL_NOT + ")",
    re.IGNORECASE,
)
_ACCEPT = re.compile(
    r"^\W*(?:(lgtm|looks good|looking good|thanks?|thank you|perfect|great|nice|👍|\+1|ok|okay|cool|awesome)\b|"
    + other.THANKS + "|" + other.GOOD + ")",
    re.IGNORECASE,
)
_AGREE = re.compile(
    r"\b(sounds (fair|good|reasonable)|good (point|call|catch)|makes sense|fair enough|"
    r"agreed?|i agree|you'?re right|that works|works for me|no worries|sure)\b|" + other.AGREE,
    re.IGNORECASE,
)


MAX_MESSAGES = 250  # commits whose messages a round reads (GitHub's compare lists 250)
MAX_MESSAGE = 200  # characters kept of a message's first line


def first_lines(messages: list[str]) -> list[str]:
    """Each message's first line, bounded, for the tracker (PR text: untrusted data)."""
    out = []
    for message in messages[-MAX_MESSAGES:]:
        line = str(message or "").strip().split("\n", 1)[0].strip()
        if line:
            out.append(line[:MAX_MESSAGE])
    return out


#: what the keyword readings below read of a comment: its first 4,096 characters. Their
#: patterns hold dozens of words in nine languages, so each costs about 1.5 us a character:
#: a 64 KB comment (GitHub's limit) would hold the event loop for half a second.
MAX_READ = 4096


def plain_text(body: str | None) -> str:
    """A comment body's first ``MAX_READ`` characters without quoted replies and code blocks
    (suggestion blocks excepted)."""
    text = _QUOTE.sub("", (body or "")[:MAX_READ])
    return _FENCE.sub(lambda m: "" if not _SUGGESTION.match(m.group(0)) else " suggestion ", text)


def raises_concern(body: str | None, *, inline: bool) -> bool:
    """Whether a reviewer's comment asks for a change (and so is a defect to track).

    A reviewer's inline comment does unless it is pure praise (an empty inline comment still
    marks a place). A remark on the whole PR (a review body, a PR comment) does unless it is
    praise, a short pointer to the inline comments ("left a few comments") that names no
    code of its own, or thanks without any concern in it.
    """
    if body and _SUGGESTION.search(body):
        return True
    text = plain_text(body).strip()
    if not text:
        return inline
    if len(body or "") <= MAX_READ and _praise_only(text):
        return False  # (a comment longer than what is read is never taken as praise alone)
    if inline:
        return True
    if _META.search(text) and len(text) < 200 and not _CODE_SPAN.search(_without_pointers(text)):
        return False  # a short pointer to the inline comments, naming no code itself
    return bool(_CONCERN.search(text)) or not _ACCEPT.match(text)


_CODE_SPAN = re.compile(r"`[^`\n]+`")
_SENTENCE = re.compile(r"[^.!?。！？\n]+[.!?。！？\n]*")


def _without_pointers(text: str) -> str:
    """A remark without its sentences that point at the inline comments ("I left a few
    comments."): what is left is what the remark itself asks."""
    return " ".join(s for s in _SENTENCE.findall(text) if not _META.search(s)).strip()


_PROMISE = re.compile(
    r"(\bwill (do|fix|change|update|add|address|remove|rename|look)\b|"
    r"\bi'?ll (do|fix|change|update|add|address|remove|rename|look)\b|\bgoing to (fix|change|"
    r"update|add|address|remove)\b|\bin (the|a) (next|follow-?up|later|separate) (commit|push|pr)\b|"
    + other.PROMISE + ")",
    re.IGNORECASE,
)


def promises_fix(body: str | None) -> bool:
    """An author's reply that says the change is still to come ("will do", "I'll fix it in
    the next commit"): it is not done yet."""
    text = plain_text(body).strip()
    return bool(text) and bool(_PROMISE.search(text)) and len(text) < 400


def claims_fixed(body: str | None) -> bool:
    """An author's reply that says the problem is dealt with ("fixed", "done", ...); a
    promise ("will do") is not a claim."""
    text = plain_text(body).strip()
    return bool(text) and bool(_FIXED.search(text)) and len(text) < 400 \
        and not promises_fix(body)


def accepts(body: str | None) -> bool:
    """A reviewer's reply that accepts the change ("LGTM", "thanks")."""
    text = plain_text(body).strip()
    return bool(_ACCEPT.match(text)) and not _STILL.search(text)


_THANKS_FIRST = re.compile(
    r"^\W*(?:(lgtm|looks (good|great|better)|looking (good|great|better)|thanks?( you)?\b|"
    r"thank you|perfect|great|nice|much better|awesome|excellent)\b|" + other.THANKS + "|"
    + other.GOOD + ")",
    re.IGNORECASE,
)


def opens_with_thanks(body: str | None) -> bool:
    """A remark that opens by accepting what was done ("Looks good, only ..."), whatever
    new request follows."""
    return bool(_THANKS_FIRST.match(plain_text(body).strip()))


def still_not_done(body: str | None) -> bool:
    """A comment saying something is still not done ("this still needs ...")."""
    return bool(_STILL_NOT.search(plain_text(body)))


def reply_signal(body: str | None, *, by_author: bool, after_push: bool = True
                 ) -> SignalKind | None:
    """What a reply in a defect's thread says about it, if anything.

    Who wrote it and when matter: the author's "fixed" is a claim; a reviewer's agreement
    ("sounds fair", "good point") accepts; a reviewer saying it is still not right disputes a
    fix only when the author pushed since the defect was raised (``after_push``); before any
    push the same words only elaborate on the request.
    """
    if by_author:
        if promises_fix(body):
            return SignalKind.AUTHOR_PROMISES
        return SignalKind.AUTHOR_CLAIMS_FIXED if claims_fixed(body) else None
    text = plain_text(body).strip()
    if not text:
        return None
    if accepts(body) or (_AGREE.search(text) and not _STILL_NOT.search(text)):
        return SignalKind.REVIEWER_ACCEPTS
    if not after_push:
        return None
    return SignalKind.REVIEWER_DISPUTES if _STILL.search(text) else None


def human_finding(body: str, *, author: str | None, path: str | None = None,
                  line: int | None = None, start_line: int | None = None,
                  side: str = "RIGHT", comment_id: int | None = None) -> Finding:
    """A person's comment as a finding to track (origin human)."""
    start = start_line if start_line is not None else line
    text = (body or "").strip()
    return Finding(
        description=text,
        path=path,
        line_start=start,
        line_end=line if line is not None else start,
        side=side or "RIGHT",
        type=guess_type(text),
        severity="Normal",
        confidence=1.0,
        origin=Origin.HUMAN,
        author=author,
        comment_id=comment_id,
    )


_TYPE_CUES = [
    ("E.4", (r"\btests?\b|\bcoverage\b|\bcovered\b|\bassert|테스트|测试|テスト|\bтест|\bpruebas?\b|"
            r"\btestes?\b|\btestfall")),
    ("F.7", (r"\bsecur|\bsecret|\bpassword|\btoken\b|\binjection|\bsanitiz|\bcrypto|安全|セキュリティ|"
            r"보안|\bбезопасн|\bseguridad|\bseguran[cç]a|\bsicherheit|\bs[ée]curit[ée]")),
    ("F.6", (r"\bperformance\b|\bslow\b|\bfaster\b|\befficien|\bparallel|\bcache\b|性能|パフォーマンス|"
            r"성능|\bпроизводительн|\brendimiento|\bdesempenho|\bleistung")),
    ("F.3", (r"\bleak|\bclose\b|\bdispose|\bresource|\bthread\b|\bmemory\b|内存|泄漏|メモリ|메모리|"
            r"\bутечк|\bпамят")),
    ("F.4", (r"\bnull\b|\bcheck\b|\bvalidat|\bhandle\b|\bexception|\berror handling|空指针|例外|예외|"
            r"\bисключени")),
    ("E.1.2", (r"\bdocstring|\bjavadoc|\bdoc comment|\bdocument|문서|주석|文档|注释|ドキュメント|"
              r"\bдокументаци|\bdocumenta[cç]|\bdoku")),
    ("E.1.1", (r"\btypo\b|\bwording\b|\bspelling|\bchangelog|\breadme|\bname\b|\brename|\bnaming|"
              r"오타|이름|네이밍|변수명|함수명|메서드명|错别字|拼写|命名|变量名|函数名|方法名|誤字|タイポ|名前|変数名|"
              r"関数名|メソッド名|\bопечатк|\bпереимен")),
    ("E.2", (r"\bformat|\bindent|\bstyle\b|\bwhitespace|\blint|格式|缩进|インデント|フォーマット|들여쓰기|"
            r"포맷|\bотступ|\bформатир")),
    ("E.3.1", (r"\bunused\b|\bimport\b|\bmove\b|\bduplicat|\bdead code|\bredundant|\bempty\b|"
              r"重复|未使用|重複|중복|사용하지 않|불필요|\bдублир|\bнеиспользуем")),
    ("F.1", (r"\bapi\b|\bsignature|\breturn type|\bparameter|\bargument|\binterface\b|参数|接口|"
            r"引数|매개변수|파라미터|\bпараметр|\bинтерфейс")),
    ("E.3.2", (r"\binstead\b|\bsimplif|\bshortened|\bapproach|\bcan be\b|\brefactor|简化|重构|"
              r"リファクタ|簡潔|리팩터|간결|\bупрост|\bрефактор")),
]


def guess_type(text: str) -> str:
    """A rough MCR type for a person's comment, from keywords in its first ``MAX_READ``
    characters (F.2 Logic when nothing fits)."""
    text = (text or "")[:MAX_READ]
    for mcr_type, pattern in _TYPE_CUES:
        if re.search(pattern, text, re.IGNORECASE):
            return mcr_type
    return "F.2"
