"""``LocalGitForge``: the forge port's read side over a local git repository.

``roundwise review`` treats a branch as a pull request: its "PR" is ``merge-base(BASE, HEAD)``
to ``HEAD``, its default branch is BASE (where ``.github/roundwise.yml`` is read), files come
from ``git show``. It posts nothing: the command prints its report instead of publishing.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from tracker.discussion import MAX_MESSAGES, first_lines

from .port import ForgeReader, PullRequest

__all__ = ["LocalError", "LocalGitForge", "git"]


class LocalError(RuntimeError):
    """A git problem (not a repository, unknown ref) worth a one-line message."""


def git(repo: Path, *args: str) -> str:
    try:
        out = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, check=True)
    except FileNotFoundError as exc:
        raise LocalError("git is not installed") from exc
    except subprocess.CalledProcessError as exc:
        raise LocalError(exc.stderr.decode(errors="replace").strip() or "git failed") from exc
    return out.stdout.decode("utf-8", errors="replace")


class LocalGitForge(ForgeReader):
    """The branch ``head`` of the repository at ``repo``, reviewed against ``base``."""

    def __init__(self, repo: str | Path, base: str, head: str = "HEAD"):
        self.top = Path(git(Path(repo).resolve(), "rev-parse", "--show-toplevel").strip())
        self.head_sha = git(self.top, "rev-parse", "--verify", f"{head}^{{commit}}").strip()
        self.base_sha = git(self.top, "merge-base", base, self.head_sha).strip()
        self.branch = self._branch_name(head)

    def _branch_name(self, head: str) -> str:
        try:
            name = git(self.top, "rev-parse", "--abbrev-ref", head).strip()
        except LocalError:
            name = head
        return name if name and name != "HEAD" else head

    def git_dir(self) -> Path:
        found = Path(git(self.top, "rev-parse", "--git-dir").strip())
        return found if found.is_absolute() else self.top / found

    async def pull(self, number: int) -> PullRequest:
        return PullRequest(number=number, title=self.branch, body="", author=None,
                           head_sha=self.head_sha, base_sha=self.base_sha)

    async def pull_diff(self, number: int) -> str:
        return await self.compare_diff(self.base_sha, self.head_sha)

    async def compare_diff(self, base: str, head: str) -> str:
        return git(self.top, "diff", "--no-color", "--no-ext-diff", "-M", base, head)

    async def compare_status(self, base: str, head: str) -> str:
        if base == head:
            return "identical"
        try:
            git(self.top, "merge-base", "--is-ancestor", base, head)
            return "ahead"
        except LocalError:
            return "diverged"

    async def commit_messages(self, base: str, head: str) -> list[str]:
        try:
            out = git(self.top, "log", "--reverse", f"--max-count={MAX_MESSAGES}",
                      "--format=%s", f"{base}..{head}")
        except LocalError:
            return []
        return first_lines(out.splitlines())

    async def file_text(self, path: str, ref: str | None = None) -> str | None:
        try:
            return git(self.top, "show", f"{ref or self.base_sha}:{path}")
        except LocalError:
            return None
