"""One truth on the PR: after people change the ledger, every surface that shows it follows.

A round posts its summary, check run and thread states together. Between rounds people change
the ledger too (a reviewer's comment raises a defect, a reply says a fix is not right, a thread
is resolved, ``/roundwise resolve``/``ignore``/``unmute``), and each of those used to refresh one
surface only: the check said "3 open" while the sticky summary still said "1 open defect".
``refresh_surfaces`` is what every such job calls once, at its end: the summary re-rendered
from the ledger (edited only when it reads differently), then the check run
(``bot.checks.refresh``), then the threads of the defects the job changed
(``bot.round.threads``): a bot thread folded when its defect is Resolved, any thread unfolded
when its defect is back. Before the PR's first round there is nothing to refresh.
"""

from __future__ import annotations

from tracker.ledger import Ledger
from tracker.lifecycle import State

from . import checks
from .forge import Forge
from .round import post_summary, summary_body
from .round.threads import sync_threads
from .store.offload import off_loop

__all__ = ["refresh_surfaces", "thread_wanted"]


def thread_wanted(defect) -> bool | None:
    """Whether the defect's thread should be resolved (True), open (False), or left alone."""
    if defect.ignored:
        return None
    if defect.state is State.RESOLVED:
        return True if defect.origin.value == "bot" else None
    if defect.state in (State.REOPENED, State.OPEN):
        return False
    return None


async def refresh_surfaces(forge: Forge, store: Ledger, pr: dict, *, bot_logins: set[str],
                           changed: list[str] = ()) -> None:
    """Refresh the summary, the check and the threads of ``changed`` defects from the ledger."""
    last = await off_loop(store, store.last_round, pr["id"])
    if last is None:
        return
    body = await off_loop(store, summary_body, store, pr["id"], last["number"],
                          last["head_sha"] or "", None)
    await post_summary(forge, pr["number"], body, bot_logins)
    await checks.refresh(forge, store, pr)
    wanted = {}
    for key in dict.fromkeys(changed):
        want = thread_wanted(await off_loop(store, store.defect, pr["id"], key))
        if want is not None:
            wanted[key] = want
    for key, node in (await sync_threads(forge, store, pr, wanted)).items():
        await off_loop(store, store.set_thread, pr["id"], key, node)
