"""One review round in four steps: ``gather`` → ``plan`` → ``publish`` → ``commit``.

``gather(forge, store, ...)`` reads the forge and the ledger into ``RoundInputs``; ``plan(engine,
inputs)`` reviews them into a typed ``RoundPlan`` (no forge, no ledger); ``publish(forge, ...)``
posts it and returns a ``RoundRecord``; ``commit(store, ...)`` writes both into the ledger in one
transaction. ``RoundRunner`` runs the steps for the server; ``roundwise review`` runs gather,
plan and commit on a local git forge. Between rounds, when people change the ledger,
``surfaces.refresh_surfaces`` brings the summary, the check run and the threads in step.
"""

from .commit import commit
from .gather import RoundInputs, gather, read_settings
from .plan import NewDefect, RoundPlan, RoundRecord, plan
from .publish import post_summary, publish, summary_body
from .runner import RoundRunner

__all__ = ["NewDefect", "RoundInputs", "RoundPlan", "RoundRecord", "RoundRunner", "commit",
           "gather", "handover", "plan", "post_summary", "publish", "read_settings", "runner",
           "summary_body", "surfaces", "threads"]
