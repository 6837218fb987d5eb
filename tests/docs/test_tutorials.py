"""Every tutorial runs as written: its shell blocks, in order, in one shell, from an empty folder outside
the repository, with the installed `harness` command. A tutorial whose commands drift from the code
fails here."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs.pages import DOCS, ROOT, shell_blocks

TUTORIALS = sorted((DOCS / "tutorials").glob("*.md"))


def tutorial_script(page: Path) -> str:
    blocks = shell_blocks(page.read_text(encoding="utf-8"))
    assert blocks, f"{page.name} has no shell block"
    return "set -euo pipefail\n" + "\n".join(blocks)


def test_every_tutorial_is_in_the_site_nav() -> None:
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert TUTORIALS and all(f"tutorials/{page.name}" in nav for page in TUTORIALS)


@pytest.mark.slow
@pytest.mark.parametrize("page", TUTORIALS, ids=lambda p: p.stem)
def test_the_tutorial_runs_as_written(page: Path, tmp_path: Path) -> None:
    folder = tmp_path / "tutorial"
    folder.mkdir()
    assert ROOT not in folder.parents
    bin_dir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(["bash", "-c", tutorial_script(page)], cwd=folder, env=env, capture_output=True,
                          text=True, timeout=1800)
    assert done.returncode == 0, f"{page.name}: exit {done.returncode}\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
