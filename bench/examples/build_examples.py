"""Build the small multi-round example tasks bundled with roundwise (``mcr-task/1`` JSON).

The examples are written for roundwise (no third-party code): a Python PR shaped like the
MCR-Bench paper's Figure 1 (a cache checked after the database call; missing tests; resolved
over three rounds), a JavaScript PR whose debug logging is removed and then comes back, and a
Java PR with a swallowed exception and a hard-coded password. Line numbers in events and defect
cards are found from the code itself, so editing a snippet keeps the labels consistent.

Run ``python -m bench.examples.build_examples`` to rewrite the JSON files next to this script.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from bench.tasks.diffs import git_diff

HERE = Path(__file__).parent


def line_of(text: str, needle: str, nth: int = 1) -> int:
    """1-based line number of the nth line containing ``needle``."""
    seen = 0
    for number, line in enumerate(text.splitlines(), start=1):
        if needle in line:
            seen += 1
            if seen == nth:
                return number
    raise ValueError(f"{needle!r} not found")


def sha(label: str) -> str:
    """A made-up but stable commit id."""
    return hashlib.sha1(label.encode()).hexdigest()


def build(task_id, repo, language, pr, base_files, heads, events, defects, source):
    rounds = []
    for i, files in enumerate(heads, start=1):
        changed = {p: t for p, t in files.items() if base_files.get(p) != t}
        rounds.append({
            "round": i,
            "head_sha": sha(f"{task_id}-{i}"),
            "commits": [{"sha": sha(f"{task_id}-{i}"), "message": f"round {i}", "author": pr["author"]}],
            "diff": git_diff({p: base_files.get(p) for p in changed}, changed),
            "files": changed,
            "events": events[i - 1],
        })
    return {
        "schema": "mcr-task/1", "task_id": task_id, "source": source, "repo": repo,
        "language": language, "pr": pr, "rounds": rounds, "defects": defects,
    }


# -- Python: Figure 1 ---------------------------------------------------------------------------

PY_BASE = '''"""User lookups."""

from app.cache import cache
from app.db import query_one


def get_user(user_id):
    return query_one("select * from users where id = ?", user_id)
'''

PY_R1 = PY_BASE + '''

def get_user_profile(user_id):
    """Return a user's profile, served from the cache when possible."""
    profile = query_one("select * from profiles where user_id = ?", user_id)
    print("profile lookup", user_id, profile)
    cached = cache.get(f"profile:{user_id}")
    if cached is not None:
        return cached
    if profile is None:
        raise KeyError(f"no profile for user {user_id}")
    profile = dict(profile)
    profile["display_name"] = profile.get("nickname") or profile.get("name") or "?"
    profile["avatar"] = profile.get("avatar") or "/static/default-avatar.png"
    cache.set(f"profile:{user_id}", profile)
    return profile
'''

PY_R2 = PY_BASE + '''

def get_user_profile(user_id):
    """Return a user's profile, served from the cache when possible."""
    cached = cache.get(f"profile:{user_id}")
    if cached is not None:
        return cached
    profile = query_one("select * from profiles where user_id = ?", user_id)
    if profile is None:
        raise KeyError(f"no profile for user {user_id}")
    profile = dict(profile)
    profile["display_name"] = profile.get("nickname") or profile.get("name") or "?"
    profile["avatar"] = profile.get("avatar") or "/static/default-avatar.png"
    cache.set(f"profile:{user_id}", profile)
    return profile
'''

PY_TEST = '''from app import users


def test_profile_cache_hit_skips_database(monkeypatch):
    monkeypatch.setattr(users.cache, "get", lambda key: {"name": "ada"})
    monkeypatch.setattr(users, "query_one", lambda *a: (_ for _ in ()).throw(AssertionError))
    assert users.get_user_profile(1) == {"name": "ada"}


def test_profile_cache_miss_queries_and_stores(monkeypatch):
    stored = {}
    monkeypatch.setattr(users.cache, "get", lambda key: None)
    monkeypatch.setattr(users.cache, "set", stored.__setitem__)
    monkeypatch.setattr(users, "query_one", lambda *a: {"name": "bob"})
    profile = users.get_user_profile(2)
    assert profile["display_name"] == "bob"
    assert stored == {"profile:2": profile}
'''


def python_figure1():
    cache_line = line_of(PY_R1, "cached = cache.get")
    db_line = line_of(PY_R1, "profile = query_one")
    def_line = line_of(PY_R1, "def get_user_profile")
    events1 = [
        {"kind": "review_comment", "id": 1, "author": "rina", "role": "reviewer",
         "path": "app/users.py", "line": cache_line, "start_line": db_line, "side": "RIGHT",
         "body": "The cache is checked only after the database query, so every call still "
                 "hits the database. Check the cache first and query only on a miss.",
         "in_reply_to": None, "created_at": "2026-11-02T10:00:00Z"},
        {"kind": "review_comment", "id": 2, "author": "rina", "role": "reviewer",
         "path": "app/users.py", "line": def_line, "start_line": None, "side": "RIGHT",
         "body": "Please add tests for get_user_profile: a cache hit and a cache miss.",
         "in_reply_to": None, "created_at": "2026-11-02T10:01:00Z"},
        {"kind": "review", "id": 3, "author": "rina", "role": "reviewer",
         "state": "CHANGES_REQUESTED", "body": "See the inline comments.",
         "created_at": "2026-11-02T10:02:00Z"},
    ]
    events2 = [
        {"kind": "review_comment", "id": 4, "author": "sam", "role": "author",
         "path": "app/users.py", "line": cache_line, "start_line": None, "side": "RIGHT",
         "body": "Fixed, the cache is read first now.", "in_reply_to": 1,
         "created_at": "2026-11-03T09:00:00Z"},
        {"kind": "review_comment", "id": 5, "author": "sam", "role": "author",
         "path": "app/users.py", "line": def_line, "start_line": None, "side": "RIGHT",
         "body": "Done.", "in_reply_to": 2, "created_at": "2026-11-03T09:01:00Z"},
    ]
    printed = line_of(PY_R1, "print(")
    defects = [
        {"id": "D1", "description": "The cache lookup runs after the database query, so the "
         "cache never saves a query; check the cache first and query only on a miss.",
         "path": "app/users.py", "line_start": db_line, "line_end": cache_line,
         "raised_in_round": 1, "type": "F.6", "severity": "Major",
         "states": ["New", "Resolved", "Resolved"], "comment_ids": [1],
         "evidence": "Round 2 moves the cache lookup before the query."},
        {"id": "D2", "description": "get_user_profile has no tests for the cache hit and miss "
         "paths.", "path": "app/users.py", "line_start": def_line, "line_end": def_line,
         "raised_in_round": 1, "type": "E.4", "severity": "Normal",
         "states": ["New", "Open", "Resolved"], "comment_ids": [2],
         "evidence": "The author says 'Done' after round 2 but adds no test; round 3 adds "
                     "tests/test_users.py."},
        {"id": "D3", "description": "A leftover debug print of the profile lookup writes user "
         "data to standard output.", "path": "app/users.py", "line_start": printed,
         "line_end": printed, "raised_in_round": 1, "type": "E.3.1", "severity": "Minor",
         "states": ["New", "Resolved", "Resolved"], "comment_ids": [],
         "evidence": "No reviewer wrote it; the print is gone in round 2."},
    ]
    return build(
        "example-python-profile-cache", "example/shop", "Python",
        {"number": 7, "title": "Cache user profiles", "body": "Adds get_user_profile with a "
         "cache in front of the profiles table.", "author": "sam", "base_ref": "main",
         "base_sha": sha("py-base"), "linked_issues": []},
        {"app/users.py": PY_BASE},
        [{"app/users.py": PY_R1}, {"app/users.py": PY_R2},
         {"app/users.py": PY_R2, "tests/test_users.py": PY_TEST}],
        [events1, events2, []], defects,
        "written for roundwise, shaped like Figure 1 of the MCR-Bench paper",
    )


# -- JavaScript: debug logging that comes back ------------------------------------------------

JS_BASE = '''export function parseLimit(value) {
  return Number.parseInt(value, 10);
}
'''

JS_R1 = JS_BASE + '''
export async function checkQuota(store, userId) {
  console.log("quota check for", userId);
  const used = await store.get(userId);
  if (used == null) {
    return true;
  }
  store.increment(userId);
  return used < 100;
}
'''

JS_R2 = JS_BASE + '''
export async function checkQuota(store, userId) {
  const used = await store.get(userId);
  if (used == null) {
    return true;
  }
  await store.increment(userId);
  return used < 100;
}
'''

JS_R3 = JS_BASE + '''
export async function checkQuota(store, userId) {
  console.log("quota check for", userId);
  const used = await store.get(userId);
  if (used === undefined || used === null) {
    await store.increment(userId);
    return true;
  }
  await store.increment(userId);
  return used < 100;
}
'''


def javascript_quota():
    log = line_of(JS_R1, "console.log")
    loose = line_of(JS_R1, "used == null")
    incr = line_of(JS_R1, "store.increment(userId);")
    events1 = [
        {"kind": "review_comment", "id": 11, "author": "lee", "role": "reviewer",
         "path": "src/quota.js", "line": log, "start_line": None, "side": "RIGHT",
         "body": "Leftover console.log: please remove the debug output.",
         "in_reply_to": None, "created_at": "2026-11-05T08:00:00Z"},
        {"kind": "review_comment", "id": 12, "author": "lee", "role": "reviewer",
         "path": "src/quota.js", "line": loose, "start_line": None, "side": "RIGHT",
         "body": "A first request returns true without counting it; the first call should "
                 "be recorded too.",
         "in_reply_to": None, "created_at": "2026-11-05T08:01:00Z"},
        {"kind": "review_comment", "id": 13, "author": "lee", "role": "reviewer",
         "path": "src/quota.js", "line": incr, "start_line": None, "side": "RIGHT",
         "body": "store.increment is async and is not awaited, so errors are lost and the "
                 "count may lag.",
         "in_reply_to": None, "created_at": "2026-11-05T08:02:00Z"},
    ]
    log2 = line_of(JS_R3, "console.log")
    defects = [
        {"id": "D1", "description": "Leftover console.log debug output in checkQuota.",
         "path": "src/quota.js", "line_start": log, "line_end": log, "raised_in_round": 1,
         "type": "E.3.1", "severity": "Minor", "states": ["New", "Resolved", "Reopened"],
         "comment_ids": [11], "evidence": f"Removed in round 2, back at line {log2} in round 3."},
        {"id": "D2", "description": "The first request for a user is allowed without being "
         "counted, because the null branch returns before increment.", "path": "src/quota.js",
         "line_start": loose, "line_end": loose + 2, "raised_in_round": 1, "type": "F.2",
         "severity": "Major", "states": ["New", "Open", "Resolved"], "comment_ids": [12],
         "evidence": "Round 3 increments in the null branch."},
        {"id": "D3", "description": "store.increment returns a promise that is never awaited.",
         "path": "src/quota.js", "line_start": incr, "line_end": incr, "raised_in_round": 1,
         "type": "F.2", "severity": "Normal", "states": ["New", "Resolved", "Resolved"],
         "comment_ids": [13], "evidence": "Round 2 awaits it."},
    ]
    return build(
        "example-javascript-quota", "example/gateway", "JavaScript",
        {"number": 31, "title": "Add per-user quota check", "body": "checkQuota for the API "
         "gateway.", "author": "kim", "base_ref": "main", "base_sha": sha("js-base"),
         "linked_issues": []},
        {"src/quota.js": JS_BASE},
        [{"src/quota.js": JS_R1}, {"src/quota.js": JS_R2}, {"src/quota.js": JS_R3}],
        [events1, [], []], defects, "written for roundwise",
    )


# -- Java: swallowed exception and a hard-coded password --------------------------------------

JAVA_R1 = '''package shop.orders;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;

public class OrderStore {
    private static final String PASSWORD = "hunter2-prod";

    public Connection open(String url) {
        try {
            return DriverManager.getConnection(url, "orders", PASSWORD);
        } catch (SQLException e) {
        }
        return null;
    }
}
'''

JAVA_R2 = JAVA_R1.replace('''        } catch (SQLException e) {
        }
        return null;''', '''        } catch (SQLException e) {
            throw new IllegalStateException("cannot open the order store", e);
        }''')


def java_orders():
    pw = line_of(JAVA_R1, "PASSWORD =")
    catch = line_of(JAVA_R1, "catch (SQLException e)")
    events1 = [
        {"kind": "review_comment", "id": 21, "author": "ana", "role": "reviewer",
         "path": "src/main/java/shop/orders/OrderStore.java", "line": catch + 1,
         "start_line": catch, "side": "RIGHT",
         "body": "This swallows the SQLException and returns null; callers will fail later "
                 "with a NullPointerException. Rethrow or handle it.",
         "in_reply_to": None, "created_at": "2026-11-07T12:00:00Z"},
        {"kind": "review_comment", "id": 22, "author": "ana", "role": "reviewer",
         "path": "src/main/java/shop/orders/OrderStore.java", "line": pw, "start_line": None,
         "side": "RIGHT",
         "body": "Hard-coded production password in source. Read it from configuration.",
         "in_reply_to": None, "created_at": "2026-11-07T12:01:00Z"},
    ]
    defects = [
        {"id": "D1", "description": "The SQLException is swallowed and null returned.",
         "path": "src/main/java/shop/orders/OrderStore.java", "line_start": catch,
         "line_end": catch + 1, "raised_in_round": 1, "type": "F.4", "severity": "Major",
         "states": ["New", "Resolved"], "comment_ids": [21], "evidence": "Round 2 rethrows."},
        {"id": "D2", "description": "A production password is hard-coded in the source.",
         "path": "src/main/java/shop/orders/OrderStore.java", "line_start": pw, "line_end": pw,
         "raised_in_round": 1, "type": "F.7", "severity": "Critical",
         "states": ["New", "Open"], "comment_ids": [22], "evidence": "Unchanged in round 2."},
    ]
    path = "src/main/java/shop/orders/OrderStore.java"
    return build(
        "example-java-order-store", "example/shop", "Java",
        {"number": 12, "title": "Order store connection", "body": "Opens the order database.",
         "author": "joe", "base_ref": "main", "base_sha": sha("java-base"), "linked_issues": []},
        {},
        [{path: JAVA_R1}, {path: JAVA_R2}],
        [events1, []], defects, "written for roundwise",
    )


def main() -> None:
    for task in (python_figure1(), javascript_quota(), java_orders()):
        out = HERE / f"{task['task_id']}.json"
        out.write_text(json.dumps(task, indent=1) + "\n", encoding="utf-8")
        print(out)


if __name__ == "__main__":
    main()
