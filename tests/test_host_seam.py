"""The seam for code hosts: a third host is its package, one ``Host`` entry, its settings and
its fake, and nothing else.

Everything for a made-up host, "Toy", is written here, in-process: its fake (a small JSON API
over real HTTP on loopback, with files per commit, one pull request, comments and a request
count), its package (a ``Forge`` over that API, a webhook route authenticated by a token header
in constant time and read through ``bot.forge.body``, a ``Service`` owning the ``toy:``
repositories' jobs, its settings read from the environment) and its replay on
``bench.replay.rounds``. The host is registered by adding its ``Host`` to ``bot.server.hosts``'s
list and nothing of the bot is changed: ``load_config`` reads its settings, ``create_app`` mounts
its route, the worker pool hands it its jobs, the ready line and ``serve --help`` name it. A
bundled task is then replayed through it and tracks exactly as through the fake GitHub.
"""

from __future__ import annotations

import hmac
import itertools
from dataclasses import dataclass, field
from typing import Any, Self

import aiohttp
import pytest
from aiohttp import web

from bench.replay import github as github_replay
from bench.replay.rounds import BotError, BotHarness, play
from bench.tasks.diffs import apply_files, diff_trees
from bench.tasks.mcr import load_task
from bot.forge import Comment, Forge, InlineComment, PullRequest, Thread
from bot.forge.appkeys import STATE
from bot.forge.body import Authenticated, BodyRefused, parse_payload, read_verified
from bot.forge.delivery import BadPayload, Route
from bot.forge.delivery import field as payload_field
from bot.forge.host import Host
from bot.server import hosts
from bot.server.startup import ready_line
from tests.conftest import EXAMPLES

TOKEN, HOOK_TOKEN, BOT = "toy-api-token", "toy-hook-token", "roundwise[bot]"


# -- the fake: Toy's API ----------------------------------------------------------------------

class FakeToy:
    """Toy's server: trees by commit, one pull request per number, comments, a request count."""

    def __init__(self):
        self.trees: dict[str, dict[str, str]] = {}
        self.messages: dict[str, list[str]] = {}
        self.prs: dict[int, dict] = {}
        self.comments: list[dict] = []
        self.ids = itertools.count(1)
        self.requests = 0

    async def start(self) -> None:
        app = web.Application()
        app.router.add_route("*", "/api/{tail:.*}", self.handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"

    async def stop(self) -> None:
        await self._runner.cleanup()

    def open_pr(self, number: int, author: str, title: str, base: str, files: dict) -> None:
        self.trees[base] = dict(files)
        self.prs[number] = {"number": number, "author": author, "title": title, "body": "",
                            "base": base, "head": base}

    def push(self, number: int, head: str, files: dict, messages: list[str]) -> None:
        pr = self.prs[number]
        self.trees[head] = apply_files(self.trees[pr["base"]], files)
        self.messages[head] = messages
        pr["head"] = head

    def diff(self, base: str, head: str):
        return diff_trees(self.trees[base], self.trees[head])

    def comment(self, number: int, user: str, body: str, **where: Any) -> dict:
        made = {"id": next(self.ids), "number": number, "user": {"login": user}, "body": body,
                **where}
        if where.get("path"):
            pr = self.prs[number]
            spot = next((d for d in self.diff(pr["base"], pr["head"])
                         if d.path == where["path"]), None)
            hunk = spot.diff_hunk(where["line"], where.get("side") or "RIGHT") if spot else ""
            if not hunk:
                raise ValueError("not a line of the diff")
            made.update(diff_hunk=hunk, commit_id=pr["head"])
        self.comments.append(made)
        return made

    async def handle(self, request: web.Request) -> web.Response:
        self.requests += 1
        if not hmac.compare_digest(request.headers.get("X-Toy-Token", ""), TOKEN):
            return web.json_response({"error": "bad token"}, status=401)
        path, query = request.match_info["tail"].split("/"), request.query
        if path[0] == "prs" and len(path) == 2:
            pr = self.prs[int(path[1])]
            return web.json_response(pr)
        if path[0] == "diff":
            return web.Response(text="".join(d.render() for d in self.diff(query["base"],
                                                                            query["head"])))
        if path[0] == "messages":
            return web.json_response(self.messages.get(query["head"], []))
        if path[0] == "file":
            ref = query.get("ref") or next(iter(self.trees))
            text = self.trees.get(ref, {}).get(query["path"])
            return web.Response(text=text) if text is not None else web.Response(status=404)
        if path[0] == "comments" and request.method == "GET":
            return web.json_response([c for c in self.comments
                                      if bool(c.get("path")) == (query["kind"] == "review")])
        if path[0] == "comments" and request.method == "POST":
            data = await request.json()
            number = data.pop("number")
            return web.json_response(self.comment(number, BOT, data.pop("body"), **data),
                                     status=201)
        if path[0] == "comments" and request.method == "PATCH":
            found = next(c for c in self.comments if c["id"] == int(path[1]))
            found["body"] = (await request.json())["body"]
            return web.json_response(found)
        if path[0] == "permission":
            return web.json_response({"permission": "write"})
        return web.json_response({"error": "no such endpoint"}, status=404)


# -- the package: Toy's forge, webhook route, service, settings and Host entry -----------------

@dataclass(frozen=True)
class ToyConfig:
    url: str
    token: str = field(repr=False)
    hook_token: str = field(repr=False)


def read_toy(env, problems: list[str], required: bool) -> ToyConfig | None:
    if not env.get("TOY_URL"):
        return None
    if not env.get("TOY_TOKEN") or not env.get("TOY_WEBHOOK_TOKEN"):
        problems.append("TOY_URL is set without TOY_TOKEN and TOY_WEBHOOK_TOKEN")
        return None
    return ToyConfig(env["TOY_URL"], env["TOY_TOKEN"], env["TOY_WEBHOOK_TOKEN"])


class ToyForge(Forge):
    def __init__(self, session: aiohttp.ClientSession, config: ToyConfig):
        self.session, self.config = session, config

    async def _get(self, endpoint: str, **query: str) -> Any:
        async with self.session.get(f"{self.config.url}/api/{endpoint}", params=query,
                                    headers={"X-Toy-Token": self.config.token}) as resp:
            if resp.status == 404:
                return None
            resp.raise_for_status()
            return await (resp.json() if resp.content_type == "application/json"
                          else resp.text())

    async def _send(self, method: str, path: str, data: dict) -> dict:
        async with self.session.request(method, f"{self.config.url}/api/{path}", json=data,
                                        headers={"X-Toy-Token": self.config.token}) as resp:
            resp.raise_for_status()
            return await resp.json()

    async def pull(self, number: int) -> PullRequest:
        pr = await self._get(f"prs/{number}")
        return PullRequest(number, pr["title"], pr["body"], pr["author"], pr["head"],
                           pr["base"])

    async def pull_diff(self, number: int) -> str:
        pr = await self._get(f"prs/{number}")
        return await self._get("diff", base=pr["base"], head=pr["head"])

    async def compare_diff(self, base: str, head: str) -> str:
        return await self._get("diff", base=base, head=head)

    async def commit_messages(self, base: str, head: str) -> list[str]:
        return await self._get("messages", head=head)

    async def file_text(self, path: str, ref: str | None = None) -> str | None:
        return await self._get("file", path=path, ref=ref or "")

    async def review_comments(self, number: int) -> list[Comment]:
        return [Comment(c["id"], c["user"]["login"], c["body"])
                for c in await self._get("comments", kind="review")]

    async def issue_comments(self, number: int) -> list[Comment]:
        return [Comment(c["id"], c["user"]["login"], c["body"])
                for c in await self._get("comments", kind="issue")]

    async def review_threads(self, number: int) -> list[Thread]:
        return []  # Toy has no threads to resolve

    async def create_review(self, number: int, head_sha: str, body: str,
                            comments: list[InlineComment]) -> None:
        for c in comments:
            await self._send("POST", "comments", {
                "number": number, "body": c.body, "path": c.path, "line": c.line,
                "side": c.side, "start_line": c.start_line})

    async def reply(self, number: int, comment_id: int, body: str) -> int:
        return (await self._send("POST", "comments", {"number": number, "body": body,
                                                      "in_reply_to": comment_id}))["id"]

    async def resolve_thread(self, thread_id: str) -> None:
        pass

    async def unresolve_thread(self, thread_id: str) -> None:
        pass

    async def create_issue_comment(self, number: int, body: str) -> int:
        return (await self._send("POST", "comments", {"number": number, "body": body}))["id"]

    async def edit_issue_comment(self, comment_id: int, body: str) -> None:
        await self._send("PATCH", f"comments/{comment_id}", {"body": body})

    async def permission(self, user: str) -> str:
        return (await self._get(f"permission/{user}"))["permission"]


def route_toy(event: str, payload: dict) -> Route:
    repo, number = f"toy:{payload_field(payload, 'repo', str)}", payload_field(
        payload, "number", int)
    if event == "push":
        return Route("round", repo, number, 1, payload_field(payload, "head", str),
                     {"action": "opened" if payload.get("first") else "synchronize"})
    if event == "comment":
        comment = payload_field(payload, "comment", dict)
        kind = "review_comment" if comment.get("path") else "issue_comment"
        return Route("comment", repo, number, 1, None, {
            "action": "created", "kind": kind, "pr_author": payload.get("pr_author"),
            "comment": {**comment, "in_reply_to_id": comment.get("in_reply_to")}})
    return Route(None, reason=f"{event} is not handled")


async def toy_webhook(request: web.Request) -> web.Response:
    config: ToyConfig = request.app[TOY_APP].config
    if not hmac.compare_digest(request.headers.get("X-Toy-Token", "").encode(),
                               config.hook_token.encode()):
        return web.json_response({"error": "token missing or wrong"}, status=401)
    try:
        payload = parse_payload(await read_verified(request, Authenticated()))
        target = route_toy(request.headers.get("X-Toy-Event", ""), payload)
    except BodyRefused as exc:
        return web.json_response({"error": exc.reason}, status=exc.status)
    except (ValueError, BadPayload) as exc:
        return web.json_response({"error": str(exc)}, status=400)
    if target.kind is None:
        return web.json_response({"ignored": target.reason})
    job = await request.app[STATE].queue.accept_soon(
        "toy:" + request.headers.get("X-Toy-Delivery", ""), "toy", None, target.kind,
        repo=target.repo, number=target.number, installation_id=target.installation_id,
        payload=target.payload, head_sha=target.head_sha)
    return web.json_response({"queued": job}, status=202)


class ToyService:
    def __init__(self, config: ToyConfig):
        self.config = config

    async def start(self, session: Any, retry: Any) -> None:
        self.session = session

    def owns(self, job: Any) -> bool:
        return bool(job.repo and job.repo.startswith("toy:"))

    def forge(self, job: Any) -> ToyForge:
        return ToyForge(self.session, self.config)

    def jobs(self, handlers: Any, rest: Any) -> Any:
        return rest  # Toy's jobs are the host-neutral handlers' own


TOY_APP = web.AppKey("toy", ToyService)


def mount_toy(app: web.Application, config: Any) -> ToyService | None:
    toy = config.forges.get("toy")
    if toy is None:
        return None
    app[TOY_APP] = service = ToyService(toy)
    app.router.add_post("/toy/webhook", toy_webhook)
    return service


TOY = Host(name="toy", settings={"TOY_URL": ("the Toy instance", "unset: no Toy"),
                                 "TOY_TOKEN": ("Toy's API token", "required with TOY_URL"),
                                 "TOY_WEBHOOK_TOKEN": ("the webhook's token",
                                                       "required with TOY_URL")},
           read=read_toy, mount=mount_toy, title="Toy", route="POST /toy/webhook",
           configured=lambda config: config.forges.get("toy") is not None,
           describe=lambda config: f"Toy at {config.forges['toy'].url}")


# -- its replay, on bench.replay.rounds --------------------------------------------------------

@dataclass
class ToyHarness(BotHarness):
    fake: FakeToy = field(init=False)

    async def __aenter__(self) -> Self:
        self.fake = FakeToy()
        await self.fake.start()
        await self.serve(hosts.load_config({  # the settings as an operator gives them
            "TOY_URL": self.fake.url, "TOY_TOKEN": TOKEN, "TOY_WEBHOOK_TOKEN": HOOK_TOKEN,
            "ROUNDWISE_DB": str(self.db_path), "ROUNDWISE_WORKERS": str(self.workers)}))
        return self

    async def deliver(self, event: str, payload: dict) -> None:
        headers = {"X-Toy-Token": HOOK_TOKEN, "X-Toy-Event": event,
                   "X-Toy-Delivery": str(next(self.fake.ids))}
        async with self.session.post(f"{self.url}/toy/webhook", json=payload,
                                     headers=headers) as resp:
            if resp.status >= 300:
                raise BotError(f"{event} refused ({resp.status}): {await resp.text()}")


class PullRequestOnToy:
    """One task's pull request on Toy (``bench.replay.rounds.TaskOnHost``)."""

    def __init__(self, h: ToyHarness, task):
        self.h, self.task, self.number = h, task, int(task.pr.get("number") or 1)
        self.repo = "toy:bench/task"
        self.base = {p: t for p, t in task.base_files(1).items() if t is not None}
        self.author = task.pr.get("author") or "author"
        h.fake.open_pr(self.number, self.author, task.pr.get("title") or "",
                       task.pr.get("base_sha") or "0" * 40, self.base)

    async def push(self, rnd) -> None:
        changed = {p: t for p, t in self.task.snapshot(rnd.number).items()
                   if self.base.get(p) != t}
        self.h.fake.push(self.number, rnd.head_sha, changed,
                         [c.get("message", "update") for c in rnd.commits])
        await self.h.deliver("push", {"repo": "bench/task", "number": self.number,
                                      "head": rnd.head_sha, "first": rnd.number == 1})

    async def deliver_event(self, event: dict, ids: dict[int, int]) -> None:
        where = {}
        if event.get("kind") == "review_comment":
            where = {"path": event["path"], "line": event["line"],
                     "side": event.get("side") or "RIGHT",
                     "start_line": event.get("start_line"),
                     "in_reply_to": ids.get(event.get("in_reply_to"))}
        elif event.get("kind") not in ("issue_comment", "review") or not event.get("body"):
            return
        made = self.h.fake.comment(self.number, event.get("author") or "reviewer",
                                   event.get("body") or "", **where)
        ids[event["id"]] = made["id"]
        await self.h.deliver("comment", {"repo": "bench/task", "number": self.number,
                                         "comment": made, "pr_author": self.author})

    def comment_ids(self, ids: dict[int, int]) -> dict[int, int]:
        return ids

    def usage(self) -> dict[str, int]:
        return {"requests": self.h.fake.requests}

    def posted(self, round_number: int, head: str) -> dict:
        return {}


# -- the proof ---------------------------------------------------------------------------------

@pytest.fixture
def registered(monkeypatch):
    """Toy registered as a backend: one more entry in ``bot.server.hosts``, nothing else."""
    monkeypatch.setattr(hosts, "HOSTS", (*hosts.HOSTS, TOY))


def states(records: list[dict]) -> list[list[tuple]]:
    return [sorted((d["key"], d["state"], d["path"], d["line_start"], d["rule"], d["origin"])
                   for d in r["defects"]) for r in records]


async def test_a_task_replayed_through_a_host_registered_in_one_entry(registered, tmp_path):
    task = load_task(EXAMPLES / "example-java-order-store.json")
    async with ToyHarness(tmp_path / "toy.db") as h:
        assert h.config.forges["toy"] == ToyConfig(h.fake.url, TOKEN, HOOK_TOKEN)
        assert "Toy at " in ready_line(h.config, "127.0.0.1", 8080)
        assert "GitHub" not in ready_line(h.config, "127.0.0.1", 8080)  # Toy alone
        on = PullRequestOnToy(h, task)
        toy = await play(h, task, on)
        async with h.session.post(f"{h.url}/toy/webhook", json={}, headers={
                "X-Toy-Token": "wrong", "X-Toy-Event": "push"}) as resp:
            assert resp.status == 401
        posted = [c for c in h.fake.comments if c["user"]["login"] == BOT]
    async with github_replay.Harness(tmp_path / "gh.db") as g:
        github = await github_replay.replay_task(g, task)
    assert states(toy) == states(github)  # the tracker never learns the host
    assert any(d["state"] == "Resolved" for d in toy[-1]["defects"])
    assert any(c.get("path") for c in posted)  # inline findings on Toy's lines
    assert all(r["github"]["requests"] > 0 for r in toy)  # the bot talked to Toy each round


def test_the_registered_host_is_in_the_settings_and_the_help(registered):
    import argparse

    from bot.cli import add_commands

    assert {"TOY_URL", "TOY_TOKEN", "TOY_WEBHOOK_TOKEN"} <= set(hosts.settings())
    parser = argparse.ArgumentParser()
    add_commands(parser.add_subparsers())
    serve = parser._subparsers._group_actions[0].choices["serve"]
    assert "POST /toy/webhook (Toy" in " ".join(serve.description.split())
    with pytest.raises(Exception, match="TOY_URL is set without"):
        hosts.load_config({"TOY_URL": "http://127.0.0.1:9", "ROUNDWISE_DB": "/tmp/x.db"})
