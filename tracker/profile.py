"""The independent signals around one decision, read off the same round the rules read.

A rule decides a defect's state from one piece of evidence (the anchored lines were not
touched, the name the comment quotes is gone...). How far that decision can be trusted
depends on what *else* the round shows, evidence the rule did not use: a fix often lands on
the line next to the anchor, in another file, at the usages of the name the comment quotes,
or in the test files the comment asked for. Read off the round, those signals agree with the
rule's answer (sure) or speak against it (unsure); ``tracker.confidence`` weighs them.

Every signal is a yes/no a person can check in the diff, named so the summary can say which
ones made a decision sure. Signals that hold in any language are preferred over word lists:
line positions, token counts, paths, and what people did. No I/O.
"""

from __future__ import annotations

import re
from collections import Counter

from .anchors import Status
from .diffindex import changed_tokens, swapped_tokens, touched_paths, touches_tests
from .models import SignalKind
from .scope import file_tokens

#: every signal, in the order the model and the summary list them
SIGNALS = (
    "anchored",  # the comment sits on lines of code (not a remark on the whole PR)
    "file_changed",  # the round edited the file the comment is on
    "anchor_changed",  # the round rewrote the anchored lines themselves
    "near_changed",  # an edit next to the anchored lines, or in the function around them
    "names_code",  # the comment names code that stood in the file (or the PR) before
    "named_changed",  # something the comment names was added or removed this round
    "other_files",  # the round edited other files than the comment's
    "tests_changed",  # the round edited test files
    "said_fixed",  # the author replied that it is (or will be) done
    "reviewer_objects",  # a reviewer disputed a fix or raised it again
    "message_matches",  # a commit message of the round shares words with the comment
    "question",  # the comment asks a question rather than requesting a change
)

#: each signal as a reviewer would say it (``tracker.calibration.explain``)
SAID = {
    "anchored": "a comment on lines of code",
    "file_changed": "its file edited",
    "anchor_changed": "its lines rewritten",
    "near_changed": "an edit next to its lines",
    "names_code": "it names code of the PR",
    "named_changed": "what it names edited",
    "other_files": "other files edited",
    "tests_changed": "test files edited",
    "said_fixed": "the author said it is done",
    "reviewer_objects": "a reviewer objected",
    "message_matches": "a commit message echoes it",
    "question": "it asks a question",
}

_QUESTION = re.compile(r"[?？]")
_WORD = re.compile(r"[^\W\d_]{4,}", re.UNICODE)
MESSAGE_WORDS = 2  # content words a commit message must share with the comment
STEM = 6  # words are compared by their first letters ("renamed" ~ "rename")


def _stems(text: str) -> set[str]:
    return {w.lower()[:STEM] for w in _WORD.findall(text or "")}


def read_profile(case) -> dict[str, bool]:
    """The signals of one ``tracker.rules.Case`` (a live defect at one round)."""
    d = case.defect
    m = case.mapped
    touched = touched_paths(case.diff)
    anchored = m is not None
    named = case.subject.named
    if anchored:
        path = case.path or ""
        # whole files: counted once per text for every defect in them (``file_tokens``);
        # the new text's counts from the lines the diff swapped, where that is all it did
        before = file_tokens(case.old_text) if case.old_text else Counter()
        names_code = any(before.get(n) for n in named)
        swapped = swapped_tokens(case.diff, path, case.new_path, case.old_text,
                                 case.new_text) if named else None
        if swapped is not None:
            added, removed = swapped
            named_changed = any(added.get(n, 0) != removed.get(n, 0) for n in named)
        elif named:
            after = file_tokens(case.new_text) if case.new_text else Counter()
            named_changed = any(before.get(n, 0) != after.get(n, 0) for n in named)
        else:
            named_changed = False
        file_changed = bool(case.changed)
        anchor_changed = bool(m.status is not Status.UNTOUCHED and m.rewritten)
        near = bool(m.nearby_change) or (not anchor_changed and bool(case.scope_changed))
        others = bool(touched - {path, case.new_path or path})
    else:
        changed = changed_tokens(case.diff)
        names_code = bool(named) and any(  # a token of a text is a substring of it
            n in text and n in file_tokens(text) for text in case.files.values() if text
            for n in named)
        named_changed = any(changed.get(n) for n in named)
        file_changed = anchor_changed = near = False
        others = bool(touched)
    kinds = {s.kind for s in case.signals}
    comment = _stems(d.description)
    matches = any(len(comment & _stems(msg)) >= MESSAGE_WORDS for msg in case.messages)
    return {
        "anchored": anchored,
        "file_changed": file_changed,
        "anchor_changed": anchor_changed,
        "near_changed": near,
        "names_code": names_code,
        "named_changed": named_changed,
        "other_files": others,
        "tests_changed": touches_tests(case.diff),
        "said_fixed": bool(kinds & {SignalKind.AUTHOR_CLAIMS_FIXED, SignalKind.AUTHOR_PROMISES}),
        "reviewer_objects": bool(kinds & {SignalKind.REVIEWER_DISPUTES,
                                          SignalKind.REVIEWER_REPEATS}),
        "message_matches": matches,
        "question": bool(_QUESTION.search(d.description or "")),
    }
