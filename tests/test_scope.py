"""Scopes and definitions in every language the tracker parses, including those the dev tasks
do not have (Go, Rust, PHP, Ruby, Kotlin, C++, Swift, Scala): a rule that looks for a fix in
the comment's function, or for the function a remark names, must find it in any of them."""

from __future__ import annotations

import pytest

from tracker.scope import definition, enclosing

CART = {
    "cart.go": (("package m\n\ntype Cart struct {\n\titems []int\n}\n\n"
                "func (c *Cart) Total() int {\n\treturn len(c.items)\n}\n"),
                "Total", (7, 9), "Cart", (3, 5)),
    "cart.rs": (("struct Cart {\n    items: Vec<i32>,\n}\n\nimpl Cart {\n"
                "    fn total(&self) -> usize {\n        self.items.len()\n    }\n}\n"),
                "total", (6, 8), "Cart", (1, 3)),
    "cart.php": (("<?php\nclass Cart {\n    public function total() {\n"
                 "        return count($this->items);\n    }\n}\n"),
                 "total", (3, 5), "Cart", (2, 6)),
    "cart.rb": ("class Cart\n  def total\n    @items.size\n  end\nend\n",
                "total", (2, 4), "Cart", (1, 5)),
    "cart.kt": ("class Cart {\n    fun total(): Int {\n        return items.size\n    }\n}\n",
                "total", (2, 4), "Cart", (1, 5)),
    "cart.cpp": (("class Cart {\npublic:\n  int total() const;\n};\n\n"
                 "int Cart::total() const {\n  return n;\n}\n"),
                 "total", (6, 8), "Cart", (1, 4)),
    "cart.swift": ("class Cart {\n    func total() -> Int {\n        return items.count\n    }\n}\n",
                   "total", (2, 4), "Cart", (1, 5)),
    "cart.scala": ("class Cart {\n  def total(): Int = {\n    items.size\n  }\n}\n",
                   "total", (2, 4), "Cart", (1, 5)),
    "cart.ts": (("export class Cart {\n  items: number[] = [];\n}\n\n"
                "export const total = (cart: Cart) => {\n  return cart.items.length;\n};\n"),
                "total", (5, 7), "Cart", (1, 3)),
    "cart.js": (("const api = {};\napi.total = (cart) => {\n  return cart.items.length;\n};\n"
                "class Cart {\n  count = () => {\n    return 0;\n  };\n}\n"),
                "total", (2, 4), "count", (6, 8)),
}


MORE = {  # path: (text, name, its lines); the line after its first is inside it
    "cart.lua": ("local x = 1\n\nlocal function total(c)\n  local n = 0\n  return n\nend\n",
                 "total", (3, 6)),
    "cart.sh": ("set -e\n\ntotal() {\n  echo 1\n  echo 2\n}\n", "total", (3, 6)),
    "cart.pl": ("use strict;\n\nsub total {\n  my $x = 1;\n  return $x;\n}\n", "total", (3, 6)),
    "cart.sol": (("pragma solidity ^0.8.0;\ncontract Cart {\n  function total() public returns "
                 "(uint) {\n    return 1;\n  }\n}\n"), "Cart", (2, 6)),
    "cart.dart": (("import 'x.dart';\nclass Cart {\n  int total() {\n    return items.length;\n"
                  "  }\n}\n"), "Cart", (2, 6)),
}


@pytest.mark.parametrize("path", sorted(MORE))
def test_more_languages_have_scopes_and_definitions(path):
    text, name, lines = MORE[path]
    assert definition(path, text, name) == lines
    assert enclosing(path, text, lines[0] + 1) is not None


@pytest.mark.parametrize("path", sorted(CART))
def test_definitions_are_found_by_name_in_every_language(path):
    text, function, function_lines, other, other_lines = CART[path]
    assert definition(path, text, function) == function_lines
    assert definition(path, text, other) == other_lines
    assert definition(path, text, "missing_name") is None


@pytest.mark.parametrize("path", sorted(CART))
def test_the_scope_of_a_line_inside_a_function_is_that_function(path):
    text, _, (start, end), _, _ = CART[path]
    assert enclosing(path, text, start + 1) == (start, end)


def test_unknown_languages_and_unparsable_input_have_no_scope():
    assert definition("notes.txt", "def total():\n  pass\n", "total") is None
    assert enclosing("notes.txt", "def total():\n  pass\n", 2) is None
    assert definition("a.py", None, "total") is None
    assert definition("a.py", "def total(:\n", "") is None


def test_a_round_parses_only_the_files_whose_scopes_it_needs(monkeypatch):
    """A Python file the push did not touch is never parsed, nor the new side of one whose
    changed lines do not use what a comment names: only the old side of the changed file,
    for the scope (the method around the comment) the decision reads."""
    from bench.tasks.diffs import git_diff
    from tracker import scope
    from tracker.decide import RoundInput, decide_round
    from tracker.lifecycle import State
    from tracker.models import Defect

    def fn(name, body):
        return f"class {name.title()}:\n    def {name}(self, x):\n" + "".join(
            f"        {line}\n" for line in body) + "        return x\n"

    old = {"kept.py": fn("kept", [f"y_{i} = total(x, {i})" for i in range(8)]),
           "edited.py": fn("edited", [f"z_{i} = scale(x, {i})" for i in range(8)])}
    new = {**old, "edited.py": old["edited.py"].replace("z_6 = scale(x, 6)", "z_6 = 0")}

    def defect(key, path, line, description):
        code = old[path].split("\n")[line - 1]
        return Defect(key=key, description=description, origin="bot", state=State.OPEN,
                      raised_round=1, state_round=1, path=path, line_start=line,
                      line_end=line, code=code.strip())

    defects = [defect("D1", "kept.py", 4, "`total` is computed twice here"),
               defect("D2", "edited.py", 4, "`scale` may overflow here"),
               defect("D3", "kept.py", 5, "this is not thread safe")]
    parsed: list[str] = []
    real = scope._parser

    class Counting:
        def __init__(self, parser):
            self.parser = parser

        def parse(self, data, *args):
            parsed.append(data.decode())
            return self.parser.parse(data, *args)

    monkeypatch.setattr(scope, "_parser", lambda name: Counting(real(name)))
    scope._tree.cache_clear()
    diff = git_diff(old, new)
    decisions = decide_round(defects, RoundInput.from_diff(2, diff, new, []))
    assert [(d.key, d.state, d.rule) for d in decisions] == [
        ("D1", State.OPEN, "anchor-untouched"), ("D2", State.OPEN, "anchor-untouched"),
        ("D3", State.OPEN, "anchor-untouched")]
    assert parsed == [old["edited.py"]]  # its old side, for the scope of D2; nothing else


@pytest.mark.parametrize("text", [
    "v_1 = compute(2.5e3, $w) + 0x1F.bits; café_9 = x１２ + ٣.٤y # 1.ü",
    "plain ascii_only = 12.5.6 + a1.b2 $c$d",
    "naïve = 1_000ñ + 2µs",
])
def test_tokens_are_the_same_whichever_pattern_reads_the_text(text):
    """ASCII texts are read with an ASCII pattern (faster): the same tokens as the Unicode
    one, and every text with a non-ASCII character still gets the Unicode reading (a
    Unicode digit starts a number, a letter with an accent continues one)."""
    import re

    from tracker import scope

    unicode_reading = re.findall(r"[A-Za-z_$][A-Za-z0-9_$]*|\d[\w.]*", text)
    assert list(scope.tokens(text).elements()) == sorted(
        unicode_reading, key=unicode_reading.index)
    assert scope.token_set(text) == set(unicode_reading)
    for line in text.split():
        assert scope.token_set(line) == set(re.findall(r"[A-Za-z_$][A-Za-z0-9_$]*|\d[\w.]*",
                                                       line))
