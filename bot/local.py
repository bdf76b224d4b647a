"""``roundwise review``: review a local git range, with a ledger per branch, no GitHub needed.

Each run is a round: the diff ``BASE...HEAD`` (the whole change) and the diff since the head
the last run reviewed go through the same engine and tracker as the bot, and the ledger in
``<repo>/.git/roundwise/ledger.db`` remembers every defect of the branch. Running again after
new commits reports what is New, still Open, Resolved or Reopened, like the bot would on a PR.
Output as text, JSON or SARIF 2.1.0 (for code-scanning tools).

It is the server's round on another forge: ``gather`` from a ``LocalGitForge``, ``plan``, then
``commit``; instead of publishing on a host, it prints the report.
"""

from __future__ import annotations

import json
from pathlib import Path

from tracker.ledger import Ledger
from tracker.models import SEVERITIES

from .checks import blocking_keys
from .fixpatch import fix_patch
from .localgit import LocalError, LocalGitForge
from .review.engine import Engine, offline_engine
from .review.llm_config import LLMConfig
from .round import commit, gather, plan, read_settings

__all__ = ["LocalError", "ModelUnreachable", "add_commands", "review_local"]


class ModelUnreachable(LocalError):
    """The configured model gave no answer; the round was not recorded."""


async def review_local(repo: str | Path, base: str, head: str = "HEAD", *,
                       engine: Engine | None = None, db_path: str | Path | None = None) -> dict:
    """Review ``base...head`` as the next round of the branch; returns the report dict."""
    forge = LocalGitForge(repo, base, head)
    db = Path(db_path) if db_path else forge.git_dir() / "roundwise" / "ledger.db"
    with Ledger(db) as ledger:
        pr = ledger.pull_request(f"local:{forge.top.name}:{forge.branch}", 0,
                                 title=forge.branch)
        pull = await forge.pull(0)
        rnd = ledger.begin_round(pr["id"], pull.head_sha, pull.base_sha)
        number = rnd["number"]
        if rnd["status"] != "complete":
            settings, _ = await read_settings(forge)
            inputs = await gather(forge, ledger, pr, pull, number, settings)
            the_plan = await plan(engine or offline_engine(), inputs)
            if the_plan.dropped.get("llm_error"):
                ledger.finish_round(pr["id"], number, "failed", error="model unreachable")
                raise ModelUnreachable("the model could not be reached")
            commit(ledger, pr["id"], number, the_plan)  # nothing to publish: the report is it
        return report(ledger, pr["id"], number, forge, db)


def report(ledger: Ledger, pr_id: int, number: int, forge: LocalGitForge, db: Path) -> dict:
    """Every defect of the branch with its state now and before this round."""
    history = ledger.states_by_round(pr_id)
    defects = []
    for d in ledger.defects(pr_id):
        states = history.get(d.key, {})
        before = max((r for r in states if r < number), default=None)
        defects.append({
            "key": d.key, "state": str(d.state), "previous": states.get(before),
            "path": d.path, "line_start": d.line_start, "line_end": d.line_end,
            "type": d.type, "severity": d.severity, "rule": d.rule,
            "description": d.text, "fix": d.fix, "ignored": d.ignored,
            "fingerprint": d.fingerprint,
            "evidence": ledger.history(pr_id, d.key)[-1]["evidence"],
        })
    return {"branch": forge.branch, "round": number, "head": forge.head_sha,
            "base": forge.base_sha, "ledger": str(db), "defects": defects}


def as_text(report: dict) -> str:
    from .textreport import as_text as text

    return text(report)


def as_sarif(report: dict) -> dict:
    """SARIF 2.1.0 (``bot.sarif``): every anchored defect, with its state as baselineState."""
    from .sarif import as_sarif as sarif
    from .startup import project_url, version

    return sarif(report, version=version(), information_uri=project_url())


def render(report: dict, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(report, indent=2)
    if fmt == "sarif":
        return json.dumps(as_sarif(report), indent=2)
    return as_text(report)


def add_commands(sub) -> None:
    """Register ``roundwise review`` on the ``roundwise`` parser."""
    review = sub.add_parser(
        "review", help="review a local git range; reruns report New/Open/Resolved/Reopened",
        description="Review BASE...HEAD of a local repository without GitHub. Each run is a "
                    "round of the branch: the ledger in .git/roundwise/ledger.db remembers "
                    "every defect, so running again after new commits reports what is New, "
                    "still Open, Resolved or Reopened. The model settings come from the "
                    "ROUNDWISE_* variables (as for the server); the flags below override them.",
    )
    review.add_argument("--repo", default=".", help="the repository (default: .)")
    review.add_argument("--base", required=True, help="the branch or commit to compare against")
    review.add_argument("--head", default="HEAD", help="the commit to review (default: HEAD)")
    review.add_argument("--model", help="litellm model (default: $ROUNDWISE_MODEL, else the "
                                        "offline reviewer)")
    review.add_argument("--api-base", help="base URL of the model's API ($ROUNDWISE_API_BASE)")
    review.add_argument("--fallback-model", help="a second model ($ROUNDWISE_FALLBACK_MODEL)")
    review.add_argument("--timeout", type=float, help="seconds per LLM call "
                                                      "($ROUNDWISE_LLM_TIMEOUT)")
    review.add_argument("--max-prompt-tokens", type=int, help="prompt budget per call "
                                                              "($ROUNDWISE_MAX_PROMPT_TOKENS)")
    review.add_argument("--llm-cache", help="folder caching LLM answers ($ROUNDWISE_LLM_CACHE)")
    review.add_argument("--offline-fallback", action="store_true",
                        help="when the model cannot be reached, review with the offline "
                             "reviewer instead of failing")
    review.add_argument("--format", choices=["text", "json", "sarif"], default="text")
    review.add_argument("--ledger", help="ledger file (default: <repo>/.git/roundwise/ledger.db)")
    review.add_argument("--fail-on", metavar="SEVERITY", type=str.capitalize,
                        choices=list(SEVERITIES),
                        help="exit 1 while a New, Open or Reopened defect at or above SEVERITY "
                             f"stands ({', '.join(SEVERITIES)}), to gate CI")
    review.add_argument("--fix-patch", metavar="FILE",
                        help="write the open defects' suggested fixes to FILE as a unified diff "
                             "(apply with git apply FILE)")
    review.set_defaults(func=cmd_review)


def write_fix_patch(repo: str, report: dict, path: str) -> None:
    """``--fix-patch``: the open defects' fixes against the reviewed head, as a unified diff."""
    import subprocess
    import sys

    def read(name: str) -> str | None:
        done = subprocess.run(["git", "-C", str(repo), "show", f"{report['head']}:{name}"],
                              capture_output=True, text=True, check=False)
        return done.stdout if done.returncode == 0 else None

    patch, applied, skipped = fix_patch(report["defects"], read)
    Path(path).write_text(patch)
    note = f"; skipped {', '.join(skipped)} (overlapping or unreadable)" if skipped else ""
    print(f"roundwise: wrote {len(applied)} fix(es) to {path}{note}", file=sys.stderr)


def llm_config(args, environ) -> LLMConfig | None:
    """The model settings of ``roundwise review``: ``ROUNDWISE_*``, overridden by the flags."""
    return LLMConfig.from_env(
        environ, model=args.model, api_base=args.api_base, fallback_model=args.fallback_model,
        timeout=args.timeout, max_prompt_tokens=args.max_prompt_tokens, cache_dir=args.llm_cache,
    )


def cmd_review(args) -> int:
    import asyncio
    import logging
    import os
    import sys

    # The reviewer's warnings (an unanswered call, a malformed answer) are summed up below.
    logging.basicConfig(level=logging.ERROR, format="roundwise: %(message)s")
    try:
        llm = llm_config(args, os.environ)
    except ValueError as exc:
        print(f"roundwise: {exc}", file=sys.stderr)
        return 2
    engine = None
    if llm is not None:
        from .review.llm import build_llm_engine

        engine = build_llm_engine(llm)

    def run(engine):
        return asyncio.run(review_local(args.repo, args.base, args.head, engine=engine,
                                        db_path=args.ledger))

    try:
        try:
            report = run(engine)
        except ModelUnreachable:
            where = f" at {llm.api_base}" if llm.api_base else ""
            if not args.offline_fallback:
                print(f"roundwise: the model {llm.model}{where} could not be reached; check "
                      "--model/--api-base (ROUNDWISE_MODEL, ROUNDWISE_API_BASE, "
                      "ROUNDWISE_API_KEY) or pass --offline-fallback", file=sys.stderr)
                return 2
            print(f"roundwise: the model {llm.model}{where} could not be reached; reviewing "
                  "with the offline reviewer (--offline-fallback)", file=sys.stderr)
            report = run(None)
    except LocalError as exc:
        print(f"roundwise: {exc}", file=sys.stderr)
        return 2
    print(render(report, args.format))
    if args.fix_patch:
        write_fix_patch(args.repo, report, args.fix_patch)
    failing = blocking_keys(report["defects"], args.fail_on) if args.fail_on else []
    if failing:
        print(f"roundwise: {len(failing)} open defect(s) at or above {args.fail_on}: "
              f"{', '.join(failing)} (--fail-on {args.fail_on})", file=sys.stderr)
        return 1
    return 0
