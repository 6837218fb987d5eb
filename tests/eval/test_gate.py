"""``harness compare`` case by case: the paired tests, the policy, the refusals (exit 2 naming the file
and the field), the CI outputs (JSON verdict, JUnit, step summary) and ``--update-baseline``, on run
directories written through the records (tests/runs.py)."""

from __future__ import annotations

import json
import math
import random
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from runs import run_record, score_rows, write_run_dir, write_scored_run
from typer.testing import CliRunner

from harness.cli.main import app
from harness.eval.compare import (
    Policy,
    compare_runs,
    exact_mcnemar,
    fewest_significant,
    min_detectable_effect,
)
from harness.eval.compare.paired import compare_scores, holm
from harness.eval.store import ScoreRow, read_run

LOCAL = {"engine": "local", "model": "gemma-3-270m-base-q4km (functiongemma format)"}
"""A model engine (the oracle, a replay, fails on any case that got worse: tested on its own)."""


def cli(*args: str | Path, env: dict[str, str] | None = None) -> tuple[int, str, dict[str, Any]]:
    """Exit code, output, and the JSON verdict (the last line of stdout)."""
    result = CliRunner().invoke(app, ["compare", *map(str, args)], env=env)
    last = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else "{}"
    return result.exit_code, result.output, json.loads(last)


def pair(tmp_path: Path, base: dict[str, list[float]], cand: dict[str, list[float]], metric: str = "exact_match",
         **cand_fields: Any) -> tuple[Path, Path]:
    b = write_scored_run(tmp_path / "base", score_rows(base, metric), **LOCAL)
    c = write_scored_run(tmp_path / "cand", score_rows(cand, metric), **{**LOCAL, **cand_fields})
    return b, c


# -- the statistics -----------------------------------------------------------------------------------

# (worse, better, p): the exact McNemar p is the two-sided binomial test of the discordant cases.
MCNEMAR = [(0, 0, 1.0), (6, 0, 2 * 0.5**6), (5, 0, 2 * 0.5**5), (3, 1, 0.625), (1, 3, 0.625), (10, 10, 1.0)]


@pytest.mark.parametrize(("worse", "better", "p"), MCNEMAR)
def test_exact_mcnemar(worse: int, better: int, p: float) -> None:
    assert math.isclose(exact_mcnemar(worse, better), p)


@pytest.mark.parametrize(("alpha", "fewest"), [(0.05, 6), (0.01, 8), (0.25, 4), (0.005, 9)])
def test_fewest_cases_that_can_be_significant(alpha: float, fewest: int) -> None:
    assert fewest_significant(alpha) == fewest
    assert exact_mcnemar(fewest, 0) < alpha <= exact_mcnemar(fewest - 1, 0)


# (p values, Holm-adjusted): sorted ascending, times m, m-1, ...; never decreasing; at most 1.
HOLM = [([0.01, 0.04, 0.03], [0.03, 0.06, 0.06]), ([0.5], [0.5]), ([0.2, 0.001], [0.2, 0.002]), ([0.6, 0.7], [1.0, 1.0])]


@pytest.mark.parametrize(("raw", "adjusted"), HOLM)
def test_holm(raw: list[float], adjusted: list[float]) -> None:
    assert [round(p, 9) for p in holm(raw)] == adjusted


def test_minimum_detectable_effect_with_few_cases() -> None:
    # 6 cases, nothing changed: only all 6 moving one way could be significant at 0.05.
    assert min_detectable_effect([0.0] * 6, 1.0, 0.05) == 1.0
    # 100 cases, 10% discordant: about 2.8 * sqrt(0.1 / 100) = 0.089.
    diffs = [1.0] * 5 + [-1.0] * 5 + [0.0] * 90
    assert 0.08 < min_detectable_effect(diffs, 1.0, 0.05) < 0.1


def _simulated_rows(rng: random.Random, probs: list[float], epochs: int, drop: float) -> list[ScoreRow]:
    return score_rows({f"c{i}": [float(rng.random() < max(0.0, p - drop)) for _ in range(epochs)]
                       for i, p in enumerate(probs)})


def test_a_and_a_runs_rarely_look_like_a_regression() -> None:
    """200 A/A pairs of a flaky model (each case its own pass probability, 3 epochs, 40 cases): the gate
    calls a regression in at most 5% of them (alpha), and a real drop of 0.3 in nearly all."""
    rng = random.Random(23)
    policy = Policy()
    false_alarms = detected = 0
    for _ in range(200):
        probs = [rng.random() for _ in range(40)]
        base = _simulated_rows(rng, probs, 3, 0.0)
        same = compare_scores(base, _simulated_rows(rng, probs, 3, 0.0), policy)[0]
        worse = compare_scores(base, _simulated_rows(rng, probs, 3, 0.3), policy)[0]
        false_alarms += same.is_regression
        detected += worse.is_regression
    assert false_alarms <= 10
    assert detected >= 180


# -- the gate, case by case --------------------------------------------------------------------------


def test_a_significant_drop_regresses_with_its_flip_list(tmp_path: Path) -> None:
    cases = {f"c{i}": [1.0] for i in range(12)}
    b, c = pair(tmp_path, cases, {k: [0.0] if i < 10 else [1.0] for i, k in enumerate(cases)})
    code, out, verdict = cli(b, c)
    assert code == 1, out
    assert verdict["verdict"] == "regression" and verdict["exit_code"] == 1
    [reg] = verdict["regressions"]
    assert (reg["metric"], reg["flips_worse"], reg["flips_better"]) == ("exact_match", 10, 0)
    assert "c0: pass -> fail [exact:wrong_arguments]" in out
    assert f"{c}/report.html#sample=c0%2Ffunction_gemma%2Febnf%2F1" in out


@pytest.mark.parametrize(
    ("base", "cand", "args", "status"),
    [
        ({f"c{i}": [1.0] for i in range(12)}, {f"c{i}": [float(i >= 3)] for i in range(12)}, [], "ok"),  # 3 flips: noise
        ({f"c{i}": [1.0] for i in range(40)}, {f"c{i}": [float(i >= 10)] for i in range(40)}, [], "regression"),
        # significant but smaller than the minimum effect asked for
        ({f"c{i}": [1.0] for i in range(40)}, {f"c{i}": [float(i >= 10)] for i in range(40)}, ["--min-effect", "0.3"], "ok"),
        ({f"c{i}": [0.0] for i in range(12)}, {f"c{i}": [1.0] for i in range(12)}, [], "improved"),
        # epochs: the paired bootstrap with the sign test
        ({f"c{i}": [1.0, 1.0, 0.0] for i in range(12)}, {f"c{i}": [0.0, 0.0, 1.0] for i in range(12)}, [], "regression"),
        ({f"c{i}": [1.0, 0.0, 1.0] for i in range(12)}, {f"c{i}": [0.0, 1.0, 1.0] for i in range(12)}, [], "ok"),
    ],
)
def test_a_regression_is_significant_and_large_enough(
    tmp_path: Path, base: dict[str, list[float]], cand: dict[str, list[float]], args: list[str], status: str
) -> None:
    b, c = pair(tmp_path, base, cand)
    code, out, verdict = cli(b, c, *args)
    [metric] = [m for m in verdict["metrics"] if m["metric"] == "exact_match" and m["cases"] is not None]
    assert metric["status"] == status, out
    assert code == (1 if status == "regression" else 0)


def test_few_cases_say_what_they_could_detect(tmp_path: Path) -> None:
    b, c = pair(tmp_path, {"a": [1.0], "b": [1.0], "c": [0.0]}, {"a": [1.0], "b": [1.0], "c": [0.0]})
    code, out, verdict = cli(b, c)
    assert code == 0
    assert "with 3 cases the smallest change this comparison could detect is 1.000" in out
    assert verdict["weak"]


def test_oracle_runs_fail_on_any_case_that_got_worse(tmp_path: Path) -> None:
    # A replay has no noise: one rejected gold answer is a change, however few the cases.
    b = write_scored_run(tmp_path / "base", score_rows({f"c{i}": [0.0] for i in range(6)}, "grammar_rejection"))
    c = write_scored_run(tmp_path / "cand", score_rows({f"c{i}": [float(i == 0)] for i in range(6)}, "grammar_rejection"))
    code, out, verdict = cli(b, c)
    assert code == 1, out
    assert "max_worse_cases 0" in verdict["regressions"][0]["reason"]


# -- the setup, bad input ----------------------------------------------------------------------------


def test_different_setups_are_refused_naming_each_difference(tmp_path: Path) -> None:
    b = write_scored_run(tmp_path / "base", score_rows({"a": [1.0]}), max_tokens=80)
    c = write_scored_run(tmp_path / "cand", score_rows({"a": [0.0]}), engine="local", max_tokens=8,
                         model="gemma-3-270m-base-q4km (functiongemma format)")
    code, out, verdict = cli(b, c)
    assert code == 2 and verdict["verdict"] == "error"
    for named in ("setup.engine: baseline 'oracle', candidate 'local'", "setup.max_tokens: baseline 80, candidate 8",
                  "--allow-setup-change", str(b / "run.json")):
        assert named in out
    code, out, verdict = cli(b, c, "--allow-setup-change")
    assert code in (0, 1) and verdict["setup"]["allowed"] and len(verdict["setup"]["differences"]) >= 2


def _policy(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "policy.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("breakage", "named"),
    [
        ("other_suite", "suite.name: 'shellper'"),
        ("unfinished", "finished_at: the run has not finished"),
        ("policy_key", "alpah: unknown key (did you mean 'alpha'?)"),
        ("policy_metric", "unknown metric 'exact_mach' (did you mean 'exact_match'?)"),
        ("policy_value", "alpha: Input should be less than 1"),
        ("baseline_missing", "not a directory"),
        ("baseline_json", "run.json"),
        ("scores_damaged", "scores.parquet: cannot read parquet"),
    ],
)
def test_bad_input_exits_2_naming_file_and_field(tmp_path: Path, breakage: str, named: str) -> None:
    b, c = pair(tmp_path, {"a": [1.0]}, {"a": [1.0]})
    args: list[str | Path] = [b, c]
    if breakage == "other_suite":
        write_run_dir(c, run_record("cand", suite={"name": "shellper", "version": "1", "kind": "next_call",
                                                   "path": "suites/shellper"}, **LOCAL), [])
    elif breakage == "unfinished":
        write_run_dir(c, run_record("cand", finished_at=None, **LOCAL), [])
    elif breakage == "policy_key":
        args += ["--policy", _policy(tmp_path, "alpah: 0.1\n")]
    elif breakage == "policy_metric":
        args += ["--policy", _policy(tmp_path, "metrics: [exact_mach]\n")]
    elif breakage == "policy_value":
        args += ["--policy", _policy(tmp_path, "alpha: 5\n")]
    elif breakage == "baseline_missing":
        args = [tmp_path / "nowhere", c]
    elif breakage == "baseline_json":
        (b / "run.json").write_text('{"run_id": ')
    else:
        (b / "scores.parquet").write_bytes(b"not parquet")
    code, out, verdict = cli(*args)
    assert code == 2, out
    assert named in out and verdict["verdict"] == "error"


def test_a_run_written_before_scores_were_kept_compares_on_its_summary(tmp_path: Path) -> None:
    b, c = pair(tmp_path, {f"c{i}": [1.0] for i in range(10)}, {f"c{i}": [float(i > 0)] for i in range(10)})
    (b / "scores.parquet").unlink()
    code, out, verdict = cli(b, c)
    assert code == 1 and verdict["mode"] == "summary"  # a drop of 0.1 > max_drop 0.02, as before
    assert "rates compared on summary.json alone" in out


# -- CI outputs ----------------------------------------------------------------------------------------


def test_junit_and_step_summary(tmp_path: Path) -> None:
    from junitparser import Failure, JUnitXml

    cases = {f"c{i}": [1.0] for i in range(12)}
    b, c = pair(tmp_path, cases, {k: [float(i >= 10)] for i, k in enumerate(cases)})
    summary = tmp_path / "step-summary.md"
    summary.write_text("earlier steps\n")
    junit = tmp_path / "junit.xml"
    code, out, _ = cli(b, c, "--junit", junit, env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert code == 1, out
    xml = JUnitXml.fromfile(str(junit))
    suites = {s.name: s for s in xml}
    gate = {case.name: case for case in suites["gate"]}
    assert isinstance(gate["function_gemma/ebnf/exact_match"].result[0], Failure)
    lane = list(suites["smoke/function_gemma/ebnf"])
    assert len(lane) == 12 and sum(not case.is_passed for case in lane) == 10
    failed = next(case for case in lane if case.name == "c0")
    assert failed.result[0].type == "exact:wrong_arguments"
    assert "passed in the baseline" in failed.result[0].message and "answer:" in failed.result[0].text
    assert ET.parse(junit).getroot().tag == "testsuites"  # plain XML for any other reader
    text = summary.read_text()
    assert text.startswith("earlier steps\n") and "## harness compare: ❌ 1 regression(s)" in text
    assert "| function_gemma | ebnf | exact_match | 12 |" in text


# -- the kept baseline ----------------------------------------------------------------------------------


def test_update_baseline_only_when_nothing_regressed(tmp_path: Path) -> None:
    cases = {f"c{i}": [1.0] for i in range(12)}
    b, same = pair(tmp_path, cases, cases)
    worse = write_scored_run(tmp_path / "worse", score_rows({k: [0.0] for k in cases}), **LOCAL)
    before = (b / "scores.parquet").read_bytes()
    code, out, verdict = cli(b, worse, "--update-baseline")
    assert code == 1 and not verdict["baseline_updated"] and "baseline not updated" in out
    assert (b / "scores.parquet").read_bytes() == before
    code, out, verdict = cli(b, same, "--update-baseline")
    assert code == 0 and verdict["baseline_updated"], out
    assert read_run(b).run_id == "cand"
    assert sorted(p.name for p in b.iterdir()) == ["run.json", "scores.parquet", "summary.json"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary folder left


def test_a_failed_update_leaves_the_baseline_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.eval.compare import baseline as baseline_mod

    b, c = pair(tmp_path, {"a": [1.0]}, {"a": [1.0]})
    before = {p.name: p.read_bytes() for p in b.iterdir()}

    def broken_copy(src: Path, dst: Path) -> None:
        Path(dst).write_bytes(Path(src).read_bytes()[:10])  # half a file, then the disk fills up
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(baseline_mod.shutil, "copyfile", broken_copy)
    with pytest.raises(baseline_mod.BaselineError, match="No space left"):
        baseline_mod.update_baseline(b, c)
    assert {p.name: p.read_bytes() for p in b.iterdir()} == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_library_comparison_pairs_by_case(tmp_path: Path) -> None:
    b, c = pair(tmp_path, {"a": [1.0], "b": [0.0], "only-base": [1.0]}, {"a": [0.0], "b": [1.0], "only-cand": [1.0]})
    cmp = compare_runs(b, c)
    [exact] = [p for p in cmp.paired if p.metric == "exact_match"]
    assert exact.cases == 2 and (exact.worse_cases, exact.better_cases) == (1, 1)
    assert {(f.case_id, f.worse) for f in exact.flips} == {("a", True), ("b", False)}


# -- the A/A check on the embedded engine ------------------------------------------------------------


@pytest.mark.slow
def test_two_seeds_of_one_setup_compare_as_no_regression(tmp_path: Path) -> None:
    """The embedded engine (Gemma 3 270M base on llama.cpp) at temperature 1, 2 epochs of 4 cases: two
    seeds are an A/A pair (one setup, other samples) and the gate says so; the same seed reproduces."""
    import asyncio

    from harness.eval.run import RunOptions, RunPlace, run_suite
    from harness.eval.store import load_samples

    shellper = Path(__file__).resolve().parents[2] / "suites" / "shellper"

    def run(name: str, seed: int) -> Path:
        spec = shellper, RunOptions(engine="local", families=["function_gemma"], strategies=["json_schema"], limit=4, epochs=2, temperature=1.0, seed=seed), RunPlace(out=tmp_path / name)
        asyncio.run(run_suite(*spec))
        return tmp_path / name

    def outputs(run_dir: Path) -> dict[str, tuple[int | None, str | None]]:
        samples = load_samples(run_dir / "samples.jsonl").samples.values()
        return {s.sample_id: (s.seed, s.steps[0].output if s.steps else None) for s in samples}

    a, b, again = run("a", 1), run("b", 2), run("again", 1)
    code, out, verdict = cli(a, b, "--timings", "info")  # timings of a shared machine are not what this checks
    assert code == 0 and verdict["verdict"] == "pass", out
    assert verdict["setup"]["differences"] == [] and verdict["setup"]["baseline"] == verdict["setup"]["candidate"]
    assert {seed for seed, _ in outputs(a).values()}.isdisjoint(seed for seed, _ in outputs(b).values())
    assert outputs(again) == outputs(a)  # a rerun with the same seed reproduces every answer
