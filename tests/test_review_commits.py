"""The vocabulary that tells a commit answering the review from one that does not."""

from __future__ import annotations

import pytest

from tracker.review_commits import MAX_MESSAGE, addresses_review

ANSWERS = [
    "Apply suggestions from code review",
    "address review comments",
    "Made the changes requested",
    "Adding Requested changed",
    "Clean up code from reviews",
    "address frenzibyte review (refactor bindable flow, clean up CI stuff)",
    "applies FirasRG first review",
    "Review: Add missing blank line",
    "Feedback applied",
    "Fixes for #8373[feedback]",
    "apply code-review changes",
    "Worked on pr comments",
    "Address adirioban's comments",
    "Respond to review",
    "Pushed review changes",
    "Rearranged error handling for C_SignFinal, as suggested by Jakuje",
    "Update documentation as suggested",
    "Apply suggested renames and make comment triple slash",
    "refactor: 피드백 반영.",
    "根据评审意见修改",
    "レビュー指摘を反映",
    "правки по ревью",
    "Aplicando cambios de la revisión",
    "Corrections suite à la revue",
    "Retours de revue appliqués",
    "Remarques prises en compte",
]

NOT_ANSWERS = [
    "Remove outdated comment",
    "Add comments for code example",
    "Fix `@see` doc comment",
    "Clarified some comments and docstrings.",
    "Add review model",
    "Implement review API",
    "Handle review submission",
    "Fix review page layout",
    "Preview the changes",
    "Read body from request",
    "Resolve requests concurrently",
    "Use the requested size",
    "Addressed some more code maintainability issues",
    "Fix mac address formatting",
    "Add release notes",
    "Fix typo\n\nReviewed-by: Jane Doe <jane@example.com>",
    "Supprime un commentaire obsolète",
    "Ajout des commentaires de la fonction",
]


@pytest.mark.parametrize("message", ANSWERS)
def test_a_commit_saying_it_answers_the_review_counts(message):
    assert addresses_review(message)


@pytest.mark.parametrize("message", NOT_ANSWERS)
def test_code_comments_review_features_and_trailers_do_not_count(message):
    assert not addresses_review(message)


def test_only_the_head_of_a_huge_message_is_read():
    assert addresses_review("address review comments " + "x" * (10 * MAX_MESSAGE))
    assert not addresses_review("x" * MAX_MESSAGE + " address review comments")
