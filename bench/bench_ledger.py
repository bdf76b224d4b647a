"""Benchmark: the cost of one round's ledger update for PRs with 10, 100 and 1,000 defects.

Each PR has its defects spread over 20 files; every round edits a tenth of the anchored lines
and adds lines at the top of each file, so anchors move and some defects resolve. One round's
cost is decide_round (map every anchor, decide) plus record_round (one transaction writing
every decision) on a real SQLite file. Prints the median and p90 milliseconds per round.

    python -m bench.bench_ledger [--rounds 7]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from bench.diffs import git_diff
from tracker.decide import RoundInput, decide_round
from tracker.ledger import Ledger
from tracker.models import Finding

FILES = 20


def make_files(defects: int, round_number: int) -> dict[str, str]:
    per_file = max(defects // FILES, 1)
    files = {}
    for f in range(FILES):
        lines = [f"# round {round_number} header {k}" for k in range(round_number)]
        for i in range(per_file * 3):
            edited = round_number and i % 30 == 0 and i // 30 < round_number
            lines.append(f"value_{f}_{i} = compute({i})" + ("  # fixed" if edited else ""))
        files[f"pkg/mod_{f}.py"] = "\n".join(lines) + "\n"
    return files


def run(defects: int, rounds: int) -> list[float]:
    with tempfile.TemporaryDirectory() as tmp, Ledger(Path(tmp) / "bench.db") as ledger:
        pr = ledger.pull_request("bench/repo", defects)["id"]
        files = make_files(defects, 0)
        ledger.begin_round(pr, "h0")
        per_file = max(defects // FILES, 1)
        with ledger.transaction():
            for n in range(defects):
                f, i = n % FILES, (n // FILES) * 3
                path = f"pkg/mod_{f}.py"
                ledger.add_defect(pr, Finding(f"problem {n}", path, i + 1, i + 1), 0,
                                  code=files[path].splitlines()[i])
        ledger.finish_round(pr, 1)
        timings = []
        for r in range(1, rounds + 1):
            new = make_files(defects, r)
            diff = git_diff(files, new)
            ledger.begin_round(pr, f"h{r}")
            start = time.perf_counter()
            rnd = RoundInput.from_diff(r + 1, diff, new, ledger.signals(pr, r))
            decisions = decide_round(ledger.defects(pr), rnd)
            ledger.record_round(pr, r + 1, decisions)
            timings.append((time.perf_counter() - start) * 1000)
            ledger.finish_round(pr, r + 1)
            files = new
        assert per_file and len(ledger.defects(pr)) == defects
        return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    print(f"{'defects':>8} {'median ms/round':>16} {'p90 ms/round':>13} {'ms/defect':>10}")
    for n in (10, 100, 1000):
        t = sorted(run(n, args.rounds))
        med = statistics.median(t)
        p90 = t[min(len(t) - 1, round(0.9 * (len(t) - 1)))]
        print(f"{n:>8} {med:>16.1f} {p90:>13.1f} {med / n:>10.3f}")


if __name__ == "__main__":
    main()
