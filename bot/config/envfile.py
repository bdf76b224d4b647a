"""The ``.env`` file ``roundwise setup`` writes and ``roundwise serve`` reads.

A small, strict dialect: ``NAME=value`` lines, ``#`` comments, an optional ``export`` prefix,
and values in single quotes (taken as they are) or double quotes (``\\n``, ``\\"`` and ``\\\\``
escapes), so a PEM key fits on one line. Variables already in the environment win over the
file, as with docker's and most shells' dotenv loaders. The file holds secrets: it is written
with mode 0600, and ``serve`` warns when it is readable by others.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Mapping, MutableMapping
from pathlib import Path

__all__ = ["EnvFileError", "load_env_file", "parse_env", "readable_by_others", "write_env"]

_LINE = re.compile(r"(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)")
_ESCAPES = {"n": "\n", '"': '"', "\\": "\\"}


class EnvFileError(ValueError):
    """A line of the file cannot be read; the message names the file and the line."""


def parse_env(text: str, source: str = ".env") -> dict[str, str]:
    out = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        match = _LINE.fullmatch(line)
        if not match:
            raise EnvFileError(f"{source}:{number}: expected NAME=value")
        name, value = match.groups()
        if value.startswith('"'):
            if len(value) < 2 or not value.endswith('"'):
                raise EnvFileError(f"{source}:{number}: {name}'s value has no closing quote")
            value = re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(0)),
                           value[1:-1])
        elif value.startswith("'"):
            if len(value) < 2 or not value.endswith("'"):
                raise EnvFileError(f"{source}:{number}: {name}'s value has no closing quote")
            value = value[1:-1]
        else:
            value = value.split(" #", 1)[0].strip()
        out[name] = value
    return out


_PLAIN = re.compile(r"[A-Za-z0-9_./:@+\[\]-]*")


def _quote(value: str) -> str:
    """Plain values stay bare (``docker run --env-file`` takes quotes literally)."""
    if _PLAIN.fullmatch(value):
        return value
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def write_env(path: str | Path, values: Mapping[str, str], header: str = "") -> Path:
    """Write ``values`` to ``path`` with mode 0600 (created so, never readable by others)."""
    path = Path(path)
    lines = [f"# {line}" for line in header.splitlines()]
    lines += [f"{name}={_quote(value)}" for name, value in values.items()]
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write("\n".join(lines) + "\n")
    os.chmod(path, 0o600)  # an existing file keeps its old mode through O_CREAT
    return path


def load_env_file(path: str | Path, environ: MutableMapping[str, str] | None = None,
                  *, required: bool = False) -> list[str]:
    """Set the file's variables that ``environ`` lacks; returns their names.

    A missing file is no error unless ``required``; an unreadable one always is.
    """
    environ = os.environ if environ is None else environ
    path = Path(path)
    if not path.exists():
        if required:
            raise EnvFileError(f"{path}: no such file")
        return []
    try:
        values = parse_env(path.read_text(), str(path))
    except OSError as exc:
        raise EnvFileError(f"{path} cannot be read ({exc.strerror})") from None
    added = [name for name in values if name not in environ]
    for name in added:
        environ[name] = values[name]
    return added


def readable_by_others(path: str | Path) -> bool:
    """Whether group or others may read ``path`` (a secrets file should be 0600)."""
    return bool(Path(path).stat().st_mode & (stat.S_IRGRP | stat.S_IROTH))
