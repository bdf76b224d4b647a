"""One comment, several requests: where a reviewer's comment asks for more than one change.

"Please rename this to `openDownloadDialog`. Also, please remove the comment above" asks for
two things, and the author may do one of them. Tracked as one defect, one answer is wrong
whatever it is once one request is met and the other is not. So a comment is cut into its
requests, each tracked on its own (``tracker.intake``), by structure that holds in any
language: list items, paragraphs and sentences (code blocks stay with the words around them),
each *asking* for something (a question, a request or modal word, an imperative), and a
marker that a further request follows ("also", "另外", "그리고", "außerdem", ...).

Conservative by design: words that only explain a request (its reason, an example, a code
block, a link) stay with it, and two sentences that ask one thing ("Can we test the behaviour?
How about adding a `useEffect`?") stay one request. A new request starts only at a list item
that asks (in a list of two or more such items), or at a sentence that asks and opens with an
additive marker, after a request before it. Bodies are untrusted text; nothing here follows
them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from .anchors import distinctive, file_lines, find_code

MAX_REQUESTS = 8  # requests one comment is cut into at most; the rest joins the last
MAX_SPLIT_BODY = 20_000  # characters: a longer comment is one request

_FENCE_OPEN = re.compile(r"^\s*(```+|~~~+)")
_ITEM = re.compile(r"^\s{0,3}(?:[-*+•]|\d{1,2}[.)]|[a-z][.)]|[①-⑩])\s+(?=\S)")
_QUOTE_LINE = re.compile(r"^\s*>")
# a sentence ends at . ! ? (or their full-width forms) followed by space or the line's end;
# "e.g.", "i.e.", "etc." and "vs." end none
_SENTENCE_END = re.compile(r"(?<!\be\.g)(?<!\bi\.e)(?<!\betc)(?<!\bvs)(?<!\bcf)"
                           r"([.!?;]+)(?=\s|$)|([。！？；]+)", re.IGNORECASE)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_SUGGESTION = re.compile(r"```+\s*suggestion\b", re.IGNORECASE)

_ADDITIVE = re.compile(  # a further request follows: at a sentence's start
    r"^\W*(?:(?:and\s+)?(?:also|additionally|in addition|besides|furthermore|moreover|plus|"
    r"another (?:thing|point|nit)|one more (?:thing|point|nit)|on top of that|separately|"
    r"secondly|second|lastly|finally)\b"
    r"|and\s+(?:please|also|then)\b"
    r"|(?:另外|此外|还有|并且|而且|同时|顺便|其次|再者|また|あと|それと|さらに|加えて|ついでに|それから|"
    r"그리고|또한|추가로|아울러|덧붙여|또)"
    r"|(?:также|кроме того|ещё|еще|и ещё|и еще|помимо этого|además|también|otra cosa|"
    r"além disso|também|outra coisa|außerdem|zusätzlich|ebenfalls|des weiteren|weiterhin|"
    r"aussi|également|de plus|en outre|par ailleurs|autre chose)\b)",
    re.IGNORECASE)
# "also" among a sentence's first words ("We also should add ...", "Please also use ...")
_ALSO_EARLY = re.compile(r"^\W*(?:\S+\s+){0,3}?(?:also|as well)\b", re.IGNORECASE)

_ASKS = re.compile(
    r"[?？]|\b(?:please|pls|should(?:n'?t)?|must|needs?(?: to)?|has to|have to|ought to|"
    r"can (?:you|we)|could (?:you|we)|would (?:you|it)|let'?s|how about|what about|why not|"
    r"consider|prefer|suggest|recommend|(?:would|'d) be (?:better|nicer|good|great|cleaner|"
    r"simpler|safer)|better to|i'?d (?:rather|prefer|suggest|use|go|keep|move|rename|avoid|"
    r"like)|don'?t|do not|no need|avoid|nit)\b"
    r"|请|需要|应该|应当|必须|建议|能否|不要|最好|ください|べき|必要|しないで|方がいい|ほうがいい|"
    r"ましょう|お願い|주세요|해야|필요|좋겠|좋을 것|어떨까|합시다|하세요|바랍니다|추천|"
    r"\b(?:нужно|надо|должн\w*|пожалуйста|стоит|лучше|давай\w*|следует|debería|hay que|"
    r"por favor|mejor|conviene|sugiero|podrías|deveria|precisa|melhor|sugiro|poderia|sollte|"
    r"muss|bitte|besser|könntest|devrait|faut|s'il (?:te|vous) pla[iî]t|mieux|pourrais|"
    r"merci de)\b",
    re.IGNORECASE)
# an English sentence that opens with a verb asks for it ("Rename this", "move the call up")
_IMPERATIVE = re.compile(
    r"^\W*(?:nit\W+)?(?:also\s+|and\s+|then\s+|just\s+|maybe\s+|perhaps\s+)?"
    r"(?:add|remove|delete|drop|rename|move|use|make|change|replace|extract|inline|keep|put|"
    r"fix|update|document|test|check|handle|call|return|throw|raise|split|merge|simplify|"
    r"revert|mark|set|pass|wrap|guard|validate|log|catch|close|import|export|declare|define|"
    r"introduce|refactor|reuse|convert|cast|sort|limit|bump|pin|upgrade|mention|describe|"
    r"explain|clarify|link|cover|assert|verify|ensure|swap|switch|apply|align|indent|format|"
    r"run|try|leave|get rid|turn|write|rewrite|reword|rephrase|lower|capitalize|initialize|"
    r"initialise|declare|expose|hide|cache|store|include|exclude|skip|specify|annotate|type|"
    r"squash|rebase|register|unregister|free|release|dispose|reset|clean|cleanup|stop|start|"
    r"combine|group|separate|reorder|normalize|normalise|escape|quote|unquote|trim|strip)\b",
    re.IGNORECASE)


@dataclass
class _Unit:
    text: str  # a sentence or list item, with the code blocks that follow it
    item: bool = False  # a list item
    lead_in: bool = False  # ends with ":" before a list: asks through the items it introduces
    listed: bool = False  # an item of a list whose items are requests (see ``_lead_asks``)
    opens: bool = True  # opens a paragraph (else it continues the sentence before it)
    code: list[str] = field(default_factory=list)  # code blocks that belong to it


def _blocks(body: str) -> list[tuple[str, str]]:
    """The body as ``("text", line)`` and ``("code", block)`` pieces, fences kept whole."""
    out: list[tuple[str, str]] = []
    lines = body.splitlines()
    i = 0
    while i < len(lines):
        opened = _FENCE_OPEN.match(lines[i])
        if opened:
            fence = opened.group(1)
            j = i + 1
            while j < len(lines) and not lines[j].strip().startswith(fence[:3]):
                j += 1
            out.append(("code", "\n".join(lines[i:j + 1])))
            i = j + 1
            continue
        out.append(("text", lines[i]))
        i += 1
    return out


def _sentences(text: str) -> list[str]:
    """A paragraph's sentences (inline code never cut)."""
    masked = _INLINE_CODE.sub(lambda m: "x" * len(m.group(0)), text)
    out, start = [], 0
    for m in _SENTENCE_END.finditer(masked):
        end = m.end()
        piece = text[start:end].strip()
        if piece:
            out.append(piece)
        start = end
    rest = text[start:].strip()
    if rest:
        out.append(rest)
    return out


def _units(body: str) -> list[_Unit]:
    """The comment's sentences and list items, each with the code blocks after it; quoted
    lines (``> ...``) and a code block before any words join the unit next to them."""
    units: list[_Unit] = []
    paragraph: list[str] = []
    item: list[str] | None = None

    def flush_paragraph():
        nonlocal paragraph
        text = " ".join(s.strip() for s in paragraph if s.strip())
        paragraph = []
        for i, sentence in enumerate(_sentences(text)):
            units.append(_Unit(sentence, opens=i == 0))

    def flush_item():
        nonlocal item
        if item is not None:
            text = " ".join(s.strip() for s in item if s.strip())
            units.append(_Unit(text, item=True))
        item = None

    def attach(block: str):
        if units:
            units[-1].code.append(block)
        else:  # a code block (a suggestion) before any words is a unit of its own
            units.append(_Unit("", code=[block]))

    for kind, piece in _blocks(body):
        if kind == "code":
            flush_item()
            flush_paragraph()
            attach(piece)
            continue
        if not piece.strip():
            flush_item()
            flush_paragraph()
            continue
        if _QUOTE_LINE.match(piece):  # a quote is context: it goes with the unit before it
            flush_item()
            flush_paragraph()
            attach(piece)
            continue
        if _ITEM.match(piece):
            flush_item()
            flush_paragraph()
            item = [_ITEM.sub("", piece, count=1)]
            continue
        if item is not None and piece[:1].isspace():
            item.append(piece)  # an item's continuation line
            continue
        flush_item()
        paragraph.append(piece)
    flush_item()
    flush_paragraph()
    for unit, after in zip(units, units[1:] + [None]):  # "Please fix these:" and a list
        unit.lead_in = unit.text.rstrip().endswith(":") and not unit.code and \
            after is not None and after.item
    listed = True  # the items of a list under "This approach would:" describe, not ask
    for before, unit in zip([None, *units], units):
        if unit.item and (before is None or not before.item):
            listed = before is None or not before.lead_in or _lead_asks(before.text)
        unit.listed = unit.item and listed
    return units


_DESCRIBES = re.compile(r"\b(?:would|will|does|did|was|were|is|are|has|had|can)\b", re.IGNORECASE)
_EITHER = re.compile(r"\b(?:either|one of|entweder|soit|o bien|ou bien)\b|任选|どちらか|둘 중",
                     re.IGNORECASE)


def _lead_asks(text: str) -> bool:
    """Whether a list's lead-in makes its items requests: it asks ("Please:", "Consider:"),
    or it is a short label that describes nothing ("A few things:", "Nits:"); not when it
    offers its items as alternatives ("Either:")."""
    if _EITHER.search(text):
        return False
    return asks(text) or (len(text.split()) <= 5 and not _DESCRIBES.search(text))


_CLAUSE = re.compile(r"[:;,—–]\s+|\s-\s")


def asks(text: str) -> bool:
    """Whether a sentence (or list item) asks for something: a question, a request or modal
    word, or an English imperative opening one of its clauses ("... here: guard it")."""
    return bool(_ASKS.search(text)) or any(_IMPERATIVE.match(c) for c in _CLAUSE.split(text))


def _asks(unit: _Unit) -> bool:
    if unit.lead_in:
        return False  # "Please fix these:" asks through what follows it
    return asks(unit.text) or any(_SUGGESTION.match(c) for c in unit.code)


# one request offered two ways: "Verify X, OR" / "keep Y", "Alternatively, ..."
_OR_AFTER = re.compile(r"(?:\bor|\boder|\bou|\bили|或者|또는|または)\W*$", re.IGNORECASE)
_OR_BEFORE = re.compile(r"^\W*(?:or|otherwise|alternatively|instead|oder|alternativ|ou|sinon|"
                        r"или|либо|o bien|或者|或|또는|아니면|または|あるいは)(?!\w)", re.IGNORECASE)


def _alternative(before: _Unit | None, unit: _Unit) -> bool:
    return bool(_OR_BEFORE.match(unit.text)) or (
        before is not None and not before.code and bool(_OR_AFTER.search(before.text)))


def _additive(unit: _Unit) -> bool:
    return bool(_ADDITIVE.match(unit.text) or _ALSO_EARLY.match(unit.text))


def _render(units: list[_Unit]) -> str:
    """A request's units as Markdown again: sentences of one paragraph on one line, list
    items as items, code blocks on lines of their own."""
    out = ""
    listed = sum(u.item for u in units) > 1
    for unit in units:
        if unit.text:
            if unit.item and listed:
                out += ("\n" if out else "") + "- " + unit.text
            elif out and not unit.opens and not out.endswith("```"):
                out += " " + unit.text
            else:
                out += ("\n\n" if out else "") + unit.text
        for block in unit.code:
            out += ("\n" if out else "") + block
    return out.strip()


def split_requests(body: str | None) -> list[str]:
    """The requests of a reviewer's comment, each as the words (and code blocks) that make
    it; a comment that asks one thing is one request, its body unchanged."""
    text = (body or "").strip()
    if not text or len(text) > MAX_SPLIT_BODY:
        return [text]
    units = _units(text)
    asking = [_asks(u) for u in units]
    items = sum(1 for u, a in zip(units, asking) if u.listed and a)
    groups: list[list[_Unit]] = []
    group_asks = group_item = False  # the current group asks; it holds an item that asks
    for before, unit, ask in zip([None, *units], units, asking):
        starts = bool(groups) and ask and group_asks and len(groups) < MAX_REQUESTS and \
            not _alternative(before, unit) and (
            (unit.listed and items >= 2 and group_item) or (_additive(unit) and not unit.item))
        if not groups or starts:
            groups.append([unit])
            group_asks, group_item = ask, unit.listed and ask
            continue
        groups[-1].append(unit)
        group_asks = group_asks or ask
        group_item = group_item or (unit.listed and ask)
    if len(groups) < 2:
        return [text]
    return [_render(g) for g in groups]


_QUOTED_BLOCK = re.compile(r"^\s*(```+|~~~+)[^\n]*\n(.*?)^\s*\1", re.DOTALL | re.MULTILINE)
_LINE_REF = re.compile(r"(?:\blines?\s+|(?<![\w/])#?L)(\d{1,6})(?:\s*(?:-|–|to)\s*L?(\d{1,6}))?\b",
                       re.IGNORECASE)
MAX_PLACE_FILES = 20  # files besides the commented one a request's quoted code is looked for in


@dataclass(frozen=True)
class Place:
    """Where one request of a comment points, when not at the comment's own lines."""

    path: str
    line_start: int
    line_end: int


def own_place(request: str, path: str | None, files: Mapping[str, str | None]) -> Place | None:
    """The lines a request names, when they are its own: code it quotes in a block (not a
    suggestion) that stands in the commented file, else in one other file of the PR; else
    lines it names by number ("line 42", "L40-L45") in the commented file. None when it
    names neither: the request stays on the comment's lines."""
    for _, block in _QUOTED_BLOCK.findall(request):
        if not distinctive(block):
            continue
        others = sorted(p for p in files if p != path)[:MAX_PLACE_FILES]
        for candidate in ([path] if path in files else []) + others:
            found = find_code(files.get(candidate), block)
            if found:
                return Place(candidate, *found)
    if path is None:
        return None
    prose = re.sub(r"```.*?```", " ", request, flags=re.DOTALL)
    match = _LINE_REF.search(re.sub(r"\S*://\S+", " ", prose))  # not a link's #L anchors
    if match is None:
        return None
    start = int(match.group(1))
    end = int(match.group(2) or start)
    size = len(file_lines(files[path])) if files.get(path) is not None else None
    if start < 1 or end < start or (size is not None and end > size):
        return None
    return Place(path, start, end)


def quoted_code(body: str | None) -> list[str]:
    """The code blocks (not suggestions) the requests of a comment that asks for several
    things quote, specific enough to look for (``own_place`` looks for them in the PR's
    files)."""
    requests = split_requests(body)
    if len(requests) < 2:
        return []
    return [block for request in requests for _, block in _QUOTED_BLOCK.findall(request)
            if distinctive(block)]


def wants_files(body: str | None) -> bool:
    """Whether a comment asks for several things and one of them quotes code or names lines:
    only then does taking it need the commented file's text (``own_place``)."""
    requests = split_requests(body)
    return len(requests) > 1 and any(_QUOTED_BLOCK.search(r) or _LINE_REF.search(r)
                                     for r in requests)
