"""Step four of a round: commit its plan and what was published into the ledger, at once.

One transaction records every decision and new defect, attaches the comments ``publish``
posted, remembers resolved threads, adds the round's token usage and marks it complete. Until
then nothing of the round is in the ledger's defects, so a round that failed part-way never
resolves anything.
"""

from __future__ import annotations

from tracker.store import LedgerStore

from .plan import RoundPlan, RoundRecord

__all__ = ["commit"]


def commit(store: LedgerStore, pr_id: int, number: int, plan: RoundPlan,
           record: RoundRecord | None = None, *, bot_login: str | None = None) -> None:
    """Put round ``number``'s plan (and ``record``) into the ledger and complete the round."""
    record = record or RoundRecord()
    head = store.round(pr_id, number)["head_sha"]
    with store.transaction():
        store.record_round(pr_id, number, plan.decisions,
                           [(item.finding, item.code) for item in plan.new],
                           [item.key for item in plan.new], head_sha=head)
        for key, cid in record.new.items():
            defect = store.defect(pr_id, key)
            store.attach_comment(defect.id, cid, author=bot_login, posted_by_bot=True)
        for key, cid in record.replies.items():
            root = store.thread_root(pr_id, key)
            store.attach_comment(store.defect(pr_id, key).id, cid,
                                 in_reply_to=root["id"] if root else None, posted_by_bot=True)
        for key, node in record.threads.items():
            store.set_thread(pr_id, key, node)
        store.add_usage(pr_id, number, plan.usage.prompt_tokens, plan.usage.completion_tokens,
                        plan.usage.cost)
        store.finish_round(pr_id, number, "complete", findings=len(plan.new))
