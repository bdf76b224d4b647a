"""Progress of a bench run: rounds played out of all rounds, naming the task being played.

Tasks differ by an order of magnitude in rounds and size, so counting tasks says little about
how much is left. On a terminal a tqdm bar counts rounds and shows the task it last moved on;
in a log (stderr not a terminal) carriage-return redraws are noise, so one line is printed per
finished task instead.
"""

from __future__ import annotations

import sys
from typing import TextIO

from tqdm import tqdm


class Progress:
    """Counts rounds of ``rounds_by_task`` (task id -> its number of rounds)."""

    def __init__(self, rounds_by_task: dict[str, int], *, enabled: bool = True,
                 stream: TextIO | None = None, terminal: bool | None = None):
        self.stream = stream or sys.stderr
        self.total = sum(rounds_by_task.values())
        self.tasks = len(rounds_by_task)
        self.rounds_done = 0
        self.tasks_done = 0
        self.enabled = enabled
        if terminal is None:
            terminal = bool(getattr(self.stream, "isatty", lambda: False)())
        self.bar = (tqdm(total=self.total, desc="rounds", unit="round", file=self.stream)
                    if enabled and terminal else None)

    def round_done(self, task_id: str, number: int) -> None:
        """One round of ``task_id`` was played and recorded."""
        self.rounds_done += 1
        if self.bar is not None:
            self.bar.set_postfix_str(f"{task_id} R{number}", refresh=False)
            self.bar.update(1)

    def task_done(self, task_id: str, rounds: int, error: str | None = None) -> None:
        """``task_id`` finished (``rounds`` of its rounds were played) or failed."""
        self.tasks_done += 1
        if self.bar is not None or not self.enabled:
            return
        outcome = f"failed: {error}" if error else f"{rounds} round(s)"
        print(f"[{self.tasks_done}/{self.tasks} tasks, {self.rounds_done}/{self.total} rounds] "
              f"{task_id}: {outcome}", file=self.stream, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
