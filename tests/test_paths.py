"""What kind of file a path is: the change log and documentation conventions the kind rules
read (test paths are covered in test_offline_reviewer.py)."""

import pytest

from tracker.paths import is_changelog_path, is_docs_path


@pytest.mark.parametrize("path, expected", [
    ("CHANGELOG.md", True), ("packages/core/CHANGELOG.md", True), ("HISTORY.rst", True),
    ("NEWS", True), ("changes/617.bugfix.rst", True), ("changelog/12960.improvement.rst", True),
    (".changeset/brave-dogs.md", True), ("newsfragments/12.feature", True),
    ("releasenotes/notes/fix-x-123.yaml", True), ("changelog.d/20240101_x.md", True),
    ("docs/changelog/1.2.md", True), ("changelogs/fragments/x.yml", True),
    ("src/news/feed.js", False), ("src/news.js", False), ("app/history/view.ts", False),
    ("lib/changes_test.py", False), ("src/ChangeLogger.java", False),
])
def test_change_log_paths(path, expected):
    assert is_changelog_path(path) is expected


@pytest.mark.parametrize("path, expected", [
    ("README.md", True), ("README", True), ("docs/usage.txt", True), ("site/guide.mdx", True),
    ("Documentation/filesystems/ext4.rst", True), ("man/roundwise.1", True),
    ("requirements.txt", False), ("CMakeLists.txt", False), ("LICENSE.txt", False),
    ("src/app.py", False), ("src/docsearch.js", False),
])
def test_docs_paths(path, expected):
    assert is_docs_path(path) is expected
