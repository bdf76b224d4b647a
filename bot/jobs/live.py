"""Live benchmarking on the server: keep the verdict rows fresh and show them in ``/metrics``.

After every job on a pull request (a round, a comment, a thread action, a command) the
handlers call ``after_job``: the PR's verdicts (``tracker.verdicts``) are recomputed from the
ledger and the gauges below are set from the ledger's totals, so a scrape shows exactly what
``roundwise stats`` prints. The labels are weak (people's actions, read by rules), and the
metric help says so. The verdicts do not change how the bot decides states; they feed the
repository's learnings (``tracker.learnings``): a kind of finding people keep dismissing is
held back from the next round on.
"""

from __future__ import annotations

import logging

from prometheus_client import Gauge

from tracker import learnings
from tracker.store import LedgerStore
from tracker.verdicts import refresh, summarise

from ..observe.metrics import REGISTRY

log = logging.getLogger(__name__)

VERDICTS = Gauge(
    "roundwise_live_verdicts",
    "Weak verdicts from people's actions on the bot's decisions, by repository, kind "
    "(finding, state), transition and verdict (accepted, dismissed, confirmed, contradicted)",
    ["repo", "kind", "transition", "verdict"], registry=REGISTRY,
)
ACCEPTANCE = Gauge(
    "roundwise_live_acceptance_rate",
    "Share of the bot's judged findings people accepted (weak labels)", ["repo"],
    registry=REGISTRY,
)
CONTRADICTION = Gauge(
    "roundwise_live_contradiction_rate",
    "Share of the bot's judged state decisions people contradicted, per transition "
    "(weak labels)", ["repo", "transition"], registry=REGISTRY,
)


def publish(ledger: LedgerStore) -> dict:
    """Set the gauges from the ledger's verdict totals; returns the summary."""
    summary = summarise(ledger)
    for gauge in (VERDICTS, ACCEPTANCE, CONTRADICTION):
        gauge.clear()
    for repo, data in summary.items():
        for verdict in ("accepted", "dismissed"):
            VERDICTS.labels(repo, "finding", "raised", verdict).set(data["findings"][verdict])
        if data["findings"]["acceptance_rate"] is not None:
            ACCEPTANCE.labels(repo).set(data["findings"]["acceptance_rate"])
        for transition, counts in data["states"].items():
            for verdict in ("confirmed", "contradicted"):
                VERDICTS.labels(repo, "state", transition, verdict).set(counts[verdict])
            if counts["contradiction_rate"] is not None:
                CONTRADICTION.labels(repo, transition).set(counts["contradiction_rate"])
    return summary


def after_job(ledger: LedgerStore, repo: str | None, number: int | None,
              bot_logins: set[str]) -> None:
    """Refresh one PR's verdicts and the gauges; a failure here never fails the job."""
    if not repo or number is None:
        return
    try:
        pr = ledger.find_pull_request(repo, number)
        if pr is not None:
            refresh(ledger, pr["id"], bot_logins)
            learnings.refresh(ledger, repo)  # what people dismiss often is held back next
            publish(ledger)
    except Exception:
        log.exception("live verdicts for %s#%s failed", repo, number)
