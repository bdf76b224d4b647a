"""Converting AACR-Bench into ``mcr-task/1`` tasks the bench can replay (single round each).

AACR-Bench (github.com/alibaba/aacr-bench, Apache-2.0) ships two JSON files:
``positive_samples.json`` (per pull request: ``githubPrUrl``, ``source_commit``,
``target_commit``, ``project_main_language``, ``change_line_count``, an optional PR
``category`` and the expert-verified review ``comments``) and ``negative_samples.json`` (the
same PRs with the comments the experts rejected). It carries no code: the code comes from a
local git checkout of each repository. This module joins the two and turns every PR into one
task, the way the converted tasks in ``shared/data/aacr-dev`` look:

- ``task_id`` ``aacr__<owner>__<repo>-<number>``, one round whose ``head_sha`` is
  ``target_commit``; ``pr.base_sha`` is ``git merge-base source_commit target_commit``;
- the round's ``diff`` is ``git diff base head`` (renames detected), ``files`` the full text at
  head of every changed text file (null when deleted; binary files, and files that are not
  valid UTF-8, are left out and their diff reduced to git's ``Binary files ... differ``);
- ``defects`` are the positive comments as cards ``C1, C2, ...`` (all ``New`` in round 1),
  ``negatives`` the negative comments as cards ``N1, N2, ...``; both keep AACR's category,
  context, side, ``is_ai_comment`` and ``source_model``, and map the category to an MCR-Bench
  type with ``CATEGORY_TYPES``.

Laying out a folder for the bench (``--tasks <folder>`` recognises it by its
``positive_samples.json``)::

    aacr/
      positive_samples.json
      negative_samples.json          (optional)
      repos/
        PowerShell__PowerShell/      a clone (plain or bare) holding the PRs' commits
        cline__cline/
        ...

The sample files may also sit in ``aacr/dataset/`` (the layout of AACR-Bench's own repository).
A PR whose checkout is missing, whose commits are not in it, or whose entry is malformed is
reported as an error string and skipped; the other PRs still convert.

The part that needs no git (ids, cards, language, metadata) is ``task_skeleton``; ``convert``
adds the git-derived round and base; ``load_aacr`` does it all for a folder and returns parsed
``Task`` objects.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path

from .mcr import SCHEMA, Task, TaskError, parse_task

SOURCE = (
    "AACR-Bench v1.0 (github.com/alibaba/aacr-bench, Apache-2.0): a real GitHub PR with "
    "expert-verified review comments (dataset/positive_samples.json) as defects and "
    "expert-rejected ones (dataset/negative_samples.json) as negatives. Single round; "
    "head_sha = target_commit, base_sha = merge-base(source_commit, target_commit); "
    "side right = lines at head, left = lines at base."
)
POSITIVE_FILE = "positive_samples.json"
NEGATIVE_FILE = "negative_samples.json"

# AACR-Bench comment category -> MCR-Bench taxonomy id, as used by the converted aacr-dev tasks.
CATEGORY_TYPES = {
    "code defect": "F.2",
    "maintainability and readability": "E.3.2",
    "performance": "F.6",
    "security vulnerability": "F.7",
}
# Fallback for category spellings not listed above: first keyword found wins.
_CATEGORY_KEYWORDS = (
    ("secur", "F.7"),
    ("vulnerab", "F.7"),
    ("perform", "F.6"),
    ("defect", "F.2"),
    ("bug", "F.2"),
    ("maintainab", "E.3.2"),
    ("readab", "E.3.2"),
)

# project_main_language spellings -> the names tasks use.
LANGUAGES = {
    "c": "C",
    "c++": "C++", "cpp": "C++", "cxx": "C++",
    "c#": "C#", "csharp": "C#", "c sharp": "C#", "cs": "C#",
    "go": "Go", "golang": "Go",
    "java": "Java",
    "javascript": "JavaScript", "js": "JavaScript",
    "typescript": "TypeScript", "ts": "TypeScript",
    "python": "Python", "py": "Python",
    "rust": "Rust", "rs": "Rust",
    "ruby": "Ruby", "rb": "Ruby",
    "php": "PHP",
    "kotlin": "Kotlin",
    "swift": "Swift",
    "scala": "Scala",
}
_FOLDERS = {"C#": "csharp", "C++": "cpp"}

_PR_URL = re.compile(
    r"^\s*https?://(?:www\.)?github\.com/([^/\s]+)/([^/\s]+)/pulls?/(\d+)(?:[/?#]\S*)?\s*$",
    re.IGNORECASE,
)
_SHA = re.compile(r"^[0-9a-fA-F]{7,64}$")


class AacrError(TaskError):
    """An AACR-Bench entry, file or checkout that cannot be converted, with the reason."""


# ----------------------------------------------------------------------------- no git needed


def parse_pr_url(url: object) -> tuple[str, str, int]:
    """``(owner, repo, number)`` from a ``https://github.com/<owner>/<repo>/pull/<n>`` URL."""
    match = _PR_URL.match(url) if isinstance(url, str) else None
    if not match:
        raise AacrError(f"not a GitHub pull request URL: {url!r}")
    owner, repo, number = match.groups()
    return owner, repo.removesuffix(".git"), int(number)


def task_id_for(url: str) -> str:
    """The task id ``aacr__<owner>__<repo>-<number>`` of a PR URL."""
    owner, repo, number = parse_pr_url(url)
    return f"aacr__{owner}__{repo}-{number}"


def category_type(category: object) -> str | None:
    """The MCR-Bench type id for an AACR comment category (None when it cannot be told)."""
    if not isinstance(category, str):
        return None
    key = " ".join(category.lower().replace("&", " and ").replace("_", " ").split())
    if key in CATEGORY_TYPES:
        return CATEGORY_TYPES[key]
    for word, type_id in _CATEGORY_KEYWORDS:
        if word in key:
            return type_id
    return None


def normalise_language(name: object) -> str:
    """``project_main_language`` as tasks spell it ("csharp" -> "C#", "typescript" -> ...)."""
    text = " ".join(str(name or "").split())
    if not text:
        return "unknown"
    return LANGUAGES.get(text.lower(), text)


def language_folder(language: str) -> str:
    """The folder a language's tasks are written to (``csharp``, ``cpp``, ``typescript`` ...)."""
    if language in _FOLDERS:
        return _FOLDERS[language]
    folder = re.sub(r"[^a-z0-9]+", "", language.lower())
    return folder or "unknown"


def _line(value: object, what: str) -> int | None:
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise AacrError(f"{what} is not a line number: {value!r}")
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise AacrError(f"{what} is not a line number: {value!r}") from None
    if number != value and str(number) != str(value).strip():
        raise AacrError(f"{what} is not a line number: {value!r}")
    return number


def comment_cards(comments: object, prefix: str = "C", kind: str = "positive") -> list[dict]:
    """AACR comments as task cards ``<prefix>1, <prefix>2, ...`` in their original order.

    Each card has the fields of an ``mcr-task/1`` defect (raised and ``New`` in round 1, type
    from the category, no severity) plus AACR's own ``aacr_category``, ``aacr_context``,
    ``side``, ``is_ai_comment`` and ``source_model``. ``from_line``/``to_line`` become
    ``line_start``/``line_end`` (swapped when given in reverse; one stands for both when the
    other is missing). Raises ``AacrError`` for a comment without a path or any line.
    """
    if comments is None:
        return []
    if not isinstance(comments, list):
        raise AacrError("comments is not a list")
    cards = []
    for i, comment in enumerate(comments, start=1):
        where = f"{kind} comment {i}"
        if not isinstance(comment, dict):
            raise AacrError(f"{where} is not an object")
        path = comment.get("path")
        if not isinstance(path, str) or not path.strip():
            raise AacrError(f"{where} has no path")
        start = _line(comment.get("from_line"), f"{where} from_line")
        end = _line(comment.get("to_line"), f"{where} to_line")
        if start is None and end is None:
            raise AacrError(f"{where} has no line")
        start = end if start is None else start
        end = start if end is None else end
        if end < start:
            start, end = end, start
        side = comment.get("side")
        cards.append({
            "id": f"{prefix}{i}",
            "description": str(comment.get("note") or ""),
            "path": path.strip(),
            "line_start": start,
            "line_end": end,
            "raised_in_round": 1,
            "type": category_type(comment.get("category")),
            "severity": None,
            "states": ["New"],
            "evidence": f"AACR-Bench {kind} comment",
            "aacr_category": comment.get("category"),
            "aacr_context": comment.get("context"),
            "side": str(side).strip().lower() if side else "right",
            "is_ai_comment": comment.get("is_ai_comment"),
            "source_model": comment.get("source_model"),
        })
    return cards


def _commit(entry: dict, key: str) -> str:
    value = entry.get(key)
    if not isinstance(value, str) or not _SHA.match(value.strip()):
        raise AacrError(f"{key} is missing or not a commit sha: {value!r}")
    return value.strip()


def task_skeleton(positive: dict | None, negative: dict | None = None) -> dict:
    """Everything of a PR's task that needs no checkout, from its AACR entries.

    ``positive``/``negative`` are the PR's entries in the two files (either may be None, not
    both). The result is a task without ``pr.base_sha`` and without ``rounds``; ``convert``
    fills those from git. Raises ``AacrError`` for a malformed entry.
    """
    entry = positive if positive is not None else negative
    if not isinstance(entry, dict):
        raise AacrError("entry is not an object")
    if negative is not None and not isinstance(negative, dict):
        raise AacrError("negative entry is not an object")
    url = entry.get("githubPrUrl")
    owner, repo, number = parse_pr_url(url)
    source_commit = _commit(entry, "source_commit")
    target_commit = _commit(entry, "target_commit")
    defects = comment_cards(positive.get("comments"), "C", "positive") if positive else []
    negatives = comment_cards(negative.get("comments"), "N", "negative") if negative else []
    aacr = {
        "source_commit": source_commit,
        "target_commit": target_commit,
        "change_line_count": entry.get("change_line_count"),
    }
    category = entry.get("category")
    if category:
        aacr["pr_category"] = category
    title = entry.get("title")
    body = entry.get("body")
    return {
        "schema": SCHEMA,
        "task_id": f"aacr__{owner}__{repo}-{number}",
        "source": SOURCE,
        "repo": f"{owner}/{repo}",
        "language": normalise_language(entry.get("project_main_language")),
        "pr": {
            "number": number,
            "title": title if isinstance(title, str) and title.strip() else f"PR {number}",
            "body": body if isinstance(body, str) else (category or ""),
            "author": None,
            "base_ref": None,
            "base_sha": None,
            "linked_issues": [],
            "url": url.strip(),
        },
        "rounds": [],
        "defects": defects,
        "negatives": negatives,
        "aacr": aacr,
    }


# ----------------------------------------------------------------------------- git


def _git(repo: Path, *args: str, check: bool = True) -> bytes:
    """Run git in ``repo`` and return its stdout; raises AacrError on failure."""
    command = [
        "git", "-C", str(repo),
        # The checkouts may belong to another user (shared, read-only data); only read from them.
        "-c", "safe.directory=*",
        "-c", "core.quotepath=off",
        *args,
    ]
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_PAGER": "cat", "LC_ALL": "C",
           # never fall back to a repository above the checkout (a folder that is not one)
           "GIT_CEILING_DIRECTORIES": str(Path(repo).resolve().parent)}
    try:
        done = subprocess.run(command, capture_output=True, env=env, check=False)
    except OSError as exc:
        raise AacrError(f"cannot run git: {exc}") from exc
    if check and done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip().splitlines()
        reason = message[-1] if message else f"exit status {done.returncode}"
        raise AacrError(f"git {args[0]} failed in {repo}: {reason}")
    return done.stdout


def _resolve(repo: Path, sha: str, name: str) -> str:
    out = _git(repo, "rev-parse", "--verify", "--quiet", f"{sha}^{{commit}}", check=False).strip()
    if not out:
        raise AacrError(f"{name} {sha} not found in {repo}")
    return out.decode()


_DIFF_OPTIONS = ("--no-color", "--no-ext-diff", "--no-textconv", "-M",
                 "--src-prefix=a/", "--dst-prefix=b/")


def _changes(repo: Path, base: str, head: str) -> list[tuple[str, str | None, str]]:
    """``(status, old, new)`` of every file changed base..head (``old`` None unless renamed)."""
    out = _git(repo, "diff", *_DIFF_OPTIONS, "--name-status", "-z", base, head)
    fields = out.decode("utf-8", "surrogateescape").split("\0")
    changes, i = [], 0
    while i < len(fields) and fields[i]:
        status = fields[i][0]
        if status in "RC":
            changes.append((status, fields[i + 1], fields[i + 2]))
            i += 3
        else:
            changes.append((status, None, fields[i + 1]))
            i += 2
    return changes


def _binary_paths(repo: Path, base: str, head: str) -> set[str]:
    """Paths (new side) git counts as binary in the base..head diff (numstat ``-\\t-``)."""
    out = _git(repo, "diff", *_DIFF_OPTIONS, "--numstat", "-z", base, head)
    fields = out.decode("utf-8", "surrogateescape").split("\0")
    binary, i = set(), 0
    while i < len(fields) and fields[i]:
        added, deleted, path = fields[i].split("\t", 2)
        if path:
            i += 1
        else:  # a rename: the old and new paths follow as their own fields
            path = fields[i + 2]
            i += 3
        if added == "-" and deleted == "-":
            binary.add(path)
    return binary


def _unquote(text: str) -> str:
    """A path as git prints it, C-quoted or not, back to the path."""
    if not (len(text) >= 2 and text[0] == '"' and text[-1] == '"'):
        return text
    raw = text[1:-1].encode("utf-8", "surrogateescape")
    out, i = bytearray(), 0
    escapes = {ord("n"): 10, ord("t"): 9, ord("r"): 13, ord("a"): 7, ord("b"): 8,
               ord("f"): 12, ord("v"): 11, ord('"'): 34, ord("\\"): 92}
    while i < len(raw):
        if raw[i] == 92 and i + 1 < len(raw):
            nxt = raw[i + 1]
            if 48 <= nxt <= 55 and i + 4 <= len(raw):
                out.append(int(raw[i + 1:i + 4], 8) & 0xFF)
                i += 4
                continue
            out.append(escapes.get(nxt, nxt))
            i += 2
            continue
        out.append(raw[i])
        i += 1
    return out.decode("utf-8", "surrogateescape")


def _section_paths(section: bytes) -> tuple[str | None, str | None]:
    """``(old, new)`` paths of one file's diff section (None for /dev/null or unknown)."""
    header = section.split(b"\n@@", 1)[0].decode("utf-8", "replace")
    old = new = None
    for line in header.splitlines():
        if line.startswith("rename from "):
            old = _unquote(line[len("rename from "):])
        elif line.startswith("rename to "):
            new = _unquote(line[len("rename to "):])
        elif line.startswith("--- ") and old is None:
            name = _unquote(line[4:].rstrip("\t"))
            old = name[2:] if name.startswith("a/") else None
        elif line.startswith("+++ ") and new is None:
            name = _unquote(line[4:].rstrip("\t"))
            new = name[2:] if name.startswith("b/") else None
    if old is None and new is None:  # no ---/+++ lines (mode change, binary): use the header
        first = header.splitlines()[0][len("diff --git "):]
        if first.startswith('"'):
            end = first.find('" ', 1)
            old, new = _unquote(first[:end + 1])[2:], _unquote(first[end + 2:])[2:]
        else:
            half = (len(first) - 1) // 2
            if first[:half].startswith("a/") and first[half:half + 3] == " b/":
                old = new = first[2:half]
    return old, new


def _binary_stub(section: bytes, old: str | None, new: str | None, status: str) -> str:
    """A file's diff reduced to git's header plus ``Binary files ... differ``."""
    lines = section.decode("utf-8", "replace").split("\n")
    header = []
    for line in lines:
        if line.startswith(("--- ", "+++ ", "@@", "Binary files", "GIT binary patch")):
            break
        header.append(line)
    a = "/dev/null" if status == "A" else f"a/{old or new}"
    b = "/dev/null" if status == "D" else f"b/{new or old}"
    return "\n".join(header) + f"\nBinary files {a} and {b} differ\n"


def _utf8_name(path: str) -> bool:
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _round(repo: Path, base: str, head: str) -> dict:
    """The single round of a PR: head, commits, diff and files, from the checkout."""
    changes = _changes(repo, base, head)
    binary = _binary_paths(repo, base, head)
    status_of = {new: status for status, _old, new in changes}
    files: dict[str, str | None] = {}
    for status, _old, path in changes:
        if status == "D":
            files[path] = None
        elif not _utf8_name(path):
            binary.add(path)  # a file name JSON cannot carry: left out like a binary file
        elif path not in binary:
            blob = _git(repo, "show", f"{head}:{path}", check=False)
            try:
                files[path] = blob.decode("utf-8")
            except UnicodeDecodeError:
                binary.add(path)  # not UTF-8: treated like a binary file

    raw = _git(repo, "diff", *_DIFF_OPTIONS, base, head)
    sections = raw.split(b"\ndiff --git ")
    parts = []
    for i, section in enumerate(sections):
        if i:
            section = b"diff --git " + section
        if i < len(sections) - 1:
            section += b"\n"
        if not section:
            continue
        old, new = _section_paths(section)
        path = new or old
        status = status_of.get(path or "", "M")
        try:
            text = section.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        if text is None or (path in binary and "\nBinary files " not in text):
            text = _binary_stub(section, old, new, status)
            if path is not None:
                binary.add(path)
        parts.append(text)
    for path in binary:
        if files.get(path) is not None:
            del files[path]

    log = _git(repo, "log", "--no-color", "--format=%H%x00%an%x00%s%x1e", f"{base}..{head}")
    commits = []
    for record in log.decode("utf-8", "replace").split("\x1e"):
        record = record.strip("\n")
        if record:
            sha, author, subject = (record.split("\0") + ["", ""])[:3]
            commits.append({"sha": sha, "author": author, "message": subject})
    return {"round": 1, "head_sha": head, "commits": commits, "diff": "".join(parts),
            "files": files, "events": []}


def _title_from_history(repo: Path, number: int) -> str | None:
    """The PR's title as GitHub wrote it into a squash (``Title (#n)``) or merge commit."""
    out = _git(repo, "log", "--all", "--no-color", "-E", "-n", "20",
               f"--grep=(\\(#{number}\\)$)|(^Merge pull request #{number} from )",
               "--format=%s%x00%b%x1e", check=False)
    squash = re.compile(rf"\s*\(#{number}\)$")
    for record in out.decode("utf-8", "replace").split("\x1e"):
        subject, _, body = record.strip("\n").partition("\0")
        if subject.startswith(f"Merge pull request #{number} from "):
            first = body.strip().splitlines()[0].strip() if body.strip() else ""
            if first:
                return first
        elif squash.search(subject):
            title = squash.sub("", subject).strip()
            if title:
                return title
    return None


# ----------------------------------------------------------------------------- conversion


def _read_entries(path: str | Path | None) -> list:
    if path is None:
        return []
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise AacrError(f"{path}: cannot read AACR-Bench samples: {exc}") from exc
    if not isinstance(data, list):
        raise AacrError(f"{path}: AACR-Bench samples should be a JSON list of PR entries")
    return data


def _pr_key(entry: object) -> tuple[str, str, int]:
    if not isinstance(entry, dict):
        raise AacrError("entry is not an object")
    owner, repo, number = parse_pr_url(entry.get("githubPrUrl"))
    return owner.lower(), repo.lower(), number


def _checkout_finder(repos) -> Callable[[str], Path | None]:
    if callable(repos):
        return repos
    if not isinstance(repos, Mapping):
        raise TypeError("repos should be a mapping or a callable")
    table = {str(key).lower(): Path(value) for key, value in repos.items()}

    def find(name: str) -> Path | None:
        key = name.lower()
        return table.get(key) or table.get(key.replace("/", "__"))

    return find


def convert(
    positive_path: str | Path,
    negative_path: str | Path | None,
    repos: Callable[[str], Path | None] | dict[str, Path],
    out_dir: str | Path | None = None,
) -> tuple[list[dict], list[str]]:
    """Convert AACR-Bench's sample files into ``mcr-task/1`` task dicts.

    ``repos`` tells where each repository is checked out: a mapping from ``"owner/repo"``
    (or ``"owner__repo"``) to a path, or a callable taking ``"owner/repo"`` and returning a
    path or None. PRs are matched between the two files by ``githubPrUrl``; a PR only in the
    negative file becomes a task without defects. With ``out_dir`` each task is also written
    to ``out_dir/<language>/<task_id>.json``. Returns the tasks (in file order) and one error
    string per PR that could not be converted; an unreadable sample file raises ``AacrError``.
    """
    find = _checkout_finder(repos)
    errors: list[str] = []
    order: list[tuple] = []
    pairs: dict[tuple, list] = {}
    for kind, path in (("positive", positive_path), ("negative", negative_path)):
        for i, entry in enumerate(_read_entries(path), start=1):
            try:
                key = _pr_key(entry)
            except AacrError as exc:
                errors.append(f"{kind} entry {i}: {exc}")
                continue
            if key not in pairs:
                pairs[key] = [None, None]
                order.append(key)
            slot = 0 if kind == "positive" else 1
            if pairs[key][slot] is None:
                pairs[key][slot] = entry
            else:  # the same PR twice in one file: keep all its comments
                merged = dict(pairs[key][slot])
                merged["comments"] = list(merged.get("comments") or []) + list(
                    entry.get("comments") or [])
                pairs[key][slot] = merged

    tasks: list[dict] = []
    for key in order:
        positive, negative = pairs[key]
        url = (positive or negative).get("githubPrUrl")
        try:
            task = convert_pr(positive, negative, find)
        except (AacrError, TaskError) as exc:
            errors.append(f"{url}: {exc}")
            continue
        tasks.append(task)
        if out_dir is not None:
            folder = Path(out_dir) / language_folder(task["language"])
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"{task['task_id']}.json").write_text(
                json.dumps(task, indent=1), encoding="utf-8")
    return tasks, errors


def convert_pr(
    positive: dict | None,
    negative: dict | None,
    repos: Callable[[str], Path | None] | dict[str, Path],
) -> dict:
    """One PR's task from its positive/negative entries and its checkout; raises AacrError."""
    task = task_skeleton(positive, negative)
    find = _checkout_finder(repos)
    checkout = find(task["repo"])
    if checkout is None or not Path(checkout).is_dir():
        raise AacrError(f"no checkout of {task['repo']}"
                        + (f" at {checkout}" if checkout is not None else ""))
    checkout = Path(checkout)
    if _git(checkout, "rev-parse", "--git-dir", check=False).strip() == b"":
        raise AacrError(f"{checkout} is not a git repository")
    source = _resolve(checkout, task["aacr"]["source_commit"], "source_commit")
    head = _resolve(checkout, task["aacr"]["target_commit"], "target_commit")
    base = _git(checkout, "merge-base", source, head, check=False).decode().strip()
    if not base:
        raise AacrError(f"source_commit {source} and target_commit {head} share no history")
    task["pr"]["base_sha"] = base
    pr = task["pr"]
    if pr["title"] == f"PR {pr['number']}":
        pr["title"] = _title_from_history(checkout, pr["number"]) or pr["title"]
    task["rounds"] = [_round(checkout, base, head)]
    parse_task(task)  # the result must load
    return task


def find_samples(folder: str | Path) -> tuple[Path, Path | None] | None:
    """``(positive, negative-or-None)`` sample files of an AACR folder, or None if it is not one.

    Looks in the folder itself, then in its ``dataset/`` subfolder.
    """
    folder = Path(folder)
    for place in (folder, folder / "dataset"):
        positive = place / POSITIVE_FILE
        if positive.is_file():
            negative = place / NEGATIVE_FILE
            return positive, negative if negative.is_file() else None
    return None


def is_aacr_folder(path: str | Path) -> bool:
    """Whether ``path`` is a folder laid out for ``load_aacr`` (it holds positive_samples.json)."""
    return Path(path).is_dir() and find_samples(path) is not None


def load_aacr(
    folder: str | Path, out_dir: str | Path | None = None
) -> tuple[list[Task], list[str]]:
    """Convert an AACR folder (samples + ``repos/<owner>__<repo>`` checkouts) into Tasks.

    Returns the parsed tasks and one error string per PR skipped, like ``load_tasks``. A
    checkout may also be at ``repos/<owner>/<repo>``. ``out_dir`` also writes the task files.
    """
    folder = Path(folder)
    samples = find_samples(folder)
    if samples is None:
        raise AacrError(f"{folder}: no {POSITIVE_FILE} (not an AACR-Bench folder)")
    positive, negative = samples
    repos_dir = folder / "repos"

    def checkout(name: str) -> Path | None:
        owner, _, repo = name.partition("/")
        for candidate in (repos_dir / f"{owner}__{repo}", repos_dir / owner / repo):
            if candidate.is_dir():
                return candidate
        if repos_dir.is_dir():  # GitHub names are case-insensitive
            wanted = f"{owner}__{repo}".lower()
            for candidate in repos_dir.iterdir():
                if candidate.name.lower() == wanted and candidate.is_dir():
                    return candidate
        return None

    dicts, errors = convert(positive, negative, checkout, out_dir)
    tasks = []
    for data in dicts:
        try:
            tasks.append(parse_task(data, f"{folder}#{data['task_id']}"))
        except TaskError as exc:
            errors.append(str(exc))
    return tasks, errors
