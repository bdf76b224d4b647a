"""How GitLab things are named in the host-neutral ledger and queue.

One ledger serves both hosts, so a GitLab merge request's identity carries its host: its
``repo`` is ``gitlab:<project path>`` (``:`` is in no GitHub owner or name, so a GitHub
``group/project`` #5 and a GitLab ``group/project`` !5 never meet), and the ledger's
``pull_requests.host`` column says ``gitlab`` for it (a generated column, see the migrations).
The job's ``installation_id`` holds the numeric project id, which survives renames.

Note ids are GitLab's plus ``NOTE_BASE`` (2**52): GitHub's comment ids and GitLab's note ids
are both plain integers, and the ledger keys comments by id, so the two hosts' ids are kept in
disjoint ranges (order kept, still exact in JSON).
"""

from __future__ import annotations

import re

__all__ = ["HOST", "NOTE_BASE", "REPO_PREFIX", "from_note", "is_gitlab", "project_path",
           "repo_key", "to_note", "valid_project_path"]

HOST = "gitlab"
REPO_PREFIX = "gitlab:"
NOTE_BASE = 1 << 52

# GitLab's path characters: letters, digits, "_", "-", "." (no leading "-" or ".", never
# ending in ".git" or ".atom"), groups nested up to 20 deep; 255 characters per segment.
_SEGMENT = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,254}")


def valid_project_path(path: object) -> bool:
    """Whether ``path`` is a ``group[/subgroup...]/project`` GitLab could have made."""
    if not isinstance(path, str) or len(path) > 1024:
        return False
    parts = path.split("/")
    return 2 <= len(parts) <= 21 and all(
        _SEGMENT.fullmatch(p) and not p.endswith((".git", ".atom")) and ".." not in p
        for p in parts)


def repo_key(path: str) -> str:
    """The ledger's and queue's ``repo`` for a GitLab project path."""
    return REPO_PREFIX + path


def is_gitlab(repo: str | None) -> bool:
    return bool(repo) and repo.startswith(REPO_PREFIX)


def project_path(repo: str) -> str:
    return repo.removeprefix(REPO_PREFIX)


def from_note(note_id: int) -> int:
    """A GitLab note id as the forge port's comment id."""
    return int(note_id) + NOTE_BASE


def to_note(comment_id: int) -> int:
    """The GitLab note id of a port comment id (ValueError when it is not a GitLab one)."""
    if int(comment_id) < NOTE_BASE:
        raise ValueError(f"{comment_id} is not a GitLab note's id")
    return int(comment_id) - NOTE_BASE
