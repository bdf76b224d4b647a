"""Languages by file extension, and the file classes rules care about (auxiliary, CLI).
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

PYTHON, JAVA, CSHARP = "python", "java", "csharp"
JAVASCRIPT, TYPESCRIPT = "javascript", "typescript"
CLIKE, HASH, SQL, MARKUP, TEXT = "c-like", "hash", "sql", "markup", "text"
SOURCE_LANGUAGES = frozenset({PYTHON, JAVA, JAVASCRIPT, TYPESCRIPT, CSHARP})
JS_TS = frozenset({JAVASCRIPT, TYPESCRIPT})
CODE_LANGUAGES = SOURCE_LANGUAGES | {CLIKE, HASH, SQL}
ALL_LANGUAGES = CODE_LANGUAGES | {MARKUP, TEXT}

_EXTENSIONS = {
    PYTHON: ".py .pyw",
    JAVA: ".java",
    JAVASCRIPT: ".js .jsx .mjs .cjs",
    TYPESCRIPT: ".ts .tsx .mts .cts",
    CSHARP: ".cs",
    CLIKE: ".c .h .cc .cpp .cxx .hpp .hh .go .rs .kt .kts .swift .scala .php .dart .m .mm "
    ".groovy .gradle .css .scss .less .proto",
    HASH: ".sh .bash .zsh .rb .yml .yaml .toml .pl .pm .r .cfg .ini .conf .ps1 .tf .mk .env",
    SQL: ".sql",
    MARKUP: ".md .markdown .rst .html .htm .xml .xaml .csproj .props .targets .svg .vue",
}
LANGUAGE_BY_EXTENSION = {ext: lang for lang, exts in _EXTENSIONS.items() for ext in exts.split()}
_HASH_NAMES = {"dockerfile", "makefile", "gemfile", "rakefile", "procfile", ".gitignore"}


def language_of(path: str) -> str:
    """The language a path is reviewed as, from its extension (``text`` when unknown)."""
    name = PurePosixPath(path).name
    lower = name.lower()
    if lower in _HASH_NAMES or lower.startswith(("dockerfile.", ".env")):
        return HASH
    return LANGUAGE_BY_EXTENSION.get(PurePosixPath(lower).suffix, TEXT)


_AUX_DIR = re.compile(
    r"(^|/)(scripts?|bin|tools?|examples?|samples?|demos?|docs?|benchmarks?|bench|"
    r"[\w.-]*(Samples?|Benchmarks?|Tools?|Examples?|Demos?|Desktop))/"
)
_CLI_NAME = re.compile(r"(^|[._-])cli([._-]|$)|^(__main__|setup|manage|noxfile|fabfile|tasks)\.py$"
                       r"|^Program\.cs$", re.IGNORECASE)


def is_auxiliary_path(path: str) -> bool:
    """Scripts, examples, benchmarks, docs and command-line entry points: printing is their job."""
    return bool(_AUX_DIR.search(path) or _CLI_NAME.search(PurePosixPath(path).name))
