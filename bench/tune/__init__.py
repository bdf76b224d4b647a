"""Choosing the tracker's settings from the dev tasks, leave-one-repository-out.

``rules``: the rule switches and numeric thresholds (``python -m bench.tune.rules``);
``calibration``: the per-rule chance of being right, written to ``tracker/calibration.json``
(``python -m bench.tune.calibration --write``).
"""

__all__ = ["calibration", "rules"]
