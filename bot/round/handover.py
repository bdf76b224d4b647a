"""Closing the rounds a newer head left behind, and handing on what they already posted.

A round that failed part-way (a crash, GitHub down) resumes when its job runs again, but only
while the PR's head stays the same: once a newer push arrives, the old round would stay
``running`` or ``failed`` forever and its inline comments, on GitHub but not in the ledger's
defects, would be raised again by the next round under new keys. Before a round of a new head
begins, ``close_superseded`` looks at the hidden markers of the bot's comments: the defects an
old round posted become tracked defects (anchored on the head that round reviewed), so the next
round tracks them instead of raising them twice, and the old round ends ``superseded``, its
check run completed (``neutral``) rather than left ``in_progress``.
"""

from __future__ import annotations

import logging

from tracker.store import LedgerStore

from ..forge import Forge
from ..pr import checks
from ..store.offload import off_loop
from .plan import RoundPlan
from .publish import _markers

__all__ = ["close_superseded"]

log = logging.getLogger(__name__)


async def close_superseded(forge: Forge, store: LedgerStore, pr: dict, head: str, *,
                           bot_logins: set[str], bot_login: str | None = None) -> list[int]:
    """Close every unfinished round of ``pr`` for a head other than ``head``; their numbers."""
    stale = [r for r in await off_loop(store, store.rounds, pr["id"])
             if r["status"] in ("running", "failed") and r["head_sha"] != head]
    posted: dict | None = None
    for rnd in stale:
        number, handed = rnd["number"], []
        saved = await off_loop(store, store.plan, pr["id"], number)
        if saved:
            if posted is None:
                posted = _markers(await forge.review_comments(pr["number"]), bot_logins)
            plan = RoundPlan.from_json(saved)
            if any(("new", item.key, number) in posted for item in plan.new):
                handed = plan.new
        if handed and handed[0].key != await off_loop(store, store.next_key, pr["id"]):
            log.warning("round %d's keys are taken; its defects are not handed on", number)
            handed = []
        # its check first: a crash after the hand-over would leave it spinning for good
        await checks.supersede(forge, store, pr["id"], number, head)
        await off_loop(store, _hand_over, store, pr, rnd, handed, posted, head, bot_login)
        log.info("round %d (%s) superseded by %s; %d posted defect(s) handed on", number,
                 rnd["head_sha"][:7], head[:7], len(handed))
    return [r["number"] for r in stale]


def _hand_over(store: LedgerStore, pr: dict, rnd: dict, handed: list, posted: dict | None,
               head: str, bot_login: str | None) -> None:
    """Track what round ``rnd`` posted and close it ``superseded``, in one transaction."""
    number = rnd["number"]
    with store.transaction():
        store.record_round(pr["id"], number, [], [(i.finding, i.code) for i in handed],
                           [i.key for i in handed], head_sha=rnd["head_sha"])
        for item in handed:
            cid = posted.get(("new", item.key, number)) if posted else None
            if cid is not None:
                store.attach_comment(store.defect(pr["id"], item.key).id, cid,
                                     author=bot_login, posted_by_bot=True)
        store.finish_round(pr["id"], number, "superseded", findings=len(handed),
                           error=f"superseded by {head[:7]} ({rnd['status']}: "
                                 f"{rnd.get('error') or 'interrupted'})"[:500])
