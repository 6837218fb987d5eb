"""``harness init DIR``: a bundle, one ``.pym`` tool that touches no files, and a suite of a few cases,
ready to run on the oracle at once (``harness run DIR/suite --engine oracle``).

The files are the package's ``templates/init/`` with the project's name filled in; nothing else is
generated, so what a user reads there is what the harness ships and tests.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Annotated

import typer

from harness.cli.errors import fail

TEMPLATE = Path(__file__).resolve().parents[2] / "templates" / "init"
PYTHON_TEMPLATE = TEMPLATE.with_name("init-python")
"""``harness init --python``: the tools are a Python class's methods, run in the tool worker."""
MCP_TEMPLATE = TEMPLATE.with_name("init-mcp")
"""``harness init --mcp``: the tools are an MCP server's (the ``mcp`` SDK), started per sample over stdio."""
NAME_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")
"""A suite's and a bundle's name (suite.yaml's ``name`` pattern)."""


def project_name(folder: Path) -> str:
    """The folder's name as a suite name: lowercase, other characters than ``[a-z0-9_.-]`` as ``-``."""
    name = re.sub(r"[^a-z0-9_.-]+", "-", folder.resolve().name.lower()).strip("-._")
    return name or "mytools"


def scaffold(folder: Path, name: str, template: Path = TEMPLATE) -> list[Path]:
    """Write the template into ``folder`` (which must be missing or empty); returns the files written."""
    written = []
    for source in sorted(template.rglob("*")):
        if not source.is_file() or "__pycache__" in source.parts:
            continue
        target = folder / source.relative_to(template)
        if target.suffix == ".template":  # a Python file of the template, not a module of the harness
            target = target.with_suffix("")
        target.parent.mkdir(parents=True, exist_ok=True)
        text = source.read_text(encoding="utf-8").replace("__NAME__", name).replace("__DIR__", str(folder))
        if text.startswith("#!__PYTHON__"):  # a server script: run by this Python, which has the mcp package
            text = text.replace("__PYTHON__", _interpreter(), 1)
        target.write_text(text, encoding="utf-8")
        if text.startswith("#!"):
            target.chmod(0o755)
        written.append(target)
    return written


def _interpreter() -> str:
    """This Python for a script's first line; ``/usr/bin/env python3`` where the kernel could not run
    its path there (a space in it, or longer than a ``#!`` line may be)."""
    return sys.executable if " " not in sys.executable and len(sys.executable) < 120 else "/usr/bin/env python3"


def init(
    folder: Annotated[Path, typer.Argument(metavar="DIR", help="The folder to create (missing or empty).")],
    name: Annotated[
        str | None,
        typer.Option("--name", metavar="NAME", help="The bundle's and the suite's name (default: DIR's name, in lowercase)."),
    ] = None,
    python: Annotated[
        bool,
        typer.Option("--python", help="Tools as a Python class's methods (run in a worker process with your "
                     "privileges, not sandboxed) and a suite of episodes with expected end states."),
    ] = False,
    mcp: Annotated[
        bool,
        typer.Option("--mcp", help="Tools served by an MCP server written with the mcp SDK (started per sample "
                     "over stdio in the sample's own folder, with your privileges) and a suite of episodes checking "
                     "that folder's end state."),
    ] = False,
) -> None:
    """Create a bundle with one .pym tool that touches no files and a suite of a few cases, runnable at once
    (--python: a Python class with three methods, one changing its state, and episodes checking it;
    --mcp: the same three tools as an MCP server)."""
    if python and mcp:
        fail("--python and --mcp: choose one (the tools are a Python class's methods, or an MCP server's)")
    if mcp:
        from importlib.util import find_spec

        if find_spec("mcp") is None:
            fail("--mcp: the mcp package is not installed", hint="pip install -e '.[mcp]' (in the harness's repository)")
    chosen = name if name is not None else project_name(folder)
    if not NAME_PATTERN.match(chosen):
        fail(f"--name {chosen!r}: a name is lowercase letters, digits, '_', '.' or '-', starting with a letter or digit")
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        fail(f"{folder}: exists and is not an empty folder; harness init writes into a new one")
    try:
        written = scaffold(folder, chosen, PYTHON_TEMPLATE if python else MCP_TEMPLATE if mcp else TEMPLATE)
    except OSError as exc:
        fail(f"{folder}: cannot write: {exc.strerror or exc}")
    for path in written:
        typer.echo(f"wrote {path}")
    typer.echo(f"next: harness run {folder / 'suite'} --engine oracle --report")


__all__ = ["MCP_TEMPLATE", "PYTHON_TEMPLATE", "TEMPLATE", "init", "project_name", "scaffold"]
