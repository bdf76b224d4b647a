"""One truth on the PR: after people change the ledger, every surface that shows it follows.

A round posts its summary, check run and thread states together. Between rounds people change
the ledger too (a reviewer's comment raises a defect, a reply says a fix is not right, a thread
is resolved, ``/roundwise resolve``/``ignore``/``unmute``), and each of those used to refresh one
surface only: the check said "3 open" while the sticky summary still said "1 open defect".
``refresh_surfaces`` is what every such job calls once, at its end: the summary re-rendered
from the ledger (edited only when it reads differently), then the check run
(``bot.pr.checks.refresh``), then the threads of the defects the job changed
(``bot.round.threads``): a bot thread folded when its defect is Resolved, any thread unfolded
when its defect is back. Before the PR's first round there is nothing to refresh.
"""

from __future__ import annotations

from tracker.lifecycle import State
from tracker.store import LedgerStore

from ..forge import Forge, NotFound
from ..pr import checks
from ..store.offload import off_loop
from . import RoundPlan, post_summary, summary_body
from .publish import body_sha
from .threads import sync_threads

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


async def _summary(forge: Forge, store: LedgerStore, pr: dict, last: dict,
                   bot_logins: set[str]) -> None:
    """Re-render the summary from the ledger; edit it only when it reads differently from
    what the last round (or the last refresh) posted, which the round's saved record knows,
    so most comments cost no call to the forge at all."""
    body = await off_loop(store, summary_body, store, pr["id"], last["number"],
                          last["head_sha"] or "", None)
    saved = await off_loop(store, store.plan, pr["id"], last["number"])
    plan = RoundPlan.from_json(saved) if saved else None
    record = plan.posted if plan else None
    shown = body_sha(body)
    if record is not None and record.summary_sha == shown:
        return
    if record is not None and record.summary_id:
        try:
            await forge.edit_issue_comment(record.summary_id, body)
        except NotFound:  # deleted on the forge: post it again
            record.summary_id = await post_summary(forge, pr["number"], body, bot_logins)
    else:
        summary_id = await post_summary(forge, pr["number"], body, bot_logins)
        if record is not None:
            record.summary_id = summary_id
    if plan is not None:
        record.summary_sha = shown
        await off_loop(store, store.save_plan, pr["id"], last["number"], plan.to_json())


async def refresh_surfaces(forge: Forge, store: LedgerStore, pr: dict, *, bot_logins: set[str],
                           changed: list[str] = ()) -> None:
    """Refresh the summary, the check and the threads of ``changed`` defects from the ledger."""
    last = await off_loop(store, store.last_round, pr["id"])
    if last is None:
        return
    await _summary(forge, store, pr, last, bot_logins)
    await checks.refresh(forge, store, pr)
    wanted = {}
    for key in dict.fromkeys(changed):
        want = thread_wanted(await off_loop(store, store.defect, pr["id"], key))
        if want is not None:
            wanted[key] = want
    for key, node in (await sync_threads(forge, store, pr, wanted)).items():
        await off_loop(store, store.set_thread, pr["id"], key, node)
