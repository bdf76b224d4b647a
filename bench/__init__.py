"""Offline replay of multi-round review tasks (``mcr-task/1``) and their MCR-Bench scoring.

The top level is the benchmark's own pipeline: load tasks (``tasks``, ``aacr``), replay them
through the real bot (``replay``, ``replay_gitlab``, ``payloads``, ``posted``), score
(``scoring``, ``judge``, ``metrics``, ``provenance``), report (``report``, ``conversation``), run
it all (``run``, ``cli``), make tasks (``export``, ``mine``) and measure and tune the tracker
alone (``tracking``, ``tune_tracking``, ``fit_tracking``). What the pipeline replays against is
beside it (``fake_github``, ``fake_gitlab``, ``scripted_llm``, ``local_model``). The scripts that
measure other things live in packages of their own, which may use the pipeline but which the
pipeline never imports: ``perf`` (speed and load), ``faults`` (correctness under kills, injected
faults and hostile tenants) and ``studies`` (one design question each, answered from the
bench's data).
"""

__all__ = ["aacr", "cli", "context", "conversation", "diffs", "examples", "export", "export_cli",
           "fake_github", "fake_gitlab", "faults", "fit_tracking", "judge", "local_model",
           "metrics", "mine", "payloads", "perf", "posted", "progress", "provenance", "replay",
           "replay_gitlab", "report", "run", "scoring", "scripted_llm", "stateless", "studies",
           "tasks", "tracking", "tune_tracking"]
