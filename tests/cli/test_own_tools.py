"""A new user's first steps, from a folder outside the repository: ``harness init``, a run of it on the
oracle, its report, a second run and a compare; the shipped suites by name; a ``pip install .`` that is
not editable still finds them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.packaged import packaged_suites

ROOT = Path(__file__).resolve().parents[2]


def harness(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "harness.cli.main", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=900, env={**os.environ, **(env or {})})
    assert "Traceback" not in done.stderr, done.stderr
    return done


@pytest.mark.slow
def test_init_run_report_compare_from_outside_the_repository(tmp_path: Path) -> None:
    done = harness(tmp_path, "init", "mytools")
    assert done.returncode == 0, done.stderr
    assert {p.relative_to(tmp_path / "mytools").as_posix() for p in (tmp_path / "mytools").rglob("*") if p.is_file()} == {
        "README.md", "bundle.yaml", "tools/convert_units.pym", "suite/suite.yaml", "suite/cases.jsonl"}
    assert "initial_fs" not in (tmp_path / "mytools" / "suite" / "cases.jsonl").read_text()  # no files needed
    assert harness(tmp_path, "validate", "mytools/suite").returncode == 0
    tool = harness(tmp_path, "tool", "run", "mytools/tools/convert_units.pym", "--args",
                   '{"value": 5, "from_unit": "km", "to_unit": "mi"}')
    assert json.loads(tool.stdout) == {"output": {"value": 3.106856, "unit": "mi"}, "is_error": False,
                                       "error_kind": None, "mutations": []}
    for name in ("a", "b"):
        done = harness(tmp_path, "run", "mytools/suite", "--engine", "oracle", "--out", f"runs/{name}", "--report")
        assert done.returncode == 0, done.stderr
    summary = json.loads((tmp_path / "runs" / "a" / "summary.json").read_text())
    accuracy = [r["value"] for r in summary if r["metric"] in ("validity", "exact_match", "state_match")]
    assert len(accuracy) == 2 * 4 * 3 and set(accuracy) == {1.0}  # the gold answers replay under every grammar
    assert (tmp_path / "runs" / "a" / "report.html").is_file()
    done = harness(tmp_path, "compare", "runs/a", "runs/b", "--timings", "info")
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize(("args", "problem"), [
    (["init", "mytools/suite"], "exists and is not an empty folder"),
    (["init", "x", "--name", "Bad Name"], "--name 'Bad Name'"),
])
def test_init_refuses_an_existing_folder_or_a_bad_name(tmp_path: Path, args: list[str], problem: str) -> None:
    assert harness(tmp_path, "init", "mytools").returncode == 0
    done = harness(tmp_path, *args)
    assert done.returncode == 2 and problem in done.stderr


@pytest.mark.slow
def test_shipped_suites_run_and_list_by_name_from_any_folder(tmp_path: Path) -> None:
    listed = harness(tmp_path, "suites", "list")
    assert listed.returncode == 0
    names = [s.name for s in packaged_suites()]
    on_disk = sorted(p.parent.relative_to(ROOT / "suites").as_posix() for p in (ROOT / "suites").rglob("suite.yaml")
                     if not p.parent.name.startswith("_"))
    assert names == on_disk and all(f"\n{n} " in "\n" + listed.stdout for n in names)
    done = harness(tmp_path, "run", "smoke", "--engine", "oracle", "--family", "qwen", "--strategy", "ebnf",
                   "--limit", "1", "--out", "r")
    assert done.returncode == 0, done.stderr
    done = harness(tmp_path, "run", "smoek", "--engine", "oracle")
    assert done.returncode == 2 and "nor the name of a suite that ships with the harness" in done.stderr


@pytest.mark.slow
def test_a_wheel_installed_elsewhere_holds_the_shipped_suites_and_bundles(tmp_path: Path) -> None:
    """``pip install .`` (not editable): the wheel carries suites/ and bundles/ as package data."""
    wheel_dir = tmp_path / "wheel"
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "--no-build-isolation",
                            "-w", str(wheel_dir), "-q"], capture_output=True, text=True, timeout=900,
                           cwd=tmp_path)
    assert built.returncode == 0, built.stderr
    (wheel,) = wheel_dir.glob("harness-*.whl")
    target = tmp_path / "site"
    installed = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--target", str(target), str(wheel),
                                "-q"], capture_output=True, text=True, timeout=900)
    assert installed.returncode == 0, installed.stderr
    env = {"PYTHONPATH": str(target)}
    probe = subprocess.run([sys.executable, "-c", "import harness, harness.packaged as p; print(harness.__file__); "
                            "print([s.name for s in p.packaged_suites()])"], capture_output=True, text=True,
                           env={**os.environ, **env}, cwd=tmp_path)
    assert str(target) in probe.stdout and "'smoke'" in probe.stdout, probe.stdout + probe.stderr
    assert not list(target.rglob("_make"))  # the suite generator's scripts stay out of the wheel
    done = harness(tmp_path, "run", "smoke", "--engine", "oracle", "--family", "qwen", "--strategy", "ebnf",
                   "--limit", "2", "--out", "r", env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "r" / "run.json").read_text())["suite"]["path"] == "site/harness/packaged/suites/smoke"
