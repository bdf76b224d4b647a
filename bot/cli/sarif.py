"""SARIF 2.1.0 for ``roundwise review --format sarif``, shaped for code scanning across runs.

Code-scanning tools (GitHub's among them) show a rule's name, help and severity from the
run's rule metadata, and follow one finding from run to run by its ``partialFingerprints``;
``baselineState`` says what changed since the previous run. roundwise knows both better than a
line-based tool: the ledger fingerprints the flagged code and tracks every defect's state, so
New, Open, Reopened and Resolved map directly onto ``new``, ``unchanged``, ``updated`` and
``absent``. Rule metadata comes from the offline rule tables (``RULES``, ``RUFF_RULES``) and,
for the model's findings, from the MCR defect types.
"""

from __future__ import annotations

import hashlib
import re
from functools import cache

from tracker.models import MCR_TYPES

__all__ = ["BASELINE_STATE", "CODE_FINGERPRINT", "DEFECT_FINGERPRINT", "LEVEL",
           "SECURITY_SEVERITY", "as_sarif", "rule_metadata"]

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
# partialFingerprints keys; bump the version when how a value is computed changes
DEFECT_FINGERPRINT = "roundwiseDefect/v1"
CODE_FINGERPRINT = "roundwiseCode/v1"

LEVEL = {"Trivial": "note", "Minor": "note", "Normal": "warning", "Major": "error",
         "Blocker": "error", "Critical": "error"}
#: the MCR severity on code scanning's 0.1-10 CVSS-like scale (low < 4 <= medium < 7 <= high < 9)
SECURITY_SEVERITY = {"Trivial": "1.0", "Minor": "3.0", "Normal": "5.0", "Major": "7.5",
                     "Blocker": "8.5", "Critical": "9.5"}
BASELINE_STATE = {"New": "new", "Open": "unchanged", "Reopened": "updated",
                  "Resolved": "absent"}


def _name(rule_id: str) -> str:
    """``debug-print`` -> ``DebugPrint``, ``ruff:F401`` -> ``RuffF401`` (SARIF's rule name)."""
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[^A-Za-z0-9]+", rule_id)
                   if part)


@cache
def _tables() -> dict[str, dict]:
    """Rule id -> what the offline tables say of it (the first row of a rule wins)."""
    from ..review.offline import RUFF_RULES, RULES

    out: dict[str, dict] = {}
    for rule in RULES:
        text = re.sub(r"\s*`?\{m\}`?", "", rule.description)  # the flagged code: per result
        out.setdefault(rule.id, {"type": rule.type, "severity": rule.severity,
                                 "precision": rule.confidence, "help": text})
    for code, rule in RUFF_RULES.items():
        out.setdefault(f"ruff:{code}", {"type": rule.type, "severity": rule.severity,
                                        "precision": rule.confidence,
                                        "help": f"ruff {code}: {rule.why}"})
    return out


def _precision(confidence: float) -> str:
    return "very-high" if confidence >= 0.8 else "high" if confidence >= 0.65 else \
        "medium" if confidence >= 0.5 else "low"


def rule_metadata(rule_id: str, defect: dict) -> dict:
    """The ``reportingDescriptor`` of ``rule_id``, from the rule tables (else the defect)."""
    known = _tables().get(rule_id)
    mcr_type = (known or {}).get("type") or defect.get("type") or "F.2"
    severity = (known or {}).get("severity") or defect.get("severity") or "Normal"
    type_name = MCR_TYPES.get(mcr_type, mcr_type)
    if known:
        short = f"{type_name}: {rule_id}"
        help_text = known["help"]
    else:  # the model's findings: one rule per MCR defect type
        short = f"{type_name} defect found by the model"
        help_text = (f"A defect of MCR type {mcr_type} ({type_name}) that the reviewing model "
                     "reported; the result's message says what is wrong and why.")
    tags = ["maintainability" if mcr_type.startswith("E") else "correctness", mcr_type]
    if mcr_type == "F.7":
        tags.append("security")
    return {
        "id": rule_id,
        "name": _name(rule_id),
        "shortDescription": {"text": short},
        "fullDescription": {"text": help_text},
        "help": {"text": help_text, "markdown": help_text},
        "defaultConfiguration": {"level": LEVEL.get(severity, "warning")},
        "properties": {
            "tags": tags,
            "precision": _precision((known or {}).get("precision", 0.5)),
            "problem.severity": {"error": "error", "warning": "warning"}.get(
                LEVEL.get(severity, "warning"), "recommendation"),
            "security-severity": SECURITY_SEVERITY.get(severity, "5.0"),
            "mcr-type": mcr_type,
        },
    }


def _fingerprints(report: dict, defect: dict) -> dict[str, str]:
    """Two partial fingerprints: the defect's identity in the ledger (branch and key, stable
    for as long as the ledger tracks it, whatever happens to the code) and the ledger's
    fingerprint of the flagged code as last seen (it follows the code, so it changes when the
    code does, which is how the ledger notices a Reopened defect)."""
    identity = "\0".join([report["branch"], defect["key"]])
    out = {DEFECT_FINGERPRINT: hashlib.sha256(identity.encode()).hexdigest()[:32]}
    if defect.get("fingerprint"):
        out[CODE_FINGERPRINT] = defect["fingerprint"]
    return out


def as_sarif(report: dict, *, version: str = "0+unknown",
             information_uri: str | None = None) -> dict:
    """The report as one SARIF run: one result per anchored, not ignored defect.

    Resolved defects are included as ``kind: pass`` results with ``baselineState: absent``, so
    a consumer sees them go away rather than merely stop appearing.
    """
    rules: dict[str, dict] = {}
    results = []
    for d in report["defects"]:
        if d["ignored"] or not d["path"]:
            continue
        rule_id = d["rule"] or f"roundwise/{d['type']}"
        if rule_id not in rules:
            rules[rule_id] = rule_metadata(rule_id, d)
        resolved = d["state"] == "Resolved"
        start = d["line_start"] or 1
        result = {
            "ruleId": rule_id,
            "ruleIndex": list(rules).index(rule_id),
            "kind": "pass" if resolved else "fail",
            "level": "none" if resolved else LEVEL.get(d["severity"], "warning"),
            "message": {"text": f"{d['key']} ({d['state']}): {d['description']}"},
            "locations": [{"physicalLocation": {
                "artifactLocation": {"uri": d["path"], "uriBaseId": "%SRCROOT%"},
                "region": {"startLine": start, "endLine": max(d["line_end"] or start, start)},
            }}],
            "partialFingerprints": _fingerprints(report, d),
            "baselineState": BASELINE_STATE.get(d["state"], "new"),
            "properties": {"roundwise": {"key": d["key"], "state": d["state"],
                                         "previous": d.get("previous"), "type": d["type"],
                                         "severity": d["severity"]}},
        }
        results.append(result)
    driver = {"name": "roundwise", "version": version, "rules": list(rules.values())}
    if re.fullmatch(r"\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.-]+)?", version):
        driver["semanticVersion"] = version
    if information_uri:
        driver["informationUri"] = information_uri
    return {
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": driver},
            "automationDetails": {"id": f"roundwise/{report['branch']}/round-{report['round']}"},
            "originalUriBaseIds": {"%SRCROOT%": {"description": {
                "text": "The root of the reviewed repository's work tree."}}},
            "columnKind": "utf16CodeUnits",
            "results": results,
        }],
    }
