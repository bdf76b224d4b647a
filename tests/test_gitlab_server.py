"""The reviewer on GitLab merge requests, through the real server and the fake GitLab.

Each test starts ``bench.replay.gitlab.GitLabHarness`` (the fake GitLab and the real server
configured for GitLab alone, on loopback) and drives it with the hooks GitLab sends.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import time
from urllib.parse import urlsplit

from bench.fake_gitlab import hooks
from bench.replay.gitlab import GitLabHarness
from bot.forge import unverified
from bot.forge.appkeys import UNVERIFIED
from bot.gitlab.ids import from_note, repo_key
from bot.gitlab.webhooks import GITLAB_APP
from tracker.lifecycle import State

from .server_kit import BASE_FILES, BASE_SHA, HEAD1, HEAD2, HEAD3, ROUND1_FILES, ROUND2_FILES

PATH = "octo/widgets"
REPO = repo_key(PATH)
IID = 7
SETTINGS = ".github/roundwise.yml"
ROUND3_FILES = {**ROUND2_FILES, "app/core.py": ROUND2_FILES["app/core.py"].replace(
    "    print(result)\n", "")}


async def _start(tmp_path, settings: str = "require_tests: true\nfail_on: Trivial\n"):
    h = GitLabHarness(tmp_path / "ledger.db")
    await h.__aenter__()
    project = h.fake.add_project(PATH)
    h.fake.add_mr(project, IID, "Scale values", "Adds scale().", "sam", "main", BASE_SHA,
                  {**BASE_FILES, SETTINGS: settings})
    return h, project


async def _push(h, project, head, files, first=False):
    before = h.fake.projects[project].mrs[IID].head_sha
    h.fake.push(project, IID, head, files)
    payload = hooks.merge_request(h.fake, project, IID, "open" if first else "update",
                                  oldrev=None if first else before)
    await h.deliver("Merge Request Hook", payload)
    await h.idle(REPO, IID)
    assert h.failed_jobs(REPO, IID) == []


def _mr(h, project):
    return h.fake.projects[project].mrs[IID]


def _bot_diff_discussions(h, project):
    return [d for d in _mr(h, project).discussions if d.notes[0].type == "DiffNote"
            and d.notes[0].author == h.fake.bot_username]


def _summaries(h, project):
    return [n for d in _mr(h, project).discussions for n in d.notes
            if "<!-- roundwise:summary -->" in n.body]


async def test_a_merge_request_over_three_pushes(tmp_path):
    h, project = await _start(tmp_path)
    try:
        await _push(h, project, HEAD1, ROUND1_FILES, first=True)
        pr = h.ledger.find_pull_request(REPO, IID)
        assert pr["host"] == "gitlab" and pr["author"] == "sam"
        inline = [d for d in h.ledger.defects(pr["id"]) if d.path]
        first = _bot_diff_discussions(h, project)
        # one discussion per new defect on lines, each on the version of HEAD1
        assert len(first) == len(inline) >= 1
        version1 = _mr(h, project).versions[0]
        assert {d.notes[0].position["head_sha"] for d in first} == {version1.head}
        assert {d.notes[0].position["base_sha"] for d in first} == {version1.base}
        status1 = h.fake.projects[project].statuses[HEAD1][-1]
        assert status1["name"] == "roundwise" and status1["status"] == "failed"
        summary = _summaries(h, project)
        assert len(summary) == 1
        body1 = summary[0].body
        # links to the file at the head point at GitLab, with GitLab's line ranges
        assert f"{h.fake.url}/{PATH}/-/blob/{HEAD1}/app/core.py#L" in body1
        assert "github.com" not in body1

        await _push(h, project, HEAD2, ROUND2_FILES)
        await _push(h, project, HEAD3, ROUND3_FILES)
        fixed = [d for d in h.ledger.defects(pr["id"]) if d.path]
        assert [d.state for d in fixed] == [State.RESOLVED] * len(inline)
        discussions = _bot_diff_discussions(h, project)
        assert len(discussions) == len(first)  # nothing raised twice over three pushes
        for defect in fixed:  # each fixed defect: a reply in its thread, the thread resolved
            thread = next(d for d in discussions
                          if from_note(d.notes[0].id) in defect.comment_ids)
            assert all(n.resolved and n.resolved_by == h.fake.bot_username
                       for n in thread.notes)
            replies = [n for n in thread.notes[1:] if n.author == h.fake.bot_username]
            assert replies and f"{defect.key} looks resolved" in replies[-1].body
        summary = _summaries(h, project)
        assert len(summary) == 1 and summary[0].body != body1  # edited in place
        assert "github.com" not in summary[0].body
        assert h.fake.projects[project].statuses[HEAD3][-1]["status"] == "success"
        assert h.ledger.find_pull_request(REPO, IID)["last_reviewed_sha"] == HEAD3
    finally:
        await h.__aexit__(None, None, None)


async def _command(h, project, user, text):
    _, note = h.fake.add_note(_mr(h, project), user, text)
    await h.deliver("Note Hook", hooks.note(h.fake, project, IID, note.id))
    await h.idle(REPO, IID)
    return note


async def test_a_command_below_developer_access_is_refused(tmp_path):
    h, project = await _start(tmp_path)
    try:
        await _push(h, project, HEAD1, ROUND1_FILES, first=True)
        pr = h.ledger.find_pull_request(REPO, IID)
        key = next(d.key for d in h.ledger.defects(pr["id"]) if d.path)
        h.fake.set_access(project, "rita", "reporter")
        await _command(h, project, "rita", f"/roundwise resolve {key}")
        assert h.ledger.defect(pr["id"], key).state is State.NEW
        answers = [n.body for d in _mr(h, project).discussions for n in d.notes
                   if n.author == h.fake.bot_username and "@rita" in n.body]
        assert answers and "write access" in answers[-1]
        h.fake.set_access(project, "dev", "developer")
        await _command(h, project, "dev", f"/roundwise resolve {key}")
        assert h.ledger.defect(pr["id"], key).state is State.RESOLVED
    finally:
        await h.__aexit__(None, None, None)


async def test_a_redelivered_hook_is_processed_once(tmp_path):
    h, project = await _start(tmp_path)
    try:
        await _push(h, project, HEAD1, ROUND1_FILES, first=True)
        pr = h.ledger.find_pull_request(REPO, IID)
        _, note = h.fake.add_diff_note(project, IID, "rev", "app/core.py", 8,
                                       "Please rename `total` here, it shadows the builtin.")
        payload = hooks.note(h.fake, project, IID, note.id)
        first = await h.deliver("Note Hook", payload, delivery="uuid-1")
        soon = await h.deliver("Note Hook", payload, delivery="uuid-1")  # before it ran
        await h.idle(REPO, IID)
        late = await h.deliver("Note Hook", payload, delivery="uuid-1")  # after it ran
        await h.idle(REPO, IID)
        assert "queued" in first and soon == first and late == {"duplicate": "uuid-1"}
        raised = [d for d in h.ledger.defects(pr["id"]) if d.origin.value == "human"]
        assert len(raised) == 1 and raised[0].line_start == 8
        assert raised[0].code == "    total = sum(result)"  # the hunk down to the line
        jobs = h.queue.jobs(REPO, IID, "done")
        assert sum(1 for j in jobs if j.delivery_id == "gitlab:uuid-1") == 1
    finally:
        await h.__aexit__(None, None, None)


async def test_a_bad_token_is_401_before_any_work(tmp_path):
    h, _project = await _start(tmp_path)
    try:
        seen = len(h.fake.requests)
        for token in ("wrong", None):
            status, data = await h.post("Merge Request Hook", {"not": "json it would parse"},
                                        token=token)
            assert status == 401, data
        async with h.session.post(f"{h.url}/gitlab/webhook", data=b"{not json",
                                  headers={"X-Gitlab-Event": "Note Hook",
                                           "X-Gitlab-Token": "nope"}) as resp:
            assert resp.status == 401  # not 400: the body was never read
        assert h.queue.depth() == 0
        assert h.ledger.db.execute("select count(*) from deliveries").fetchone()[0] == 0
        assert len([r for r in h.fake.requests[seen:] if r[1] != "/api/v4/user"]) == 0
    finally:
        await h.__aexit__(None, None, None)


async def test_gitlab_signing_header_is_checked_when_present(tmp_path):
    h, project = await _start(tmp_path)
    key = b"k" * 32
    h.app[GITLAB_APP].config.signing_key = key
    try:
        h.fake.push(project, IID, HEAD1, ROUND1_FILES)
        payload = hooks.merge_request(h.fake, project, IID, "open")
        body = hooks.encode(payload)
        stamp = str(int(time.time()))

        def sign(data: bytes, when: str) -> str:
            mac = hmac.new(key, b"msg-1." + when.encode() + b"." + data, hashlib.sha256)
            return "v1," + base64.b64encode(mac.digest()).decode()

        signed = {"webhook-id": "msg-1", "webhook-timestamp": stamp}
        bad, _ = await h.post("Merge Request Hook", payload, token=None,
                              headers={**signed, "webhook-signature": sign(b"{}", stamp)})
        old = str(int(time.time()) - 3600)
        stale, _ = await h.post("Merge Request Hook", payload, token=None, headers={
            "webhook-id": "msg-1", "webhook-timestamp": old,
            "webhook-signature": sign(body, old)})
        good, _ = await h.post("Merge Request Hook", payload, token=None,
                               headers={**signed, "webhook-signature": sign(body, stamp)})
        assert (bad, stale, good) == (401, 401, 202)
    finally:
        await h.__aexit__(None, None, None)


async def test_rate_limits_and_5xx_are_waited_out(tmp_path):
    h, project = await _start(tmp_path)
    try:
        h.fake.fail_next("GET", r"/merge_requests/7$", 429, {"message": "429 Too Many Requests"},
                         headers={"Retry-After": "0"})
        h.fake.fail_next("POST", r"/discussions$", 502, {"message": "502 Bad Gateway"})
        h.fake.fail_next("GET", r"/versions$", 503, times=2)
        await _push(h, project, HEAD1, ROUND1_FILES, first=True)
        statuses = [s for m, p, s in h.fake.requests]
        assert {429, 502, 503} <= set(statuses)
        pr = h.ledger.find_pull_request(REPO, IID)
        assert h.ledger.last_round(pr["id"])["head_sha"] == HEAD1
        assert len(_bot_diff_discussions(h, project)) == len(
            [d for d in h.ledger.defects(pr["id"]) if d.path])
    finally:
        await h.__aexit__(None, None, None)


async def test_a_person_resolving_a_discussion_resolves_its_defect(tmp_path):
    h, project = await _start(tmp_path)
    try:
        await _push(h, project, HEAD1, ROUND1_FILES, first=True)
        pr = h.ledger.find_pull_request(REPO, IID)
        defect = next(d for d in h.ledger.defects(pr["id"]) if d.path)
        discussion = next(d for d in _bot_diff_discussions(h, project)
                          if from_note(d.notes[0].id) in defect.comment_ids)
        h.fake.resolve(_mr(h, project), discussion.id, True, "sam")
        await h.deliver("Merge Request Hook", hooks.merge_request(h.fake, project, IID,
                                                                  "update", user="sam"))
        await h.idle(REPO, IID)
        after = h.ledger.defect(pr["id"], defect.key)
        assert after.state is State.RESOLVED
        assert h.ledger.history(pr["id"], defect.key)[-1]["decided_by"] == "human"
        # the same hook again (another update) changes nothing more
        await h.deliver("Merge Request Hook", hooks.merge_request(h.fake, project, IID,
                                                                  "update", user="sam"))
        await h.idle(REPO, IID)
        assert len(h.ledger.history(pr["id"], defect.key)) == len(
            h.ledger.history(pr["id"], after.key))
        kinds = [r["kind"] for r in h.ledger.signal_rows(pr["id"], defect.key)]
        assert kinds.count("thread_resolved") == 1
        # and unresolving it (no hook of its own either) undoes the person's resolution
        h.fake.resolve(_mr(h, project), discussion.id, False, "sam")
        await h.deliver("Merge Request Hook", hooks.merge_request(h.fake, project, IID,
                                                                  "update", user="sam"))
        await h.idle(REPO, IID)
        assert h.ledger.defect(pr["id"], defect.key).state is State.NEW
        kinds = [r["kind"] for r in h.ledger.signal_rows(pr["id"], defect.key)]
        assert kinds == ["thread_resolved", "thread_unresolved"]
    finally:
        await h.__aexit__(None, None, None)


async def test_a_push_hook_reviews_the_branch_merge_request(tmp_path):
    h, project = await _start(tmp_path)
    try:
        mr = _mr(h, project)
        h.fake.push(project, IID, HEAD1, ROUND1_FILES)
        await h.deliver("Push Hook", hooks.push(h.fake, project, mr.source_branch, BASE_SHA,
                                                HEAD1))
        for _ in range(500):  # the push job has no MR yet: wait for the round it queues
            pr = h.ledger.find_pull_request(REPO, IID)
            if pr and h.ledger.last_round(pr["id"]):
                break
            await asyncio.sleep(0.02)
        await h.idle(REPO, IID)
        assert h.ledger.last_round(pr["id"])["head_sha"] == HEAD1
    finally:
        await h.__aexit__(None, None, None)


async def test_a_flood_of_unsigned_bodies_on_the_signing_route_is_refused_at_once(tmp_path):
    """With a signing token, a hook carrying ``webhook-signature`` alone is not authenticated
    until its body is whole: bodies still arriving hold slots of the unverified budget (per
    address 429, in all 503, answered at once), and /healthz is served throughout."""
    h, _project = await _start(tmp_path)
    h.app[GITLAB_APP].config.signing_key = b"k" * 32
    url = urlsplit(h.url)
    head = ("POST /gitlab/webhook HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            "X-Gitlab-Event: Merge Request Hook\r\nX-Gitlab-Event-UUID: u\r\nwebhook-id: m\r\n"
            f"webhook-timestamp: {int(time.time())}\r\nwebhook-signature: v1,AAAA\r\n"
            "Content-Length: 1000000\r\n\r\n{").encode()

    async def trickle():
        reader, writer = await asyncio.open_connection(url.hostname, url.port)
        writer.write(head)
        await writer.drain()
        return reader, writer

    async def status_line(reader) -> int:
        return int((await asyncio.wait_for(reader.readline(), 3)).split()[1])

    held = []
    try:
        budget = h.app[UNVERIFIED]
        for _ in range(unverified.PER_PEER):
            held.append(await trickle())
        await asyncio.sleep(0.2)
        assert budget.active == unverified.PER_PEER  # each slow body holds a slot
        reader, writer = await trickle()
        held.append((reader, writer))
        assert await status_line(reader) == 429  # at once, not after the read deadline
        async with h.session.get(f"{h.url}/healthz") as resp:
            assert resp.status == 200
        budget.per_peer, budget.total = 1000, unverified.PER_PEER
        reader, writer = await trickle()
        held.append((reader, writer))
        assert await status_line(reader) == 503
        # a hook with the right secret token is authenticated: it needs no slot
        h.fake.push(_project, IID, HEAD1, ROUND1_FILES)
        status, _ = await h.post("Merge Request Hook",
                                 hooks.merge_request(h.fake, _project, IID, "open"))
        assert status == 202
    finally:
        for _, writer in held:
            writer.close()
        await h.__aexit__(None, None, None)


async def test_a_push_whose_commit_says_it_addresses_the_review_resolves_a_remark(tmp_path):
    """Commit messages come from GitLab's comparison of the two heads, the request the round
    already makes for its diff: no request more than a push without them."""
    remark = "Please make the error messages friendlier for users."
    edited = {**ROUND1_FILES, "app/core.py": ROUND1_FILES["app/core.py"] + "\n# reworded\n"}
    outcomes, requests = [], []
    for messages in (["Reword a comment", "Apply suggestions from code review"],
                     ["Reword a comment"]):
        h, project = await _start(tmp_path / str(len(messages)))
        try:
            await _push(h, project, HEAD1, ROUND1_FILES, first=True)
            await _command(h, project, "rina", remark)
            pr = h.ledger.find_pull_request(REPO, IID)
            key = next(d.key for d in h.ledger.defects(pr["id"]) if d.author == "rina")
            before = h.fake.usage(project)["requests"]
            h.fake.push(project, IID, HEAD2, edited, messages)
            await h.deliver("Merge Request Hook", hooks.merge_request(
                h.fake, project, IID, "update", oldrev=HEAD1))
            await h.idle(REPO, IID)
            requests.append(h.fake.usage(project)["requests"] - before)
            last = h.ledger.history(pr["id"], key)[-1]
            outcomes.append((last["state"], last["rule"]))
        finally:
            await h.__aexit__(None, None, None)
    assert outcomes == [("Resolved", "remark-review-commit"), ("Open", "pr-unaddressed")]
    assert requests[0] == requests[1]
