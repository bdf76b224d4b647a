"""Start-up clean-up of the temporary folders a killed server left behind.

The offline reviewer runs ruff on a round's files in a ``roundwise-ruff-PID-*`` folder under the
system's temporary directory, removed when ruff is done; a process killed meanwhile (out of
memory on a hostile PR, kill -9) leaves it, tens of megabytes each time. At start-up
``clean_stale`` removes those whose process is gone (and, for the older unnumbered name, those
untouched for an hour). Folders of a live process, another server's on the same host say, stay.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import time
from pathlib import Path

__all__ = ["PREFIX", "clean_stale", "prefix"]

log = logging.getLogger(__name__)

PREFIX = "roundwise-ruff-"
OLD_AGE = 3600.0  # seconds: an unnumbered folder this old is no live run's


def prefix() -> str:
    """The prefix of this process's folders (``roundwise-ruff-PID-``)."""
    return f"{PREFIX}{os.getpid()}-"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def clean_stale(root: str | None = None) -> int:
    """Remove stale ruff folders under ``root`` (the temporary directory); how many."""
    removed = 0
    now = time.time()
    for path in Path(root or tempfile.gettempdir()).glob(PREFIX + "*"):
        if path.is_symlink() or not path.is_dir():
            continue
        pid_text = path.name[len(PREFIX):].split("-", 1)[0]
        try:
            if pid_text.isdigit():
                stale = int(pid_text) != os.getpid() and not _alive(int(pid_text))
            else:
                stale = now - path.stat().st_mtime > OLD_AGE
            if stale:
                shutil.rmtree(path)
                removed += 1
        except OSError as exc:  # someone else's, or gone meanwhile
            log.debug("could not remove %s: %s", path, exc)
    if removed:
        log.info("removed %d stale %s* folder(s) left by a stopped server", removed, PREFIX)
    return removed
