"""Repository context for the LLM reviewer: the code a change needs to be understood.

AACR-Bench found that what a reviewer needs is often outside the diff (in the same file or
elsewhere in the repository), and that models given only the diff locate problems poorly. This
module picks that code, without any I/O beyond reading the repository's files and without a
model:

1. the enclosing function or class of every changed hunk (in full when it fits);
2. definitions of the symbols the changed lines use, anywhere in the repository;
3. callers of the functions the change touches;
4. the tests that exercise the changed code.

Definitions come from a ``SymbolIndex`` built once per head with tree-sitter (the queries
below; a pattern a grammar does not know is skipped) and cached as JSON by the caller's key.
``build_sections`` returns candidate ``Section``s in that priority order, each saying where it
comes from (path, lines, why); ``fit`` keeps what a token budget allows. Rendering them into a
prompt is the caller's business (``bot.review.prompt_context``).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from functools import cache
from pathlib import Path, PurePosixPath

from tracker.lines import split_lines
from tracker.paths import is_generated_path, is_test_path

EXTENSIONS = {
    ".py": "python", ".java": "java", ".js": "javascript", ".jsx": "javascript",
    ".mjs": "javascript", ".cjs": "javascript", ".ts": "typescript", ".mts": "typescript",
    ".cts": "typescript", ".tsx": "tsx", ".cs": "csharp", ".c": "c", ".h": "c", ".cc": "cpp",
    ".cpp": "cpp", ".cxx": "cpp", ".hpp": "cpp", ".hh": "cpp", ".go": "go", ".rs": "rust",
    ".php": "php", ".rb": "ruby", ".kt": "kotlin", ".kts": "kotlin",
}
SKIP_DIRS = {".git", ".hg", ".svn", "node_modules", "vendor", "third_party", "dist", "build",
             "target", ".venv", "venv", "__pycache__", ".tox", ".idea", ".vscode", "out"}
MAX_FILE_BYTES = 400_000
INDEX_VERSION = 1

# Definition patterns: @name is the defined identifier, @def the whole definition.
_JS = [
    "(function_declaration name: (identifier) @name) @def",
    "(generator_function_declaration name: (identifier) @name) @def",
    "(method_definition name: (property_identifier) @name) @def",
    "(variable_declarator name: (identifier) @name value: (arrow_function)) @def",
    "(variable_declarator name: (identifier) @name value: (function_expression)) @def",
]
_TS = _JS + [
    "(class_declaration name: (type_identifier) @name) @def",
    "(abstract_class_declaration name: (type_identifier) @name) @def",
    "(interface_declaration name: (type_identifier) @name) @def",
    "(type_alias_declaration name: (type_identifier) @name) @def",
    "(enum_declaration name: (identifier) @name) @def",
    "(function_signature name: (identifier) @name) @def",
]
_C = [
    "(function_definition declarator: (function_declarator declarator: (identifier) @name)) @def",
    ("(function_definition declarator: (pointer_declarator declarator: (function_declarator "
    "declarator: (identifier) @name))) @def"),
    "(struct_specifier name: (type_identifier) @name body: (_)) @def",
    "(enum_specifier name: (type_identifier) @name body: (_)) @def",
    "(type_definition declarator: (type_identifier) @name) @def",
    "(preproc_function_def name: (identifier) @name) @def",
    "(preproc_def name: (identifier) @name) @def",
]
DEFINITIONS = {
    "python": ["(function_definition name: (identifier) @name) @def",
               "(class_definition name: (identifier) @name) @def"],
    "java": [f"({kind} name: (identifier) @name) @def" for kind in (
        "class_declaration", "interface_declaration", "enum_declaration", "record_declaration",
        "annotation_type_declaration", "method_declaration", "constructor_declaration")],
    "javascript": _JS + ["(class_declaration name: (identifier) @name) @def"],
    "typescript": _TS,
    "tsx": _TS,
    "csharp": [f"({kind} name: (identifier) @name) @def" for kind in (
        "class_declaration", "interface_declaration", "struct_declaration", "enum_declaration",
        "record_declaration", "method_declaration", "constructor_declaration",
        "property_declaration", "delegate_declaration")],
    "c": _C,
    "cpp": _C + [
        ("(function_definition declarator: (function_declarator declarator: "
        "(qualified_identifier name: (identifier) @name))) @def"),
        ("(function_definition declarator: (function_declarator declarator: "
        "(field_identifier) @name)) @def"),
        "(class_specifier name: (type_identifier) @name body: (_)) @def",
    ],
    "go": ["(function_declaration name: (identifier) @name) @def",
           "(method_declaration name: (field_identifier) @name) @def",
           "(type_spec name: (type_identifier) @name) @def"],
    "rust": [f"({kind} name: ({ident}) @name) @def" for kind, ident in (
        ("function_item", "identifier"), ("function_signature_item", "identifier"),
        ("struct_item", "type_identifier"), ("enum_item", "type_identifier"),
        ("trait_item", "type_identifier"), ("type_item", "type_identifier"),
        ("mod_item", "identifier"), ("macro_definition", "identifier"))],
    "php": [f"({kind} name: (name) @name) @def" for kind in (
        "function_definition", "method_declaration", "class_declaration",
        "interface_declaration", "trait_declaration", "enum_declaration")],
    "ruby": ["(method name: (identifier) @name) @def",
             "(singleton_method name: (identifier) @name) @def",
             "(class name: (constant) @name) @def", "(module name: (constant) @name) @def"],
    "kotlin": ["(function_declaration (simple_identifier) @name) @def",
               "(class_declaration (type_identifier) @name) @def",
               "(object_declaration (type_identifier) @name) @def"],
}
IDENTIFIER_TYPES = ("identifier", "type_identifier", "field_identifier", "property_identifier",
                    "simple_identifier", "constant", "name")
FUNCTION_WORDS = ("function", "method", "constructor", "func", "macro")


def language_of(path: str) -> str | None:
    """The tree-sitter language of a path by its extension (None: not indexed)."""
    return EXTENSIONS.get(PurePosixPath(path).suffix.lower())


@cache
def _parser(language: str):
    from tree_sitter_language_pack import get_parser

    return get_parser(language)


@cache
def _queries(language: str, kind: str) -> tuple:
    """Compiled queries for ``kind`` (``def`` or ``ident``); patterns a grammar rejects are
    left out, so one grammar's renamed node type costs only that pattern."""
    import tree_sitter as ts
    from tree_sitter_language_pack import get_language

    lang = get_language(language)
    patterns = DEFINITIONS.get(language, []) if kind == "def" else \
        [f"({t}) @id" for t in IDENTIFIER_TYPES]
    out = []
    for pattern in patterns:
        try:
            out.append(ts.QueryCursor(ts.Query(lang, pattern)))
        except Exception:  # noqa: BLE001, S112 - QueryError or NameError, by tree-sitter version
            continue
    return tuple(out)


def _tree(language: str, text: str):
    return _parser(language).parse(text.encode("utf-8", "replace"))


# --------------------------------------------------------------------------- the repository


class RepoFiles:
    """The source files of a repository at one head: a folder, overlaid with known texts.

    ``overlay`` maps paths to their text at the head (None: deleted); it wins over the folder,
    so a checkout a little behind the head still shows the pull request's own files right.
    """

    def __init__(self, root: str | Path | None = None,
                 overlay: dict[str, str | None] | None = None):
        self.root = Path(root) if root else None
        self.overlay = dict(overlay or {})
        self._texts: dict[str, str | None] = {}
        self._paths: list[str] | None = None

    def paths(self) -> list[str]:
        """Every indexable source file (by extension; not vendored or generated), sorted."""
        if self._paths is None:
            found = set()
            if self.root is not None and self.root.is_dir():
                for folder, dirs, files in os.walk(self.root):
                    dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not d.startswith(".")]
                    rel = Path(folder).relative_to(self.root)
                    for name in files:
                        path = (rel / name).as_posix()
                        if language_of(path) and not is_generated_path(path):
                            found.add(path)
            found |= {p for p, t in self.overlay.items() if t is not None and language_of(p)}
            found -= {p for p, t in self.overlay.items() if t is None}
            self._paths = sorted(found)
        return self._paths

    def read(self, path: str) -> str | None:
        if path in self.overlay:
            return self.overlay[path]
        if path not in self._texts:
            self._texts[path] = self._read_file(path)
        return self._texts[path]

    def _read_file(self, path: str) -> str | None:
        if self.root is None:
            return None
        target = self.root / path
        try:
            if target.stat().st_size > MAX_FILE_BYTES:
                return None
            return target.read_bytes().decode("utf-8", "replace")
        except OSError:
            return None


# --------------------------------------------------------------------------- the symbol index


@dataclass(frozen=True)
class Definition:
    """A named definition: 1-based inclusive lines, and the tree-sitter node type."""

    name: str
    path: str
    start: int
    end: int
    kind: str

    @property
    def is_function(self) -> bool:
        return any(word in self.kind for word in FUNCTION_WORDS)


def definitions_in(path: str, text: str) -> list[Definition]:
    """Every definition tree-sitter finds in one file, in source order."""
    language = language_of(path)
    if language is None or not text:
        return []
    root = _tree(language, text).root_node
    out = set()
    for cursor in _queries(language, "def"):
        for _, captures in cursor.matches(root):
            names, nodes = captures.get("name"), captures.get("def")
            if not names or not nodes:
                continue
            name = names[0].text.decode("utf-8", "replace")
            node = nodes[0]
            out.add(Definition(name, path, node.start_point[0] + 1, node.end_point[0] + 1,
                               node.type))
    return sorted(out, key=lambda d: (d.start, -d.end, d.name))


def identifiers_on(path: str, text: str, lines: set[int]) -> list[tuple[str, int]]:
    """(identifier, line) for every identifier on ``lines`` of a file, in source order."""
    language = language_of(path)
    if language is None or not text or not lines:
        return []
    root = _tree(language, text).root_node
    out = set()
    for cursor in _queries(language, "ident"):
        lo, hi = min(lines), max(lines)
        cursor.set_point_range((lo - 1, 0), (hi, 0))
        for node in cursor.captures(root).get("id", []):
            line = node.start_point[0] + 1
            if line in lines:
                out.add((node.start_point, node.text.decode("utf-8", "replace"), line))
    return [(name, line) for _, name, line in sorted(out)]


@dataclass
class SymbolIndex:
    """Definitions of a repository at one head, by name and by file."""

    definitions: dict[str, list[Definition]] = field(default_factory=dict)
    by_file: dict[str, list[Definition]] = field(default_factory=dict)

    @classmethod
    def build(cls, repo: RepoFiles) -> SymbolIndex:
        index = cls()
        for path in repo.paths():
            text = repo.read(path)
            if text:
                index.add(definitions_in(path, text))
        return index

    def add(self, definitions: Iterable[Definition]) -> None:
        for d in definitions:
            self.definitions.setdefault(d.name, []).append(d)
            self.by_file.setdefault(d.path, []).append(d)

    def enclosing(self, path: str, start: int, end: int) -> Definition | None:
        """The smallest definition in ``path`` holding lines start..end, functions first."""
        holding = [d for d in self.by_file.get(path, []) if d.start <= start and end <= d.end]
        if not holding:
            return None
        return min(holding, key=lambda d: (not d.is_function, d.end - d.start))

    def to_json(self) -> str:
        rows = [asdict(d) for defs in self.by_file.values() for d in defs]
        return json.dumps({"version": INDEX_VERSION, "definitions": rows})

    @classmethod
    def from_json(cls, text: str) -> SymbolIndex:
        data = json.loads(text)
        if data.get("version") != INDEX_VERSION:
            raise ValueError("index of another version")
        index = cls()
        index.add(Definition(**row) for row in data["definitions"])
        return index

    @classmethod
    def cached(cls, repo: RepoFiles, cache_file: str | Path | None) -> SymbolIndex:
        """The index from ``cache_file`` when it holds one, else built (and saved there)."""
        path = Path(cache_file) if cache_file else None
        if path is not None and path.is_file():
            try:
                return cls.from_json(path.read_text(encoding="utf-8"))
            except (OSError, ValueError, KeyError, TypeError):
                pass  # a stale or broken cache is rebuilt
        index = cls.build(repo)
        if path is not None:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp = path.with_suffix(".tmp")
                tmp.write_text(index.to_json(), encoding="utf-8")
                tmp.replace(path)
            except OSError:
                pass  # no cache this time; the index itself is fine
        return index


# --------------------------------------------------------------------------- sections


@dataclass
class ChangedFile:
    """A file of the change: its hunks' new-side line ranges and the lines they add."""

    path: str
    hunks: list[tuple[int, int]]
    added: set[int] = field(default_factory=set)


@dataclass
class Section:
    """A piece of repository code for the prompt, with where it comes from.

    ``ranges`` are the line ranges it may show, largest first (the whole definition, then a
    smaller cut); ``fit`` takes the first that the budget allows.
    """

    kind: str  # enclosing | definition | caller | test
    path: str
    ranges: list[tuple[int, int]]
    why: str
    symbol: str | None = None

    @property
    def start(self) -> int:
        return self.ranges[0][0]

    @property
    def end(self) -> int:
        return self.ranges[0][1]


WINDOW = 15  # lines either side of a hunk when it has no enclosing definition
HEAD_LINES = 40  # a definition too long to show whole shows its first lines
MAX_DEFS_PER_NAME = 2
MAX_CALLERS = 3
MAX_TESTS = 2
MAX_SYMBOLS = 40  # names looked up per changed file
MAX_WHOLE_LINES = 60  # callers and tests longer than this show the lines around the use
MIN_NAME = 3  # shorter identifiers are loop variables and receivers, not symbols to look up
MAX_HOMONYMS = 6  # a name defined more often than this is too generic to look up (Run, get)


def _cut(start: int, end: int, focus: tuple[int, int] | None = None) -> list[tuple[int, int]]:
    """The whole range, then smaller cuts: its head, or a window around ``focus``."""
    out = [(start, end)]
    if focus is not None:
        lo, hi = max(start, focus[0] - WINDOW), min(end, focus[1] + WINDOW)
        if (lo, hi) != (start, end):
            out.append((lo, hi))
    elif end - start + 1 > HEAD_LINES:
        out.append((start, start + HEAD_LINES - 1))
    return out


def _distance(a: str, b: str) -> int:
    pa, pb = PurePosixPath(a).parts, PurePosixPath(b).parts
    common = 0
    for x, y in zip(pa, pb, strict=False):
        if x != y:
            break
        common += 1
    return len(pa) + len(pb) - 2 * common


def _covered(sections: list[Section], path: str, start: int, end: int) -> bool:
    return any(s.path == path and s.start <= start and end <= s.end for s in sections)


def build_sections(changes: list[ChangedFile], repo: RepoFiles,
                   index: SymbolIndex) -> list[Section]:
    """Candidate context for ``changes`` in priority order (see the module docstring)."""
    sections: list[Section] = []
    changed_defs: list[Definition] = []
    for cf in changes:
        for start, end in cf.hunks:
            touched = sorted(ln for ln in cf.added if start <= ln <= end) or [start, end]
            lo, hi = touched[0], touched[-1]
            d = index.enclosing(cf.path, lo, hi)
            if d is not None:
                if d.is_function and d not in changed_defs:
                    changed_defs.append(d)
                if not _covered(sections, cf.path, d.start, d.end):
                    sections.append(Section("enclosing", cf.path, _cut(d.start, d.end, (lo, hi)),
                                            f"enclosing {d.kind} {d.name} of the change at "
                                            f"lines {lo}-{hi}", d.name))
            elif not _covered(sections, cf.path, lo, hi):
                sections.append(Section("enclosing", cf.path,
                                        [(max(1, lo - WINDOW), hi + WINDOW)],
                                        f"code around the change at lines {lo}-{hi}"))
        for d in index.by_file.get(cf.path, []):  # definitions the change adds or edits
            if d.is_function and d not in changed_defs and any(
                    d.start <= ln <= d.end for ln in cf.added):
                changed_defs.append(d)
    sections += _definitions(changes, repo, index, sections)
    sections += _callers(changed_defs, repo, index, sections)
    sections += _tests(changes, changed_defs, repo, index, sections)
    return sections


def _related(d: Definition, path: str, text: str) -> bool:
    """Whether a definition plausibly is the one ``path`` means: same file or folder, or its
    file's name appears in the text as a word (an import, a type, a module)."""
    if d.path == path or PurePosixPath(d.path).parent == PurePosixPath(path).parent:
        return True
    stem = PurePosixPath(d.path).stem
    return len(stem) >= MIN_NAME and re.search(rf"\b{re.escape(stem)}\b", text) is not None


def _definitions(changes: list[ChangedFile], repo: RepoFiles, index: SymbolIndex,
                 taken: list[Section]) -> list[Section]:
    """Definitions of the names the changed lines use, file by file in turn; then of the names
    on the hunks' unchanged lines (what the change sits among). A name defined once in the
    repository is taken as is; one defined more often only where it is related to the
    changed file (``_related``), and not at all past ``MAX_HOMONYMS`` files."""
    seen: set[str] = set()
    out: list[Section] = []
    for tier in ("added", "around"):
        per_file: list[list[Section]] = []
        for cf in changes:
            text = repo.read(cf.path) or ""
            lines = cf.added if tier == "added" else {
                n for lo, hi in cf.hunks for n in range(lo, hi + 1)} - cf.added
            per_file.append(_definitions_in_file(cf, text, lines, index, seen, taken + out))
        for i in range(max((len(f) for f in per_file), default=0)):  # each file in turn
            out += [f[i] for f in per_file if i < len(f) and not _covered(
                out, f[i].path, f[i].start, f[i].end)]
    return out


def _definitions_in_file(cf: ChangedFile, text: str, lines: set[int], index: SymbolIndex,
                         seen: set[str], taken: list[Section]) -> list[Section]:
    out: list[Section] = []
    names = 0
    for name, line in identifiers_on(cf.path, text, lines):
        if name in seen or len(name) < MIN_NAME or names >= MAX_SYMBOLS:
            continue
        seen.add(name)
        defs = [d for d in index.definitions.get(name, [])
                if not (d.path == cf.path and d.start <= line <= d.end)]
        if any(d.kind != "preproc_def" for d in defs):  # C: a rename macro beside the real one
            defs = [d for d in defs if d.kind != "preproc_def"]
        if not defs or len({d.path for d in defs}) > MAX_HOMONYMS:
            continue
        if len(defs) > 1:
            defs = [d for d in defs if _related(d, cf.path, text)]
        defs.sort(key=lambda d: ("constructor" in d.kind, _distance(d.path, cf.path),
                                 d.path, d.start))
        names += bool(defs)
        for d in defs[:MAX_DEFS_PER_NAME]:
            if not _covered(taken + out, d.path, d.start, d.end):
                out.append(Section("definition", d.path, _cut(d.start, d.end),
                                   f"definition of {name} ({d.kind}), used at "
                                   f"{cf.path}:{line}", name))
    return out


def _mentions(repo: RepoFiles, name: str, call: bool,
              paths: list[str] | None = None) -> Iterable[tuple[str, int]]:
    """(path, line) of every line naming ``name`` (followed by "(" when ``call``)."""
    pattern = re.compile(rf"\b{re.escape(name)}\b" + (r"\s*\(" if call else ""))
    for path in repo.paths() if paths is None else paths:
        text = repo.read(path)
        if not text or name not in text:
            continue
        for n, line in enumerate(split_lines(text), start=1):
            if pattern.search(line):
                yield path, n


def _around(index: SymbolIndex, path: str, line: int) -> tuple[list[tuple[int, int]], str]:
    d = index.enclosing(path, line, line)
    if d is None:
        return [(max(1, line - 5), line + 5)], f"line {line}"
    ranges = _cut(d.start, d.end, (line, line))
    if d.end - d.start + 1 > MAX_WHOLE_LINES:  # a long caller: the lines around the call
        ranges = ranges[-1:]
    return ranges, f"{d.kind} {d.name}"


def _callers(changed: list[Definition], repo: RepoFiles, index: SymbolIndex,
             taken: list[Section]) -> list[Section]:
    out: list[Section] = []
    for d in changed:
        found = 0
        for path, line in _mentions(repo, d.name, call=True):
            if found >= MAX_CALLERS:
                break
            if (path == d.path and d.start <= line <= d.end) or is_test_path(path):
                continue
            if _covered(taken + out, path, line, line):
                continue
            ranges, where = _around(index, path, line)
            out.append(Section("caller", path, ranges,
                               f"caller of {d.name}: {where} calls it at line {line}", d.name))
            found += 1
    return out


def _tests(changes: list[ChangedFile], changed: list[Definition], repo: RepoFiles,
           index: SymbolIndex, taken: list[Section]) -> list[Section]:
    """Test code that names a changed function, from test files named after a changed
    file first (``foo_test.go``, ``test_foo.py``, ``FooTest.java`` for ``foo``)."""
    out: list[Section] = []
    stems = {PurePosixPath(cf.path).stem.lower() for cf in changes
             if not is_test_path(cf.path)}
    in_change = {cf.path for cf in changes}
    tests = [p for p in repo.paths() if is_test_path(p) and p not in in_change]
    tests.sort(key=lambda p: not any(stem in PurePosixPath(p).name.lower() for stem in stems))
    for name in dict.fromkeys(d.name for d in changed if len(d.name) >= MIN_NAME):
        found = 0
        for path, line in _mentions(repo, name, call=True, paths=tests):
            if found >= MAX_TESTS:
                break
            if _covered(taken + out, path, line, line):
                continue
            ranges, where = _around(index, path, line)
            out.append(Section("test", path, ranges,
                               f"test exercising {name}: {where}, line {line}", name))
            found += 1
    return out


def numbered(text: str | None, start: int, end: int) -> str:
    """Lines start..end of a text, each prefixed with its number as the diff blocks are."""
    lines = split_lines(text)
    return "\n".join(f"{n:>5} | {lines[n - 1]}"
                     for n in range(max(start, 1), min(end, len(lines)) + 1))


@dataclass
class Placed:
    """A section as it goes into the prompt: the chosen lines and their text."""

    section: Section
    start: int
    end: int
    text: str
    tokens: int


def fit(sections: list[Section], repo: RepoFiles, budget: int,
        count: Callable[[str], int], render: Callable[[Section, int, int, str], str]
        ) -> list[Placed]:
    """The sections that fit in ``budget`` tokens, in priority order.

    Breadth first: every section is first placed at its smallest cut while the budget
    allows (so one long class cannot starve the rest), then, in priority order, grown to its
    larger ranges (the whole definition) where the budget still allows it.
    """
    texts = {}
    chosen: dict[int, Placed] = {}
    used = 0

    def place(section: Section, start: int, end: int) -> Placed:
        if section.path not in texts:
            texts[section.path] = repo.read(section.path) or ""
        block = render(section, start, end, numbered(texts[section.path], start, end))
        return Placed(section, start, end, block, count(block))

    for i, section in enumerate(sections):
        if not repo.read(section.path):
            continue
        start, end = section.ranges[-1]
        candidate = place(section, start, end)
        if used + candidate.tokens <= budget:
            chosen[i] = candidate
            used += candidate.tokens
    for i, current in list(chosen.items()):
        for start, end in sections[i].ranges[:-1]:
            bigger = place(sections[i], start, end)
            if used - current.tokens + bigger.tokens <= budget:
                chosen[i] = bigger
                used += bigger.tokens - current.tokens
                break
    return [chosen[i] for i in sorted(chosen)]


def changed_files_from(diff_files: Iterable) -> list[ChangedFile]:
    """``ChangedFile``s from annotated diff files (objects with ``path`` and ``hunks`` whose
    ``rows`` are (new-side position, text) and ``added`` the new lines)."""
    out = []
    for fd in diff_files:
        hunks, added = [], set()
        for hunk in fd.hunks:
            positions = [pos for pos, _ in hunk.rows] or [1]
            hunks.append((min(positions), max(positions)))
            added |= set(hunk.added)
        out.append(ChangedFile(fd.path, hunks, added))
    return out
