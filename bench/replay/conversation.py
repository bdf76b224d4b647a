"""What the bot posted, as a pull request conversation people can read in a browser.

The bench keeps every body the bot posted (``bench.replay.posted``); this module turns them into a
static HTML page laid out like a GitHub pull request (summary comment, reviews with their
inline comments, thread replies, check runs with their output and annotations), rendering the
Markdown with a CommonMark + tables renderer so a reader sees what GitHub would show. It is also
how the summary and check-run output are screenshot and looked at during development.
"""

from __future__ import annotations

import html
from typing import Any

__all__ = ["markdown_html", "page"]

CSS = """
body { font: 14px/1.5 -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; color: #1f2328;
       max-width: 980px; margin: 24px auto; padding: 0 16px; background: #fff; }
h1 { font-size: 24px; font-weight: 400; } h1 .num { color: #59636e; }
.round { margin: 28px 0 8px; padding: 4px 10px; background: #f6f8fa; border-radius: 6px;
         color: #59636e; font-size: 13px; }
.item { border: 1px solid #d1d9e0; border-radius: 6px; margin: 12px 0; overflow: hidden; }
.item > .head { background: #f6f8fa; border-bottom: 1px solid #d1d9e0; padding: 6px 12px;
                color: #59636e; font-size: 13px; }
.item > .head b { color: #1f2328; }
.item > .body { padding: 10px 16px; overflow-x: auto; }
.inline { margin: 8px 16px; border: 1px solid #d1d9e0; border-radius: 6px; }
.inline .path { font: 12px ui-monospace, SFMono-Regular, Menlo, monospace; padding: 6px 10px;
                background: #f6f8fa; border-bottom: 1px solid #d1d9e0; }
.inline .body, .reply .body { padding: 8px 12px; }
.reply { margin: 0 16px 8px 40px; border-left: 3px solid #d1d9e0; }
.check .concl { font-weight: 600; } .failure { color: #d1242f; } .success { color: #1a7f37; }
.neutral { color: #59636e; } .in_progress { color: #9a6700; }
table { border-collapse: collapse; margin: 8px 0; display: block; overflow-x: auto; }
th, td { border: 1px solid #d1d9e0; padding: 4px 10px; text-align: left; vertical-align: top; }
th { background: #f6f8fa; } tr:nth-child(2n) td { background: #f6f8fa55; }
code { font: 12px ui-monospace, SFMono-Regular, Menlo, monospace; background: #eff1f3;
       padding: 1px 4px; border-radius: 4px; }
pre { background: #f6f8fa; padding: 12px; border-radius: 6px; overflow-x: auto; }
pre code { background: none; padding: 0; }
details { margin: 8px 0; } summary { cursor: pointer; font-weight: 600; }
blockquote { margin: 8px 0; padding: 0 12px; color: #59636e; border-left: 4px solid #d1d9e0; }
a { color: #0969da; text-decoration: none; } sub { color: #59636e; }
.annotation { font-size: 13px; margin: 4px 0; } .annotation code { font-size: 12px; }
"""


def markdown_html(text: str) -> str:
    """Markdown as GitHub renders a comment (CommonMark, tables, HTML blocks kept)."""
    try:
        from markdown_it import MarkdownIt
    except ImportError:  # the bench without its extras: show the source
        return f"<pre>{html.escape(text)}</pre>"
    md = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
    return md.render(text)


def _item(head: str, body_md: str, extra: str = "", cls: str = "") -> str:
    return (f'<div class="item {cls}"><div class="head">{head}</div>'
            f'<div class="body">{markdown_html(body_md)}</div>{extra}</div>')


def _check(run: dict[str, Any]) -> str:
    out = run.get("output") or {}
    status = run.get("conclusion") or run.get("status") or ""
    notes = "".join(
        f'<div class="annotation"><b>{html.escape(a.get("annotation_level", ""))}</b> '
        f'<code>{html.escape(a["path"])}:{a["start_line"]}</code> '
        f'{html.escape(a.get("title") or "")}: {html.escape(a.get("message") or "")}</div>'
        for a in run.get("annotations") or [])
    head = (f'check run <b>{html.escape(run.get("name", ""))}</b> · '
            f'<span class="concl {status}">{html.escape(status)}</span> · '
            f'<b>{html.escape(out.get("title") or "")}</b>')
    body = (out.get("summary") or "") + "\n\n" + (out.get("text") or "")
    extra = f'<div class="body">{notes}</div>' if notes else ""
    return _item(head, body, extra, "check")


def page(title: str, rounds: list[dict[str, Any]]) -> str:
    """One HTML page for a pull request's rounds. Each round is ``{"round", "head",
    "reviews": [{"body", "event", "comments": [{"path", "line", "body"}]}], "replies":
    [{"body", "in_reply_to"}], "summary": str | None, "check_runs": [run JSON + annotations]}``.
    """
    parts = [f"<!doctype html><meta charset='utf-8'><title>{html.escape(title)}</title>",
             f"<style>{CSS}</style><h1>{html.escape(title)}</h1>"]
    last_summary = None
    for rnd in rounds:
        parts.append(f'<div class="round">round {rnd["round"]} · head '
                     f'<code>{html.escape((rnd.get("head") or "")[:7])}</code></div>')
        for review in rnd.get("reviews") or []:
            inline = "".join(
                f'<div class="inline"><div class="path">{html.escape(c["path"])} line '
                f'{c.get("line")}</div><div class="body">{markdown_html(c["body"])}</div></div>'
                for c in review.get("comments") or [])
            parts.append(_item(f'<b>roundwise</b> reviewed · '
                               f'{html.escape(review.get("event") or "COMMENT")}',
                               review.get("body") or "", inline))
        for reply in rnd.get("replies") or []:
            parts.append(f'<div class="reply"><div class="body">{markdown_html(reply["body"])}'
                         "</div></div>")
        for run in rnd.get("check_runs") or []:
            parts.append(_check(run))
        summary = rnd.get("summary")
        if summary and summary != last_summary:
            parts.append(_item("<b>roundwise</b> commented (sticky summary, edited in place)",
                               summary))
            last_summary = summary
    parts.append("<script>if (location.search.includes('open')) document.querySelectorAll("
                 "'details').forEach(d => d.open = true)</script>")
    return "\n".join(parts)
