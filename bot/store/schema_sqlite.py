"""The SQLite ledger's schema, as ordered sqlite-utils migrations (PostgreSQL's is
``bot/store/schema_postgres.py``).

Each migration runs once per database file, in order, inside a transaction; add new ones at the
end, never edit an applied one. The tables are meant to be read by people too
(``sqlite-utils tables ledger.db --counts``, Datasette).
"""

from __future__ import annotations

from sqlite_utils import Database
from sqlite_utils.migrations import Migrations

__all__ = ["migrations"]

migrations = Migrations("roundwise-ledger")


@migrations()
def m001_core(db: Database) -> None:
    db["installations"].create(
        {"id": int, "account": str, "suspended": int, "created_at": str, "updated_at": str},
        pk="id",
    )
    db["pull_requests"].create(
        {
            "id": int,
            "repo": str,
            "number": int,
            "installation_id": int,
            "title": str,
            "author": str,
            "status": str,  # open, closed, merged
            "head_sha": str,
            "last_reviewed_sha": str,
            "created_at": str,
            "updated_at": str,
        },
        pk="id",
        not_null={"repo", "number"},
        defaults={"status": "open"},
    )
    db["pull_requests"].create_index(["repo", "number"], unique=True)
    db["rounds"].create(
        {
            "id": int,
            "pr_id": int,
            "number": int,
            "base_sha": str,
            "head_sha": str,
            "status": str,  # running, complete, failed, superseded
            "started_at": str,
            "finished_at": str,
            "seconds": float,
            "findings": int,
            "prompt_tokens": int,
            "completion_tokens": int,
            "cost": float,
            "error": str,
        },
        pk="id",
        foreign_keys=[("pr_id", "pull_requests", "id")],
        not_null={"pr_id", "number"},
    )
    db["rounds"].create_index(["pr_id", "number"], unique=True)
    db["defects"].create(
        {
            "id": int,
            "pr_id": int,
            "key": str,  # D1, D2... stable within a PR
            "origin": str,  # bot or human
            "author": str,
            "path": str,
            "line_start": int,
            "line_end": int,
            "side": str,
            "fingerprint": str,
            "code": str,
            "resolved_code": str,
            "description": str,
            "type": str,
            "severity": str,
            "confidence": float,
            "rule": str,
            "state": str,
            "state_round": int,
            "raised_round": int,
            "ignored": int,
            "thread_node_id": str,
            "created_at": str,
            "updated_at": str,
        },
        pk="id",
        foreign_keys=[("pr_id", "pull_requests", "id")],
        not_null={"pr_id", "key", "origin", "state"},
        defaults={"ignored": 0, "side": "RIGHT"},
    )
    db["defects"].create_index(["pr_id", "key"], unique=True)
    db["defects"].create_index(["pr_id", "path"])
    db["state_history"].create(
        {
            "id": int,
            "defect_id": int,
            "round": int,
            "state": str,
            "rule": str,
            "evidence": str,
            "decided_by": str,  # rule, llm or human
            "at": str,
        },
        pk="id",
        foreign_keys=[("defect_id", "defects", "id")],
        not_null={"defect_id", "round", "state", "decided_by"},
    )
    db["state_history"].create_index(["defect_id", "round"])
    db["defect_comments"].create(
        {
            "id": int,  # the GitHub comment id
            "defect_id": int,
            "kind": str,  # review_comment, review, issue_comment
            "author": str,
            "body": str,
            "in_reply_to": int,
            "node_id": str,
            "posted_by_bot": int,
            "created_at": str,
        },
        pk="id",
        foreign_keys=[("defect_id", "defects", "id")],
    )
    db["defect_comments"].create_index(["defect_id"])
    db["deliveries"].create(
        {
            "id": str,  # X-GitHub-Delivery
            "event": str,
            "action": str,
            "repo": str,
            "number": int,
            "received_at": str,
            "processed_at": str,
            "outcome": str,
            "attempts": int,
        },
        pk="id",
        defaults={"attempts": 0},
    )


@migrations()
def m002_signals(db: Database) -> None:
    db["signals"].create(
        {
            "id": int,
            "pr_id": int,
            "defect_id": int,
            "round": int,  # the PR's current round when it happened
            "kind": str,
            "author": str,
            "body": str,
            "comment_id": int,
            "at": str,
        },
        pk="id",
        foreign_keys=[("pr_id", "pull_requests", "id"), ("defect_id", "defects", "id")],
    )
    db["signals"].create_index(["pr_id", "round"])


@migrations()
def m003_leases(db: Database) -> None:
    db["leases"].create({"pr_id": int, "owner": str, "expires_at": float}, pk="pr_id")


@migrations()
def m004_round_plans(db: Database) -> None:
    # A round's decisions and new findings, kept until the round completes: a crashed round
    # resumes from its plan, and nothing is resolved in the ledger before the round is done.
    db["rounds"].add_column("plan", str)


@migrations()
def m005_anchor_commit(db: Database) -> None:
    # The commit a defect's anchor refers to: a person may comment on a head the bot has not
    # reviewed yet, and the next round must map that anchor from where it really stands.
    db["defects"].add_column("anchor_sha", str)


@migrations()
def m006_live_signals(db: Database) -> None:
    # Live quality signals (tracker/verdicts.py): what people did after each of the bot's
    # decisions, as weak verdicts on it. Rewritten per PR; never read by the decision rules.
    db["verdicts"].create(
        {
            "id": int,
            "pr_id": int,
            "defect_id": int,
            "defect_key": str,
            "round": int,  # the round of the judged decision
            "kind": str,  # finding or state
            "transition": str,  # "raised", or "Open→Resolved"...
            "rule": str,
            "verdict": str,  # accepted, dismissed, confirmed, contradicted
            "signal": str,  # what people did
            "signal_round": int,
            "by": str,
            "evidence": str,
            "decided_at": str,
            "at": str,
        },
        pk="id",
        foreign_keys=[("pr_id", "pull_requests", "id"), ("defect_id", "defects", "id")],
    )
    db["verdicts"].create_index(["pr_id"])


@migrations()
def m007_check_runs(db: Database) -> None:
    # The check run each round posted on its head (the merge gate), and the title and
    # conclusion it shows now: a person resolving a defect between pushes updates it in place.
    db["rounds"].add_column("check_run_id", int)
    db["rounds"].add_column("check_shown", str)


@migrations()
def m008_learnings(db: Database) -> None:
    # What the bot learnt from people dismissing its findings (tracker/learnings.py): per
    # repository and kind of finding (an offline rule id, or a model finding's MCR type), the
    # dismissals counted since the kind was last unmuted and whether it is held back now.
    db["learnings"].create(
        {
            "id": int,
            "repo": str,
            "kind": str,
            "dismissed": int,
            "judged": int,
            "muted": int,
            "muted_at": str,
            "unmuted_at": str,
            "unmuted_by": str,
            "updated_at": str,
        },
        pk="id",
        defaults={"dismissed": 0, "judged": 0, "muted": 0},
    )
    db["learnings"].create_index(["repo", "kind"], unique=True)


@migrations()
def m009_pull_request_host(db: Database) -> None:
    # One ledger for GitHub and GitLab: a PR's identity carries its host. A GitLab merge
    # request's repo is "gitlab:<project path>" (":" is in no GitHub name, so the unique
    # (repo, number) never joins two hosts' PRs) and this column says which host each PR is
    # on, derived from the repo so that no writer can set it wrong. Self-contained: renumber
    # freely when merging beside other migrations.
    db.execute("alter table pull_requests add column host text generated always as "
               "(case when repo like 'gitlab:%' then 'gitlab' else 'github' end) virtual")
    db.execute("create index pull_requests_host on pull_requests (host, repo, number)")


@migrations()
def m010_dashboard(db: Database) -> None:
    # The dashboard's lists (bot/store/ledger_reads.py): a repository's pull requests by last
    # activity, and defects counted per PR and state. Self-contained: renumber freely.
    db.execute("create index if not exists pull_requests_activity on pull_requests "
               "(repo, updated_at)")
    db.execute("create index if not exists defects_state on defects (pr_id, state)")
