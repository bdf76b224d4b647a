"""Deciding a big diff: each defect costs what it costs on a small one, and anchors land where
an independent bisect over the diff puts them.

The cost is counted, not timed: the Python lines the tracker executes while it decides
(``sys.settrace``), which do not depend on the machine's load. What one more defect costs
must not grow with the number of changed lines; before the per-round indexes it grew with it
(every defect rescanned the whole hunk and rebuilt the file's added lines and their tokens).
"""

from __future__ import annotations

import random
import shutil
import sys
from pathlib import Path

import pytest
import unidiff

from bench.perf import bigdiff as bench_bigdiff
from bench.perf.bigdiff import GitDiffs, big_files, reference_parse
from bot.store.ledger_sqlite import Ledger
from tracker.anchors import NEARBY_LINES, Anchor, DiffMap, FileMap, Status
from tracker.decide import RoundInput, decide_round
from tracker.diffparse import hunk_lines
from tracker.models import Finding

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git for the diffs")

TRACKER = str(Path(__file__).resolve().parent.parent / "tracker")


def traced_lines(work, where: str = TRACKER) -> int:
    """How many lines of tracker/ code (of the files whose path starts with ``where``) run
    while ``work()`` runs."""
    count = 0

    def tracer(frame, event, arg):
        nonlocal count
        if not frame.f_code.co_filename.startswith(where):
            return None
        if event == "line":
            count += 1
        return tracer

    sys.settrace(tracer)
    try:
        work()
    finally:
        sys.settrace(None)
    return count


class ScannedText:
    """A stand-in for ``tracker.scope``'s token pattern that counts the characters it
    scans: a C call that ``traced_lines`` cannot see (tokenising a whole file per defect
    cost 86 s on the giant diff while adding no traced line per defect)."""

    def __init__(self, pattern):
        self.pattern, self.chars = pattern, 0

    def findall(self, text: str) -> list[str]:
        self.chars += len(text)
        return self.pattern.findall(text)


def scanned_chars(work) -> int:
    """How many characters ``tracker.scope`` tokenises while ``work()`` runs."""
    from tracker import scope

    meters = ScannedText(scope._TOKEN), ScannedText(scope._ASCII_TOKEN)
    scope._TOKEN, scope._ASCII_TOKEN = meters
    try:
        work()
    finally:
        scope._TOKEN, scope._ASCII_TOKEN = (meter.pattern for meter in meters)
    return sum(meter.chars for meter in meters)


def decide_cost(rounds: list[dict[str, str]], findings, tmp: Path, meter=traced_lines) -> int:
    """Tracker lines run (or what ``meter`` counts) to decide round 2 (the first push) of
    ``findings`` on ``rounds``."""
    repo = GitDiffs(tmp / "repo")
    repo.start(rounds[0])
    patch = unidiff.PatchSet(repo.diff(rounds[1]))
    with Ledger(tmp / "ledger.db") as ledger:
        pr = ledger.pull_request("o/r", 1)["id"]
        ledger.begin_round(pr, "h0")
        with ledger.transaction():
            for finding, code in findings:
                ledger.add_defect(pr, finding, 0, code=code)
        ledger.finish_round(pr, 1)
        defects = ledger.defects(pr)
    bench_bigdiff.clear_text_caches()
    return meter(lambda: decide_round(defects, RoundInput(2, DiffMap(patch), rounds[1])))


def per_defect(shape_files, findings_of, tmp: Path, few: int, many: int,
               meter=traced_lines) -> float:
    """What each defect beyond ``findings_of(few)`` costs in ``findings_of(many)``; work done
    once per file cancels out, and work done once per process (the calibration table read
    and its rates worked out) is done before, or the first measurement alone would pay it."""
    from tracker import calibration

    calibration.current().confidence("anchor-untouched", 0.9)
    costs, sizes = [], []
    for n, where in ((few, "a"), (many, "b")):
        (tmp / where).mkdir(parents=True)
        findings = findings_of(n)
        costs.append(decide_cost(shape_files, findings, tmp / where, meter))
        sizes.append(len(findings))
    return (costs[1] - costs[0]) / (sizes[1] - sizes[0])


SPOTS = [  # (body line, extra lines, what the comment says) of each commented function
    (0, 0, "`{word}` is computed twice here"),
    (1, 0, "please call `validate_{b}` before this"),
    (2, 2, "```suggestion\n{last}  # checked\n```"),
    (3, 0, "this is not thread safe"),
    (5, 0, "`compute` may raise here"),
    (8, 0, "`w_{f}_{b}` should change with this"),
]


def commented(shape: str, files: dict[str, str], blocks: list[int]) -> list:
    """The same comments at the same places of functions ``blocks`` of at most two files:
    what surrounds each is the same however big the rest of the diff is."""
    size = bench_bigdiff.HUNK_BLOCK if shape == "hunks" else bench_bigdiff.GIANT_BLOCK
    out = []
    for f, path in enumerate(sorted(files)[:2]):
        lines = files[path].split("\n")
        for b in blocks:
            for j, extra, text in SPOTS:
                n = b * size + 2 + j
                code = lines[n - 1 : n + extra]
                out.append((Finding(text.format(word=code[0].split()[0], b=b, f=f,
                                                last=code[-1].strip()), path, n, n + extra),
                            "\n".join(code)))
    return out


@pytest.mark.parametrize("shape,changed", [("giant", 400), ("hunks", 1000)])
def test_a_defect_costs_the_same_on_a_diff_four_times_bigger(shape, changed, tmp_path):
    """One giant hunk, or hundreds of hunks over 20 files: the same comments in the same
    places cost the same with four times the changed lines around them."""
    blocks = [b for b in range(1, 40) if b % 7 and b % 10][:4]  # plain functions
    marginal = {}
    for size in (changed, 4 * changed):
        files = [big_files(shape, r, size) for r in (0, 1)]
        marginal[size] = per_defect(
            files, lambda n, f=files[0]: commented(shape, f, blocks[: n]), tmp_path / str(size),
            2, 4)
    assert marginal[4 * changed] < 1.15 * marginal[changed], marginal


@pytest.mark.parametrize("shape,changed", [("giant", 400), ("hunks", 1000)])
def test_a_defect_tokenises_the_same_text_on_a_diff_four_times_bigger(shape, changed, tmp_path):
    """What a defect tokenises (its lines, its scope) does not grow with its file: whole
    files are tokenised once per round for all the defects in them."""
    blocks = [b for b in range(1, 40) if b % 7 and b % 10][:4]
    marginal = {}
    for size in (changed, 4 * changed):
        files = [big_files(shape, r, size) for r in (0, 1)]
        marginal[size] = per_defect(
            files, lambda n, f=files[0]: commented(shape, f, blocks[: n]), tmp_path / str(size),
            2, 4, scanned_chars)
    assert marginal[4 * changed] < 1.15 * marginal[changed] + 200, marginal


def many_files(count: int, size: int, round_number: int) -> dict[str, str]:
    """``count`` Python files of ``size`` lines, every third line edited in round 1."""
    out = {}
    for f in range(count):
        lines = [f"v_{f}_{i} = compute({i})" + ("  # r1" if round_number and i % 3 == 0
                                                 else "") for i in range(size)]
        out[f"pkg/m{f}.py"] = "\n".join(lines) + "\n"
    return out


def round_robin(files: dict[str, str], n: int) -> list[tuple[Finding, str]]:
    """``n`` defects on untouched lines, one file after the other."""
    paths = sorted(files)
    out = []
    for k in range(n):
        path, line = paths[k % len(paths)], 2 + 3 * (k // len(paths))
        out.append((Finding(f"`v_{k}` here", path, line, line),
                    files[path].split("\n")[line - 1]))
    return out


def test_a_round_over_more_files_than_a_cache_holds_reads_each_file_once(tmp_path):
    """70 files (more than the 64 texts the caches keep between rounds), defects taking
    turns among them: within a round each file is split, normalised and tokenised once, so a
    defect costs the same whatever the size of its file."""
    marginal = {}
    for size in (30, 120):
        rounds = [many_files(70, size, r) for r in (0, 1)]
        marginal[size] = per_defect(rounds, lambda n, f=rounds[0]: round_robin(f, n),
                                    tmp_path / str(size), 70, 140)
    assert marginal[120] < 1.3 * marginal[30], marginal


def test_a_defect_costs_the_same_however_many_files_the_round_touches(tmp_path):
    """The same defects in one file, and the round touching 10 or 40 files: what a defect
    asks about the round's paths (other files edited, test files edited) is worked out once
    per diff, not once per defect and path."""
    marginal = {}
    for count in (10, 40):
        rounds = [many_files(count, 30, r) for r in (0, 1)]
        one = {"pkg/m0.py": rounds[0]["pkg/m0.py"]}
        marginal[count] = per_defect(rounds, lambda n, f=one: round_robin(f, n),
                                     tmp_path / str(count), 4, 8)
    assert marginal[40] < 1.05 * marginal[10], marginal


def alike(files: dict[str, str], n: int) -> list[tuple[Finding, str]]:
    """``n`` defects saying the same about untouched lines next to edited ones (``many_files``
    edits every third line) of one file."""
    path = min(files)
    lines = files[path].split("\n")
    return [(Finding("`compute` may raise here", path, k, k), lines[k - 1])
            for k in range(2, 3 * n + 2, 3)]


def test_defects_alike_read_their_comment_and_calibrate_once(tmp_path):
    """Defects with the same comment and the same evidence: the comment is read once, and
    the calibration table's answer for a rule, answer and signals is worked out once, however
    many defects share them."""
    from tracker.subject import read_subject

    rounds = [many_files(1, 120, r) for r in (0, 1)]
    calibrating, reading = (
        per_defect(rounds, lambda n, f=rounds[0]: alike(f, n), tmp_path / part, 5, 25,
                   lambda work, part=part: traced_lines(work, f"{TRACKER}/{part}"))
        for part in ("calibration.py", "subject.py"))
    assert calibrating == 0
    # what a defect runs in subject.py (matching the subject against its lines) is less
    # than reading the comment once
    once = traced_lines(lambda: read_subject.__wrapped__("`compute` may raise here"),
                        f"{TRACKER}/subject.py")
    assert 0 < reading < once / 2, (reading, once)


class CountedParser:
    """A stand-in for ``tracker.scope``'s parser that counts the texts it parses."""

    def __init__(self, parser):
        self.parser, self.texts = parser, 0

    def parse(self, text):
        self.texts += 1
        return self.parser.parse(text)


def test_no_file_is_parsed_for_a_confidence_a_calibration_table_replaces(tmp_path,
                                                                         monkeypatch):
    """Defects on untouched lines, each next to an edit: ``anchor-untouched`` is surer when
    the function around the lines did not change, but with a calibration table (its chances
    replace the rules' own confidences) nothing else these decisions read needs the function
    around them, and the file is not parsed. Without the table the rule's own confidence
    reads it, and it is parsed once."""
    from tracker import calibration, scope

    shape_files = [big_files("giant", r, 400) for r in (0, 1)]
    path = "pkg/giant.py"
    lines = shape_files[0][path].split("\n")
    # body lines 1 and 2 of every function: not edited, next to an edited line
    spots = [b * bench_bigdiff.GIANT_BLOCK + 2 + j for b in range(1, 6) for j in (1, 2)]
    findings = [(Finding("`compute` may raise here", path, n, n), lines[n - 1])
                for n in spots]
    parsers, real = {}, scope._parser

    def counted(name):
        if name not in parsers:
            parsers[name] = CountedParser(real(name))
        return parsers[name]

    monkeypatch.setattr(scope, "_parser", counted)
    decided = {}
    for table in ("on", "off"):
        monkeypatch.setenv("ROUNDWISE_CALIBRATION", table)
        parsers.clear()
        (tmp_path / table).mkdir()
        decided[table] = []
        decide_cost(shape_files, findings, tmp_path / table,
                    lambda work, out=decided[table]: out.extend(work()))
        assert bool(calibration.current().by_repo) == (table == "on")  # the table in use
        decided[table].append(sum(p.texts for p in parsers.values()))
    *on, parsed_on = decided["on"]
    *off, parsed_off = decided["off"]
    assert [d.rule for d in on] == [d.rule for d in off] == ["anchor-untouched"] * len(spots)
    assert [d.profile for d in on] == [d.profile for d in off]
    assert all(d.profile["near_changed"] for d in on)
    assert {d.confidence for d in off} == {0.55}  # the function around each line changed
    assert (parsed_on, parsed_off) == (0, 1)


def test_the_new_text_is_not_tokenised_again_where_the_diff_says_what_changed(tmp_path):
    """A defect naming code and one naming none in a file of 3,000 lines, every third one
    edited: the profile counts what the first names in the new text from the old text's
    counts and the lines the diff swapped, the second needs no count, and the new text is
    not tokenised whole."""
    rounds = [many_files(1, 3000, r) for r in (0, 1)]
    path = "pkg/m0.py"
    lines = rounds[0][path].split("\n")
    findings = [(Finding("`v_1` and `compute` here", path, 2, 2), lines[1]),
                (Finding("this is not thread safe", path, 5, 5), lines[4])]
    scanned = decide_cost(rounds, findings, tmp_path, scanned_chars)
    changed = sum(len(line) + 1 for line in rounds[1][path].split("\n")[::3])  # added lines
    removed = sum(len(line) + 1 for line in rounds[0][path].split("\n")[::3])
    assert scanned < len(rounds[0][path]) + changed + removed + 1000, scanned


@pytest.mark.parametrize("seed", range(8))
def test_the_swapped_lines_count_every_token_of_the_new_text(seed, tmp_path):
    """Random edits: every token's count in the new text is its count in the old text plus
    the lines the diff adds less those it removes (``diffindex.swapped_tokens``)."""
    from tracker.diffindex import swapped_tokens
    from tracker.rules import old_text_of
    from tracker.scope import tokens

    old, new = random_rounds(seed)
    repo = GitDiffs(tmp_path / "repo")
    repo.start(old)
    diff = DiffMap(repo.diff(new))
    before = old_text_of(diff, new, "a.py")
    assert before == old["a.py"]
    added, removed = swapped_tokens(diff, "a.py", "a.py", before, new["a.py"])
    after = tokens(before)
    after.update(added)
    after.subtract(removed)
    assert +after == tokens(new["a.py"])


def test_names_on_no_added_line_build_no_index_of_the_added_lines(tmp_path):
    """Defects naming code that stands in their file but on none of the lines this round
    adds: ``subject_touched`` looks no further than the added lines' tokens, and the index
    of where each token is added (a pass over every added line) is not built."""
    from tracker.diffindex import changes

    rounds = [many_files(1, 300, r) for r in (0, 1)]
    path = "pkg/m0.py"
    lines = rounds[0][path].split("\n")
    findings = [(Finding(f"`v_0_{n - 1}` is computed twice", path, n, n), lines[n - 1])
                for n in (2, 3, 5, 6)]  # lines not edited (every third one is)
    repo = GitDiffs(tmp_path / "repo")
    repo.start(rounds[0])
    diff = DiffMap(repo.diff(rounds[1]))
    with Ledger(tmp_path / "ledger.db") as ledger:
        pr = ledger.pull_request("o/r", 1)["id"]
        ledger.begin_round(pr, "h0")
        for finding, code in findings:
            ledger.add_defect(pr, finding, 0, code=code)
        ledger.finish_round(pr, 1)
        defects = ledger.defects(pr)
    decided = decide_round(defects, RoundInput(2, diff, rounds[1]))
    assert [d.rule for d in decided] == ["anchor-untouched"] * 4
    assert changes(diff, path)._where is None


def test_a_remark_naming_code_tokenises_only_the_texts_that_hold_the_name(tmp_path):
    """A remark on the whole pull request naming code of one of ten files: whether it names
    code of the PR is read from the token counts of the texts the name stands in (a token of
    a text is a substring of it), not of every file before the one that holds it."""
    rounds = [many_files(10, 300, r) for r in (0, 1)]
    findings = [(Finding("`v_9_5` should be validated first"), None)]
    scanned = decide_cost(rounds, findings, tmp_path, scanned_chars)
    one_file = len(rounds[1]["pkg/m9.py"])
    changed = sum(len(text) for text in rounds[1].values()) // 3 + \
        sum(len(text) for text in rounds[0].values()) // 3  # every third line, both sides
    assert scanned < 2 * one_file + changed, (scanned, one_file, changed)


def test_the_per_round_memory_is_let_go_after_the_round(tmp_path):
    """What a round worked out about its texts does not outlive it: the small cache used
    between rounds is not filled by deciding one."""
    from tracker.anchors import file_lines

    rounds = [many_files(70, 30, r) for r in (0, 1)]
    file_lines.cache_clear()
    decide_cost(rounds, round_robin(rounds[0], 70), tmp_path)
    assert file_lines.cache_info().currsize == 0


# -- where anchors go --------------------------------------------------------------------------


def scanned(fm: FileMap, lo: int, hi: int) -> tuple[list[str], list[str], bool]:
    """Removed lines, added lines and 'an edit next to it', by walking every line of every
    hunk (the mapping as it was before it bisected)."""
    removed, added, nearby = [], [], False
    for start, _, hunk in fm._hunks:
        last, last_removed = start - 1, False
        for ln in hunk_lines(hunk):  # unidiff's line objects, as the mapping once read them
            if ln.line_type == "\\":
                continue
            if ln.line_type == " ":
                last, last_removed = ln.source_line_no, False
            elif ln.line_type == "-":
                last, last_removed = ln.source_line_no, True
                if lo <= last <= hi:
                    removed.append(ln.value.rstrip("\n"))
                elif lo - NEARBY_LINES <= last <= hi + NEARBY_LINES:
                    nearby = True
            elif lo <= last < hi or (last_removed and last == hi):
                added.append(ln.value.rstrip("\n"))
            elif lo - NEARBY_LINES <= last <= hi + NEARBY_LINES:
                nearby = True
    return removed, added, nearby


def random_rounds(seed: int) -> list[dict[str, str]]:
    rng = random.Random(seed)
    vocab = ["}", "", "return x", "{", "x = 1", "# note"]
    lines = [rng.choice(vocab) if rng.random() < 0.3 else f"v{i} = g({i})"
             for i in range(rng.randint(50, 400))]
    new = []
    for i, line in enumerate(lines):
        p = rng.random()
        if p < 0.08:
            continue  # deleted
        new.append(line + "  # e" if p < 0.2 else line)
        if p > 0.93:
            new += [rng.choice(vocab + [f"w{i}_{k} = 2" for k in range(3)])
                    for _ in range(rng.randint(1, 8))]
    if rng.random() < 0.5:
        new = [f"head{k}" for k in range(rng.randint(1, 4))] + new
    return [{"a.py": "\n".join(lines) + "\n"}, {"a.py": "\n".join(new) + "\n"}]


@pytest.mark.parametrize("seed", range(8))
def test_every_anchor_lands_where_an_independent_bisect_puts_it(seed, tmp_path):
    """Random edits (deletions, edits, insertions, new lines on top), every range of 1, 2 and
    5 lines: the status and new range agree with the bench's reference (sorted arrays and
    bisect, written apart from the tracker), and the lines removed, added and next to it
    with a walk over every hunk line."""
    old, new = random_rounds(seed)
    repo = GitDiffs(tmp_path / "repo")
    repo.start(old)
    text = repo.diff(new)
    diff, ref = DiffMap(text), reference_parse(text)["a.py"]
    size = old["a.py"].count("\n")
    checked = 0
    for lo in range(1, size + 1):
        for hi in {lo, lo + 1, lo + 4}:
            if hi > size:
                continue
            m = diff.map(Anchor("a.py", lo, hi))
            assert (m.status, m.anchor.start, m.anchor.end) == ref.map(lo, hi), (lo, hi)
            assert (m.removed, m.added, m.nearby_change) == scanned(diff.files["a.py"], lo, hi)
            checked += 1
    assert checked > 100 and any(diff.map(Anchor("a.py", n, n)).status is Status.DELETED
                                 for n in range(1, size + 1))
