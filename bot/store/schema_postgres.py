"""The PostgreSQL ledger's schema, as ordered migrations (SQLite's is ``bot/store/schema_sqlite.py``).

One schema definition per engine: PostgreSQL started from the SQLite schema as it stands after
its migrations m001..m007, with 64-bit ids where GitHub's ids need them (comments, check runs,
installations) and the ``heartbeat`` table created here rather than on first use. They are
applied by ``bot.store.queue_postgres.migrate`` (recorded in ``roundwise_migrations`` beside the
queue's, under the same advisory lock). Add new ones at the end; never edit one that shipped.
"""

from __future__ import annotations

__all__ = ["LEDGER_MIGRATIONS"]

#: ordered migrations of the ledger's tables (the queue's are ``queue_postgres.MIGRATIONS``); never
#: edit one that shipped, add the next. GitHub ids (comments, check runs) need 64 bits.
LEDGER_MIGRATIONS: list[tuple[str, str]] = [
    ("ledger_001_core", """
        create table pull_requests (
            id bigserial primary key,
            repo text not null,
            number integer not null,
            installation_id bigint,
            title text,
            author text,
            status text default 'open',
            head_sha text,
            last_reviewed_sha text,
            created_at text,
            updated_at text,
            unique (repo, number)
        );
        create table rounds (
            id bigserial primary key,
            pr_id bigint not null references pull_requests (id),
            number integer not null,
            base_sha text,
            head_sha text,
            status text,
            started_at text,
            finished_at text,
            seconds double precision,
            findings integer,
            prompt_tokens bigint,
            completion_tokens bigint,
            cost double precision,
            error text,
            plan text,
            check_run_id bigint,
            check_shown text,
            unique (pr_id, number)
        );
        create index rounds_check on rounds (check_run_id);
        create index rounds_head on rounds (head_sha);
        create table defects (
            id bigserial primary key,
            pr_id bigint not null references pull_requests (id),
            key text not null,
            origin text not null,
            author text,
            path text,
            line_start integer,
            line_end integer,
            side text default 'RIGHT',
            fingerprint text,
            code text,
            resolved_code text,
            description text,
            type text,
            severity text,
            confidence double precision,
            rule text,
            state text not null,
            state_round integer,
            raised_round integer,
            ignored integer not null default 0,
            thread_node_id text,
            created_at text,
            updated_at text,
            anchor_sha text,
            unique (pr_id, key)
        );
        create index defects_path on defects (pr_id, path);
        create table state_history (
            id bigserial primary key,
            defect_id bigint not null references defects (id),
            round integer not null,
            state text not null,
            rule text,
            evidence text,
            decided_by text not null,
            at text
        );
        create index state_history_defect on state_history (defect_id, round);
        create table defect_comments (
            id bigint primary key,
            defect_id bigint references defects (id),
            kind text,
            author text,
            body text,
            in_reply_to bigint,
            node_id text,
            posted_by_bot integer,
            created_at text
        );
        create index defect_comments_defect on defect_comments (defect_id);
        create table signals (
            id bigserial primary key,
            pr_id bigint references pull_requests (id),
            defect_id bigint references defects (id),
            round integer,
            kind text,
            author text,
            body text,
            comment_id bigint,
            at text
        );
        create index signals_pr on signals (pr_id, round);
        create table verdicts (
            id bigserial primary key,
            pr_id bigint references pull_requests (id),
            defect_id bigint references defects (id),
            defect_key text,
            round integer,
            kind text,
            transition text,
            rule text,
            verdict text,
            signal text,
            signal_round integer,
            by text,
            evidence text,
            decided_at text,
            at text
        );
        create index verdicts_pr on verdicts (pr_id);
        create table heartbeat (id integer primary key, at text);
    """),
    ("ledger_002_learnings", """
        create table learnings (
            id bigserial primary key,
            repo text not null,
            kind text not null,
            dismissed integer not null default 0,
            judged integer not null default 0,
            muted integer not null default 0,
            muted_at text,
            unmuted_at text,
            unmuted_by text,
            updated_at text,
            unique (repo, kind)
        );
    """),
    # One ledger for GitHub and GitLab (bot/store/schema_sqlite.py m009): the host each PR is on,
    # derived from its repo ("gitlab:<project path>" for a GitLab merge request). Self-
    # contained: renumber freely when merging beside other migrations.
    ("ledger_003_pull_request_host", """
        alter table pull_requests add column host text generated always as
            (case when repo like 'gitlab:%' then 'gitlab' else 'github' end) stored;
        create index pull_requests_host on pull_requests (host, repo, number);
    """),
    # The dashboard's lists (bot/store/ledger_reads.py): a repository's pull requests by last
    # activity, and defects counted per PR and state. Self-contained: renumber freely.
    ("ledger_004_dashboard", """
        create index pull_requests_activity on pull_requests (repo, updated_at);
        create index defects_state on defects (pr_id, state);
    """),
]
