"""Studies (scripts, not tests): one design question each, answered from the bench's data.

Not the benchmark's figures (``bench.run`` and ``roundwise bench tracking`` give those) and not
speed: each module measures what a choice costs and prints the evidence the docs quote.
They use the pipeline (``bench.run``, ``bench.tasks.export``, ``bench.tasks.mcr``), which never
imports them (``tests/test_layers.py``).

- ``confidence_designs``: which confidence ranks the tracker's decisions best on repositories
  it has not seen (pooled rates, rates by repository, plus the round's other signals)?
- ``convergence``: do later rounds' posted findings fall, with ``converge`` off and on?
- ``learning_threshold``: at which (count, share) of dismissals should a kind of finding be
  held back (``tracker.learnings``)?
- ``label_agreement``: how far do live human-signal labels (``bench export``) agree with a task
  set's own labels?
- ``learned_rules``: would weights learned over every rule's evidence transfer better than the
  ordered rule table (leave-one-repository-out)?
- ``semantic_signal``: does a sentence model's similarity (comment against commit messages or
  added code) tell a met request from an unmet one?
"""

__all__ = ["confidence_designs", "convergence", "label_agreement", "learned_rules",
           "learning_threshold", "semantic_signal"]
