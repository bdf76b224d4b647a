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
from dataclasses import dataclass, field
from pathlib import Path

from bot.store.ledger_sqlite import Ledger, LedgerError
from tracker import learnings, verdicts
from tracker.keys import canonical
from tracker.lifecycle import State
from tracker.models import SEVERITIES, DecidedBy, Decision

from ..forge.localgit import LocalError, LocalGitForge
from ..pr.checks import blocking_keys
from ..review.engine import Engine, offline_engine
from ..review.llm_config import LLMConfig
from ..round import commit, gather, plan, read_settings
from .fixpatch import fix_patch
from .printable import PrintableFormatter, printable

__all__ = ["Actions", "LocalError", "ModelUnreachable", "add_commands", "record_actions",
           "review_local"]


class ModelUnreachable(LocalError):
    """The configured model gave no answer; the round was not recorded."""


@dataclass
class Actions:
    """What a person tells ``roundwise review`` about earlier findings, recorded in the local
    ledger as the App records ``/roundwise ignore``, ``resolve`` and ``unmute``."""

    ignore: list[str] = field(default_factory=list)  # defect keys
    resolve: list[str] = field(default_factory=list)
    unmute: list[str] = field(default_factory=list)  # kinds of finding
    by: str = "you"

    def __bool__(self) -> bool:
        return bool(self.ignore or self.resolve or self.unmute)


def record_actions(ledger: Ledger, pr: dict, actions: Actions) -> list[str]:
    """Record ``actions`` in the branch's ledger (all or nothing); what was done, as lines."""
    pr_id, done = pr["id"], []
    number = ledger.current_round(pr_id)
    with ledger.transaction():
        for key in dict.fromkeys(canonical(k) for k in actions.ignore):
            defect = _known(ledger, pr_id, key)
            if not defect.ignored:
                ledger.set_ignored(pr_id, key, actions.by, number)
            done.append(f"{key} ignored")
        for key in dict.fromkeys(canonical(k) for k in actions.resolve):
            defect = _known(ledger, pr_id, key)
            if defect.state is not State.RESOLVED:
                ledger.record_decision(pr_id, number, Decision(
                    key, State.RESOLVED, "command_resolve",
                    f"{actions.by} ran roundwise review --resolve", decided_by=DecidedBy.HUMAN))
            done.append(f"{key} resolved")
        for kind in dict.fromkeys(actions.unmute):
            if learnings.unmute(ledger, pr["repo"], kind, actions.by) is None:
                held = sorted(learnings.muted(ledger, pr["repo"]))
                raise LocalError(f"{kind} findings are not held back here"
                                 + (f" (held back: {', '.join(held)})" if held else ""))
            done.append(f"{kind} unmuted")
    return done


def _known(ledger: Ledger, pr_id: int, key: str):
    try:
        return ledger.defect(pr_id, key)
    except LedgerError:
        known = ", ".join(d.key for d in ledger.defects(pr_id)) or "none yet"
        raise LocalError(f"no defect {key} on this branch (tracked: {known})") from None


def _learn(ledger: Ledger, pr: dict) -> None:
    """What people did, as verdicts on the bot's findings, and the repository's learnings."""
    verdicts.refresh(ledger, pr["id"])
    learnings.refresh(ledger, pr["repo"])


async def review_local(repo: str | Path, base: str, head: str = "HEAD", *,
                       engine: Engine | None = None, db_path: str | Path | None = None,
                       actions: Actions | None = None) -> dict:
    """Review ``base...head`` as the next round of the branch; returns the report dict.
    ``actions`` (ignore, resolve, unmute) are recorded first, so the round and the report
    see them."""
    forge = LocalGitForge(repo, base, head)
    db = Path(db_path) if db_path else forge.git_dir() / "roundwise" / "ledger.db"
    with Ledger(db) as ledger:
        pr = ledger.pull_request(f"local:{forge.top.name}:{forge.branch}", 0,
                                 title=forge.branch)
        done = record_actions(ledger, pr, actions) if actions else []
        _learn(ledger, pr)
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
            ledger.save_plan(pr["id"], number, the_plan.to_json())  # what it held back
            commit(ledger, pr["id"], number, the_plan)  # nothing to publish: the report is it
            _learn(ledger, pr)
        out = report(ledger, pr["id"], number, forge, db)
        out["actions"] = done
        out["held"] = _held(ledger, pr, number)
        saved = ledger.plan(pr["id"], number) or {}
        out["dropped"] = dict(sorted((saved.get("dropped") or {}).items()))
        out["model_calls"] = int((saved.get("usage") or {}).get("calls") or 0)
        return out


def _held(ledger: Ledger, pr: dict, number: int) -> list[dict]:
    """The round's findings held back (a kind people keep dismissing, or ``converge``)."""
    saved = ledger.plan(pr["id"], number) or {}
    return [{"path": h["finding"].get("path"), "line_start": h["finding"].get("line_start"),
             "severity": h["finding"].get("severity"), "rule": h["finding"].get("rule"),
             "kind": learnings.kind_of(h["finding"].get("rule"), h["finding"].get("type")),
             "why": h["why"], "description": h["finding"].get("description")}
            for h in saved.get("held") or []]


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
    """SARIF 2.1.0 (``bot.cli.sarif``): every anchored defect, with its state as baselineState."""
    from ..server.startup import project_url, version
    from .sarif import as_sarif as sarif

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
    review.add_argument("--ignore", metavar="KEY", action="append", default=[],
                        help="stop reporting defect KEY (e.g. D3) on this branch, as "
                             "/roundwise ignore does; recorded in the ledger (repeatable)")
    review.add_argument("--resolve", metavar="KEY", action="append", default=[],
                        help="mark defect KEY resolved, as /roundwise resolve does (repeatable)")
    review.add_argument("--unmute", metavar="KIND", action="append", default=[],
                        help="post a kind of finding held back after people dismissed it "
                             "(e.g. debug-print) again, as /roundwise unmute does (repeatable)")
    review.add_argument("--log-level", choices=["error", "warning", "info", "debug"],
                        help="what the reviewer logs on stderr (default: error); warning shows "
                             "each model call without an answer and each answer dropped")
    review.add_argument("-v", "--verbose", action="count", default=0,
                        help="-v: --log-level warning, -vv: info")
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
    print(f"roundwise: wrote {len(applied)} fix(es) to {printable(path)}{note}", file=sys.stderr)


def llm_config(args, environ) -> LLMConfig | None:
    """The model settings of ``roundwise review``: ``ROUNDWISE_*``, overridden by the flags."""
    return LLMConfig.from_env(
        environ, model=args.model, api_base=args.api_base, fallback_model=args.fallback_model,
        timeout=args.timeout, max_prompt_tokens=args.max_prompt_tokens, cache_dir=args.llm_cache,
    )


def _user(repo: str) -> str:
    """Who ran the command, for the ledger's evidence (``git config user.name`` or $USER)."""
    import getpass
    import subprocess

    done = subprocess.run(["git", "-C", str(repo), "config", "user.name"], capture_output=True,
                          text=True, check=False)
    name = done.stdout.strip() if done.returncode == 0 else ""
    if name:
        return name
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "you"


def _log_to_stderr(level: int) -> None:
    """roundwise's own log lines at ``level`` and above on stderr, ``roundwise: ...`` each (one
    handler however often the command runs in a process)."""
    import logging
    import sys

    logger = logging.getLogger("bot")
    for old in [h for h in logger.handlers if getattr(h, "roundwise_review", False)]:
        logger.removeHandler(old)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(PrintableFormatter("roundwise: %(message)s"))
    handler.roundwise_review = True
    logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False


def cmd_review(args) -> int:
    import asyncio
    import logging
    import os
    import sys

    # The reviewer's warnings (an unanswered call, a malformed answer) are summed up after the
    # report; --log-level warning (-v) shows each of them as it happens.
    level = args.log_level or {0: "error", 1: "warning"}.get(args.verbose, "info")
    _log_to_stderr(getattr(logging, level.upper()))
    try:
        llm = llm_config(args, os.environ)
    except ValueError as exc:
        print(f"roundwise: {exc}", file=sys.stderr)
        return 2
    engine = None
    if llm is not None:
        from ..server.startup import check_model

        # what serve would refuse to start with (a key not set, a provider litellm does not
        # know), said before any call instead of "could not be reached" after the retries
        problems = check_model(llm, os.environ, keyless_local=True, names=(
            "--model" if args.model else "ROUNDWISE_MODEL",
            "--fallback-model" if args.fallback_model else "ROUNDWISE_FALLBACK_MODEL"))
        for problem in problems:
            print(f"roundwise: {problem}", file=sys.stderr)
        if problems and not args.offline_fallback:
            return 2
        if problems:
            print("roundwise: reviewing with the offline reviewer (--offline-fallback)",
                  file=sys.stderr)
            llm = None
    if llm is not None:
        from ..review.llm import build_llm_engine

        engine = build_llm_engine(llm)

    actions = Actions(args.ignore, args.resolve, args.unmute, by=_user(args.repo))

    def run(engine, actions=actions):
        return asyncio.run(review_local(args.repo, args.base, args.head, engine=engine,
                                        db_path=args.ledger, actions=actions))

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
            report = run(None, None)  # the first try recorded the actions already
    except LocalError as exc:
        print(f"roundwise: {printable(exc)}", file=sys.stderr)
        return 2
    for line in report.get("actions") or []:
        print(f"roundwise: {printable(line)} (recorded in {printable(report['ledger'])})",
              file=sys.stderr)
    print(render(report, args.format))
    if report.get("dropped"):
        counts = ", ".join(f"{reason} {n}" for reason, n in report["dropped"].items())
        hint = "" if level in ("warning", "info", "debug") else " (-v shows each)"
        print(f"roundwise: findings or answers dropped this round: {counts}{hint}",
              file=sys.stderr)
    if args.fix_patch:
        write_fix_patch(args.repo, report, args.fix_patch)
    failing = blocking_keys(report["defects"], args.fail_on) if args.fail_on else []
    if failing:
        print(f"roundwise: {len(failing)} open defect(s) at or above {args.fail_on}: "
              f"{', '.join(failing)} (--fail-on {args.fail_on})", file=sys.stderr)
        return 1
    return 0
