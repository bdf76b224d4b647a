"""Where a remark on the whole pull request points: a file and line it names, links to or quotes.

A remark left on the conversation, not on a line, is often about a place all the same: "in
`src/quota.js` line 12 ...", a link to ``.../blob/<sha>/src/quota.js#L12``, the output of a
failing check (``src/quota.js:12:5: error ...``), or a piece of code quoted in backticks that
stands in one place of the PR. Read by structure (paths of the PR's files, line numbers,
links, quoted code), not by vocabulary, so it holds in any language a remark is written in.

``locate(body, texts)`` returns the places, most specific first; ``texts`` maps the PR's
files (as they stood when the remark was made) to their text. Nothing here does I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .anchors import normalise
from .scope import tokens

MAX_BODY = 20_000
MAX_PLACES = 5
MAX_LINE = 1_000_000
_LINK = re.compile(r"/blob/[^/\s]+/([^\s#?)\]]+)#L(\d{1,7})(?:-L(\d{1,7}))?")
_PATH_LINE = re.compile(r"(?<![\w.-])(/?(?:[\w.-]+/)*[\w.-]+\.[A-Za-z0-9]{1,8})"
                        r"(?::|#L|,? line |\s*\(line )(\d{1,7})")
_PATH = re.compile(r"(?<![\w.-])(/?(?:[\w.-]+/)*[\w.-]+\.[A-Za-z0-9]{1,8})(?![\w/])")
_URL = re.compile(r"\b(?:https?://|www\.)\S+", re.IGNORECASE)
_BACKTICKS = re.compile(r"`([^`\n]{1,200})`")
MIN_QUOTED_TOKENS = 3  # a quoted span this long (in tokens) is code, not a name


@dataclass(frozen=True)
class Place:
    """A file of the PR a remark points at, with the lines when it names them."""

    path: str
    start: int | None = None
    end: int | None = None
    how: str = "names"  # "links to", "names", "quotes"

    def __str__(self) -> str:
        if self.start is None:
            return self.path
        return f"{self.path}:{self.start}" + (f"-{self.end}" if self.end != self.start else "")


def _resolve(mention: str, paths: list[str]) -> str | None:
    """The one PR file a mentioned path means: itself, the only file ending with it (a bare
    file name), or the longest file it ends with (a CI runner's absolute path,
    ``/home/runner/work/repo/repo/src/a.py``)."""
    mention = mention.lstrip("./")
    if mention in paths:
        return mention
    hits = [p for p in paths if p.endswith("/" + mention)]
    if len(hits) == 1:
        return hits[0]
    inside = [p for p in paths if mention.endswith("/" + p)]
    return max(inside, key=len) if inside else None


def _line_fits(texts: dict[str, str | None], path: str, line: int) -> bool:
    text = texts.get(path)
    return text is not None and 1 <= line <= min(text.count("\n") + 1, MAX_LINE)


def locate(body: str | None, texts: dict[str, str | None]) -> list[Place]:
    """The places of the PR a remark points at, most specific first (links and path:line,
    then quoted code found in exactly one place, then files named without a line)."""
    body = (body or "")[:MAX_BODY]
    paths = sorted(p for p, t in texts.items() if t is not None)
    out: list[Place] = []

    def add(place: Place) -> None:
        known = {(p.path, p.start, p.end) for p in out}
        if (place.path, place.start, place.end) not in known and len(out) < MAX_PLACES:
            out.append(place)

    for m in _LINK.finditer(body):
        path = _resolve(m.group(1), paths)
        start = int(m.group(2))
        end = int(m.group(3) or start)
        if path and start <= end and _line_fits(texts, path, end):
            add(Place(path, start, end, "links to"))
    body = _URL.sub(" ", body)  # a link's path is read above, as a link, or not at all
    for m in _PATH_LINE.finditer(body):
        path, line = _resolve(m.group(1), paths), int(m.group(2))
        if path and _line_fits(texts, path, line):
            add(Place(path, line, line, "names"))
    for span in _BACKTICKS.findall(body):
        if len(tokens(span)) < MIN_QUOTED_TOKENS:
            continue
        where = _only_place(span, texts, paths)
        if where is not None:
            add(Place(where[0], where[1], where[1], "quotes"))
    for m in _PATH.finditer(body):
        path = _resolve(m.group(1), paths)
        if path and all(p.path != path for p in out):
            add(Place(path, None, None, "names"))
    return out


def _only_place(span: str, texts: dict[str, str | None], paths: list[str]):
    """(path, line) of the one line of the PR's files holding the quoted code (as a part of
    the line, whitespace aside); None when it stands nowhere or in more than one place."""
    wanted = " ".join(normalise(span))
    if not wanted:
        return None
    found = None
    for path in paths:
        for number, line in enumerate((texts[path] or "").split("\n"), 1):
            if wanted in " ".join(line.split()):
                if found is not None:
                    return None
                found = (path, number)
    return found
