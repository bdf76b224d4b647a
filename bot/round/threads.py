"""Review threads shown as their defects stand: folded when Resolved, unfolded when back.

GitHub folds a resolved thread. The bot resolves its own threads when their defect is
Resolved; when a defect comes back (Reopened, or reopened by a reviewer saying it is still not
fixed), its thread is unresolved, so the reply saying so is not hidden in a folded thread
(GraphQL ``unresolveReviewThread``). ``sync_threads`` does either for the defects it is given,
with one read of the PR's threads, and only where GitHub shows otherwise.
"""

from __future__ import annotations

import logging

from tracker.store import LedgerStore

from ..forge import Forge, ForgeError
from ..store.offload import off_loop

__all__ = ["sync_threads"]

log = logging.getLogger(__name__)


async def sync_threads(forge: Forge, store: LedgerStore, pr: dict,
                       wanted: dict[str, bool]) -> dict[str, str]:
    """Make each defect's thread resolved (``True``) or not (``False``) as ``wanted`` says;
    the thread node id of every defect whose thread was found (to remember in the ledger)."""
    if not wanted:
        return {}
    roots = {}
    for key in wanted:
        root = await off_loop(store, store.thread_root, pr["id"], key)
        if root is not None:
            roots[key] = root["id"]
    if not roots:
        return {}
    by_comment = {}
    for thread in await forge.review_threads(pr["number"]):
        for cid in thread.comment_ids:
            by_comment[cid] = thread
    found: dict[str, str] = {}
    for key, root in roots.items():
        thread = by_comment.get(root)
        if thread is None:
            continue
        if wanted[key] and not thread.resolved:
            await forge.resolve_thread(thread.id)
        elif not wanted[key] and thread.resolved:
            try:
                await forge.unresolve_thread(thread.id)
            except ForgeError as exc:  # not the bot's to unfold (no permission): the reply says it
                if exc.retryable:
                    raise
                log.info("could not unresolve the thread of %s: %s", key, exc)
                continue
        found[key] = thread.id
    return found
