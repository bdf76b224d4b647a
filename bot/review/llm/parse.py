"""The model's JSON answers validated into findings and verdicts; what cannot be used is counted.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

from tracker.models import (
    MCR_TYPES,
    SEVERITIES,
    Finding,
)


class OutputError(ValueError):
    """A model answer that is not the JSON object asked for; the message says what is wrong."""


class ItemError(ValueError):
    """One unusable item inside an otherwise valid answer."""


_FENCE = re.compile(r"^```[a-zA-Z]*\s*|\s*```$")


def load_json_object(text: str | None) -> dict:
    """The JSON object in a model's answer (code fences and stray prose around it tolerated)."""
    raw = _FENCE.sub("", (text or "").strip())
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        start, end = raw.find("{"), raw.rfind("}")
        if start < 0 or end <= start:
            raise OutputError(f"the answer is not valid JSON ({exc.msg})") from None
        try:
            data = json.loads(raw[start:end + 1])
        except json.JSONDecodeError as exc2:
            raise OutputError(f"the answer is not valid JSON ({exc2.msg} at character "
                              f"{exc2.pos + start})") from None
    if not isinstance(data, dict):
        raise OutputError(f"the answer must be a JSON object, not {type(data).__name__}")
    return data


def list_field(data: dict, name: str) -> list:
    items = data.get(name)
    if not isinstance(items, list):
        raise OutputError(f'the JSON object must have a "{name}" list')
    return items


def _int(value: Any, name: str) -> int:
    if isinstance(value, bool):
        raise ItemError(f"{name} is not a line number")
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if not isinstance(value, int) or value < 1:
        raise ItemError(f"{name} is not a line number")
    return value


_TYPE_ID = re.compile(r"^\s*([EF](?:\.\d+){1,2})", re.IGNORECASE)


def normalise_type(value: Any) -> str:
    """An MCR type id from what a model wrote ("F.2", "F.2 Logic", "logic", "E.1"...)."""
    text = str(value or "").strip()
    match = _TYPE_ID.match(text)
    if match:
        code = match.group(1).upper()
        if code in MCR_TYPES:
            return code
        nearest = [t for t in MCR_TYPES if t.startswith(code + ".")]
        if nearest:
            return nearest[0]
        parent = code.rsplit(".", 1)[0]  # a sub-type the taxonomy does not have: F.3.1 -> F.3
        if parent in MCR_TYPES:
            return parent
    lowered = text.lower()
    for key, label in MCR_TYPES.items():
        if lowered and (lowered == label.lower() or lowered in label.lower().split(" & ")):
            return key
    raise ItemError(f"unknown defect type {text!r}")


def normalise_severity(value: Any) -> str:
    text = str(value or "").strip().lower()
    for severity in SEVERITIES:
        if severity.lower() == text:
            return severity
    return "Normal"


def _confidence(value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0.5
    if 1.0 < number <= 100.0:
        number /= 100.0
    return min(max(number, 0.0), 1.0)


_LOCATION = re.compile(r"^(?P<path>.+?):(?P<start>\d+)(?:\s*-\s*(?P<end>\d+))?$")


def split_location(text: str) -> tuple[str, tuple[int, int] | None]:
    """A path as models write it (``app/x.py:8``, ``app/x.py:5-14``, ``./app/x.py``), split
    into the path and the lines it names, if any."""
    path = text.strip().strip("`").strip().removeprefix("./")
    match = _LOCATION.match(path)
    if not match:
        return path, None
    start = int(match["start"])
    end = int(match["end"]) if match["end"] else start
    return match["path"].removeprefix("./"), (min(start, end), max(start, end))


def finding_from_item(item: Any) -> Finding:
    """A bot Finding from one answer item; ItemError when it cannot be used."""
    if not isinstance(item, dict):
        raise ItemError("an item is not an object")
    path = item.get("path")
    if not isinstance(path, str) or not path.strip():
        raise ItemError("missing path")
    path, at = split_location(path)
    if at is not None:
        # Lines written into the path win: a small model put the real ones there and copied
        # the answer shape's example numbers (42, 43) into line_start and line_end.
        start, end = at
    else:
        start = _int(item.get("line_start", item.get("line")), "line_start")
        end = _int(item["line_end"], "line_end") if item.get("line_end") is not None else start
    description = item.get("description")
    if not isinstance(description, str) or not description.strip():
        raise ItemError("missing description")
    side = str(item.get("side") or "RIGHT").strip().upper()
    fix = item.get("fix")
    if not isinstance(fix, str) or side == "LEFT" or len(fix) > 4000 or "```" in fix:
        fix = None  # no fix, a malformed one, or one that would break the suggestion block
    try:
        return Finding(
            description=description.strip()[:2000], path=path, line_start=start, line_end=end,
            side=side if side in ("RIGHT", "LEFT") else "RIGHT",
            type=normalise_type(item.get("type") or "F.2"),
            severity=normalise_severity(item.get("severity")),
            confidence=_confidence(item.get("confidence", 0.5)), rule=None, origin="bot",
            fix=fix.rstrip("\n") if fix is not None else None,
            quote=quote[:4000] if isinstance(quote := item.get("code"), str) else None,
        )
    except ValueError as exc:
        raise ItemError(str(exc)) from None


def parse_findings(text: str) -> tuple[list[Finding], Counter]:
    """Findings from a detection answer, and a count of the items that had to be dropped.

    Raises OutputError when the answer as a whole is unusable (the caller repairs once).
    """
    items = list_field(load_json_object(text), "findings")
    findings, dropped = [], Counter()
    for item in items:
        try:
            findings.append(finding_from_item(item))
        except ItemError:
            dropped["invalid_item"] += 1
    return findings, dropped


def _bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ItemError("resolved must be true or false")


_WORD = re.compile(r"[a-z0-9]+")
ECHO_SHARE = 0.6  # this share of a field's word triples found in the prompt: it is an echo


def echoes(text: str | None, prompt: str) -> bool:
    """Whether a field the model filled is the prompt's own wording (an instruction or the
    answer shape's placeholder pasted back) rather than an answer.

    Small models paste the shape's placeholder (``the line(s) of current code that show it,
    copied exactly...``) into the field it describes; such text is no evidence. A field counts
    as an echo when it has at least four words and most of its word triples are in ``prompt``.
    """
    words = _WORD.findall((text or "").lower())
    if len(words) < 4:
        return False
    source = _WORD.findall(prompt.lower())
    known = {tuple(source[i:i + 3]) for i in range(len(source) - 2)}
    triples = [tuple(words[i:i + 3]) for i in range(len(words) - 2)]
    return sum(t in known for t in triples) >= ECHO_SHARE * len(triples)


def parse_verdicts(text: str) -> tuple[list[dict], Counter]:
    """``{"key", "resolved", "evidence", "quote"}`` items from a verification answer."""
    items = list_field(load_json_object(text), "verdicts")
    out, dropped = [], Counter()
    for item in items:
        try:
            if not isinstance(item, dict) or not isinstance(item.get("key"), str):
                raise ItemError("missing key")
            out.append({
                "key": item["key"].strip(),
                "resolved": _bool(item.get("resolved")),
                "evidence": str(item.get("evidence") or "").strip()[:600],
                "quote": str(item.get("quote") or "").strip()[:600],
            })
        except ItemError:
            dropped["invalid_item"] += 1
    return out, dropped
