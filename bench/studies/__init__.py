"""Studies (scripts, not tests): one design question each, answered from the bench's data.

Not the benchmark's figures (``bench.run`` and ``roundwise bench tracking`` give those) and not
speed: each module measures what a choice costs and prints the evidence the README quotes.
They use the pipeline (``bench.run``, ``bench.export``, ``bench.tasks``), which never imports
them (``tests/test_layers.py``).

- ``convergence``: do later rounds' posted findings fall, with ``converge`` off and on?
- ``learning_threshold``: at which (count, share) of dismissals should a kind of finding be
  held back (``tracker.learnings``)?
- ``label_agreement``: how far do live human-signal labels (``bench export``) agree with a task
  set's own labels?
"""

__all__ = ["convergence", "label_agreement", "learning_threshold"]
