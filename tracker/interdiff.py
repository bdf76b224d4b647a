"""The PR's own change between two reviewed heads, when the author rebased or force-pushed.

When the previously reviewed head is an ancestor of the new head, ``compare(old, new)`` is
exactly what the author changed. After a rebase onto a newer base it is not: GitHub's
three-dot compare starts at the merge base, and even a two-dot diff mixes in every upstream
change to the PR's files. Nothing upstream may resolve or move a defect.

So, per file, the previous head is first *rebased* in memory onto the new base with a
three-way merge (the PR's changes as they stood, re-applied to the new base), and
the round is the diff from that rebased text to the new head: an interdiff. Mapping a defect
is then two steps: previous head → rebased previous head (upstream changes only: positions
move, states do not) → new head (the author's change: the rules decide).

Pure functions over texts and diffs; the bot fetches what they need.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

import unidiff

from .anchors import DiffError, reverse_apply
from .gitpath import diff_path, quote
from .lines import split_lines


@dataclass
class Interdiff:
    """``upstream``: previous head → previous head rebased (upstream changes only).
    ``round``: rebased previous head → new head (what the author changed)."""

    round: str
    upstream: str
    rebased: dict[str, str | None] = field(default_factory=dict)


def unified(path: str, old: str | None, new: str | None) -> str:
    """A git-style diff of one file between two texts (None: the file is absent)."""
    if old == new:
        return ""
    a = _lines(old)
    b = _lines(new)
    body = "".join(difflib.unified_diff(
        a, b, "/dev/null" if old is None else quote(f"a/{path}"),
        "/dev/null" if new is None else quote(f"b/{path}"), n=3,
    ))
    if not body:
        return ""
    head = f"diff --git {quote(f'a/{path}')} {quote(f'b/{path}')}\n"
    if old is None:
        head += "new file mode 100644\n"
    elif new is None:
        head += "deleted file mode 100644\n"
    return head + body


def _lines(text: str | None) -> list[str]:
    if not text:
        return []
    lines = split_lines(text, keepends=True)
    if not lines[-1].endswith("\n"):
        lines[-1] += "\n"  # "no newline at end of file" does not matter to the tracker
    return lines


def _patches(diff_text: str) -> dict[str, unidiff.PatchedFile]:
    try:
        patch = unidiff.PatchSet(diff_text or "")
    except unidiff.UnidiffParseError as exc:
        raise DiffError(f"not a unified diff: {exc}") from exc
    out = {}
    for patched in patch:
        for name in (diff_path(patched.source_file), diff_path(patched.target_file)):
            if name:
                out[name] = patched
    return out


def rebase_text(base_old: str | None, head_old: str | None, base_new: str | None
                ) -> str | None:
    """``head_old``'s changes to ``base_old`` re-applied to ``base_new``.

    A three-way merge line by line: each upstream change (``base_old`` → ``base_new``) is
    applied to ``head_old`` where it does not overlap a change of the PR's; where they
    overlap the PR's lines win, since upstream must not change what the author wrote. Edits
    on neighbouring lines are not a conflict (unlike ``git merge``, which is stricter than
    this needs: nothing here is committed).
    """
    if base_old == base_new:
        return head_old
    if head_old is None:
        return None if base_old is not None else base_new  # deleted by the PR / never there
    base, ours, theirs = _lines(base_old), _lines(head_old), _lines(base_new)
    ours_ops = difflib.SequenceMatcher(None, base, ours, autojunk=False).get_opcodes()
    position: dict[int, int] = {}  # base line -> the same line in ours, where the PR kept it
    changed: list[tuple[int, int]] = []  # base ranges the PR changed
    for tag, i1, i2, j1, _ in ours_ops:
        if tag == "equal":
            position.update({i1 + k: j1 + k for k in range(i2 - i1)})
        else:
            changed.append((i1, i2))
    edits = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, base, theirs,
                                                       autojunk=False).get_opcodes():
        if tag == "equal" or any(_overlap((i1, i2), span) for span in changed):
            continue
        start = _at(position, i1, len(ours))
        end = position[i2 - 1] + 1 if i2 > i1 else start
        if start is None or (i2 > i1 and any(i not in position for i in range(i1, i2))):
            continue
        edits.append((start, end, theirs[j1:j2]))
    merged = list(ours)
    for start, end, lines in sorted(edits, reverse=True):
        merged[start:end] = lines
    return "".join(merged)


def _overlap(a: tuple[int, int], b: tuple[int, int]) -> bool:
    """Whether two base ranges [start, end) touch the same lines (an insertion, an empty
    range, overlaps what it sits strictly inside of, or an insertion at the same point)."""
    (a1, a2), (b1, b2) = a, b
    if a1 == a2 and b1 == b2:
        return a1 == b1
    if a1 == a2:
        return b1 < a1 < b2
    if b1 == b2:
        return a1 < b1 < a2
    return a1 < b2 and b1 < a2


def _at(position: dict[int, int], line: int, size: int) -> int | None:
    """Where base line ``line`` (or the end of the file) stands in ours."""
    if line in position:
        return position[line]
    if line - 1 in position:
        return position[line - 1] + 1
    if line == 0:
        return 0
    return size if not position or line > max(position) else None


def interdiff(old_pr_diff: str, new_pr_diff: str, old_files: dict[str, str | None],
              new_files: dict[str, str | None]) -> Interdiff:
    """The round's diff without upstream changes, from the PR's diff at each head.

    ``old_files``/``new_files`` hold the texts at the previous and the new head of every path
    that matters (the files of either PR diff and those tracked defects sit in).
    """
    old_patches, new_patches = _patches(old_pr_diff), _patches(new_pr_diff)
    round_parts, upstream_parts = [], []
    rebased: dict[str, str | None] = {}
    for path in sorted(set(old_files) | set(new_files)):
        head_old, head_new = old_files.get(path), new_files.get(path)
        base_old = reverse_apply(head_old, old_patches[path]) if path in old_patches \
            else head_old
        base_new = reverse_apply(head_new, new_patches[path]) if path in new_patches \
            else head_new
        moved = rebase_text(base_old, head_old, base_new)
        rebased[path] = moved
        upstream_parts.append(unified(path, head_old, moved))
        round_parts.append(unified(path, moved, head_new))
    return Interdiff("".join(round_parts), "".join(upstream_parts), rebased)
