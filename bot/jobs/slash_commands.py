"""``/roundwise`` commands in PR comments: parsing only; the server carries them out."""

from __future__ import annotations

import re
from dataclasses import dataclass

from tracker.keys import canonical

_COMMAND = re.compile(r"^\s*/roundwise\b[ \t]*(.*)$", re.MULTILINE | re.IGNORECASE)
_KEY = re.compile(r"^D\d+[a-z]?$", re.IGNORECASE)  # D3, or D3b: one request of a comment
_KIND = re.compile(r"^[A-Za-z0-9][A-Za-z0-9:._-]{0,63}$")  # debug-print, ruff:F401, E.1.1
NEEDS_WRITE = {"resolve", "ignore", "unmute"}


@dataclass
class Command:
    name: str  # review, status, resolve, ignore, unmute, help, or unknown
    key: str | None = None  # a defect's key, or for unmute a kind of finding
    raw: str = ""
    error: str | None = None


def parse_command(body: str | None) -> Command | None:
    """The first ``/roundwise ...`` line of a comment, or None when there is none."""
    match = _COMMAND.search(body or "")
    if match is None:
        return None
    words = match.group(1).split()
    raw = match.group(0).strip()
    if not words:
        return Command("help", raw=raw)
    name = words[0].lower()
    if name in ("review", "status", "help"):
        return Command(name, raw=raw)
    if name == "unmute":  # the key is a kind of finding, as the summary names it
        if len(words) < 2 or not _KIND.match(words[1].strip("`")):
            return Command(name, raw=raw, error="`/roundwise unmute` needs a kind of finding, "
                                                 "e.g. `/roundwise unmute debug-print`")
        return Command(name, key=words[1].strip("`"), raw=raw)
    if name in NEEDS_WRITE:
        if len(words) < 2 or not _KEY.match(words[1]):
            return Command(name, raw=raw, error=f"`/roundwise {name}` needs a defect id, "
                                                 f"e.g. `/roundwise {name} D3`")
        return Command(name, key=canonical(words[1]), raw=raw)
    return Command("unknown", raw=raw, error=f"unknown command `{name[:40]}`")
