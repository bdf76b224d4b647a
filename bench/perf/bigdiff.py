"""Big-diff cases for ``bench.perf.ledger``: deciding a round of 20,000 changed lines.

A pull request whose push changes 20,000 lines (10,000 edited lines, each one ``-`` and one
``+`` in the diff), either spread over 20 files in 2,000 hunks (``hunks``) or in one file as a
single hunk (``giant``), with 1,000 or 10,000 tracked defects on it. Per round it times, each
side starting from the same diff text and charged its own parse of it:

- ``map``: the tracker's anchor mapping, ``DiffMap`` built from the diff's text (its own parse,
  ``tracker.diffparse``) and every anchored defect mapped as ``decide`` maps it;
- ``decide``: the whole decision, ``DiffMap`` from the text, ``RoundInput`` and
  ``decide_round`` (mapping plus every rule and the excerpts of the new positions);
- ``reference``: what mapping needs and nothing else, written independently of the tracker:
  one pass over the diff's lines into per-file sorted arrays (removed old lines, and each added
  line's old position and new number), then each anchor's status and new range by bisect over
  them, and the excerpt of each new range.

``unidiff`` (unidiff's full parse of the text, which the bot's reviewers share) and ``trees``
(tree-sitter on both sides of every file) are timed on their own, for scale. The tracker's
status and new range of every anchor must equal the reference's, or the bench stops naming
the defect. The rounds go through the real SQLite ledger (``record_round``), so defects
resolved in one round are decided as Resolved (``stays-resolved`` or reopened) in the next.
"""

from __future__ import annotations

import bisect
import gc
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import unidiff

from bot.store.ledger_sqlite import Ledger
from tracker.anchors import Anchor, DiffMap, Status, strip_prefix
from tracker.decide import RoundInput, decide_round
from tracker.models import Defect, Finding

SHAPES = ("hunks", "giant")
SIZES = (1000, 10000)
CHANGED = 20_000  # lines of the diff marked - or +, per round
ROUNDS = 3
REPEATS = 3  # map and reference, interleaved, per round

HUNK_FILES, HUNK_BLOCK = 20, 20  # 20 files of functions of 20 lines
HUNK_EDITS = range(1, 6)  # body lines 1-5 of each function edited every round (one hunk each)
GIANT_BLOCK = 30  # one file of functions of 30 lines
GIANT_EDIT_EVERY = 3  # every third body line edited: gaps of 2 lines, so one hunk


def _function(name: str, body: list[str]) -> list[str]:
    return [f"def {name}(x):"] + [f"    {line}" for line in body] + ["    return x"]


def _layout(shape: str, changed: int) -> list[tuple[str, int, int, int]]:
    """(path, file number, functions, lines per function) for about ``changed`` changed lines."""
    if shape == "hunks":
        blocks = max(changed // (2 * len(HUNK_EDITS) * HUNK_FILES), 1)
        return [(f"pkg/mod_{f}.py", f, blocks, HUNK_BLOCK) for f in range(HUNK_FILES)]
    if shape == "giant":
        edits = len(range(0, GIANT_BLOCK - 2, GIANT_EDIT_EVERY))
        return [("pkg/giant.py", 0, max(changed // (2 * edits), 1), GIANT_BLOCK)]
    raise ValueError(f"unknown shape {shape!r}")


def big_files(shape: str, round_number: int, changed: int = CHANGED) -> dict[str, str]:
    """The files at round ``round_number`` (0 is the state the defects were raised on).

    Each round edits the same body lines again (their trailing comment names the round), adds
    one line at the top, and, in every seventh function, one more line in the middle; round 1
    also deletes one line from every tenth function.
    """
    files = {}
    for path, f, blocks, size in _layout(shape, changed):
        out = [f"# round {round_number} header {k}" for k in range(round_number)]
        for b in range(blocks):
            body = []
            for j in range(size - 2):
                line = f"v_{f}_{b}_{j} = compute({j}, w_{f}_{b})"
                edited = (j in HUNK_EDITS) if shape == "hunks" else (j % GIANT_EDIT_EVERY == 0)
                if round_number and edited:
                    line += f"  # r{round_number}"
                if j == size - 4 and b % 10 == 0 and round_number >= 1:
                    continue  # deleted in round 1, gone afterwards
                body.append(line)
                if j == size // 2 and b % 7 == 0:
                    body += [f"x_{f}_{b}_{r} = {r}" for r in range(round_number)]
            out += _function(f"fn_{f}_{b}", body)
        files[path] = "\n".join(out) + "\n"
    return files


def big_findings(shape: str, count: int, files: dict[str, str]) -> list[tuple[Finding, str | None]]:
    """``count`` findings on the round-0 files, spread evenly; every 50th is a remark on the
    whole PR. Their wording exercises each kind of rule: a name on the anchored line, a name
    the fix should add, a suggestion, plain prose, a common name, a name used elsewhere."""
    paths = sorted(files)
    lines = {p: files[p].split("\n")[:-1] for p in paths}
    out: list[tuple[Finding, str | None]] = []
    for k in range(count):
        path = paths[k % len(paths)]
        text = lines[path]
        per_file = (count + len(paths) - 1) // len(paths)
        n = 1 + ((k // len(paths)) * len(text)) // per_file
        n = min(n, len(text))
        end = min(n + (2 if k % 5 == 0 else 0), len(text))
        code = "\n".join(text[n - 1 : end])
        word = (code.split() or ["x"])[0]
        if k % 50 == 49:
            f = k % HUNK_FILES if shape == "hunks" else 0
            out.append((Finding(f"`fn_{f}_{k % 97}` needs a docstring"), None))
            continue
        descriptions = [
            f"`{word}` is computed twice here",
            f"please call `validate_{k}` before this",
            f"```suggestion\n{text[end - 1].rstrip()}  # checked\n```",
            "this is not thread safe",
            "`compute` may raise here",
            f"`w_{k % HUNK_FILES}_{k % 97}` should change with this",
        ]
        out.append((Finding(descriptions[k % len(descriptions)], path, n, end), code))
    return out


# -- the reference ---------------------------------------------------------------------------


class RefFile:
    """One file of the diff as sorted arrays: where a bisect answers every anchor."""

    def __init__(self, path: str | None, hunks: list[tuple[int, int, list[str]]]):
        """``hunks``: (old start, old length, new start, body lines) of each hunk, in order."""
        self.path = path
        self.gone = path is None
        self.removed: list[int] = []  # old line numbers removed, increasing
        # per added line, in diff order: 2 x the old line it follows, +1 unless that line was
        # removed (an added line after a removed one replaces it); non-decreasing
        self.after: list[int] = []
        self.added_at: list[int] = []  # per added line: its new line number, increasing
        for start, length, target_start, body in hunks:
            last = (start if length else start + 1) - 1  # the old line before the hunk
            last_removed, old, new = False, last + 1, target_start
            for ln in body:
                kind = ln[:1]
                if kind == "-":
                    last, last_removed = old, True
                    self.removed.append(old)
                    old += 1
                elif kind == "+":
                    self.after.append(2 * last + (not last_removed))
                    self.added_at.append(new)
                    new += 1
                elif kind != "\\":
                    last, last_removed = old, False
                    old, new = old + 1, new + 1
        # the first old line of each run of removed lines, per removed line
        self.run_start = list(self.removed)
        for i in range(1, len(self.removed)):
            if self.removed[i] == self.removed[i - 1] + 1:
                self.run_start[i] = self.run_start[i - 1]
        self.run_end = list(self.removed)
        for i in range(len(self.removed) - 2, -1, -1):
            if self.removed[i + 1] == self.removed[i] + 1:
                self.run_end[i] = self.run_end[i + 1]

    def _is_removed(self, n: int) -> int | None:
        i = bisect.bisect_left(self.removed, n)
        return i if i < len(self.removed) and self.removed[i] == n else None

    def new_line(self, n: int) -> int:
        """The new number of surviving old line ``n``: less the removed lines before it, plus
        the added lines that follow an old line before it."""
        return n - bisect.bisect_right(self.removed, n) + bisect.bisect_left(self.after, 2 * n)

    def map(self, lo: int, hi: int) -> tuple[Status, int | None, int | None]:
        if self.gone:
            return Status.DELETED, None, None
        # inserted inside lo..hi, or replacing line hi: following lo..hi-1, or a removed hi
        a, b = bisect.bisect_left(self.after, 2 * lo), bisect.bisect_right(self.after, 2 * hi)
        inside = [self.added_at[a], self.added_at[b - 1]] if a < b else []
        removed = bisect.bisect_right(self.removed, hi) - bisect.bisect_left(self.removed, lo)
        first = lo if (i := self._is_removed(lo)) is None else self.run_end[i] + 1
        last = hi if (i := self._is_removed(hi)) is None else self.run_start[i] - 1
        kept = [self.new_line(first), self.new_line(last)] if first <= hi else []
        if not removed and not inside:
            return Status.UNTOUCHED, kept[0], kept[1]
        if kept or inside:
            span = kept + inside
            return Status.MODIFIED, min(span), max(span)
        before = lo - 1 if (i := self._is_removed(lo - 1)) is None else self.run_start[i] - 1
        line = self.new_line(before) + 1 if before >= 1 else 1
        return Status.DELETED, line, line


_HUNK = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def reference_parse(text: str) -> dict[str, RefFile]:
    """The diff's files by old path, parsed minimally: file headers, hunk headers and as many
    body lines as each hunk header counts."""
    files: dict[str, RefFile] = {}
    lines = text.split("\n")
    old_path = new_path = None
    hunks: list = []
    i, n = 0, len(lines)

    def close():
        if old_path is not None:
            files[old_path] = RefFile(new_path, hunks)

    while i < n:
        line = lines[i]
        i += 1
        if line.startswith("diff --git "):
            close()
            old_path = new_path = None
            hunks = []
        elif line.startswith("--- "):
            old_path = strip_prefix(line[4:])
        elif line.startswith("+++ "):
            new_path = strip_prefix(line[4:])
        elif line.startswith("@@ -"):
            m = _HUNK.match(line)
            start, length = int(m[1]), 1 if m[2] is None else int(m[2])
            target, target_length = int(m[3]), 1 if m[4] is None else int(m[4])
            left, right, j = length, target_length, i
            while (left > 0 or right > 0) and j < n:
                kind = lines[j][:1]
                if kind != "+" and kind != "\\":
                    left -= 1
                if kind != "-" and kind != "\\":
                    right -= 1
                j += 1
            while j < n and lines[j][:1] == "\\":
                j += 1
            hunks.append((start, length, target, lines[i:j]))
            i = j
    close()
    return files


def reference_round(text: str, anchors: list[Anchor], files: dict[str, str]
                    ) -> dict[Anchor, tuple]:
    """Every anchor's (status, path, start, end), and the excerpt of its new range, from the
    diff's text."""
    by_path = reference_parse(text)
    split: dict[str, list[str]] = {}
    out = {}
    for a in anchors:
        ref = by_path.get(a.path)
        status, start, end = (Status.UNTOUCHED, a.start, a.end) if ref is None \
            else ref.map(a.start, a.end)
        path = a.path if ref is None else ref.path
        if path is not None and start is not None and path in files:
            lines = split.get(path)
            if lines is None:
                lines = split[path] = files[path].split("\n")
            "\n".join(lines[start - 1 : end])
        out[a] = (status, path, start, end)
    return out


class GitDiffs:
    """Each round's diff from ``git diff`` in a throwaway repository: difflib
    (``bench.tasks.diffs``) is quadratic on a hunk of 10,000 alternating edits; git is not."""

    def __init__(self, root: Path):
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self._git("init", "-q")

    def _git(self, *args: str) -> str:
        env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
        return subprocess.run(["git", "-C", str(self.root), *args], check=True, env=env,
                              capture_output=True, text=True).stdout

    def _write(self, files: dict[str, str]) -> None:
        for path, text in files.items():
            target = self.root / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)

    def start(self, files: dict[str, str]) -> None:
        self._write(files)
        self._git("add", "-A")
        self._git("-c", "user.name=bench", "-c", "user.email=bench@localhost", "commit", "-qm",
                  "round")

    def diff(self, files: dict[str, str]) -> str:
        """The diff from the last committed round to ``files``, which becomes the next."""
        self._write(files)
        self._git("add", "-A")
        text = self._git("diff", "--cached", "--no-color", "--no-renames", "-U3")
        self._git("-c", "user.name=bench", "-c", "user.email=bench@localhost", "commit", "-qm",
                  "round")
        return text


# -- one case --------------------------------------------------------------------------------


def clear_text_caches() -> None:
    """Forget what the tracker cached about earlier texts, so each round starts cold (as the
    first round a process decides on a pull request does)."""
    from tracker import anchors, rules, scope

    for module in (anchors, scope, rules):
        for name, value in vars(module).items():
            if name not in ("language", "_parser") and callable(getattr(value, "cache_clear",
                                                                        None)):
                value.cache_clear()


def _timed(work, *args):
    """``work(*args)`` and the CPU milliseconds it took (the machine may be shared: CPU time
    is what this process spent, not the time others' processes took from it)."""
    gc.collect()
    start = time.process_time()
    value = work(*args)
    return value, (time.process_time() - start) * 1000


def parse_trees(old: dict[str, str], new: dict[str, str]) -> None:
    """Parse every file's old and new text with tree-sitter, as the rules' scopes need."""
    from tracker.scope import _parser, language

    for path in sorted(set(old) | set(new)):
        parser = _parser(language(path) or "")
        for text in (old.get(path), new.get(path)):
            if parser is not None and text:
                parser.parse(text.encode())


def diff_shape(patch: unidiff.PatchSet) -> tuple[int, int, int]:
    """(files, hunks, changed lines) of a parsed diff."""
    hunks = sum(len(p) for p in patch)
    changed = sum(p.added + p.removed for p in patch)
    return len(patch), hunks, changed


def check_mapping(defects: list[Defect], anchors: list[Anchor], mine: dict, theirs: dict,
                  where: str) -> None:
    """The tracker and the reference must put every anchor at the same place, same status."""
    for d, a in zip(defects, anchors):
        m = mine[a]
        got = (m.status, m.anchor.path if m.anchor else None,
               m.anchor.start if m.anchor else None, m.anchor.end if m.anchor else None)
        if got != theirs[a]:
            sys.exit(f"bench.perf.ledger: {where}: defect {d.key} at {a.path}:{a.start}-{a.end}: "
                     f"the tracker maps it to {got}, the reference to {theirs[a]}")


def decide_from(number: int, text: str, files: dict[str, str], defects: list[Defect],
                signals) -> list:
    """The whole decision of a round, from the diff's text."""
    return decide_round(defects, RoundInput(number, DiffMap(text), files, signals))


def map_all(text: str, anchors: list[Anchor]) -> dict:
    """Every anchor mapped as ``decide`` maps it, from the diff's text."""
    diff = DiffMap(text)
    return {a: diff.map(a) for a in anchors}


KINDS = ("unidiff", "trees", "map", "decide", "reference")


def run_case(shape: str, count: int, rounds: int = ROUNDS, changed: int = CHANGED,
             repeats: int = REPEATS) -> tuple[dict[str, list[float]], tuple[int, int, int]]:
    """CPU milliseconds per round: ``unidiff`` (its full parse of the diff, for scale),
    ``trees`` (tree-sitter on both sides of every file, for scale), ``decide`` (once per
    round, cold), and ``map`` and ``reference`` (``repeats`` times each, interleaved), all
    from the diff's text; and the diff's shape (files, hunks, changed lines) in the last
    round."""
    times: dict[str, list[float]] = {k: [] for k in KINDS}
    shape_seen = (0, 0, 0)
    with tempfile.TemporaryDirectory() as tmp, Ledger(Path(tmp) / "big.db") as ledger:
        files = big_files(shape, 0, changed)
        repo = GitDiffs(Path(tmp) / "repo")
        repo.start(files)
        pr = ledger.pull_request(f"bench/big-{uuid.uuid4().hex[:8]}", count)["id"]
        ledger.begin_round(pr, "h0")
        with ledger.transaction():
            for finding, code in big_findings(shape, count, files):
                ledger.add_defect(pr, finding, 0, code=code)
        ledger.finish_round(pr, 1)
        for r in range(1, rounds + 1):
            new = big_files(shape, r, changed)
            text = repo.diff(new)
            patch, parse = _timed(unidiff.PatchSet, text)
            times["unidiff"].append(parse)
            times["trees"].append(_timed(parse_trees, files, new)[1])
            shape_seen = diff_shape(patch)
            ledger.begin_round(pr, f"h{r}")
            defects = [d for d in ledger.defects(pr) if not d.ignored]
            signals = ledger.signals(pr, r)
            anchored = [d for d in defects if d.anchored]
            anchors = [Anchor(d.path, d.line_start, d.line_end or d.line_start, d.side)
                       for d in anchored]
            clear_text_caches()
            decisions, decide = _timed(decide_from, r + 1, text, new, defects, signals)
            times["decide"].append(decide)
            for _ in range(repeats):
                mine, map_ms = _timed(map_all, text, anchors)
                theirs, reference = _timed(reference_round, text, anchors, new)
                check_mapping(anchored, anchors, mine, theirs,
                              f"{shape}, {count} defects, round {r}")
                times["map"].append(map_ms)
                times["reference"].append(reference)
            ledger.record_round(pr, r + 1, decisions)
            ledger.finish_round(pr, r + 1)
            files = new
    return times, shape_seen


def _spread(values: list[float]) -> str:
    return f"{min(values):.1f}/{statistics.median(values):.1f}/{max(values):.1f}"


def print_cases(shapes, sizes, rounds: int = ROUNDS, changed: int = CHANGED,
                repeats: int = REPEATS) -> list[dict]:
    """One line per shape and size: median CPU milliseconds per round and the ratios to the
    reference (min/median/max over the rounds), every side from the diff's text."""
    print(f"big diffs: about {changed:,} changed lines per round; median CPU ms over {rounds} "
          f"rounds (map and reference: {repeats} interleaved repeats per round); map, decide "
          "and reference each parse the diff's text themselves; ratios min/median/max of "
          "each round's own (decide) or each repeat's own (map)")
    print(f"{'shape':>6} {'files':>5} {'hunks':>6} {'changed':>7} {'defects':>7} "
          f"{'unidiff':>7} {'trees':>7} {'map':>7} {'decide':>8} {'ref':>7} "
          f"{'map/ref':>16} {'decide/ref':>17}")
    rows = []
    for shape in shapes:
        for n in sizes:
            times, (nfiles, hunks, lines) = run_case(shape, n, rounds, changed, repeats)
            t = {k: statistics.median(v) for k, v in times.items()}
            ref = times["reference"]
            map_ratios = [m / r for m, r in zip(times["map"], ref)]
            # each round's decide against the median reference of that round's repeats
            per_round = [statistics.median(ref[k * repeats:(k + 1) * repeats])
                         for k in range(len(times["decide"]))]
            decide_ratios = [d / r for d, r in zip(times["decide"], per_round)]
            row = {"shape": shape, "defects": n, "files": nfiles, "hunks": hunks,
                   "changed": lines, **t,
                   "map_ratio": statistics.median(map_ratios),
                   "decide_ratio": statistics.median(decide_ratios),
                   "map_ratios": map_ratios, "decide_ratios": decide_ratios}
            rows.append(row)
            print(f"{shape:>6} {nfiles:>5} {hunks:>6} {lines:>7} {n:>7} {t['unidiff']:>7.1f} "
                  f"{t['trees']:>7.1f} {t['map']:>7.1f} {t['decide']:>8.1f} "
                  f"{t['reference']:>7.1f} {_spread(map_ratios):>15}x "
                  f"{_spread(decide_ratios):>16}x", flush=True)
    return rows
