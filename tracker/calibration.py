"""How sure a decision is: the chance it is right on a repository the tracker has not seen.

Every decision names the rule that took it (``anchor-untouched``, ``stays-resolved``, a
person's ``thread_resolved``...). The rules decide; this module only says how far to trust
that, so that a decision carries a probability people and the verifier can use, and stays
explainable: "``anchor-untouched`` was right in 33 of 38 pairs, in 12 of 14 repositories".

Two things make the chance, both measured on the development tasks by
``python -m bench.tune.calibration --write`` (which writes ``calibration.json`` beside this file):

- **The rule, across repositories.** A rule's rate pooled over every pair hides that it can be
  right in one repository and wrong in the next. Each rule's rate is estimated by repository,
  beta-binomial: how much its per-repository rates spread beyond chance (the intra-class
  correlation, shrunk toward the spread of every rule when the rule was seen in few
  repositories) widens its uncertainty for a repository never seen, and the rule is credited
  with ``Z`` standard deviations below its mean rate. A rule right in one repository and wrong
  in another is therefore unsure in a third, however many pairs it decided.
- **The other signals of the round** (``tracker.profile``): evidence the rule did not use that
  agrees with its answer or speaks against it (tests edited, the author said it is done, the
  named code changed elsewhere...). A small logistic model adds each signal's weight, fitted
  with the rule's rate as the offset; weights are per answer (a signal that supports a
  Resolved answer may weaken an Open one).

``explain`` names the signals that raised or lowered a decision's chance. ``ROUNDWISE_CALIBRATION=off``
ignores the table (the rules' own confidences are used). A decision below ``SURE`` is *unsure*:
the summary and the check run show it as "likely resolved (unverified)" or "likely still
open", and a configured verifier takes those first. No I/O beyond reading the table once.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

TABLE = Path(__file__).with_name("calibration.json")
SURE = 0.75  # a decision less likely than this to be right is shown as unsure
PRIOR_WEIGHT = 4.0  # pairs' worth of belief in the pooled rate
HUMAN = 0.95  # a person's explicit action, when the table has not measured it
Z = 0.5  # standard deviations of a rule's rate on an unseen repository it is credited below
SPREAD_REPOSITORIES = 3.0  # repositories' worth of belief in the spread of every rule pooled


def base_rule(rule: str | None) -> str:
    """The rule's name without what a verifier added to it (``+confirmed``, ``+weighed``)."""
    return (rule or "").split("+", 1)[0]


RuleCounts = dict[str, tuple[int, int]]  # repository -> (right, pairs)


@dataclass(frozen=True, eq=False)  # hashed by identity: its rates are worked out once
class Calibration:
    """Per rule and repository, how many of its rulings were right; the signals' weights."""

    by_repo: dict[str, RuleCounts] = field(default_factory=dict)  # rule -> repository -> counts
    weights: dict[str, float] = field(default_factory=dict)  # "R:tests_changed" -> log-odds
    seen: dict[str, tuple[int, int]] = field(default_factory=dict)  # this repository's verdicts

    def for_repository(self, verdicts: dict[str, tuple[int, int]]) -> Calibration:
        """The table for one repository whose people confirmed ``right`` of ``n`` of the bot's
        decisions per rule (``{rule: (right, n)}``, from ``tracker.verdicts``): each rule's
        rate there is its development rate as the prior, updated with that record."""
        if not verdicts or not self.by_repo:
            return self
        return Calibration(self.by_repo, self.weights,
                           {base_rule(k): (int(r), int(n)) for k, (r, n) in verdicts.items()})

    @property
    def counts(self) -> dict[str, tuple[int, int]]:
        """Per rule, (right, pairs) over every repository."""
        return {rule: (sum(r for r, _ in repos.values()), sum(n for _, n in repos.values()))
                for rule, repos in self.by_repo.items()}

    def confidence(self, rule: str | None, own: float, profile: dict | None = None,
                   state: object = None) -> float:
        """The chance a ruling of ``rule`` is right on a repository not in the table, given
        the round's other ``profile`` signals; ``own`` (the rule's own confidence) with no table."""
        if not self.by_repo:
            return own
        return _sigmoid(_logit(self.rule_rate(rule)) + sum(
            w for _, w in self.contributions(profile, state)))

    def contributions(self, profile: dict | None, state: object = None) -> list[tuple[str, float]]:
        """The signal weights that apply to a decision with ``profile``, largest first."""
        if not profile or not self.weights:
            return []
        side = "R" if str(state) == "Resolved" else "O"
        out = [(name, self.weights.get(f"{side}:{name}", 0.0))
               for name, on in profile.items() if on]
        out.append(("live", self.weights.get("live", 0.0) + self.weights.get(f"ans={side}", 0.0)))
        return sorted((c for c in out if c[1]), key=lambda c: -abs(c[1]))

    def explain(self, rule: str | None, profile: dict | None = None, state: object = None) -> str:
        """One sentence on where a decision's chance comes from (for the ledger and summary):
        the rule's record across repositories, and the round's signals that made it surer or
        less sure."""
        from .profile import SAID

        right, n = self.counts.get(base_rule(rule), (0, 0))
        repos = self.by_repo.get(base_rule(rule), {})
        good = sum(1 for r, k in repos.values() if r * 2 > k)
        text = (f"right in {right} of {n} pairs, in {good} of {len(repos)} repositories" if n
                else "not measured yet")
        if base_rule(rule) in self.seen:
            here, judged = self.seen[base_rule(rule)]
            text += f"; here people confirmed {here} of {judged}"
        named = [(k, w) for k, w in self.contributions(profile, state) if k != "live"]
        for sign, words in ((1, "surer for"), (-1, "less sure for")):
            said = [SAID.get(k, k.replace("_", " ")) for k, w in named if w * sign > 0][:3]
            if said:
                text += f"; {words}: {', '.join(said)}"
        return text

    @property
    def base_rate(self) -> float:
        """The share of rulings that were right, every rule pooled."""
        counts = self.counts.values()
        return sum(r for r, _ in counts) / max(sum(n for _, n in counts), 1)

    @property
    def spread(self) -> float:
        """How much a rule's rate varies between repositories beyond chance, every rule
        pooled (an intra-class correlation, weighted by the repositories each rule saw)."""
        seen = [(rho, len(repos)) for repos in self.by_repo.values()
                if (rho := _icc(repos)) is not None]
        return sum(r * j for r, j in seen) / max(sum(j for _, j in seen), 1)

    def rule_rate(self, rule: str | None) -> float:
        """The rate a ruling of ``rule`` is credited with on an unseen repository: its mean
        shrunk toward the pooled rate, less ``Z`` standard deviations of its spread."""
        return _rule_rates(self)[0].get(base_rule(rule), _rule_rates(self)[1])

    @classmethod
    def fit(cls, outcomes: list[tuple], weights: dict[str, float] | None = None) -> Calibration:
        """From (rule, right?) or (rule, right?, repository) outcomes."""
        by_repo: dict[str, dict[str, list[int]]] = {}
        for outcome in outcomes:
            rule, right = outcome[0], outcome[1]
            repo = outcome[2] if len(outcome) > 2 else ""
            row = by_repo.setdefault(base_rule(rule), {}).setdefault(repo, [0, 0])
            row[0] += bool(right)
            row[1] += 1
        return cls({k: {repo: (r, n) for repo, (r, n) in v.items()} for k, v in by_repo.items()},
                   dict(weights or {}))


def _icc(repos: RuleCounts) -> float | None:
    """The intra-class correlation of one rule's rightness within repositories (ANOVA
    estimator for binary outcomes); None with fewer than two repositories."""
    n_total = sum(n for _, n in repos.values())
    if len(repos) < 2 or n_total <= len(repos):
        return None
    mean = sum(r for r, _ in repos.values()) / n_total
    var = mean * (1 - mean)
    if var <= 0:
        return 0.0
    between = sum(n * (r / n - mean) ** 2 for r, n in repos.values()) / (len(repos) - 1)
    n_bar = (n_total - sum(n * n for _, n in repos.values()) / n_total) / (len(repos) - 1)
    return min(max((between - var) / (var * max(n_bar - 1, 1e-9)), 0.0), 1.0)


@lru_cache(maxsize=64)
def _rule_rates(table: Calibration) -> tuple[dict[str, float], float]:
    """Every rule's credited rate, and the rate of a rule never seen (worked out once a table)."""
    base, rho0 = table.base_rate, table.spread
    out = {}
    for rule, repos in table.by_repo.items():
        right = sum(r for r, _ in repos.values())
        n = sum(k for _, k in repos.values())
        mean = (right + PRIOR_WEIGHT * base) / (n + PRIOR_WEIGHT)
        rho = _icc(repos)
        trust = (len(repos) - 1) / (len(repos) - 1 + SPREAD_REPOSITORIES) if rho is not None else 0
        rho = trust * (rho or 0.0) + (1 - trust) * rho0
        per_repo = n / max(len(repos), 1)
        variance = mean * (1 - mean) * (rho + (1 + (per_repo - 1) * rho) / (n + PRIOR_WEIGHT))
        out[rule] = _seen_rate(mean, variance, table.seen[rule]) if rule in table.seen \
            else mean - Z * variance ** 0.5
    unseen_variance = base * (1 - base) * (rho0 + 1 / PRIOR_WEIGHT)
    for rule, record in table.seen.items():
        if rule not in out:
            out[rule] = _seen_rate(base, unseen_variance, record)
    return out, base - Z * unseen_variance ** 0.5


SEEN_PRIOR_MIN = 8.0  # pairs' worth the development rate keeps, at the least, in a repository's
# own rate: verdicts are weak labels, and one of them must not swing a rule from sure to unsure


def _seen_rate(mean: float, variance: float, record: tuple[int, int]) -> float:
    """A rule's rate in a repository with its own record: a beta prior with the rule's mean
    and its variance on an unseen repository (the spread between repositories and the
    uncertainty of the mean), updated with the ``(right, n)`` people judged there; credited,
    like an unseen one, ``Z`` standard deviations below the posterior mean."""
    right, n = record
    strength = max(mean * (1 - mean) / max(variance, 1e-9) - 1, SEEN_PRIOR_MIN)
    rate = (mean * strength + right) / (strength + n) if strength + n else mean
    return rate - Z * (rate * (1 - rate) / (strength + n + 1)) ** 0.5


def _logit(p: float) -> float:
    p = min(max(p, 1e-4), 1 - 1e-4)
    return math.log(p / (1 - p))


def _sigmoid(z: float) -> float:
    return 1 / (1 + math.exp(-z))


@lru_cache(maxsize=1)
def _table() -> Calibration:
    try:
        data = json.loads(TABLE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return Calibration()
    by_repo = {}
    for rule, row in (data.get("rules") or {}).items():
        repos = row.get("by_repository") or {"": [row["right"], row["pairs"]]}
        by_repo[str(rule)] = {str(k): (int(v[0]), int(v[1])) for k, v in repos.items()}
    return Calibration(by_repo, {str(k): float(v) for k, v in (data.get("signals") or {}).items()})


def current() -> Calibration:
    """The table in use (empty when switched off or not written)."""
    if os.environ.get("ROUNDWISE_CALIBRATION", "on").strip().lower() in ("off", "0", "no"):
        return Calibration()
    return _table()


def unsure(confidence: float | None) -> bool:
    return confidence is not None and confidence < SURE


def unsure_label(state: str, confidence: float | None) -> str | None:
    """How an unsure decision is shown, or None for a sure one."""
    if not unsure(confidence):
        return None
    return "likely resolved (unverified)" if str(state) == "Resolved" else "likely still open"
