"""Fixtures for the sandbox tests: the 18 Gorilla file-system tools (loaded once), a sample tree."""

from __future__ import annotations

import copy
import textwrap
from pathlib import Path
from typing import Any

import pytest
from sandbox_helpers import BASE_TREE, TOOLS_DIR


@pytest.fixture(scope="session")
def fs_tools() -> dict[str, Any]:
    """The tools with the everyday limits, their clocks made generous: these tests check what a call
    does, and a loaded machine (CI's two cores running other work) must not turn an echo into a
    tool:limit. The clocks themselves are tested with scripts made to breach them."""
    from harness.sandbox import Limits, discover_tools

    limits = Limits.default().merge(Limits(max_duration=60.0, wall_clock=120.0))
    return {t.name: t for t in discover_tools(TOOLS_DIR, limits=limits)}


@pytest.fixture
def state():
    from harness.sandbox import FileSystemState

    return FileSystemState("alex", copy.deepcopy(BASE_TREE))


@pytest.fixture
def write_script(tmp_path: Path):
    """Write a dedented .pym file and return its path."""

    def write(source: str, name: str = "script.pym") -> Path:
        path = tmp_path / name
        path.write_text(textwrap.dedent(source).lstrip("\n"), encoding="utf-8")
        return path

    return write
