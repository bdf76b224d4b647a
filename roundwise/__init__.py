"""The ``roundwise`` command: the composition root above ``bot`` and ``bench``.

``bot`` (the App and local review) and ``bench`` (replay and scoring) each register their own
subcommands; this package joins them, so no arrow runs from ``bot`` up to ``bench``.
"""

__all__ = ["cli"]
