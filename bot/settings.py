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
    review_event: comment  # or request_changes: the round's review requests changes then

An invalid file does not stop reviews: the defaults apply and the error is reported once.
The file is the repository's, so it is read with limits: at most ``MAX_BYTES``, at most
``MAX_ALIASES`` YAML aliases (an anchor bomb of a few hundred bytes otherwise expands to
gigabytes) and ``MAX_DEPTH`` levels of nesting; ``bot.round.gather`` parses it off the event
loop under a deadline. Past any limit the defaults apply, with a note.
"""

from __future__ import annotations

import yaml

from tracker.models import SEVERITIES

from .review.engine import Settings

PATH = ".github/roundwise.yml"
MAX_BYTES = 64 * 1024
MAX_ALIASES = 50
MAX_DEPTH = 20
KEYS = {"ignore_paths", "review_drafts", "max_comments", "min_severity", "static_checks",
        "require_tests", "fail_on", "review_event"}
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
    if "review_event" in data:
        value = str(data["review_event"]).lower()
        if value not in REVIEW_EVENTS:
            raise SettingsError(f"{PATH}: review_event must be one of {', '.join(REVIEW_EVENTS)}")
        settings.review_event = value
    return settings


class _BoundedLoader(yaml.SafeLoader):
    """PyYAML's safe loader with a budget of aliases and a nesting limit (checked as the
    document is composed, before anything is expanded)."""

    def __init__(self, stream):
        super().__init__(stream)
        self._aliases = 0
        self._depth = 0

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
