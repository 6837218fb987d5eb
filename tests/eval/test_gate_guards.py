"""What the gate must never do (issue 30): lose a file through ``--update-baseline``, pass on nothing,
take a broken candidate, or stop (exit 3, a hang) on what it writes for CI. Run directories are
written through the records (tests/runs.py)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from runs import score_rows, write_run_dir, write_scored_run
from typer.testing import CliRunner

from harness.cli.main import app
from harness.eval.store import SampleRecord, StepRecord, read_run, read_summary, sample_line

LOCAL = {"engine": "local", "model": "gemma-3-270m-base-q4km (functiongemma format)"}
CASES = {f"c{i}": [1.0] for i in range(12)}
runner = CliRunner()


def cli(*args: str | Path, env: dict[str, str] | None = None) -> tuple[int, str, dict[str, Any]]:
    """Exit code, output, and the JSON verdict (the last line of stdout)."""
    result = runner.invoke(app, ["compare", *map(str, args)], env=env)
    last = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else "{}"
    return result.exit_code, result.output, json.loads(last)


def scored(path: Path, cases: dict[str, list[float]] = CASES) -> Path:
    return write_scored_run(path, score_rows(cases), **LOCAL)


def files_of(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (links not followed) and its bytes: what must not be lost."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def sample(case: str, output: str) -> SampleRecord:
    step = StepRecord(output=output, tool_calls=(), parse_errors=(), tool_results=(), latency_ms=1.0, ttft_ms=None,
                      usage=None, stats=None)
    return SampleRecord(sample_id=f"{case}/function_gemma/ebnf/1", case_id=case, family="function_gemma",
                        strategy="ebnf", epoch=1, kind="next_call", status="ok", error_kind=None, error=None,
                        steps=(step,), duration_ms=1.0, harness_ms=0.1)


# -- --update-baseline loses nothing --------------------------------------------------------------------


def _run_folder(base: Path) -> None:
    """A full run folder's other files, and a user's own notes."""
    (base / "samples.jsonl").write_text(sample_line(sample("c0", "x")))
    (base / "inputs").mkdir()
    (base / "inputs" / "suite.yaml").write_text("name: smoke\n")
    (base / "prompts.jsonl").write_text("")
    (base / "run.log").write_text("log\n")
    (base / "NOTES.md").write_text("my notes\n")


REFUSED = [  # (what the folders look like, the baseline and candidate given, the problem named)
    ("a run folder as the baseline", lambda t: (_run_folder(scored(t / "base")), t / "base", scored(t / "cand"))[1:],
     "not a kept baseline: it holds NOTES.md, inputs/, prompts.jsonl, run.log, samples.jsonl"),
    ("the candidate itself", lambda t: (scored(t / "base"), t / "base"), "the same folder"),
    ("the candidate inside the baseline", lambda t: (scored(t / "base"), scored(t / "base" / "cand")),
     "the candidate is inside the baseline"),
    ("the baseline inside the candidate", lambda t: (scored(t / "cand" / "base"), scored(t / "cand")),
     "the baseline is inside the candidate"),
]


@pytest.mark.parametrize(("what", "make", "named"), REFUSED, ids=[r[0] for r in REFUSED])
def test_update_baseline_refuses_what_is_not_a_baseline_and_loses_nothing(
        tmp_path: Path, what: str, make: Callable[[Path], tuple[Path, Path]], named: str) -> None:
    baseline, candidate = make(tmp_path)
    before = files_of(tmp_path)
    code, out, verdict = cli(baseline, candidate, "--update-baseline")
    assert code == 2 and verdict["verdict"] == "error", out
    assert named in " ".join(out.split())
    assert files_of(tmp_path) == before  # not one file lost, changed or added
    assert not [p for p in tmp_path.rglob(".*")]  # no temporary folder left


def test_update_baseline_through_a_link_updates_its_target(tmp_path: Path) -> None:
    target, candidate = scored(tmp_path / "kept" / "smoke"), scored(tmp_path / "cand")
    link = tmp_path / "baseline"
    link.symlink_to(target)
    code, out, verdict = cli(link, candidate, "--update-baseline")
    assert code == 0 and verdict["baseline_updated"], out
    assert link.is_symlink() and link.resolve() == target.resolve()  # the link stays, pointing at its target
    assert read_run(target).run_id == "cand"
    assert not [p for p in tmp_path.rglob(".*")]  # no .NAME.new-* left beside the link or the target


def test_update_baseline_with_an_unwritable_parent_is_a_clear_error(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A read-only file system (a fake of the one call that meets it: the tests run as root)."""
    from harness.eval.compare import baseline as baseline_mod

    base, cand = scored(tmp_path / "base"), scored(tmp_path / "cand")
    before = files_of(base)

    def read_only(*_args: object, **_kw: object) -> str:
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(baseline_mod.tempfile, "mkdtemp", read_only)
    code, out, _verdict = cli(base, cand, "--update-baseline")
    assert code == 2 and "cannot write beside it" in out and "Read-only file system" in out
    assert files_of(base) == before


def test_a_corrupt_errors_json_never_reaches_the_baseline(tmp_path: Path) -> None:
    base, cand = scored(tmp_path / "base"), scored(tmp_path / "cand")
    (cand / "errors.json").write_text("{garbage")
    before = files_of(base)
    code, out, _ = cli(base, cand, "--update-baseline")
    assert code == 2 and f"{cand / 'errors.json'}" in out
    assert files_of(base) == before


# -- a gate that has nothing to compare fails -----------------------------------------------------------


def _empty_scores(cand: Path) -> None:
    from harness.eval.store import write_scores

    write_scores(cand, [])


def _foreign(cand: Path) -> None:
    write_scored_run(cand, score_rows({f"other{i}": [1.0] for i in range(12)}), **LOCAL)


def _nothing_at_all(cand: Path) -> None:
    (cand / "scores.parquet").unlink()
    write_run_dir(cand, read_run(cand), [])


NOTHING = [  # (what the candidate is, exit code, what the output says)
    (_empty_scores, 2, "holds no scores: nothing to compare"),
    (_foreign, 2, "none of its cases is scored in the baseline"),
    (_nothing_at_all, 1, "in the baseline, missing in the candidate"),
]


@pytest.mark.parametrize(("damage", "code", "named"), NOTHING)
def test_a_candidate_with_nothing_to_compare_fails_the_gate(tmp_path: Path, damage: Callable[[Path], None],
                                                            code: int, named: str) -> None:
    base, cand = scored(tmp_path / "base"), scored(tmp_path / "cand")
    damage(cand)
    got, out, verdict = cli(base, cand)
    assert got == code and verdict["verdict"] in ("error", "regression"), out
    assert named in " ".join(out.split())


@pytest.mark.parametrize(("missing", "allowed", "code"), [(6, None, 1), (1, None, 1), (6, 6, 0), (6, 5, 1)])
def test_missing_cases_beyond_the_policy_regress(tmp_path: Path, missing: int, allowed: int | None, code: int) -> None:
    base = scored(tmp_path / "base")
    cand = scored(tmp_path / "cand", {k: v for i, (k, v) in enumerate(CASES.items()) if i >= missing})
    args: list[str | Path] = [base, cand]
    if allowed is not None:
        (tmp_path / "policy.yaml").write_text(f"max_missing_cases: {allowed}\n")
        args += ["--policy", tmp_path / "policy.yaml"]
    got, out, verdict = cli(*args)
    assert got == code, out
    if code:
        [reg] = [r for r in verdict["regressions"] if r["metric"] == "cases"]
        assert reg["reason"].startswith(f"{missing} of the baseline's 12 cases missing in the candidate")


def test_a_summary_only_candidate_with_a_nan_rate_fails(tmp_path: Path) -> None:
    base, cand = scored(tmp_path / "base"), scored(tmp_path / "cand")
    for folder in (base, cand):
        (folder / "scores.parquet").unlink()
    rows = [r.model_dump(mode="json") for r in read_summary(cand)]
    for row in rows:
        if row["metric"] == "exact_match":
            row["value"] = math.nan
    (cand / "summary.json").write_text(json.dumps(rows))  # Python's json writes NaN, as a broken writer would
    code, out, verdict = cli(base, cand)
    assert code == 1, out
    assert any(r["metric"] == "exact_match" and "not a number" in r["reason"] for r in verdict["regressions"])


# -- a broken candidate is bad input --------------------------------------------------------------------


BROKEN = [  # (the file, its bytes, what the error says)
    ("samples.jsonl", b'{"sample_id": \n{"x": 1}\n', "line 1"),
    ("samples.jsonl", b"\xff\xfe not utf-8\n{}\n", "line 1"),
    ("samples.jsonl", sample_line(sample("c0", "x")).replace('"epoch":1', '"epoch":"one"').encode(), "epoch"),
    ("errors.json", b"[1, 2, 3]", "errors.json"),
    ("errors.json", b"\x00\x01garbage", "errors.json"),
]


@pytest.mark.parametrize(("name", "content", "named"), BROKEN)
def test_a_broken_candidate_exits_2_naming_the_file(tmp_path: Path, name: str, content: bytes, named: str) -> None:
    base, cand = scored(tmp_path / "base"), scored(tmp_path / "cand")
    (cand / name).write_bytes(content)
    code, out, verdict = cli(base, cand)
    assert code == 2 and verdict["verdict"] == "error", out
    assert str(cand / name) in out and named in out


# -- CI outputs -----------------------------------------------------------------------------------------


def test_junit_holds_an_answer_with_control_characters(tmp_path: Path) -> None:
    base = scored(tmp_path / "base")
    cand = scored(tmp_path / "cand", {k: [float(i >= 10)] for i, k in enumerate(CASES)})
    (cand / "samples.jsonl").write_text("".join(sample_line(sample(k, f"call\x00\x01\x1b[31m{k}\x7f"))
                                                for k in CASES))
    junit = tmp_path / "junit.xml"
    code, out, verdict = cli(base, cand, "--junit", junit)
    assert code == 1 and verdict["verdict"] == "regression", out
    texts = " ".join(e.text or "" for e in ET.parse(junit).iter("failure"))
    assert "call\\x00\\x01\\x1b[31mc0" in texts


def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


STEP_SUMMARY = [  # (where $GITHUB_STEP_SUMMARY points, what the error says)
    (lambda t: Path("/proc/x"), "cannot write there"),
    (lambda t: t, "is a directory"),
    (lambda t: _fifo(t / "fifo"), "named pipe"),
    (lambda t: t / "no" / "such" / "folder.md", "does not exist"),
]


@pytest.mark.parametrize(("where", "named"), STEP_SUMMARY)
def test_an_unusable_step_summary_is_refused_before_the_gate_runs(tmp_path: Path, where: Callable[[Path], Path],
                                                                  named: str) -> None:
    base, cand = scored(tmp_path / "base"), scored(tmp_path / "cand")
    target = where(tmp_path)
    env = {**os.environ, "GITHUB_STEP_SUMMARY": str(target)}
    # A process of its own, with a timeout: a FIFO once hung the gate.
    done = subprocess.run([sys.executable, "-m", "harness.cli.main", "compare", str(base), str(cand)], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "$GITHUB_STEP_SUMMARY" in done.stderr and named in done.stderr and "Traceback" not in done.stderr
