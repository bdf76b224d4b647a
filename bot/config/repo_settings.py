"""Per-repository settings from ``.github/roundwise.yml`` on the default branch.

Read from the default branch only, never from the PR's own branch: a pull request must not be
able to switch its own review off. Example::

    ignore_paths: ["docs/**", "*.lock"]
    review_drafts: false
    max_comments: 20       # new inline comments per round, most severe first
    min_severity: Minor    # Trivial, Minor, Normal, Major, Blocker, Critical
    static_checks: true    # run the offline static checks (also alongside an LLM)
    require_tests: false   # track "source changed, no test changed" as a defect (else a note)
    fail_on: Major         # the roundwise check fails while an open defect this severe stands
    partial_review: action_required  # the check's conclusion (with fail_on) when a round could
                           # not review every file; or neutral (passes a required check), failure
    review_event: comment  # or request_changes: the round's review requests changes then
    converge: {after_round: 2, min_severity: Major}  # later rounds add only Major or worse
    paths:                 # per glob: skip the files, or tell the model how to review them
      - {glob: "migrations/**", skip: true}
      - {glob: "src/api/**", instructions: "Every handler must check the caller's token."}
      - {glob: "scripts/**", ignore_rules: [debug-print]}

An invalid file does not stop reviews: the defaults apply and the error is reported once.
The file is the repository's, so it is read with limits: at most ``MAX_BYTES``, at most
``MAX_ALIASES`` YAML aliases (an anchor bomb of a few hundred bytes otherwise expands to
gigabytes), ``MAX_DEPTH`` levels of nesting, and at most ``MAX_EXPANDED_NODES`` nodes and
``MAX_EXPANDED_CHARS`` characters once every alias is expanded (counted on the composed node
graph, each node once, before anything is constructed: a few dozen aliases doubling each other
stay inside the alias budget, but turning them into text would hold the interpreter lock for
minutes and take gigabytes); ``bot.round.gather`` parses it off the event loop under a deadline.
Past any limit the defaults apply, with a note.
"""

from __future__ import annotations

import yaml

from tracker.models import SEVERITIES

from ..forge.coverage import PARTIAL_REVIEW
from ..review.engine import Settings
from ..review.paths import MAX_INSTRUCTIONS, PathRule

PATH = ".github/roundwise.yml"
MAX_BYTES = 64 * 1024
MAX_ALIASES = 50
MAX_DEPTH = 20
MAX_EXPANDED_NODES = 10_000  # a real settings file has a few dozen
MAX_EXPANDED_CHARS = 256 * 1024
KEYS = {"ignore_paths", "review_drafts", "max_comments", "min_severity", "static_checks",
        "require_tests", "fail_on", "partial_review", "review_event", "converge",
        "paths"}
CONVERGE_KEYS = {"after_round", "min_severity"}
PATH_KEYS = {"glob", "skip", "instructions", "ignore_rules"}
MAX_PATHS = 100
REVIEW_EVENTS = ("comment", "request_changes")


class SettingsError(ValueError):
    """The settings file is not valid; the message says what to fix."""


def parse_settings(text: str | None, *, default_drafts: bool = False) -> Settings:
    """Settings from the file's text (None = no file = defaults)."""
    settings = Settings(review_drafts=default_drafts)
    if text is None or not text.strip():
        return settings
    if len(text.encode("utf-8", errors="replace")) > MAX_BYTES:
        raise SettingsError(f"{PATH} is larger than {MAX_BYTES // 1024} KB")
    loader = _BoundedLoader(text)
    try:
        data = loader.get_single_data()
    except yaml.YAMLError as exc:
        raise SettingsError(f"{PATH} is not valid YAML: {exc}") from exc
    except RecursionError:
        raise SettingsError(f"{PATH} is nested too deeply") from None
    finally:
        loader.dispose()
    if data is None:
        return settings
    if not isinstance(data, dict):
        raise SettingsError(f"{PATH} must be a mapping of settings, not {type(data).__name__}")
    unknown = sorted(set(data) - KEYS)
    if unknown:
        raise SettingsError(f"{PATH}: unknown setting(s) {', '.join(unknown)}; "
                            f"known: {', '.join(sorted(KEYS))}")
    if "ignore_paths" in data:
        paths = data["ignore_paths"]
        if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
            raise SettingsError(f"{PATH}: ignore_paths must be a list of glob strings")
        settings.ignore_paths = paths
    for key in ("review_drafts", "static_checks", "require_tests"):
        if key in data:
            if not isinstance(data[key], bool):
                raise SettingsError(f"{PATH}: {key} must be true or false")
            setattr(settings, key, data[key])
    if "max_comments" in data:
        value = data["max_comments"]
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise SettingsError(f"{PATH}: max_comments must be a whole number >= 0")
        settings.max_comments = value
    if "min_severity" in data:
        value = str(data["min_severity"]).capitalize()
        if value not in SEVERITIES:
            raise SettingsError(f"{PATH}: min_severity must be one of {', '.join(SEVERITIES)}")
        settings.min_severity = value
    if data.get("fail_on") not in (None, False) and str(data["fail_on"]).lower() != "none":
        value = str(data["fail_on"]).capitalize()
        if value not in SEVERITIES:
            raise SettingsError(f"{PATH}: fail_on must be none or one of {', '.join(SEVERITIES)}")
        settings.fail_on = value
    if "partial_review" in data:
        value = str(data["partial_review"]).lower()
        if value not in PARTIAL_REVIEW:
            raise SettingsError(f"{PATH}: partial_review must be one of "
                                f"{', '.join(PARTIAL_REVIEW)}")
        settings.partial_review = value
    if "review_event" in data:
        value = str(data["review_event"]).lower()
        if value not in REVIEW_EVENTS:
            raise SettingsError(f"{PATH}: review_event must be one of {', '.join(REVIEW_EVENTS)}")
        settings.review_event = value
    if data.get("converge") not in (None, False):
        _converge(data["converge"], settings)
    if "paths" in data:
        settings.paths = _paths(data["paths"])
    return settings


def _converge(value, settings: Settings) -> None:
    """``converge: {after_round: N, min_severity: S}``: after round N, hold back new findings
    below S (``converge: true`` is ``{after_round: 2, min_severity: Major}``)."""
    if value is True:
        value = {}
    if not isinstance(value, dict):
        raise SettingsError(f"{PATH}: converge must be a mapping such as "
                            "{after_round: 2, min_severity: Major}")
    unknown = sorted(set(value) - CONVERGE_KEYS)
    if unknown:
        raise SettingsError(f"{PATH}: converge: unknown key(s) {', '.join(map(str, unknown))}; "
                            f"known: {', '.join(sorted(CONVERGE_KEYS))}")
    after = value.get("after_round", 2)
    if not isinstance(after, int) or isinstance(after, bool) or after < 0:
        raise SettingsError(f"{PATH}: converge.after_round must be a whole number >= 0")
    severity = str(value.get("min_severity", "Major")).capitalize()
    if severity not in SEVERITIES:
        raise SettingsError(f"{PATH}: converge.min_severity must be one of "
                            f"{', '.join(SEVERITIES)}")
    settings.converge_after, settings.converge_severity = after, severity


def _paths(value) -> list[PathRule]:
    """``paths: [{glob, skip, instructions, ignore_rules}, ...]``."""
    if not isinstance(value, list) or len(value) > MAX_PATHS:
        raise SettingsError(f"{PATH}: paths must be a list of at most {MAX_PATHS} entries such "
                            'as {glob: "src/api/**", instructions: "..."}')
    out = []
    for n, entry in enumerate(value, 1):
        where = f"{PATH}: paths entry {n}"
        if not isinstance(entry, dict) or not isinstance(entry.get("glob"), str) \
                or not entry["glob"].strip():
            raise SettingsError(f"{where} needs a glob (a string)")
        unknown = sorted(set(entry) - PATH_KEYS)
        if unknown:
            raise SettingsError(f"{where}: unknown key(s) {', '.join(map(str, unknown))}; "
                                f"known: {', '.join(sorted(PATH_KEYS))}")
        skip = entry.get("skip", False)
        if not isinstance(skip, bool):
            raise SettingsError(f"{where}: skip must be true or false")
        text = entry.get("instructions") or ""
        if not isinstance(text, str) or len(text) > MAX_INSTRUCTIONS:
            raise SettingsError(f"{where}: instructions must be text of at most "
                                f"{MAX_INSTRUCTIONS} characters")
        rules = entry.get("ignore_rules") or []
        if not isinstance(rules, list) or not all(isinstance(r, str) for r in rules):
            raise SettingsError(f"{where}: ignore_rules must be a list of rule ids "
                                "(debug-print, ruff:F401...)")
        out.append(PathRule(entry["glob"].strip(), skip, text.strip(), tuple(rules)))
    return out


class _BoundedLoader(yaml.SafeLoader):
    """PyYAML's safe loader with a budget of aliases and a nesting limit (checked as the
    document is composed, before anything is expanded)."""

    def __init__(self, stream):
        super().__init__(stream)
        self._aliases = 0
        self._depth = 0

    def get_single_node(self):
        node = super().get_single_node()
        if node is not None:
            _check_expansion(node)
        return node

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_ALIASES:
                raise SettingsError(f"{PATH} uses more than {MAX_ALIASES} YAML aliases")
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise SettingsError(f"{PATH} is nested more than {MAX_DEPTH} levels deep")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def _check_expansion(root: yaml.Node) -> None:
    """Refuse a document whose aliases expand past ``MAX_EXPANDED_NODES`` nodes or
    ``MAX_EXPANDED_CHARS`` characters, or that contains itself. An alias is the very node it
    names, so the composed document is a graph; each node's expanded size is computed once
    (depth first, without recursion) and shared by every alias of it."""
    sizes: dict[int, tuple[int, int]] = {}  # id(node) -> (nodes, chars) once expanded
    on_path: set[int] = {id(root)}
    stack = [(root, iter(_children(root)), [1, _chars(root)])]
    while stack:
        node, children, total = stack[-1]
        child = next(children, None)
        if child is None:
            stack.pop()
            on_path.discard(id(node))
            if total[0] > MAX_EXPANDED_NODES or total[1] > MAX_EXPANDED_CHARS:
                raise SettingsError(f"{PATH} expands its aliases past {MAX_EXPANDED_NODES} "
                                    f"nodes or {MAX_EXPANDED_CHARS // 1024} KB of text")
            sizes[id(node)] = (total[0], total[1])
            if stack:
                parent = stack[-1][2]
                parent[0] += total[0]
                parent[1] += total[1]
        elif id(child) in sizes:
            total[0] += sizes[id(child)][0]
            total[1] += sizes[id(child)][1]
        elif id(child) in on_path:
            raise SettingsError(f"{PATH} has an alias that refers to itself")
        else:
            on_path.add(id(child))
            stack.append((child, iter(_children(child)), [1, _chars(child)]))


def _chars(node: yaml.Node) -> int:
    return len(node.value) if isinstance(node, yaml.ScalarNode) else 0


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []
