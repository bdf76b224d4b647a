"""The persistent per-PR defect ledger and the deterministic lifecycle tracker.

``tracker.ledger.Ledger`` stores every defect of every pull request in SQLite;
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
           "discussion",
           "intake",
           "interdiff",
           "learnings",
           "ledger",
           "ledger_base",
           "lifecycle",
           "lines",
           "models",
           "paths",
           "roundcache",
           "rules",
           "schema",
           "scope",
           "serial",
           "store",
           "subject",
           "suggestions",
           "verdicts",
]
