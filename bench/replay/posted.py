"""Every body the bot posted during a bench run, kept per round (``posted.jsonl``), and one HTML
page per task showing its rounds as a pull request conversation.

Scores say how well the bot did; these say what a user would have read: the reviews with
their inline comments, the replies in threads, the sticky summary as it stood after the round
and the check run with its output and annotations. ``Posted`` reads them from the fake GitHub
after each round (what is new since the last round), and ``write`` saves the JSON lines and the
pages (``conversations/<task>.html``, linked from ``report.html``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from .conversation import page

__all__ = ["Posted", "page_name", "write"]


class Posted:
    """What the bot posted on one task's pull request, round by round."""

    def __init__(self, fake, repo: str, number: int):
        self.fake, self.repo, self.number = fake, repo, number
        self.rounds: list[dict[str, Any]] = []
        self._seen_reviews: set[int] = set()
        self._seen_comments: set[int] = set()
        self._seen_issue: set[int] = set()

    def take(self, round_number: int, head: str) -> dict[str, Any]:
        """Record what the bot posted since the last call, as round ``round_number``."""
        fake, bot = self.fake, self.fake.bot_login
        comments = [c for c in fake.review_comments(self.repo, self.number)
                    if c["user"]["login"] == bot and c["id"] not in self._seen_comments]
        self._seen_comments |= {c["id"] for c in comments}
        reviews = []
        for review in fake.reviews(self.repo, self.number):
            if review["user"]["login"] != bot or review["id"] in self._seen_reviews:
                continue
            self._seen_reviews.add(review["id"])
            inline = [_inline(c) for c in comments if not c.get("in_reply_to_id")
                      and c.get("pull_request_review_id") == review["id"]]
            if review.get("body") or inline:
                reviews.append({"id": review["id"], "event": review["state"],
                                "body": review.get("body") or "", "comments": inline})
        replies = [{"in_reply_to": c["in_reply_to_id"], "body": c["body"]}
                   for c in comments if c.get("in_reply_to_id")]
        summary, others = None, []
        for c in fake.issue_comments(self.repo, self.number):
            if c["user"]["login"] != bot:
                continue
            if "<!-- roundwise:summary -->" in c["body"]:
                summary = c["body"]
            elif c["id"] not in self._seen_issue:
                others.append(c["body"])
            self._seen_issue.add(c["id"])
        checks = [{**run, "annotations": fake.check_annotations(run["id"])}
                  for run in fake.check_runs(self.repo, head)]
        record = {"round": round_number, "head": head, "reviews": reviews, "replies": replies,
                  "summary": summary, "comments": others, "check_runs": checks}
        self.rounds.append(record)
        return record


def page_name(task_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", task_id) + ".html"


def write(out: Path, posted: dict[str, list[dict[str, Any]]], titles: dict[str, str]
          ) -> list[tuple[str, str]]:
    """``posted.jsonl`` and one page per task under ``out``; (task, relative href) pairs."""
    folder = out / "conversations"
    folder.mkdir(parents=True, exist_ok=True)
    links = []
    with (out / "posted.jsonl").open("w", encoding="utf-8") as fh:
        for task in sorted(posted):
            for record in posted[task]:
                fh.write(json.dumps({"task": task, **record}, sort_keys=True) + "\n")
            name = page_name(task)
            (folder / name).write_text(page(titles.get(task) or task, posted[task]),
                                       encoding="utf-8")
            links.append((task, f"conversations/{name}"))
    return links


def _inline(c: dict[str, Any]) -> dict[str, Any]:
    return {"id": c["id"], "path": c["path"], "line": c.get("line"),
            "start_line": c.get("start_line"), "body": c["body"]}
