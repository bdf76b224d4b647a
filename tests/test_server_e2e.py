"""Whole rounds through the real server and the fake GitHub: what lands on GitHub and in the ledger.

The bundled three-round Python example is replayed by ``bench.replay.github`` exactly as GitHub
would drive the bot; the other tests use the small pull request of ``tests/server_kit.py`` (round 1
adds ``scale()`` with a leftover print and no tests: D1 missing-tests, D2 debug-print; round 2
adds tests: D1 resolved) to exercise retries, GitHub's 422 on reviews, permanent failures,
commands, drafts, per-repository settings and review threads.
"""

from __future__ import annotations

import re
from pathlib import Path

from bench.replay import payloads
from bench.replay.github import Harness, bench_repo, replay_task
from bench.tasks.mcr import load_task
from bot.pr import render

from .conftest import EXAMPLES, needs_webhook_fixtures
from .server_kit import (
    BASE_SHA,
    HEAD1,
    HEAD2,
    HEAD3,
    NUMBER,
    REPO,
    ROUND1_FILES,
    ROUND2_FILES,
    fixture,
    metric,
    open_pr,
    repoint,
    running_bot,
)

RESOLVE_MUTATION = "resolveReviewThread"
SIMPLE_422 = {"message": "Unprocessable Entity", "errors": ["Line could not be resolved"],
              "documentation_url": "https://docs.github.com/rest/pulls/reviews", "status": "422"}


def summary_rows(body: str) -> dict[str, str]:
    """``{key: state}`` from the sticky summary's table."""
    return dict(re.findall(r"^\| (D\d+) \| ([A-Za-z ()]+?) \|", body, re.MULTILINE))


def markers(comments: list[dict]) -> list[tuple[str, str, int]]:
    return [render.read_marker(c["body"]) for c in comments]


# -- the bundled example, end to end --------------------------------------------------------------


async def test_the_python_example_end_to_end(tmp_path):
    task = load_task(EXAMPLES / "example-python-profile-cache.json")
    repo, number = bench_repo(task), task.pr["number"]
    heads = [r.head_sha for r in task.rounds]
    async with Harness(Path(tmp_path) / "ledger.db") as h:
        records = await replay_task(h, task)
        fake, bot = h.fake, h.fake.bot_login

        # The ledger, round by round: the bot's D1 (a leftover print) resolved in round 2, the
        # reviewer's D2 (cache after the query) resolved in round 2, D3 (tests) in round 3.
        assert [{d["key"]: (d["state"], d["origin"]) for d in r["defects"]} for r in records] == [
            {"D1": ("New", "bot")},
            {"D1": ("Resolved", "bot"), "D2": ("Resolved", "human"), "D3": ("Open", "human")},
            {"D1": ("Resolved", "bot"), "D2": ("Resolved", "human"), "D3": ("Resolved", "human")},
        ]
        pr = h.ledger.find_pull_request(repo, number)
        assert [(r["number"], r["head_sha"], r["status"]) for r in h.ledger.rounds(pr["id"])] \
            == [(1, heads[0], "complete"), (2, heads[1], "complete"), (3, heads[2], "complete")]
        assert [(x["round"], x["state"], x["rule"]) for x in h.ledger.history(pr["id"], "D3")] \
            == [(1, "New", "raised-by-review-comment"), (2, "Open", "anchor-untouched"),
                (3, "Resolved", "tests-added")]
        d1 = h.ledger.defect(pr["id"], "D1")
        assert d1.rule == "debug-print"

        # One review, for the only round with New defects, inline on that round's head.
        [posted] = [r.body for r in fake.requests
                    if r.method == "POST" and r.path.endswith(f"/pulls/{number}/reviews")]
        assert posted["commit_id"] == heads[0] and posted["event"] == "COMMENT"
        printed = task.round(1).files["app/users.py"].splitlines().index(
            '    print("profile lookup", user_id, profile)') + 1
        assert [(c["path"], c["line"], c["side"]) for c in posted["comments"]] == \
            [("app/users.py", printed, "RIGHT")]
        reviews = [r for r in fake.reviews(repo, number)
                   if r["user"]["login"] == bot and r["body"]]  # replies come in empty ones
        assert [(r["commit_id"], r["state"]) for r in reviews] == [(heads[0], "COMMENTED")]
        ours = [c for c in fake.review_comments(repo, number) if c["user"]["login"] == bot]
        top = [c for c in ours if not c.get("in_reply_to_id")]
        assert [(c["original_commit_id"], c["original_line"]) for c in top] == \
            [(heads[0], printed)]
        assert d1.comment_ids[0] == top[0]["id"]

        # Replies where a state changed: D1 (the bot's) and D2 (a reviewer's) in round 2, D3
        # in round 3. D3 New -> Open in round 2 gets none (nobody had claimed a fix yet).
        replies = [c for c in ours if c.get("in_reply_to_id")]
        d2_root = h.ledger.thread_root(pr["id"], "D2")["id"]
        d3_root = h.ledger.thread_root(pr["id"], "D3")["id"]
        assert sorted((c["in_reply_to_id"], render.read_marker(c["body"])) for c in replies) == \
            sorted([(top[0]["id"], ("state", "D1", 2)), (d2_root, ("state", "D2", 2)),
                    (d3_root, ("state", "D3", 3))])
        assert all("looks resolved" in c["body"] for c in replies)

        # The bot's own thread (D1) resolved through GraphQL; the reviewers' threads left alone.
        mutations = [r for r in fake.requests if r.path == "/graphql"
                     and RESOLVE_MUTATION in r.body["query"]]
        assert len(mutations) == 1
        threads = {t["comments"][0]["id"]: t for t in fake.threads(repo, number)}
        assert mutations[0].body["variables"]["id"] == threads[top[0]["id"]]["node_id"]
        assert (threads[top[0]["id"]]["is_resolved"], threads[top[0]["id"]]["resolved_by"]) == \
            (True, bot)
        assert threads[d2_root]["is_resolved"] is False and threads[d3_root]["is_resolved"] is False
        assert h.ledger.defect(pr["id"], "D1").thread_node_id == \
            threads[top[0]["id"]]["node_id"]

        # Exactly one summary, created once and edited in place, listing every defect.
        [summary] = [c for c in fake.issue_comments(repo, number) if c["user"]["login"] == bot]
        created = [r for r in fake.requests
                   if r.method == "POST" and r.path.endswith(f"/issues/{number}/comments")]
        edits = [r for r in fake.requests
                 if r.method == "PATCH" and r.path.endswith(f"/issues/comments/{summary['id']}")]
        # edited by rounds 2 and 3, and after each reviewer comment that raised a defect
        # (D2, D3) between rounds 1 and 2: the summary shows what the check shows
        assert (len(created), len(edits)) == (1, 4)
        # round 1 adds code and no test: a note (not a tracked defect) until tests arrive
        assert "no test" in created[0].body["body"] and "require_tests" in created[0].body["body"]
        assert "require_tests" not in summary["body"]
        assert summary["body"].startswith(render.SUMMARY_MARKER)
        assert f"round 3 · `{heads[2][:7]}`" in summary["body"]
        assert summary_rows(summary["body"]) == {"D1": "Resolved", "D2": "Resolved",
                                                 "D3": "Resolved"}
        assert [j["status"] for j in h.ledger.db["jobs"].rows] == ["done"] * 8


# -- retries and failures ---------------------------------------------------------------------------


async def test_rate_limits_and_5xx_are_retried_and_the_round_completes(tmp_path):
    async with running_bot(tmp_path) as bot:
        fake = bot.fake
        open_pr(fake)
        fake.fail_secondary_rate_limit("GET", rf"/pulls/{NUMBER}$", retry_after=1)
        fake.fail_primary_rate_limit("POST", rf"/pulls/{NUMBER}/reviews$", reset_in=0)
        fake.fail_next("GET", rf"/issues/{NUMBER}/comments$", 502, "<html>Bad Gateway</html>")
        fake.fail_secondary_rate_limit("GET", r"/contents/app/core\.py$", retry_after=None)
        before = await bot.metrics()
        await bot.pull_request("opened")
        await bot.idle()
        assert [j["status"] for j in bot.jobs()] == ["done"]
        assert bot.jobs()[0]["attempts"] == 1  # retried inside the job, not re-queued
        assert [r["status"] for r in bot.rounds()] == ["complete"]
        # The retries are visible on the fake: each failed call was made once more.
        assert len(bot.calls("GET", rf"/pulls/{NUMBER}$")) == 2  # JSON (failed, again)
        assert len(bot.calls("GET", rf"/compare/{BASE_SHA}\.\.\.{HEAD1}$")) == 1  # pinned diff
        assert len(bot.calls("POST", rf"/pulls/{NUMBER}/reviews$")) == 2
        assert len(bot.calls("GET", rf"/issues/{NUMBER}/comments$")) == 2
        assert len(bot.calls("GET", r"/contents/app/core\.py$")) == 2
        assert len(bot.bot_reviews()) == 1 and len(bot.bot_comments()) == 1
        assert len(bot.bot_comments("review")) == 2
        after = await bot.metrics()
        api = "roundwise_github_api_calls_total"
        assert sum(metric(after, api, method=m, outcome="retryable_error")
                   - metric(before, api, method=m, outcome="retryable_error")
                   for m in ("GET", "POST")) == 4

        # Round 2 resolves D1's thread through GraphQL, which fails three times first: a 502,
        # a secondary limit (403) and a primary limit (200 with a RATE_LIMITED error).
        fake.fail_next("POST", r"^/graphql$", 502)
        fake.fail_secondary_rate_limit("POST", r"^/graphql$", retry_after=None)
        fake.fail_next("POST", r"^/graphql$", 200, {"data": None, "errors": [
            {"type": "RATE_LIMITED", "message": "API rate limit exceeded for installation."}]})
        fake.push(REPO, NUMBER, HEAD2, ROUND2_FILES)
        await bot.pull_request("synchronize")
        await bot.idle()
        assert [j["status"] for j in bot.jobs()] == ["done", "done"]
        assert bot.states() == {"D1": "Resolved", "D2": "Open"}
        assert len(bot.calls("POST", r"^/graphql$")) == 5  # threads query x4, mutation
        assert [t["is_resolved"] for t in fake.threads(REPO, NUMBER)] == [True, False]


async def test_file_paths_are_escaped_in_api_urls(tmp_path):
    async with running_bot(tmp_path) as bot:
        path = "app/{{name}}/big deal #1.py"  # a template-looking name, a space, a hash
        open_pr(bot.fake, head_files={path: ROUND1_FILES["app/core.py"]})
        await bot.pull_request("opened")
        await bot.idle()
        [read] = [r for r in bot.fake.requests if r.path.endswith("deal #1.py")]
        assert read.path == f"/repos/{REPO}/contents/{path}" and read.query == {"ref": HEAD1}
        pr = bot.ledger.find_pull_request(REPO, NUMBER)
        d2 = bot.ledger.defect(pr["id"], "D2")
        assert (d2.path, d2.rule, d2.code) == (path, "debug-print", "    print(result)")


async def test_a_permanent_error_fails_the_job_visibly_and_resolves_nothing(tmp_path, caplog):
    async with running_bot(tmp_path) as bot:
        fake = bot.fake
        open_pr(fake)
        fake.fail_next("POST", rf"/pulls/{NUMBER}/reviews$", 403,
                       {"message": "Resource not accessible by integration",
                        "documentation_url": "https://docs.github.com/rest", "status": "403"})
        await bot.pull_request("opened", "first")
        await bot.idle()
        [job] = bot.jobs()
        assert job["status"] == "failed" and job["attempts"] == 1
        assert f"POST /repos/{REPO}/pulls/{NUMBER}/reviews" in job["error"]
        assert "Resource not accessible by integration" in job["error"]
        logged = [r.getMessage() for r in caplog.records if r.levelname in ("WARNING", "ERROR")]
        assert any(f"POST /repos/{REPO}/pulls/{NUMBER}/reviews" in m and "Resource not" in m
                   for m in logged)  # the failed request is in the log
        [rnd] = bot.rounds()
        assert rnd["status"] == "failed" and "reviews" in rnd["error"]
        assert bot.states() == {}  # nothing recorded from a round that did not finish
        assert bot.bot_comments() == [] and bot.bot_reviews() == []

        await bot.pull_request("opened", "first")  # redelivered: the round is not lost
        await bot.idle()
        assert [(r["number"], r["status"]) for r in bot.rounds()] == [(1, "complete")]
        assert bot.states() == {"D1": "New", "D2": "New"}

        # Round 2 would resolve D1, but the summary cannot be written (404): nothing resolved.
        fake.push(REPO, NUMBER, HEAD2, ROUND2_FILES)
        fake.fail_next("PATCH", r"/issues/comments/\d+$", 404)
        await bot.pull_request("synchronize", "second")
        await bot.idle()
        assert bot.jobs()[-1]["status"] == "failed"
        assert [r["status"] for r in bot.rounds()] == ["complete", "failed"]
        assert bot.states() == {"D1": "New", "D2": "New"}
        pr = bot.ledger.find_pull_request(REPO, NUMBER)
        assert pr["last_reviewed_sha"] == HEAD1
        assert "| D1 | New |" in bot.bot_comments()[0]["body"]

        await bot.pull_request("synchronize", "second")  # redelivery finishes it, posting once
        await bot.idle()
        assert [r["status"] for r in bot.rounds()] == ["complete", "complete"]
        assert bot.states() == {"D1": "Resolved", "D2": "Open"}
        replies = [c for c in bot.bot_comments("review") if c.get("in_reply_to_id")]
        assert markers(replies) == [("state", "D1", 2)]
        assert bot.ledger.comments(pr["id"], "D1")[-1]["id"] == replies[0]["id"]
        assert len([r for r in bot.calls("POST", "^/graphql$")
                    if RESOLVE_MUTATION in r.body["query"]]) == 1
        assert len(bot.bot_comments()) == 1
        assert summary_rows(bot.bot_comments()[0]["body"]) == {"D1": "Resolved", "D2": "Open"}


async def test_a_422_on_the_review_posts_the_comments_one_by_one(tmp_path):
    async with running_bot(tmp_path) as bot:
        open_pr(bot.fake)
        bot.fake.fail_next("POST", rf"/pulls/{NUMBER}/reviews$", 422, SIMPLE_422)
        await bot.pull_request("opened")
        await bot.idle()
        assert [j["status"] for j in bot.jobs()] == ["done"]
        sent = [r.body for r in bot.calls("POST", rf"/pulls/{NUMBER}/reviews$")]
        assert [len(b["comments"]) for b in sent] == [2, 1, 1]
        assert all(b["commit_id"] == HEAD1 for b in sent)
        assert sorted(markers(bot.bot_comments("review"))) == \
            [("new", "D1", 1), ("new", "D2", 1)]
        pr = bot.ledger.find_pull_request(REPO, NUMBER)
        assert all(bot.ledger.thread_root(pr["id"], k) for k in ("D1", "D2"))
        assert [r["status"] for r in bot.rounds()] == ["complete"]


async def test_a_comment_github_keeps_refusing_is_dropped_and_noted(tmp_path):
    async with running_bot(tmp_path) as bot:
        open_pr(bot.fake)
        bot.fake.fail_next("POST", rf"/pulls/{NUMBER}/reviews$", 422, SIMPLE_422, times=2)
        await bot.pull_request("opened")
        await bot.idle()
        assert [r["status"] for r in bot.rounds()] == ["complete"]
        assert markers(bot.bot_comments("review")) == [("new", "D2", 1)]
        assert bot.states() == {"D1": "New", "D2": "New"}  # still tracked
        body = bot.bot_comments()[0]["body"]
        assert "GitHub would not take these as inline comments: D1." in body


# -- commands ----------------------------------------------------------------------------------------


async def test_commands_check_write_access_through_the_api(tmp_path):
    async with running_bot(tmp_path) as bot:
        fake = bot.fake
        open_pr(fake)
        fake.set_permission(REPO, "reader", "read")
        fake.set_permission(REPO, "writer", "write")
        await bot.pull_request("opened")
        await bot.idle()
        summary_id = bot.bot_comments()[0]["id"]

        await bot.comment("reader", "/roundwise resolve D1")
        await bot.idle()
        assert bot.bot_comments()[-1]["body"] == \
            "@reader only people with write access can `/roundwise resolve`."
        assert bot.calls("GET", r"/collaborators/reader/permission$")
        assert bot.states()["D1"] == "New"

        await bot.comment("writer", "Looked at it.\n/roundwise resolve d1")
        await bot.idle()
        assert bot.states() == {"D1": "Resolved", "D2": "New"}
        pr = bot.ledger.find_pull_request(REPO, NUMBER)
        last = bot.ledger.history(pr["id"], "D1")[-1]
        assert (last["state"], last["rule"], last["decided_by"]) == \
            ("Resolved", "command_resolve", "human")
        summaries = [c for c in bot.bot_comments() if render.SUMMARY_MARKER in c["body"]]
        assert [c["id"] for c in summaries] == [summary_id]
        assert summary_rows(summaries[0]["body"]) == {"D1": "Resolved", "D2": "New"}
        reply = bot.bot_comments("review")[-1]
        assert reply["body"].startswith("D1 marked resolved by @writer")
        assert reply["in_reply_to_id"] == bot.ledger.thread_root(pr["id"], "D1")["id"]

        await bot.comment("writer", "/roundwise ignore D9")
        await bot.idle()
        assert "D9" in bot.bot_comments()[-1]["body"]
        # a round, three commands and the refusal comment's own job (``refusal``)
        assert [j["status"] for j in bot.jobs()] == ["done"] * 5


async def test_help_unknown_and_status_commands(tmp_path):
    async with running_bot(tmp_path) as bot:
        open_pr(bot.fake)
        await bot.pull_request("opened")
        await bot.idle()
        for text in ("/roundwise help", "/roundwise", "/roundwise frobnicate now",
                     "/roundwise resolve", "/roundwise status"):
            await bot.comment("sam", text)
            await bot.idle()
        replies = [c["body"] for c in bot.bot_comments()[1:]]
        assert replies[0] == render.HELP and replies[1] == render.HELP
        assert replies[2].startswith("@sam unknown command `frobnicate`") and \
            render.HELP in replies[2]
        assert replies[3].startswith("@sam `/roundwise resolve` needs a defect id")
        assert "| id | state | where | description |" in replies[4]
        assert re.findall(r"^\| (D\d) \| (\w+) \|", replies[4], re.MULTILINE) == \
            [("D1", "New"), ("D2", "New")]
        assert not bot.calls("GET", r"/permission$")  # nobody needed write access


async def test_review_command_runs_a_fresh_round_of_the_same_head(tmp_path):
    async with running_bot(tmp_path) as bot:
        open_pr(bot.fake)
        await bot.pull_request("opened")
        await bot.idle()
        await bot.comment("sam", "/roundwise review")
        await bot.idle()
        assert [(r["number"], r["head_sha"], r["status"]) for r in bot.rounds()] == \
            [(1, HEAD1, "complete"), (2, HEAD1, "complete")]
        assert [(j["kind"], j["status"]) for j in bot.jobs()] == \
            [("round", "done"), ("command", "done"), ("round", "done")]
        # Nothing moved: the same defects, where they were, and nothing posted twice.
        assert bot.states() == {"D1": "Open", "D2": "Open"}
        pr = bot.ledger.find_pull_request(REPO, NUMBER)
        assert [(d.line_start, d.line_end) for d in bot.ledger.defects(pr["id"])] == \
            [(5, 5), (7, 7)]
        assert len(bot.bot_comments()) == 1 and len(bot.bot_reviews()) == 1
        assert "round 2" in bot.bot_comments()[0]["body"]


@needs_webhook_fixtures
async def test_a_real_issue_comment_from_a_reader_is_refused(tmp_path):
    async with running_bot(tmp_path) as bot:
        open_pr(bot.fake)
        bot.fake.set_permission(REPO, "Codertocat", "read")
        await bot.pull_request("opened")
        await bot.idle()
        payload = repoint(fixture("issue_comment.created.with-installation"), bot.fake)
        payload["comment"]["body"] = "/roundwise ignore D2"
        assert (await bot.deliver("issue_comment", payload))[0] == 202
        await bot.idle()
        assert bot.bot_comments()[-1]["body"] == \
            "@Codertocat only people with write access can `/roundwise ignore`."
        pr = bot.ledger.find_pull_request(REPO, NUMBER)
        assert not bot.ledger.defect(pr["id"], "D2").ignored


async def test_closed_keeps_the_final_states_and_reopened_reviews_again(tmp_path):
    async with running_bot(tmp_path) as bot:
        open_pr(bot.fake)
        await bot.pull_request("opened")
        await bot.idle()
        bot.fake.close_pr(REPO, NUMBER, merged=False)
        await bot.pull_request("closed")
        await bot.idle()
        pr = bot.ledger.find_pull_request(REPO, NUMBER)
        assert pr["status"] == "closed" and bot.states() == {"D1": "New", "D2": "New"}

        bot.fake.reopen_pr(REPO, NUMBER)
        bot.fake.push(REPO, NUMBER, HEAD2, ROUND2_FILES)
        await bot.pull_request("reopened")
        await bot.idle()
        assert bot.ledger.find_pull_request(REPO, NUMBER)["status"] == "open"
        assert [r["head_sha"] for r in bot.rounds()] == [HEAD1, HEAD2]
        assert bot.states() == {"D1": "Resolved", "D2": "Open"}

        bot.fake.close_pr(REPO, NUMBER, merged=True)
        await bot.pull_request("closed")
        await bot.idle()
        assert bot.ledger.find_pull_request(REPO, NUMBER)["status"] == "merged"
        await bot.pull_request("synchronize")  # a late push event: the PR is not open
        await bot.idle()
        assert len(bot.rounds()) == 2 and bot.jobs()[-1]["status"] == "done"


# -- drafts and settings -----------------------------------------------------------------------------


async def test_drafts_are_skipped_until_ready_for_review(tmp_path):
    async with running_bot(tmp_path) as bot:
        open_pr(bot.fake, draft=True)
        await bot.pull_request("opened")
        await bot.idle()
        [job] = bot.jobs()
        assert job["status"] == "done" and bot.rounds() == []
        assert bot.delivery(job["delivery_id"])["outcome"] == "skipped: draft pull request"
        assert bot.bot_reviews() == [] and bot.bot_comments() == []

        bot.fake.set_draft(REPO, NUMBER, False)
        await bot.pull_request("ready_for_review")
        await bot.idle()
        assert [r["status"] for r in bot.rounds()] == ["complete"]
        assert len(bot.bot_reviews()) == 1


async def test_drafts_are_reviewed_when_configured(tmp_path):
    async with running_bot(tmp_path, review_drafts=True) as bot:
        open_pr(bot.fake, draft=True)
        await bot.pull_request("opened")
        await bot.idle()
        assert [r["status"] for r in bot.rounds()] == ["complete"]


async def test_settings_on_the_default_branch_are_honoured(tmp_path):
    async with running_bot(tmp_path) as bot:
        open_pr(bot.fake, default_files={".github/roundwise.yml":
                                          "max_comments: 1\nrequire_tests: true\n"})
        await bot.pull_request("opened")
        await bot.idle()
        assert bot.states() == {"D1": "New"}  # the more severe finding only
        assert markers(bot.bot_comments("review")) == [("new", "D1", 1)]
        reads = bot.calls("GET", r"/contents/\.github/roundwise\.yml$")
        assert reads and all("ref" not in r.query for r in reads)


async def test_settings_on_the_pr_branch_are_not_honoured(tmp_path):
    async with running_bot(tmp_path) as bot:
        head = {**ROUND1_FILES, ".github/roundwise.yml": "max_comments: 0\nreview_drafts: true\n"}
        open_pr(bot.fake, head_files=head)
        await bot.pull_request("opened")
        await bot.idle()
        assert {"D1", "D2"} <= set(bot.states())
        assert len(bot.bot_comments("review")) >= 2
        # Settings come from the default branch; the PR's copy is only read as a changed file.
        reads = bot.calls("GET", r"/contents/\.github/roundwise\.yml$")
        assert [r.query.get("ref") for r in reads] == [None, HEAD1]


async def test_an_invalid_settings_file_gives_one_clear_note_not_a_crash(tmp_path):
    async with running_bot(tmp_path) as bot:
        open_pr(bot.fake, default_files={".github/roundwise.yml": "max_comments: lots\n"})
        await bot.pull_request("opened")
        await bot.idle()
        bot.fake.push(REPO, NUMBER, HEAD2, ROUND2_FILES)
        await bot.pull_request("synchronize")
        await bot.idle()
        assert [j["status"] for j in bot.jobs()] == ["done", "done"]
        # the defaults applied: "no tests" is only a note, so the print is the one defect
        assert bot.states() == {"D1": "Open"}
        [note] = bot.bot_comments()
        assert note["body"].count(".github/roundwise.yml") == 1
        assert "⚠️ .github/roundwise.yml: max_comments must be a whole number >= 0; using " \
               "the defaults." in note["body"]


# -- people's threads -------------------------------------------------------------------------------


async def test_thread_resolved_and_unresolved_change_a_human_defect(tmp_path):
    async with running_bot(tmp_path) as bot:
        fake = bot.fake
        open_pr(fake)
        await bot.pull_request("opened")
        await bot.idle()
        comment = fake.add_review_comment(REPO, NUMBER, "rina", "app/core.py", 6,
                                          "This must reject a negative factor; raise ValueError.")
        await bot.deliver("pull_request_review_comment",
                          payloads.review_comment(fake, REPO, NUMBER, comment))
        await bot.idle()
        assert bot.states()["D3"] == "New"

        thread = fake.resolve_thread(REPO, NUMBER, comment["id"], "rina")
        await bot.deliver("pull_request_review_thread",
                          payloads.review_thread(fake, REPO, NUMBER, thread, "resolved"))
        await bot.idle()
        assert bot.states()["D3"] == "Resolved"
        pr = bot.ledger.find_pull_request(REPO, NUMBER)
        last = bot.ledger.history(pr["id"], "D3")[-1]
        assert (last["rule"], last["decided_by"]) == ("thread_resolved", "human")
        assert bot.ledger.defect(pr["id"], "D3").thread_node_id == thread["node_id"]

        fake.push(REPO, NUMBER, HEAD2, {**ROUND2_FILES, "app/extra.py": "X = 1\n"})
        await bot.pull_request("synchronize")
        await bot.idle()
        assert bot.states()["D3"] == "Resolved"
        thread = fake.unresolve_thread(REPO, NUMBER, comment["id"])
        await bot.deliver("pull_request_review_thread",
                          payloads.review_thread(fake, REPO, NUMBER, thread, "unresolved",
                                                 sender="rina"))
        await bot.idle()
        assert bot.states()["D3"] == "Reopened"
        assert bot.ledger.history(pr["id"], "D3")[-1]["rule"] == "thread_unresolved"

        # The bot's own thread resolution comes back as a webhook from the bot: ignored.
        d1_root = bot.ledger.thread_root(pr["id"], "D1")["id"]
        [own] = [t for t in fake.threads(REPO, NUMBER) if t["comments"][0]["id"] == d1_root]
        assert own["is_resolved"]
        status, data = await bot.deliver(
            "pull_request_review_thread",
            payloads.review_thread(fake, REPO, NUMBER, own, "unresolved"))
        assert status == 200 and data == {"ignored": "the bot's own activity"}
        assert bot.states()["D1"] == "Resolved"


async def test_a_comment_on_an_unreviewed_push_is_mapped_from_that_push(tmp_path):
    # Round 1 reviews HEAD1. HEAD2's webhook never arrives (lost), a reviewer comments on a
    # line of HEAD2, then HEAD3 inserts two lines above it. The anchor must be mapped from
    # HEAD2 (where the comment's line numbers hold), not from the last reviewed HEAD1.
    async with running_bot(tmp_path) as bot:
        open_pr(bot.fake)
        await bot.pull_request("opened")
        await bot.idle()
        head2 = {"app/core.py": ROUND1_FILES["app/core.py"].replace(
            "def scale", "def clamp(v):\n    return max(0, v)\n\n\ndef scale")}
        bot.fake.push(REPO, NUMBER, HEAD2, head2)
        line = head2["app/core.py"].splitlines().index(
            "    result = [v * factor for v in values]") + 1
        comment = bot.fake.add_review_comment(REPO, NUMBER, "rina", "app/core.py", line,
                                              "This list is rebuilt on every call.")
        assert comment["commit_id"] == HEAD2
        await bot.deliver("pull_request_review_comment",
                          payloads.review_comment(bot.fake, REPO, NUMBER, comment))
        await bot.idle()
        head3 = {"app/core.py": "import math\nimport os\n" + head2["app/core.py"]}
        bot.fake.push(REPO, NUMBER, HEAD3, head3)
        await bot.pull_request("synchronize")
        await bot.idle()
        pr = bot.ledger.find_pull_request(REPO, NUMBER)
        human = [d for d in bot.ledger.defects(pr["id"]) if d.origin.value == "human"]
        assert len(human) == 1
        d = human[0]
        assert d.line_start == line + 2 and str(d.state) == "Open"
        assert head3["app/core.py"].splitlines()[d.line_start - 1].strip() == \
            "result = [v * factor for v in values]"
        assert d.anchor_sha == HEAD3
        compares = bot.calls("GET", rf"/compare/{HEAD2}\.\.\.{HEAD3}")
        assert len(compares) == 1


async def test_a_rebase_onto_upstream_edits_changes_no_defect(tmp_path):
    """A force-push that rebases the PR onto a newer base, whose unrelated upstream edits
    touch the defects' file, moves the defects with the code and resolves none of them."""
    async with running_bot(tmp_path) as bot:
        fake = bot.fake
        open_pr(fake)
        await bot.pull_request("opened")
        await bot.idle()
        comment = fake.add_review_comment(REPO, NUMBER, "rina", "app/core.py", 8,
                                          "`total` can lose precision here; use math.fsum.")
        await bot.deliver("pull_request_review_comment",
                          payloads.review_comment(fake, REPO, NUMBER, comment))
        await bot.idle()
        before = bot.states()
        assert before["D3"] == "New" and before["D2"] == "New"  # the reviewer's, the print

        upstream = ("def add(a, b):\n    \"\"\"The sum of a and b.\"\"\"\n"
                    "    return a + b  # upstream\n")
        fake.advance_base(REPO, NUMBER, "c" * 40, {"app/core.py": upstream})
        rebased = ROUND1_FILES["app/core.py"].replace("def add(a, b):\n    return a + b\n",
                                                      upstream)
        fake.push(REPO, NUMBER, HEAD2, {"app/core.py": rebased}, force=True)
        await bot.pull_request("synchronize")
        await bot.idle()

        assert [r["status"] for r in bot.rounds()] == ["complete", "complete"]
        assert bot.states() == {"D1": "Open", "D2": "Open", "D3": "Open"}
        pr = bot.ledger.find_pull_request(REPO, NUMBER)
        d3 = bot.ledger.defect(pr["id"], "D3")
        assert (d3.line_start, d3.code) == (9, "    total = sum(result)")  # moved, not fixed
        assert bot.ledger.history(pr["id"], "D3")[-1]["rule"] == "anchor-untouched"
        assert bot.calls("GET", r"/compare/1{40}\.\.\.2{40}$")  # asked how the heads relate
