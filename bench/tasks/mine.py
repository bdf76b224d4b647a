"""Any repository's PR history as ``mcr-task/1`` tasks, where the App was never installed.

``roundwise bench mine --repo owner/name [--prs 100-200 | --since DATE] --out DIR`` reads each
finished pull request through the App's own client (``bot.github.client``: retries, rate-limit
waits), with a personal access token (``GITHUB_TOKEN``) or an App installation:

- REST: the PR, its commits, reviews and review comments (every page); GraphQL
  ``reviewThreads`` for each thread's resolution and whether it is outdated;
- **rounds** from the order of pushes and review submissions: every commit a review or review
  comment was made on is a round's head, in the order people reviewed them, and the PR's last
  head closes the PR (a round with no events). A head that is not among the PR's final commits
  was force-pushed away; the round says so (``force_pushed``). Each round's diff (base...head,
  the compare API) and the full text of its changed files are fetched, so the task is
  self-contained;
- **defect cards** from review threads a reviewer started (not the PR's author): New at the
  round of their first comment, labelled ``human-signal``; a reviewer's "still ..." reply makes
  it Open there (``human-signal``); a thread resolved *and* outdated (the code under it
  changed), or whose reviewer accepted the fix, is Resolved at the last round
  (``human-signal``). Rounds in between carry the state without a label (``label_sources``
  null: not scored). Weak labels, and the task's ``source`` says so.

PRs still open, and PRs nobody reviewed, are skipped with the reason (``mine-skipped.json``).
The run is resumable: a PR whose task file or skip record exists is not read again.
"""

from __future__ import annotations

import json
from pathlib import Path

import unidiff

from bot.github.client import GitHubApp, RepoClient
from tracker.discussion import reply_signal
from tracker.gitpath import file_path
from tracker.models import SignalKind

from ..progress import Progress
from .export import HUMAN, task_id_for

__all__ = ["Miner", "TokenApp", "parse_prs"]

THREADS = """
query($owner: String!, $name: String!, $number: Int!, $first: Int!, $cursor: String) {
  repository(owner: $owner, name: $name) {
    pullRequest(number: $number) {
      reviewThreads(first: $first, after: $cursor) {
        pageInfo { hasNextPage endCursor }
        nodes {
          id isResolved isOutdated path line originalLine originalStartLine diffSide
          resolvedBy { login }
          comments(first: 100) {
            nodes { databaseId body createdAt author { login } originalCommit { oid } }
          }
        }
      }
    }
  }
}
"""


class TokenApp(GitHubApp):
    """The App's client with a personal access token instead of installation tokens."""

    def __init__(self, session, token: str, api_url: str, **kwargs):
        super().__init__(session, "0", "", api_url, **kwargs)
        self._token = token

    async def installation_token(self, installation_id: int) -> str:
        return self._token


def parse_prs(text: str) -> range:
    """``100-200`` (inclusive) or ``42``."""
    first, _, last = text.partition("-")
    return range(int(first), int(last or first) + 1)


def _is_bot(login: str | None) -> bool:
    return not login or login.endswith("[bot]")


class Miner:
    """Mine one repository's pull requests into ``out`` (see the module docstring)."""

    def __init__(self, client: RepoClient, out: str | Path, *, page_size: int = 100,
                 progress: bool = True):
        self.client = client
        self.out = Path(out)
        self.page_size = page_size
        self.progress = progress
        self.skipped_path = self.out / "mine-skipped.json"

    async def numbers(self, prs: range | None = None, since: str | None = None) -> list[int]:
        """The PR numbers to mine: the range given, else every PR created on/after ``since``."""
        if prs is not None:
            return list(prs)
        pulls = await self.client._pages(self.client._url(
            f"/pulls?state=all&sort=created&direction=asc&per_page={self.page_size}"))
        return [p["number"] for p in pulls if not since or (p.get("created_at") or "") >= since]

    async def run(self, numbers: list[int]) -> dict:
        """Mine every PR not done before; returns ``{"written": [...], "skipped": {...}}``."""
        self.out.mkdir(parents=True, exist_ok=True)
        skipped = json.loads(self.skipped_path.read_text()) if self.skipped_path.exists() else {}
        written, resumed = [], []
        bar = Progress({f"#{n}": 1 for n in numbers}, enabled=self.progress)
        for number in numbers:
            path = self.out / f"{task_id_for(self.client.full_name, number)}.json"
            if path.exists() or str(number) in skipped:
                resumed.append(number)
                bar.task_done(f"#{number}", 0)
                continue
            task, reason = await self.mine_pr(number)
            if task is None:
                skipped[str(number)] = reason
                self.skipped_path.write_text(json.dumps(skipped, indent=1, sort_keys=True))
            else:
                path.write_text(json.dumps(task, indent=1, ensure_ascii=False) + "\n")
                written.append(number)
            bar.round_done(f"#{number}", 1)
            bar.task_done(f"#{number}", 1, reason)
        bar.close()
        return {"written": written, "skipped": skipped, "resumed": resumed}

    async def _threads(self, number: int) -> list[dict]:
        out, cursor = [], None
        while True:
            data = await self.client.graphql(THREADS, owner=self.client.owner,
                                             name=self.client.name, number=number,
                                             first=self.page_size, cursor=cursor)
            conn = data["repository"]["pullRequest"]["reviewThreads"]
            out.extend(conn["nodes"])
            if not conn["pageInfo"]["hasNextPage"]:
                return out
            cursor = conn["pageInfo"]["endCursor"]

    async def mine_pr(self, number: int) -> tuple[dict | None, str | None]:
        """One PR as a task, or None with the reason it was skipped."""
        c = self.client
        try:
            pr = await c.pull(number)
        except Exception as exc:  # noqa: BLE001 - a missing PR is a skip, not a crash
            return None, f"cannot read the pull request: {type(exc).__name__}"
        if pr.get("state") == "open":
            return None, "still open"
        per = f"per_page={self.page_size}"
        reviews = await c._pages(c._url(f"/pulls/{number}/reviews?{per}"))
        comments = await c._pages(c._url(f"/pulls/{number}/comments?{per}"))
        author = (pr.get("user") or {}).get("login")
        people = [r for r in reviews if (r.get("user") or {}).get("login") != author
                  and not _is_bot((r.get("user") or {}).get("login"))]
        if not people and not [x for x in comments if x["user"]["login"] != author]:
            return None, "no reviews"
        commits = await c._pages(c._url(f"/pulls/{number}/commits?{per}"))
        threads = await self._threads(number)
        base, final = pr["base"]["sha"], pr["head"]["sha"]

        # Rounds: the commits people reviewed, in the order they reviewed them, then the end.
        marks = sorted(
            [(r.get("submitted_at") or "", 0, r["id"], r.get("commit_id")) for r in reviews]
            + [(x.get("created_at") or "", 1, x["id"], x.get("original_commit_id"))
               for x in comments if not x.get("in_reply_to_id")])
        heads: list[str] = []
        for _, _, _, sha in marks:
            if sha and sha not in heads:
                heads.append(sha)
        if not heads or heads[-1] != final:
            heads.append(final)
        round_of_sha = {sha: i + 1 for i, sha in enumerate(heads)}
        kept = {x["sha"] for x in commits}

        def round_at(sha: str | None, when: str) -> int:
            if sha in round_of_sha:
                return round_of_sha[sha]
            earlier = [round_of_sha[s] for t, _, _, s in marks if t <= when and s in round_of_sha]
            return max(earlier) if earlier else 1

        events: dict[int, list[dict]] = {i + 1: [] for i in range(len(heads))}
        for r in reviews:
            login = (r.get("user") or {}).get("login")
            if r.get("body") or r.get("state") in ("APPROVED", "CHANGES_REQUESTED"):
                events[round_at(r.get("commit_id"), r.get("submitted_at") or "")].append({
                    "kind": "review", "id": r["id"], "author": login,
                    "role": "author" if login == author else "reviewer",
                    "state": r.get("state"), "body": r.get("body") or "",
                    "created_at": r.get("submitted_at")})
        by_id = {x["id"]: x for x in comments}
        for x in comments:
            login = x["user"]["login"]
            top = by_id.get(x.get("in_reply_to_id")) if x.get("in_reply_to_id") else None
            n = round_at(x.get("original_commit_id") if top is None else None,
                         x.get("created_at") or "")
            if top is not None:
                n = max(n, round_at(top.get("original_commit_id"), top.get("created_at") or ""))
            events[n].append({
                "kind": "review_comment", "id": x["id"], "author": login,
                "role": "author" if login == author else "reviewer",
                "path": x.get("path"), "line": x.get("original_line"),
                "start_line": x.get("original_start_line"), "side": x.get("side") or "RIGHT",
                "body": x.get("body") or "", "in_reply_to": x.get("in_reply_to_id"),
                "created_at": x.get("created_at")})

        rounds = []
        for i, head in enumerate(heads, start=1):
            diff = await c.compare_diff(base, head)
            files: dict[str, str | None] = {}
            for patched in unidiff.PatchSet(diff):
                path = file_path(patched)
                files[path] = None if patched.is_removed_file else await c.file_text(path, head)
            rounds.append({"round": i, "head_sha": head, "commits": [], "diff": diff,
                           "files": files, "force_pushed": head not in kept,
                           "events": sorted(events[i], key=lambda e: (e.get("created_at") or "",
                                                                      e["id"]))})
        last = len(heads)
        cards = []
        for t in threads:
            nodes = t["comments"]["nodes"]
            if not nodes:
                continue
            first = nodes[0]
            who = (first.get("author") or {}).get("login")
            if who == author or _is_bot(who):
                continue
            root = by_id.get(first["databaseId"], {})
            raised = round_at(root.get("original_commit_id") or
                              (first.get("originalCommit") or {}).get("oid"),
                              first.get("createdAt") or "")
            states: list[str | None] = [None] * (raised - 1) + ["New"] + \
                ["Open"] * (last - raised)
            sources: list[str | None] = [None] * last
            sources[raised - 1] = HUMAN
            accepted, evidence = False, [f"{who} started the thread"]
            for reply in nodes[1:]:
                replier = (reply.get("author") or {}).get("login")
                if _is_bot(replier):
                    continue
                kind = reply_signal(reply.get("body"), by_author=replier == author)
                at = round_at(None, reply.get("createdAt") or "")
                if kind is SignalKind.REVIEWER_DISPUTES and at > raised:
                    states[at - 1], sources[at - 1] = "Open", HUMAN
                    evidence.append(f"{replier} replied it is still not right (round {at})")
                elif kind is SignalKind.REVIEWER_ACCEPTS:
                    accepted = True
                    evidence.append(f"{replier} accepted")
            if t["isResolved"] and (t["isOutdated"] or accepted) and last > raised:
                states[last - 1], sources[last - 1] = "Resolved", HUMAN
                evidence.append("thread resolved" + (" after the code under it changed"
                                                     if t["isOutdated"] else ""))
            elif t["isResolved"]:
                evidence.append("thread resolved with no change under it (not labelled)")
            line = t.get("originalLine") or root.get("original_line")
            cards.append({
                "id": f"T{len(cards) + 1}", "description": first.get("body") or "",
                "path": t.get("path"), "line_start": t.get("originalStartLine") or line,
                "line_end": line, "raised_in_round": raised, "states": states,
                "label_sources": sources, "comment_ids": [first["databaseId"]],
                "thread": {"id": t["id"], "isResolved": t["isResolved"],
                           "isOutdated": t["isOutdated"],
                           "resolvedBy": (t.get("resolvedBy") or {}).get("login")},
                "evidence": "; ".join(evidence)})
        task = {
            "schema": "mcr-task/1", "task_id": task_id_for(c.full_name, number),
            "source": "mined from the repository's PR history through the GitHub API: rounds "
                      "from reviewed heads, defect cards from review threads, weak labels "
                      "from thread resolution and replies (label_sources)",
            "repo": c.full_name, "language": "unknown",
            "pr": {"number": number, "title": pr.get("title") or "", "body": pr.get("body") or "",
                   "author": author, "base_ref": pr["base"].get("ref"), "base_sha": base,
                   "status": "merged" if pr.get("merged_at") else "closed"},
            "rounds": rounds, "defects": cards,
        }
        return task, None
