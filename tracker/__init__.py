"""The persistent per-PR defect ledger and the deterministic lifecycle tracker.

``tracker.store.LedgerStore`` is what the ledger of every defect of every pull request offers
(its engines, SQLite and PostgreSQL, are ``bot.store``'s, over ``tracker.ledger_base``);
``tracker.anchors`` follows anchored lines across pushes; ``tracker.decide`` decides each
defect's state at every round with evidence; ``tracker.intake`` turns people's comments into
defects and signals. No network I/O happens in this package.
"""

__all__ = [
           "anchors",
           "batch",
           "calibration",
           "decide",
           "dedupe",
           "diffindex",
           "diffparse",
           "discussion",
           "intake",
           "interdiff",
           "learnings",
           "ledger_base",
           "lifecycle",
           "lines",
           "locations",
           "models",
           "paths",
           "profile",
           "roundcache",
           "rules",
           "scope",
           "serial",
           "store",
           "subject",
           "suggestions",
           "verdicts",
]
