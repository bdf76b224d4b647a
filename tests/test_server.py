"""The webhook server over real HTTP: signatures, bad bodies, ignored events, deduplication,
supersession, installations, health and metrics, configuration and App authentication.

Each test runs the real aiohttp app (``bot.server.app.create_app``) and the fake GitHub on 127.0.0.1
(see ``tests/server_kit.py``), sends signed deliveries and checks what reached the fake GitHub
and the ledger. Deliveries are GitHub's recorded payloads from
``../shared/fixtures/github-webhooks`` (re-pointed at the fake's pull request); the protocol
tests also run on payloads built by ``bench.replay.payloads``, so they still run, and the fixture
runs skip, on a clone without ``../shared``.
"""

from __future__ import annotations

import time

import aiohttp
import jwt
import pytest

from bench.fake_github import FakeGitHub
from bench.replay import payloads
from bot.config.env import ConfigError
from bot.github import GitHubApp
from bot.server.hosts import load_config

from .conftest import needs_webhook_fixtures
from .server_kit import (
    APP_ID,
    FAST_RETRY,
    HEAD1,
    HEAD2,
    INSTALLATION,
    NUMBER,
    REPO,
    ROUND2_FILES,
    SOURCES,
    Tap,
    app_keys,
    fixture,
    metric,
    open_pr,
    repoint,
    running_bot,
    sample,
)

DELIVERIES = "roundwise_webhook_deliveries_total"


def nothing_recorded(bot) -> bool:
    return bot.ledger.db["deliveries"].count == 0 and bot.jobs() == []


# -- signatures, bodies, events ------------------------------------------------------------------


@pytest.mark.parametrize("source", SOURCES)
async def test_missing_or_wrong_signature_is_401_and_nothing_is_recorded(tmp_path, source):
    async with running_bot(tmp_path) as bot:
        open_pr(bot.fake)
        body = payloads.encode(sample(bot.fake, "pull_request.opened", source))
        secret = bot.config.webhook_secret
        good = payloads.headers("pull_request", body, secret, "delivery-1")
        unsigned = {k: v for k, v in good.items() if k != "X-Hub-Signature-256"}
        cases = {
            "missing": unsigned,
            "legacy sha1 only": {**unsigned, "X-Hub-Signature": "sha1=" + "0" * 40},
            "another secret": {**good, "X-Hub-Signature-256": payloads.sign(body, "guess")},
            "another body": {**good, "X-Hub-Signature-256": payloads.sign(body + b" ", secret)},
            "no prefix": {**good, "X-Hub-Signature-256": good["X-Hub-Signature-256"][7:]},
            "truncated": {**good, "X-Hub-Signature-256": good["X-Hub-Signature-256"][:-2]},
        }
        before = metric(await bot.metrics(), DELIVERIES, event="pull_request",
                        outcome="bad_signature")
        for name, headers in cases.items():
            status, data = await bot.post(body, headers)
            assert (status, data) == (401, {"error": "signature missing or wrong"}), name
        # The signature is checked before the body is even parsed.
        status, _ = await bot.post(b"not json", {**good, "X-Hub-Signature-256": "sha256=00"})
        assert status == 401
        after = metric(await bot.metrics(), DELIVERIES, event="pull_request",
                       outcome="bad_signature")
        assert after - before == len(cases) + 1
        assert nothing_recorded(bot) and bot.fake.requests == []

        status, data = await bot.post(body, good)  # the same delivery, correctly signed
        assert status == 202 and "queued" in data
        await bot.idle()
        assert [r["status"] for r in bot.rounds()] == ["complete"]


@pytest.mark.parametrize("source", SOURCES)
async def test_malformed_bodies_are_400_and_nothing_is_recorded(tmp_path, source):
    async with running_bot(tmp_path) as bot:
        open_pr(bot.fake)
        opened = sample(bot.fake, "pull_request.opened", source)
        no_pr = {k: v for k, v in opened.items() if k != "pull_request"}
        bad_number = {**opened, "pull_request": {**opened["pull_request"], "number": "7"}}
        comment = sample(bot.fake, "issue_comment.created.with-installation", source)
        comment["comment"]["id"] = str(comment["comment"]["id"])
        cases = [
            ("pull_request", b"{not json", "bad payload"),
            ("pull_request", b"\xff\xfe", "bad payload"),
            ("pull_request", b"[1, 2]", "JSON object"),
            ("pull_request", payloads.encode(no_pr), "pull_request.number"),
            ("pull_request", payloads.encode(bad_number), "pull_request.number"),
            # What GitHub sends to a repository webhook: no installation to act as.
            ("pull_request", payloads.encode(sample(bot.fake, "pull_request.ready_for_review",
                                                    source)), "installation.id"),
            ("issue_comment", payloads.encode(comment), "comment.id"),
            ("pull_request_review", payloads.encode({"action": "submitted"}), "missing field"),
        ]
        for event, body, why in cases:
            headers = payloads.headers(event, body, bot.config.webhook_secret)
            status, data = await bot.post(body, headers)
            assert status == 400, (event, body[:40])
            assert why in data["error"], data
        body = payloads.encode(opened)
        headers = payloads.headers("pull_request", body, bot.config.webhook_secret)
        for name in ("X-GitHub-Event", "X-GitHub-Delivery"):
            status, data = await bot.post(body, {k: v for k, v in headers.items() if k != name})
            assert status == 400 and "required" in data["error"]
        assert nothing_recorded(bot) and bot.fake.requests == []


@pytest.mark.parametrize("source", SOURCES)
async def test_unknown_events_ping_and_unhandled_actions_are_200_and_ignored(tmp_path, source):
    async with running_bot(tmp_path) as bot:
        open_pr(bot.fake)
        before = await bot.metrics()
        for name in ("ping", "ping.with-app_id", "check_run.completed", "check_suite.requested",
                     "pull_request.labeled", "pull_request.converted_to_draft.with-installation"):
            event = name.split(".")[0]
            status, data = await bot.deliver(event, sample(bot.fake, name, source))
            assert status == 200 and "ignored" in data, name
        after = await bot.metrics()
        assert metric(after, DELIVERIES, event="ping", outcome="ignored") - \
            metric(before, DELIVERIES, event="ping", outcome="ignored") == 2
        # Event names are not metric labels unless the bot knows them (anyone can send any).
        assert metric(after, DELIVERIES, event="other", outcome="ignored") - \
            metric(before, DELIVERIES, event="other", outcome="ignored") == 2
        assert 'event="check_run"' not in after
        assert nothing_recorded(bot) and bot.fake.requests == []


@needs_webhook_fixtures
async def test_real_payloads_drive_the_bot(tmp_path):
    """GitHub's recorded payloads, re-pointed at the fake's repository, do what they should."""
    async with running_bot(tmp_path) as bot:
        open_pr(bot.fake)
        status, _ = await bot.deliver("pull_request", repoint(fixture("pull_request.opened"),
                                                              bot.fake))
        assert status == 202
        await bot.idle()
        assert bot.states() == {"D1": "New", "D2": "New"}
        assert len(bot.bot_reviews()) == 1

        review = repoint(fixture("pull_request_review_comment.created"), bot.fake)
        review["comment"]["body"] = "This must reject a negative factor; raise ValueError."
        assert (await bot.deliver("pull_request_review_comment", review))[0] == 202
        command = repoint(fixture("issue_comment.created.with-installation"), bot.fake)
        command["comment"]["body"] = "/roundwise status"
        assert (await bot.deliver("issue_comment", command))[0] == 202
        await bot.idle()
        pr = bot.ledger.find_pull_request(REPO, NUMBER)
        human = [d for d in bot.ledger.defects(pr["id"]) if d.origin.value == "human"]
        assert [(d.key, d.author, d.comment_ids) for d in human] == \
            [("D3", "Codertocat", [review["comment"]["id"]])]
        status_reply = bot.bot_comments()[-1]["body"]
        assert "| D1 | New |" in status_reply and "| D3 | New |" in status_reply

        closed = repoint(fixture("pull_request.closed"), bot.fake)
        assert closed["pull_request"]["merged"] is False
        assert (await bot.deliver("pull_request", closed))[0] == 202
        await bot.idle()
        assert bot.ledger.find_pull_request(REPO, NUMBER)["status"] == "closed"
        assert bot.states() == {"D1": "New", "D2": "New", "D3": "New"}  # final states kept
        assert [j["status"] for j in bot.jobs()] == ["done"] * 4


@needs_webhook_fixtures
async def test_installation_events_keep_the_installations_table_current(tmp_path):
    async with running_bot(tmp_path) as bot:
        table = bot.ledger.db["installations"]
        created = fixture("installation.created")
        assert (await bot.deliver("installation", created))[0] == 202
        await bot.idle()
        assert table.get(957387)["account"] == "Codertocat"

        second = dict(created, installation={**created["installation"], "id": 2})
        await bot.deliver("installation", second)
        await bot.idle()
        assert {r["id"] for r in table.rows} == {957387, 2}
        await bot.deliver("installation", fixture("installation.deleted"))  # id 2
        await bot.deliver("installation", fixture("installation.suspend"))  # id 16598467
        await bot.deliver("installation_repositories",
                          fixture("installation_repositories.added"))  # id 957387
        await bot.idle()
        rows = {r["id"]: r for r in table.rows}
        assert set(rows) == {957387, 16598467}
        assert rows[16598467]["suspended"] == 1 and rows[957387]["suspended"] == 0
        await bot.deliver("installation", fixture("installation.unsuspend"))
        await bot.idle()
        assert table.get(16598467)["suspended"] == 0
        assert {j["status"] for j in bot.jobs()} == {"done"}


# -- deliveries: duplicates, redeliveries, supersession --------------------------------------------


async def test_the_same_delivery_twice_makes_one_job_and_one_round(tmp_path):
    async with running_bot(tmp_path, start_workers=False) as bot:
        open_pr(bot.fake)
        first = await bot.pull_request("opened", "same-id")
        second = await bot.pull_request("opened", "same-id")  # still queued: same job
        assert first == second == (202, {"queued": 1})
        bot.state.workers.start()
        await bot.idle()
        third = await bot.pull_request("opened", "same-id")  # processed: a duplicate
        assert third == (200, {"duplicate": "same-id"})
        await bot.idle()
        assert len(bot.jobs()) == 1 and bot.jobs()[0]["status"] == "done"
        assert len(bot.rounds()) == 1 and len(bot.bot_reviews()) == 1
        assert len(bot.bot_comments()) == 1
        delivery = bot.delivery("same-id")
        assert delivery["attempts"] == 2 and delivery["processed_at"]
        assert delivery["outcome"].startswith("round 1 complete")


async def test_a_redelivery_after_a_failed_job_runs_it_again(tmp_path):
    async with running_bot(tmp_path) as bot:
        open_pr(bot.fake)
        bot.fake.fail_next("GET", rf"/repos/{REPO}/pulls/{NUMBER}$", 404)
        await bot.pull_request("opened", "flaky")
        await bot.idle()
        [job] = bot.jobs()
        assert job["status"] == "failed"
        assert f"GET /repos/{REPO}/pulls/{NUMBER}" in job["error"]
        assert bot.rounds() == [] and bot.bot_reviews() == []
        assert not bot.delivery("flaky")["processed_at"]

        assert await bot.pull_request("opened", "flaky") == (202, {"queued": job["id"]})
        await bot.idle()
        [job] = bot.jobs()
        assert (job["status"], job["attempts"], job["error"]) == ("done", 1, None)
        assert [r["status"] for r in bot.rounds()] == ["complete"]
        assert len(bot.bot_reviews()) == 1
        assert bot.delivery("flaky")["processed_at"]


async def test_a_push_superseded_before_it_started_is_skipped(tmp_path):
    async with running_bot(tmp_path, start_workers=False) as bot:
        open_pr(bot.fake)
        await bot.pull_request("opened", "push-1")
        bot.fake.push(REPO, NUMBER, HEAD2, ROUND2_FILES)
        await bot.pull_request("synchronize", "push-2")
        bot.state.workers.start()
        await bot.idle()
        jobs = bot.jobs()
        assert [(j["delivery_id"], j["head_sha"], j["status"]) for j in jobs] == [
            ("push-1", HEAD1, "skipped"), ("push-2", HEAD2, "done")]
        assert jobs[0]["error"] == "superseded by a newer push"
        assert [(r["number"], r["head_sha"], r["status"]) for r in bot.rounds()] == \
            [(1, HEAD2, "complete")]
        assert [r["commit_id"] for r in bot.bot_reviews()] == [HEAD2]
        # The skipped delivery counts as processed: redelivering it changes nothing.
        assert bot.delivery("push-1")["outcome"].startswith("skipped")
        assert await bot.pull_request("opened", "push-1") == (200, {"duplicate": "push-1"})


# -- health and metrics -----------------------------------------------------------------------------


async def test_healthz_and_metrics_follow_the_work(tmp_path):
    async with running_bot(tmp_path, start_workers=False) as bot:
        open_pr(bot.fake, default_files={})  # no settings file: a 404 to count
        async with bot.session.get(f"{bot.url}/healthz") as resp:
            assert (resp.status, await resp.json()) == (200, {"status": "ok", "queue": 0})
        before = await bot.metrics()
        await bot.pull_request("opened")
        async with bot.session.get(f"{bot.url}/healthz") as resp:
            assert (await resp.json())["queue"] == 1
        queued = await bot.metrics()
        assert metric(queued, "roundwise_job_queue_depth") == 1
        assert metric(queued, DELIVERIES, event="pull_request", outcome="queued") - \
            metric(before, DELIVERIES, event="pull_request", outcome="queued") == 1

        bot.state.workers.start()
        await bot.idle()
        after = await bot.metrics()

        def moved(name, **labels):
            return metric(after, name, **labels) - metric(before, name, **labels)

        assert metric(after, "roundwise_job_queue_depth") == 0
        assert moved("roundwise_jobs_total", kind="round", outcome="done") == 1
        assert moved("roundwise_round_duration_seconds_count") == 1
        api = "roundwise_github_api_calls_total"
        # Every request the fake saw is counted: successes, and the 404 for the absent
        # .github/roundwise.yml (an error by outcome, not a failure of the round).
        assert moved(api, method="GET", outcome="http_404") == 1
        assert moved(api, method="GET", outcome="ok") + moved(api, method="POST", outcome="ok") \
            + moved(api, method="PATCH", outcome="ok") + 1 == len(bot.fake.requests)
        assert "roundwise_llm_tokens_total" in after


# -- configuration ----------------------------------------------------------------------------------


def valid_env(tmp_path, **changes) -> dict[str, str]:
    key = tmp_path / "app.pem"
    key.write_text(app_keys()[0])
    env = {"GITHUB_APP_ID": "4242", "GITHUB_PRIVATE_KEY_PATH": str(key),
           "GITHUB_WEBHOOK_SECRET": "s3cret", "ROUNDWISE_DB": str(tmp_path / "l.db")}
    env.update(changes)
    return {k: v for k, v in env.items() if v is not None}


def config_error(env) -> str:
    with pytest.raises(ConfigError) as caught:
        load_config(env)
    return str(caught.value)


def test_a_valid_environment_loads(tmp_path):
    config = load_config(valid_env(tmp_path, ROUNDWISE_WORKERS="3"))
    assert (config.app_id, config.workers, config.webhook_secret) == ("4242", 3, "s3cret")
    assert "PRIVATE KEY" not in repr(config) and "s3cret" not in repr(config)


def test_the_review_limits_load_and_leave_the_key_alone(tmp_path):
    env = valid_env(tmp_path, ROUNDWISE_MAX_REVIEW_FILES="50", ROUNDWISE_MAX_REVIEW_BYTES="4096")
    config = load_config(env)
    assert (config.review_limits.max_files, config.review_limits.max_lines,
            config.review_limits.max_bytes) == (50, 20_000, 4096)
    assert config.private_key == load_config(valid_env(tmp_path)).private_key
    assert "PRIVATE KEY" in config.private_key
    assert "ROUNDWISE_MAX_REVIEW_LINES" in config_error(
        valid_env(tmp_path, ROUNDWISE_MAX_REVIEW_LINES="0"))


def test_config_errors_name_each_problem_and_the_fix(tmp_path):
    message = config_error({})
    for name in ("GITHUB_APP_ID", "GITHUB_PRIVATE_KEY_PATH", "GITHUB_WEBHOOK_SECRET"):
        assert name in message
    assert "GITHUB_APP_ID" in config_error(valid_env(tmp_path, GITHUB_APP_ID=" "))
    message = config_error(valid_env(tmp_path, GITHUB_PRIVATE_KEY_PATH=str(tmp_path / "no.pem")))
    assert "GITHUB_PRIVATE_KEY_PATH" in message and "cannot be read" in message
    (tmp_path / "bad.pem").write_text("ssh-rsa AAAA not a pem key")
    message = config_error(valid_env(tmp_path, GITHUB_PRIVATE_KEY_PATH=str(tmp_path / "bad.pem")))
    assert "not a PEM key" in message
    broken = "-----BEGIN PRIVATE KEY-----\nbroken\n-----END PRIVATE KEY-----\n"
    assert "cannot be loaded" in config_error(valid_env(tmp_path, GITHUB_PRIVATE_KEY=broken,
                                                        GITHUB_PRIVATE_KEY_PATH=None))
    for workers in ("0", "-2", "four"):
        message = config_error(valid_env(tmp_path, ROUNDWISE_WORKERS=workers))
        assert f"ROUNDWISE_WORKERS={workers!r}" in message and "at least 1" in message
    assert "ROUNDWISE_REVIEW_DRAFTS" in config_error(valid_env(tmp_path,
                                                               ROUNDWISE_REVIEW_DRAFTS="maybe"))
    assert "GITHUB_API_URL" in config_error(valid_env(tmp_path, GITHUB_API_URL="ftp://x"))
    both = config_error(valid_env(tmp_path, GITHUB_APP_ID="", ROUNDWISE_WORKERS="x"))
    assert "GITHUB_APP_ID" in both and "ROUNDWISE_WORKERS" in both  # all problems at once


# -- App authentication ------------------------------------------------------------------------------


async def test_the_app_jwt_and_the_cached_installation_token(tmp_path):
    async with running_bot(tmp_path) as bot:
        tap = Tap(bot.fake)
        open_pr(bot.fake)
        await bot.pull_request("opened")
        await bot.idle()
        [(_, _, headers)] = [s for s in tap.seen if s[1].endswith("/access_tokens")]
        scheme, token = headers["Authorization"].split(" ", 1)
        assert scheme.lower() == "bearer"
        assert jwt.get_unverified_header(token)["alg"] == "RS256"
        claims = jwt.decode(token, options={"verify_signature": False})
        assert abs(claims["iat"] - (time.time() - 60)) <= 5
        assert 0 < claims["exp"] - claims["iat"] <= 600 and claims["iss"] == str(APP_ID)
        assert bot.fake.token_issuances == 1  # one token for the whole round
        used = {s[2]["Authorization"] for s in tap.seen if s[1].startswith("/repos/")}
        assert len(used) == 1 and len([s for s in tap.seen if s[1].startswith("/repos/")]) > 5

        bot.fake.expire_tokens()  # GitHub now answers 401 to the cached token
        bot.fake.push(REPO, NUMBER, HEAD2, ROUND2_FILES)
        await bot.pull_request("synchronize")
        await bot.idle()
        assert bot.fake.token_issuances == 2
        assert [r["status"] for r in bot.rounds()] == ["complete", "complete"]
        assert [j["status"] for j in bot.jobs()] == ["done", "done"]


async def test_installation_tokens_are_refreshed_shortly_before_they_expire():
    now = [time.time()]
    private, public = app_keys()
    async with FakeGitHub(APP_ID, public, clock=lambda: now[0]) as fake:
        open_pr(fake)
        async with aiohttp.ClientSession() as session:
            app = GitHubApp(session, APP_ID, private, fake.url, retry=FAST_RETRY,
                            clock=lambda: now[0])
            gh = app.repo(INSTALLATION, REPO)
            assert (await gh.pull(NUMBER))["head"]["sha"] == HEAD1
            await gh.pull(NUMBER)
            now[0] += 3000  # the token (one hour) has 10 minutes left: still used
            await gh.pull(NUMBER)
            assert fake.token_issuances == 1
            now[0] += 301  # under five minutes left: fetch a new one first
            await gh.pull(NUMBER)
            assert fake.token_issuances == 2
            fake.expire_tokens()  # revoked early: the 401 makes the bot fetch another
            assert await gh.review_threads(NUMBER) == []  # through GraphQL too
            assert fake.token_issuances == 3


async def test_the_app_key_is_parsed_once_and_tokens_are_signed_off_the_loop(monkeypatch):
    """Three tokens, each minted after the last was revoked: the PEM is loaded once
    (cryptography's RSA checks cost tens of milliseconds) and every RS256 signature is made
    in a worker thread, never on the event loop's."""
    import threading

    import jwt as pyjwt
    from cryptography.hazmat.primitives import serialization

    from bot.github import client as client_module

    loads: list[str] = []
    signers: list[threading.Thread] = []
    real_load, real_encode = serialization.load_pem_private_key, pyjwt.encode

    def counted_load(data, *args, **kwargs):
        loads.append(threading.current_thread().name)
        return real_load(data, *args, **kwargs)

    def watched_encode(*args, **kwargs):
        signers.append(threading.current_thread())
        return real_encode(*args, **kwargs)

    monkeypatch.setattr(client_module, "load_pem_private_key", counted_load, raising=False)
    monkeypatch.setattr("jwt.algorithms.load_pem_private_key", counted_load)
    monkeypatch.setattr(client_module.jwt, "encode", watched_encode)
    private, public = app_keys()
    async with FakeGitHub(APP_ID, public) as fake:
        open_pr(fake)
        async with aiohttp.ClientSession() as session:
            app = GitHubApp(session, APP_ID, private, fake.url, retry=FAST_RETRY)
            gh = app.repo(INSTALLATION, REPO)
            for _ in range(3):
                assert (await gh.pull(NUMBER))["head"]["sha"] == HEAD1
                fake.expire_tokens()  # revoked: the next call's 401 mints a new token
    assert fake.token_issuances == 3 and len(signers) == 3
    assert len(loads) == 1
    assert threading.main_thread() not in signers


async def test_the_server_parses_the_app_key_before_it_listens(tmp_path, monkeypatch):
    """cryptography holds the GIL while it checks an RSA key (tens of milliseconds): parsed
    at the first round, even in a worker thread, it stalled the loop then. The server parses
    it while starting, so the first delivery finds it ready."""
    import threading

    from cryptography.hazmat.primitives import serialization

    from bot.github import client as client_module

    delivered = threading.Event()
    loads: list[bool] = []
    real_load = serialization.load_pem_private_key

    def counted_load(data, *args, **kwargs):
        loads.append(delivered.is_set())
        return real_load(data, *args, **kwargs)

    monkeypatch.setattr(client_module, "load_pem_private_key", counted_load)
    async with running_bot(tmp_path) as bot:
        assert loads == [False]  # parsed once, before any delivery
        open_pr(bot.fake)
        delivered.set()
        await bot.pull_request("opened")
        await bot.idle()
        assert [r["status"] for r in bot.rounds()] == ["complete"]
    assert loads == [False]
