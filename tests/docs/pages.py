"""Reading the documentation: its pages, their shell blocks, and the harness commands they hold."""

from __future__ import annotations

import importlib.util
import re
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)


def reference_module() -> ModuleType:
    """docs/_gen/reference.py, the generator of the reference pages (not part of the package)."""
    spec = importlib.util.spec_from_file_location("docs_reference", DOCS / "_gen" / "reference.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def markdown_files() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


def shell_blocks(text: str) -> list[str]:
    """The ```bash blocks of a page, in order."""
    return [body for lang, body in FENCE.findall(text) if lang in ("bash", "sh", "shell")]


def commands(block: str) -> Iterator[list[str]]:
    """Each `harness ...` command line of a shell block, split as a shell would (continuations joined,
    comments dropped, several commands on a line split at && ; |)."""
    joined = re.sub(r"\\\n\s*", " ", block)
    for line in joined.splitlines():
        try:
            words = shlex.split(line, comments=True)
        except ValueError:  # a heredoc body or a quoted multi-line string: not a command line
            continue
        current: list[str] = []
        for word in [*words, ";"]:
            if word in ("&&", "||", ";", "|", "&", "then", "else", "if", "fi"):
                if current and current[0] == "harness":
                    yield current
                current = []
            else:
                current.append(word)
