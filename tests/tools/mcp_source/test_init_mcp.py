"""``harness init --mcp``: an MCP server of the ``mcp`` SDK, its bundle and a suite, written into a folder
outside the repository, replay at state match 1.0 on the oracle; ``harness fuzz --call-server`` fuzzes
the server's schemas and sends the drawn calls to the server. The commands are the guide's, as printed
(docs/guides/mcp.md, "Your own server")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs.pages import DOCS, ROOT, shell_blocks

pytest.importorskip("mcp")
GUIDE = DOCS / "guides" / "mcp.md"


def harness(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "harness.cli.main", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600, env={**os.environ})
    assert "Traceback" not in done.stderr, done.stderr
    return done


def test_init_mcp_writes_a_server_run_by_this_python(tmp_path: Path) -> None:
    assert harness(tmp_path, "init", "notes", "--mcp").returncode == 0
    folder = tmp_path / "notes"
    files = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}
    assert files == {"README.md", "bundle.yaml", "notes_server.py", "suite/suite.yaml", "suite/cases.jsonl"}
    server = folder / "notes_server.py"
    assert server.read_text().splitlines()[0] == f"#!{sys.executable}" and os.access(server, os.X_OK)
    assert harness(tmp_path, "init", "other", "--mcp", "--python").returncode == 2


def test_call_server_needs_an_mcp_bundle(tmp_path: Path) -> None:
    done = harness(tmp_path, "fuzz", "--tools", str(ROOT / "bundles" / "shellper"), "--call-server",
                   "--out", str(tmp_path / "f"))
    assert done.returncode == 2 and "--call-server" in done.stderr and "source: pym" in done.stderr


@pytest.mark.slow
def test_the_guides_own_server_commands_run_as_printed(tmp_path: Path) -> None:
    block = next(b for b in shell_blocks(GUIDE.read_text(encoding="utf-8")) if "init notes --mcp" in b)
    assert ROOT not in tmp_path.parents
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(["bash", "-c", "set -euo pipefail\n" + block], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    rows = json.loads((tmp_path / "notes/runs/oracle/summary.json").read_text())
    states = {(r["family"], r["strategy"]): r["value"] for r in rows if r["metric"] == "state_match"}
    assert states == {("qwen", "none"): 1.0, ("qwen", "json_schema"): 1.0}
    report = json.loads((tmp_path / "notes/runs/fuzz/report.json").read_text())
    assert sorted(c["tool"] for c in report["cells"]) == ["add_note", "list_titles", "read_note"]  # one lane
    assert {c["outcome"] for c in report["cells"]} == {"passing"}
    answers = [json.loads(line) for line in (tmp_path / "notes/runs/fuzz/server_calls.jsonl").read_text().splitlines()]
    assert {a["tool"] for a in answers} == {"add_note", "read_note", "list_titles"}
    assert all(a["error_kind"] is None for a in answers if a["tool"] != "read_note")  # writing and listing: taken
    missing = [a for a in answers if a["tool"] == "read_note" and a["error_kind"] == "tool:error"]
    assert missing and "no note titled" in missing[0]["output"]  # a valid title of no note: the server says no
    assert "drawn valid calls rejected by the server" in done.stdout
