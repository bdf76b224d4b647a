"""Fault harnesses (scripts, not tests): the real server keeps its promises when things break.

Each module is one ``python -m bench.faults.<name>`` script that runs real ``roundwise serve``
processes on loopback, breaks something on purpose and then checks invariants from GitHub's
side and the ledger's (nothing lost, nothing posted twice, every head reviewed), exiting 1
when one fails. They may import the pipeline's helpers (``bench.replay.payloads``,
``bench.replay.github``) and ``bench.perf``'s, never the other way round (``tests/test_layers.py``).

- ``chaos``: a soak with SIGKILLs, restarts and injected GitHub faults;
- ``load_cluster``: several replicas on one PostgreSQL database under load, one killed and
  restarted (its jobs taken over);
- ``noisy_neighbour``: one hostile tenant (huge diffs, trickled bodies) must not slow the others.
"""

__all__ = ["chaos", "load_cluster", "noisy_neighbour"]
