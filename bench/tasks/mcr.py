"""Loading ``mcr-task/1`` files (one multi-round review task each) and deriving what replays need.

``load_tasks(paths)`` reads files and folders, reports bad files by name instead of crashing,
and returns ``Task`` objects. A task knows the whole text of every file it touches at every
round's head (``snapshot(t)``), reconstructing base texts from the diffs when a later round
stops touching a file, and the diff between two consecutive heads (``diff_between(t-1, t)``),
which is what GitHub's compare API would return.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import unidiff

from tracker.gitpath import diff_path, file_path

from .diffs import git_diff, reverse_apply

SCHEMA = "mcr-task/1"
STATES = {"New", "Open", "Resolved", "Reopened"}


class TaskError(ValueError):
    """A task file that cannot be used, with the reason."""


@dataclass
class Round:
    number: int
    head_sha: str
    diff: str
    files: dict[str, str | None]
    events: list[dict] = field(default_factory=list)
    commits: list[dict] = field(default_factory=list)
    base_sha: str | None = None


@dataclass
class Task:
    task_id: str
    repo: str
    language: str
    pr: dict
    rounds: list[Round]
    defects: list[dict]
    negatives: list[dict] = field(default_factory=list)
    source: str = ""
    path: str = ""
    _bases: list[dict[str, str | None]] | None = field(default=None, repr=False)

    @property
    def multi_round(self) -> bool:
        return len(self.rounds) > 1

    def round(self, number: int) -> Round:
        return self.rounds[number - 1]

    def base_files(self, number: int | None = None) -> dict[str, str | None]:
        """The base text of every file any round touches (None where the PR adds it).

        Rounds may have different bases (the branch merged its target); ``number`` asks for
        the base of that round, filling files it does not touch from the nearest rounds.
        """
        if self._bases is None:
            self._bases = [self._reconstruct(rnd) for rnd in self.rounds]
        number = number or 1
        order = sorted(
            range(len(self.rounds)),
            key=lambda i: (self.rounds[i].base_sha != self.round(number).base_sha,
                           abs(i + 1 - number)),
        )
        base: dict[str, str | None] = {}
        for i in reversed(order):  # nearest last, so it wins
            base.update(self._bases[i])
        return base

    @staticmethod
    def _reconstruct(rnd: Round) -> dict[str, str | None]:
        try:
            patch = unidiff.PatchSet(rnd.diff or "")
        except unidiff.UnidiffParseError:
            return {}
        base: dict[str, str | None] = {}
        for patched in patch:
            path = file_path(patched)
            old_path = diff_path(patched.source_file) if patched.is_rename else path
            if patched.is_binary_file or (path not in rnd.files and not patched.is_removed_file):
                continue  # binary or left out of the task: text unknown
            base[old_path] = reverse_apply(rnd.files.get(path), patched)
        return base

    def snapshot(self, number: int) -> dict[str, str | None]:
        """Every file any round touches, as it stands at round ``number``'s head."""
        files = self.base_files(number)
        for rnd in self.rounds:
            files.update({p: None for p in rnd.files if p not in files})
        files.update(self.round(number).files)
        return files

    def diff_between(self, earlier: int, later: int) -> str:
        """The diff from round ``earlier``'s head to round ``later``'s (0 = the PR base)."""
        if earlier == 0:
            return self.round(later).diff
        return git_diff(self.snapshot(earlier), self.snapshot(later))

    def events(self, number: int) -> list[dict]:
        return self.round(number).events


def _require(data: dict, key: str, kind, where: str):
    if key not in data:
        raise TaskError(f"{where}: missing field {key!r}")
    value = data[key]
    if not isinstance(value, kind):
        raise TaskError(f"{where}: field {key!r} should be {kind.__name__ if isinstance(kind, type) else kind}")
    return value


def parse_task(data: dict, path: str = "") -> Task:
    """Validate one task's JSON and build a Task; raises TaskError naming what is wrong."""
    where = path or data.get("task_id", "task")
    if not isinstance(data, dict):
        raise TaskError(f"{where}: a task is a JSON object")
    if data.get("schema") != SCHEMA:
        raise TaskError(f"{where}: schema is {data.get('schema')!r}, expected {SCHEMA!r}")
    pr = _require(data, "pr", dict, where)
    raw_rounds = _require(data, "rounds", list, where)
    if not raw_rounds:
        raise TaskError(f"{where}: no rounds")
    rounds = []
    for i, r in enumerate(raw_rounds, start=1):
        rw = f"{where}: round {i}"
        if not isinstance(r, dict):
            raise TaskError(f"{rw}: not an object")
        if r.get("round", i) != i:
            raise TaskError(f"{rw}: rounds must be numbered 1, 2, ... in order")
        files = r.get("files") or {}
        if not isinstance(files, dict):
            raise TaskError(f"{rw}: files must map paths to texts")
        rounds.append(
            Round(
                number=i,
                head_sha=str(_require(r, "head_sha", str, rw)),
                diff=_require(r, "diff", str, rw),
                files=files,
                events=list(r.get("events") or []),
                commits=list(r.get("commits") or []),
                base_sha=r.get("base_sha"),
            )
        )
    defects = list(data.get("defects") or [])
    for d in defects:
        dw = f"{where}: defect {d.get('id', '?')}"
        for key in ("id", "path", "line_start", "raised_in_round", "states"):
            if key not in d:
                raise TaskError(f"{dw}: missing field {key!r}")
        if len(d["states"]) != len(rounds):
            raise TaskError(f"{dw}: {len(d['states'])} states for {len(rounds)} rounds")
        bad = [s for s in d["states"] if s is not None and s not in STATES]
        if bad:
            raise TaskError(f"{dw}: unknown states {bad}")
    return Task(
        task_id=str(data.get("task_id") or Path(path).stem),
        repo=str(data.get("repo") or ""),
        language=str(data.get("language") or "unknown"),
        pr=pr,
        rounds=rounds,
        defects=defects,
        negatives=list(data.get("negatives") or []),
        source=str(data.get("source") or ""),
        path=path,
    )


def load_task(path: str | Path) -> Task:
    """Read one task file."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise TaskError(f"{path}: line {exc.lineno}, column {exc.colno}: not valid JSON "
                        f"({exc.msg})") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise TaskError(f"{path}: cannot read task: {exc}") from exc
    return parse_task(data, str(path))


def named_file_errors(paths: list[str | Path]) -> list[str]:
    """One message per task file named in ``paths`` itself (not found in a folder) that is not
    a valid task: a file a person names must be right, where a folder's bad files are skipped."""
    errors = []
    for path in map(Path, paths):
        if path.is_file():
            try:
                load_task(path)
            except TaskError as exc:
                errors.append(str(exc))
    return errors


def task_files(paths: list[str | Path]) -> list[Path]:
    """The task files named by ``paths`` (files, or folders searched recursively), sorted."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            out.extend(sorted(q for q in p.rglob("*.json") if q.is_file()))
        elif p.exists():
            out.append(p)
        else:
            raise TaskError(f"{p}: no such file or folder")
    return out


def load_tasks(paths: list[str | Path]) -> tuple[list[Task], list[str]]:
    """All valid tasks under ``paths`` and one error message per file that was skipped."""
    tasks, errors = [], []
    for path in task_files(paths):
        try:
            tasks.append(load_task(path))
        except TaskError as exc:
            errors.append(str(exc))
    return tasks, errors
