"""Code structure for the tracker: the function or class a defect sits in, and the tokens of code.

A reviewer's comment is about a construct, and the fix often lands a few lines away from the
line the comment was pinned to: further down the same function, in the class around it. The
rules look at that *scope*, found with a real parser (tree-sitter, through
tree-sitter-language-pack's bundled grammars), not at a fixed window of lines.

Everything here is pure: text in, line ranges and tokens out. Files in a language the parser
does not know, or that it cannot parse, simply have no scope, and the rules fall back to the
anchored lines.
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from functools import lru_cache
from pathlib import PurePosixPath

from .roundcache import per_text

MAX_PARSE_BYTES = 2_000_000  # larger files are not parsed: no scope, the anchor alone counts

_LANGUAGES = {
    ".py": "python", ".pyi": "python", ".java": "java", ".js": "javascript", ".mjs": "javascript",
    ".cjs": "javascript", ".jsx": "javascript", ".ts": "typescript", ".mts": "typescript",
    ".cts": "typescript", ".tsx": "tsx", ".cs": "csharp", ".c": "c", ".h": "c", ".cc": "cpp",
    ".cpp": "cpp", ".cxx": "cpp", ".hpp": "cpp", ".hh": "cpp", ".go": "go", ".rs": "rust",
    ".php": "php", ".rb": "ruby", ".kt": "kotlin", ".kts": "kotlin", ".scala": "scala",
    ".swift": "swift", ".dart": "dart", ".lua": "lua", ".sh": "bash", ".bash": "bash",
    ".pl": "perl", ".pm": "perl", ".jl": "julia", ".sol": "solidity",
}

# Node types that make a scope, across the grammars: functions first, then the types around them.
_FUNCTION = re.compile(
    r"^(function_definition|function_declaration|function_item|method_declaration|"
    r"method_definition|constructor_declaration|destructor_declaration|operator_declaration|"
    r"property_declaration|accessor_declaration|local_function_statement|"
    r"generator_function_declaration|arrow_function|function_expression|function|method|"
    r"singleton_method|func_literal|lambda_expression|secondary_constructor|"
    r"subroutine_declaration_statement|modifier_definition)$"
)
_TYPE = re.compile(
    r"^((class|interface|struct|enum|impl|trait|record|object|namespace|module|protocol|contract|"
    r"library)_"
    r"(definition|declaration|item|specifier)|class|module|object_declaration|type_spec|"
    r"type_alias_declaration|type_alias|type_item)$"
)

_TOKEN = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*+|\d[\w.]*+")
# the same tokens in an ASCII text (Unicode's \d and \w match no other ASCII), found faster
_ASCII_TOKEN = re.compile(_TOKEN.pattern, re.ASCII)


@lru_cache(maxsize=1024)
def language(path: str | None) -> str | None:
    """The tree-sitter grammar name for a path, from its extension (None when unknown)."""
    if not path:
        return None
    return _LANGUAGES.get(PurePosixPath(path).suffix.lower())


@lru_cache(maxsize=8)
def _parser(name: str):
    try:
        from tree_sitter_language_pack import get_parser
    except ImportError:  # pragma: no cover - a dependency, present in every install
        return None
    try:
        return get_parser(name)
    except Exception:  # noqa: BLE001 - a grammar missing from this build of the pack
        return None


@per_text(maxsize=64)
def _tree(name: str, text: str):
    parser = _parser(name)
    if parser is None or len(text) > MAX_PARSE_BYTES:
        return None
    return parser.parse(text.encode("utf-8", "replace"))


def enclosing(path: str | None, text: str | None, start: int, end: int | None = None,
              *, types_only: bool = False) -> tuple[int, int] | None:
    """The 1-based line range of the smallest function (else type) enclosing lines start..end;
    with ``types_only``, of the smallest class, struct, interface... around them.

    None when the language is unknown, the text does not parse, or the lines sit at top level.
    """
    name = language(path)
    if not name or not text:
        return None
    tree = _tree(name, text)
    if tree is None:
        return None
    lines = _split(text)
    end = end or start
    if start < 1 or end > len(lines):
        return None
    first = len(lines[start - 1]) - len(lines[start - 1].lstrip())
    node = tree.root_node.descendant_for_point_range(
        (start - 1, first), (end - 1, max(len(lines[end - 1].rstrip()) - 1, 0))
    )
    function = kind = None
    while node is not None:
        spans = node.end_point[0] > node.start_point[0]
        if function is None and spans and _FUNCTION.match(node.type):
            function = node
        if kind is None and _TYPE.match(node.type):
            kind = node
        node = node.parent
    best = kind if types_only else (function or kind)
    if best is None:
        return None
    return best.start_point[0] + 1, best.end_point[0] + 1


def definition(path: str | None, text: str | None, name: str) -> tuple[int, int] | None:
    """The line range of the first function or type named ``name`` defined in ``text``."""
    language_name = language(path)
    if not language_name or not text or not name:
        return None
    if name not in text and "?" not in name:
        return None  # a definition's name is in the text (unless it came back "?"-replaced)
    return _definitions(language_name, text).get(name)


@per_text(maxsize=64)
def _definitions(language_name: str, text: str) -> _Definitions:
    return _Definitions(_tree(language_name, text))


class _Definitions:
    """The functions and types of one text by name, in the order a depth-first walk of its
    tree meets them (the first of a name wins). The walk goes only as far as the names asked
    so far needed, and resumes from there: one walk per text, however many names."""

    def __init__(self, tree):
        self.found: dict[str, tuple[int, int]] = {}
        self.stack = [tree.root_node] if tree is not None else []
        self.lock = threading.Lock()  # shared between threads when cached outside a round

    def get(self, name: str) -> tuple[int, int] | None:
        with self.lock:
            while name not in self.found and self.stack:
                node = self.stack.pop()
                self.stack.extend(reversed(node.children))
                if _FUNCTION.match(node.type) or _TYPE.match(node.type):
                    named = _name_of(node)
                    if named and named not in self.found:
                        self.found[named] = (node.start_point[0] + 1, node.end_point[0] + 1)
            return self.found.get(name)


_HOLDERS = ("variable_declarator", "pair", "assignment_expression", "field_definition",
            "public_field_definition")
_NAME_NODES = ("simple_identifier", "type_identifier", "identifier")


def _name_of(node) -> str | None:
    """A definition's name: its ``name`` field, or at the end of C's declarator chain."""
    ident = node.child_by_field_name("name")
    holder = node.parent  # ``const f = () => {...}``: the name is the declarator's
    if ident is None and holder is not None and holder.type in _HOLDERS:
        ident = next(filter(None, (holder.child_by_field_name(f)
                                   for f in ("name", "key", "property", "left"))), None)
        if ident is not None and ident.type == "member_expression":  # ``obj.run = () => ...``
            ident = ident.child_by_field_name("property")
    seen = 0
    while ident is None and seen < 8:
        declarator = (node.child_by_field_name("declarator") if node is not None else None)
        if declarator is None:
            break
        if declarator.type in ("identifier", "field_identifier"):
            ident = declarator
        elif declarator.type == "qualified_identifier":  # C++: ``int Cart::total()``
            ident = declarator.child_by_field_name("name")
        node, seen = declarator, seen + 1
    if ident is None and node is not None:  # grammars without a name field (Kotlin)
        ident = next((c for c in node.children if c.type in _NAME_NODES), None)
    if ident is None or not ident.text:
        return None
    return ident.text.decode("utf-8", "replace")


def tokens(text: str | None) -> Counter:
    """How often each identifier or literal word occurs in a piece of code."""
    return Counter(_findall(text or ""))


def token_set(text: str | None) -> set[str]:
    """The distinct identifiers and literal words of a piece of code (``tokens``' keys)."""
    return set(_findall(text or ""))


def _findall(text: str) -> list[str]:
    return (_ASCII_TOKEN if text.isascii() else _TOKEN).findall(text)


@per_text(maxsize=64)
def file_tokens(text: str | None) -> Counter:
    """``tokens`` of a whole file, counted once for all the defects in it: do not change it."""
    return tokens(text)


def lines_of(text: str | None, start: int, end: int) -> str:
    """Lines start..end (1-based, inclusive) of a text, joined."""
    if not text:
        return ""
    return "\n".join(_split(text)[max(start - 1, 0) : max(end, 0)])


@per_text(maxsize=64)
def _split(text: str) -> tuple[str, ...]:
    """A file's text split at newlines, once however many defects read it."""
    return tuple(text.split("\n"))
