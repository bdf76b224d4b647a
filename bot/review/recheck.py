"""The bot's own static findings re-checked at every new head.

A finding the offline reviewer raised is about a check firing, so the check itself is the
best evidence of its state: ``recheck_static(ctx, result)`` re-runs each tracked finding's
check on its file at the head (``bot.review.offline.recheck``) and, where the tracker's decision
disagrees with what the check says at the defect's (mapped) anchor, feeds that in:

- the check no longer fires there and the decision keeps the defect Open (or Reopened) →
  Resolved, rule ``check-silent``, with the check's silence as evidence ("'os' imported but
  unused" once ``os`` is used, where nothing on the anchored line changed);
- the check still fires there and the tracker's rules called it a Resolved candidate → Open,
  through the same ``+overturned`` path as a check firing again on an added line.

A candidate goes through ``tracker.decide.apply_verdict`` (its evidence kept beside the
check's); a firm Open is replaced by a new decision. People's decisions are never touched, nor
defects the check cannot be run for (ruff missing, a file that no longer parses, a deleted
file), nor files the repository's settings now skip.
"""

from __future__ import annotations

from tracker.decide import Verdict, apply_verdict
from tracker.lifecycle import State
from tracker.models import DecidedBy, Decision, Origin

from .offline.recheck import fires, is_offline_rule

__all__ = ["CONFIDENCE", "RULE", "recheck_static"]

RULE = "check-silent"
CONFIDENCE = 0.9  # a deterministic check's silence; below a person's word, above most rules
LIVE = (State.NEW, State.OPEN, State.REOPENED)


def recheck_static(ctx, result) -> None:
    """Re-check the round's tracked offline findings at the head (see the module doc);
    ``ctx`` and ``result`` are the engine's ``RoundContext`` and ``RoundResult`` (not imported:
    the engine imports this module)."""
    defects = {d.key: d for d in ctx.tracked}
    todo: list[tuple[int, str, str, int, int]] = []
    for i, decision in enumerate(result.decisions):
        defect = defects.get(decision.key)
        if defect is None or defect.origin is not Origin.BOT or not is_offline_rule(defect.rule):
            continue
        if decision.decided_by is DecidedBy.HUMAN or decision.key in result.repeated:
            continue  # people decided; or the check fired again on an added line (handled)
        # where the defect stands at the head (its anchor as the tracker mapped it); a defect
        # whose anchor could not be followed is left to the tracker
        path, start = decision.path, decision.line_start
        end = decision.line_end or start
        if not path or start is None or ctx.settings.skipped(path) or any(
                defect.rule in r.ignore_rules and r.matches(path) for r in ctx.settings.paths):
            continue
        if decision.state in LIVE or (decision.state is State.RESOLVED and decision.candidate
                                      and defect.state is not State.RESOLVED):
            todo.append((i, path, defect.rule, start, end))
    if not todo:
        return
    wanted: dict[str, set[str]] = {}
    for _i, path, rule, _s, _e in todo:
        wanted.setdefault(path, set()).add(rule)
    found = fires(ctx.files, wanted)
    head = ctx.head_sha[:7]
    for i, path, rule, start, end in todo:
        decision = result.decisions[i]
        firing = found.fires_on(path, rule, start, end)
        where = f"{path}:{start}" + (f"-{end}" if end != start else "")
        if firing is False and decision.state in LIVE:
            evidence = f"the {rule} check no longer fires at {where} (re-run at {head})"
            if decision.candidate:
                result.decisions[i] = apply_verdict(decision, Verdict(
                    decision.key, State.RESOLVED, evidence, decided_by=DecidedBy.RULE))
            else:
                result.decisions[i] = Decision(
                    decision.key, State.RESOLVED, RULE, evidence, path=decision.path,
                    line_start=decision.line_start, line_end=decision.line_end,
                    code=decision.code, signals=decision.signals, confidence=CONFIDENCE)
        elif firing is True and decision.state is State.RESOLVED:
            result.decisions[i] = apply_verdict(decision, Verdict(
                decision.key, State.OPEN, f"the {rule} check still fires at {where}",
                decided_by=DecidedBy.RULE))
