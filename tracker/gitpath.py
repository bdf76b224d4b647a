"""Paths as git writes them in diff text, back to the names they are.

Git quotes a path with a byte outside printable ASCII, a double quote, a backslash or a control
character (``core.quotePath``, on by default): ``"b/src/\\303\\251t\\303\\251.py"``, with C
escapes (``\\t``, ``\\n``, ``\\"``, ``\\\\``...) and octal escapes for the bytes of the UTF-8
name. unidiff keeps that form, so every path read from a diff goes through ``unquote`` (or
``diff_path``, which also drops git's ``a/``/``b/``). Plain string work, no I/O.
"""

from __future__ import annotations

__all__ = ["diff_path", "file_path", "header_paths", "quote", "unquote"]

_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


_LETTERS = {v: k for k, v in _ESCAPES.items()}


def quote(name: str) -> str:
    """``name`` as git writes it in a diff (``a/`` or ``b/`` included when given): quoted,
    with C and octal escapes, when it holds a control character, a byte outside ASCII, a
    double quote or a backslash; else as it is."""
    data = name.encode("utf-8", errors="replace")
    if not any(b < 0x20 or b >= 0x7F or b in (34, 92) for b in data):
        return name
    out = []
    for b in data:
        if b in _LETTERS:
            out.append("\\" + _LETTERS[b])
        elif b < 0x20 or b >= 0x7F:
            out.append(f"\\{b:03o}")
        else:
            out.append(chr(b))
    return '"' + "".join(out) + '"'


def unquote(name: str) -> str:
    """``name`` unquoted when git quoted it (``"..."`` with C escapes), else as it is."""
    if len(name) < 2 or name[0] != '"' or name[-1] != '"':
        return name
    body, out, i = name[1:-1], bytearray(), 0
    while i < len(body):
        ch = body[i]
        if ch != "\\" or i + 1 == len(body):
            out += ch.encode("utf-8")
            i += 1
            continue
        nxt = body[i + 1]
        if i + 4 <= len(body) and all(c in "01234567" for c in body[i + 1:i + 4]):
            out.append(int(body[i + 1:i + 4], 8))
            i += 4
        elif nxt in _ESCAPES:
            out.append(_ESCAPES[nxt])
            i += 2
        else:  # not an escape git writes: keep it as written
            out += ("\\" + nxt).encode("utf-8")
            i += 2
    return out.decode("utf-8", errors="replace")


def diff_path(name: str | None) -> str | None:
    """A diff header's path (unidiff's ``source_file``/``target_file``) unquoted and without
    git's ``a/``/``b/`` prefix; None for ``/dev/null``."""
    if not name:
        return None
    name = unquote(name)
    if name in ("/dev/null", "dev/null"):
        return None
    return name[2:] if name[:2] in ("a/", "b/") else name


def file_path(patched) -> str:
    """A unidiff ``PatchedFile``'s path (its new name; the old one for a deleted file),
    unquoted: what unidiff's ``.path`` would be for a plain name."""
    return diff_path(patched.target_file) or diff_path(patched.source_file) or patched.path


def header_paths(line: str) -> tuple[str, str] | None:
    """The old and new paths of a ``diff --git a/X b/Y`` line, unquoted; None if it is not
    one. Unquoted names with spaces are split where the two halves name the same file (as
    git writes them unless renamed), else at the last `` b/``."""
    rest = line.removeprefix("diff --git ")
    if rest == line:
        return None
    names = []
    while rest and len(names) < 2:
        if rest[0] == '"':
            end = 1
            while end < len(rest) and rest[end] != '"':
                end += 2 if rest[end] == "\\" else 1
            names.append(rest[:end + 1])
            rest = rest[end + 1:].lstrip(" ")
        elif len(names) == 0 and rest[-1] == '"':
            cut = rest.rfind(' "')
            names.append(rest[:cut])
            rest = rest[cut + 1:]
        elif len(names) == 0:
            half = (len(rest) - 1) // 2
            if rest[half] == " " and rest[2:half] == rest[half + 3:]:
                names += [rest[:half], rest[half + 1:]]
            else:
                cut = rest.rfind(" b/")
                names += [rest[:cut], rest[cut + 1:]] if cut > 0 else [rest]
            rest = ""
        else:
            names.append(rest)
            rest = ""
    if len(names) != 2:
        return None
    old, new = diff_path(names[0]), diff_path(names[1])
    return (old, new) if old and new else None

