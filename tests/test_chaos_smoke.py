"""``python -m bench.chaos`` at smoke size: a real ``roundwise serve`` killed and restarted
under GitHub faults still reviews every head once and leaves nothing stuck."""

from __future__ import annotations

import json
import subprocess
import sys


def test_chaos_smoke():
    run = subprocess.run(
        [sys.executable, "-m", "bench.chaos", "--prs", "3", "--pushes", "2", "--kills", "2",
         "--deadline", "60", "--seed", "3"],
        check=False, capture_output=True, text=True, timeout=90)
    figures = json.loads(run.stdout)
    assert run.returncode == 0, (figures, run.stderr[-2000:])
    assert figures["kills"] == 2 and figures["server_starts"] == 3
    assert figures["stuck_jobs"] == 0 and figures["duplicate_defects"] == 0
    assert figures["unfinished_rounds"] == 0
    assert figures["final_heads_unreviewed"] == [] and figures["reviews"] >= 3
    assert sum(figures["faults_injected"].values()) > 0
