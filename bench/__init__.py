"""Offline replay of multi-round review tasks (``mcr-task/1``) and their MCR-Bench scoring.

The benchmark's own pipeline is in rooms along its flow: the tasks it reads and makes
(``tasks``: the format, AACR-Bench, export and mining), their replay through the real bot per
code host (``replay``), their scoring (``score``: the protocol's metrics, the judge, tracking,
the stateless baseline) and the report of a run (``report``); ``run`` and ``cli`` drive it all,
with ``progress`` on the terminal, and ``tune`` chooses the tracker's settings from it. What the
pipeline replays against is beside it (``fake_github``, ``fake_gitlab``, ``scripted_llm``,
``local_model``). The scripts that measure other things live in packages of their own, which
may use the pipeline but which the pipeline never imports: ``perf`` (speed and load),
``faults`` (correctness under kills, injected faults and hostile tenants) and ``studies`` (one
design question each, answered from the bench's data).
"""

__all__ = ["cli", "examples", "fake_github", "fake_gitlab", "faults", "local_model", "perf",
           "progress", "replay", "report", "run", "score", "scripted_llm", "studies", "tasks",
           "tune"]
