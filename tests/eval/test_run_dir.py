"""A run directory holds what it needs: score, report and compare work from any folder, after the run
moved and after the repository's suite changed; a copy edited or missing since is refused (exit 2,
named); ``--resume --retry-errors`` runs exactly the samples that ended in a ``model:*`` error again."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from harness.cli.main import app
from harness.eval.store import load_samples, read_run, read_summary
from harness.eval.store.prompts import read_prompts

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()


def invoke(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    assert "Traceback" not in result.output, result.output
    return result.exit_code, result.stdout, result.stderr


def _own_suite(root: Path) -> Path:
    """A copy of the smoke suite and the SHELLper bundle, in a folder that will change and disappear."""
    shutil.copytree(ROOT / "bundles" / "shellper", root / "bundles" / "shellper")
    shutil.copytree(ROOT / "suites" / "smoke", root / "suites" / "smoke")
    return root / "suites" / "smoke"


@pytest.fixture()
def moved_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A run of a suite that was then edited and deleted, its directory moved elsewhere."""
    suite = _own_suite(tmp_path / "repo")
    monkeypatch.chdir(tmp_path / "repo")
    code, _, err = invoke("run", "suites/smoke", "--engine", "oracle", "--family", "qwen", "--max-tokens", "16",
                          "--out", "results/r")
    assert code == 0, err
    (suite / "cases.jsonl").write_text("")  # the repository's suite changed...
    shutil.move(str(tmp_path / "repo" / "results" / "r"), tmp_path / "elsewhere")
    shutil.rmtree(tmp_path / "repo")  # ...and is gone
    monkeypatch.chdir(tmp_path)
    return tmp_path / "elsewhere"


def test_a_moved_run_scores_reports_and_compares_from_any_folder(moved_run: Path) -> None:
    before = read_summary(moved_run)
    code, _out, err = invoke("score", str(moved_run))
    assert code == 0, err
    assert read_summary(moved_run) == before  # the same scores, from the run's own copies
    code, _, err = invoke("report", str(moved_run))
    assert code == 0, err
    assert (moved_run / "report.html").is_file() and (moved_run / "report-data").is_dir()
    code, _out, err = invoke("compare", str(moved_run), str(moved_run))
    assert code == 0, err
    record = read_run(moved_run)
    assert record.inputs is not None and (moved_run / record.inputs.suite / "suite.yaml").is_file()


DAMAGE = [  # (what happens to the run directory, the file or field named)
    (lambda r: shutil.rmtree(r / "inputs" / "suite"), "inputs/suite: missing"),
    (lambda r: shutil.rmtree(r / "inputs"), "inputs/suite: missing"),
    (lambda r: (r / "inputs" / "suite" / "cases.jsonl").write_text(
        "\n".join((r / "inputs" / "suite" / "cases.jsonl").read_text().splitlines()[:2]) + "\n"),
     "the copy of the run's suite changed since the run"),
    (lambda r: (r / "inputs" / "bundle" / "tools" / "ls.pym").write_text('"""x"""\n{"output": 1, "mutations": []}\n'),
     "the copy of the run's bundle changed since the run"),
    (lambda r: (r / "run.json").write_text("{"), "run.json"),
    (lambda r: (r / "run.json").unlink(), "run.json"),
]


@pytest.mark.parametrize(("damage", "named"), DAMAGE)
def test_a_half_written_or_edited_run_exits_2_naming_it(moved_run: Path, damage, named: str) -> None:
    damage(moved_run)
    samples = (moved_run / "samples.jsonl").read_bytes()
    for command in (["score", str(moved_run)], ["report", str(moved_run)]):
        code, _, err = invoke(*command)
        assert code == 2 and named in err, (command, err)
    assert (moved_run / "samples.jsonl").read_bytes() == samples  # nothing written is lost


def test_a_suite_or_bundle_changed_since_the_run_is_not_resumed(tmp_path: Path) -> None:
    suite = _own_suite(tmp_path)
    out = tmp_path / "r"
    code, _, err = invoke("run", str(suite), "--engine", "oracle", "--family", "qwen", "--strategy", "ebnf",
                          "--limit", "2", "--out", str(out))
    assert code == 0, err
    tools = tmp_path / "bundles" / "shellper" / "tools"
    (tools / "pwd.pym").write_text((tools / "pwd.pym").read_text() + "\n# changed\n")
    code, _, err = invoke("run", str(suite), "--engine", "oracle", "--out", str(out), "--resume")
    assert code == 2 and "the bundle changed since the run started" in err


def test_tools_outside_the_bundle_are_copied_in(tmp_path: Path) -> None:
    bundle = yaml.safe_load((ROOT / "bundles" / "shellper" / "bundle.yaml").read_text())
    bundle["tools_dir"] = str(ROOT / "bundles" / "shellper" / "tools")  # an absolute path elsewhere
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "bundle.yaml").write_text(yaml.safe_dump(bundle))
    suite = yaml.safe_load((ROOT / "suites" / "smoke" / "suite.yaml").read_text()) | {"bundle": str(tmp_path / "b")}
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "suite.yaml").write_text(yaml.safe_dump(suite))
    shutil.copy(ROOT / "suites" / "smoke" / "cases.jsonl", tmp_path / "s")
    code, _, err = invoke("run", str(tmp_path / "s"), "--engine", "oracle", "--family", "qwen", "--strategy", "ebnf",
                          "--out", str(tmp_path / "r"))
    assert code == 0, err
    copy = tmp_path / "r" / "inputs" / "bundle"
    assert yaml.safe_load((copy / "bundle.yaml").read_text())["tools_dir"] == "tools"
    assert len(list((copy / "tools").glob("*.pym"))) == 18
    code, _, err = invoke("score", str(tmp_path / "r"))
    assert code == 0, err


def test_the_prompt_each_call_sent_is_kept_once(tmp_path: Path) -> None:
    from harness.bundles import load_agent
    from harness.eval.data import load_suite
    from harness.grammar.families import get_adapter

    out = tmp_path / "r"
    code, _, err = invoke("run", "smoke", "--engine", "oracle", "--family", "qwen", "--out", str(out))
    assert code == 0, err
    prompts = read_prompts(out)
    samples = load_samples(out / "samples.jsonl").samples
    assert len(prompts) == 6 and len(samples) == 24  # one prompt per case, whatever the strategy
    suite = load_suite("smoke")
    agent = load_agent(suite.bundle_dir)
    case = suite.cases[0]
    sample = samples[f"{case.id}/qwen/ebnf/1"]
    expected = get_adapter("qwen").render_prompt(agent.opening(case.history()), [t.schema for t in agent.tools])
    assert prompts[sample.steps[0].prompt_id].text == expected  # type: ignore[index]


def _mark_errors(out: Path, ids: set[str], kind: str) -> None:
    lines = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    for line in lines:
        if line["sample_id"] in ids:
            line.update(status="error", error_kind=kind, error="the server went away", steps=[])
    (out / "samples.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))


def test_resume_retry_errors_runs_exactly_the_model_errors_again(tmp_path: Path) -> None:
    out = tmp_path / "r"
    base = ["run", "smoke", "--engine", "oracle", "--family", "qwen", "--strategy", "ebnf,json_schema", "--out", str(out)]
    code, _, err = invoke(*base)
    assert code == 0, err
    ids = [json.loads(line)["sample_id"] for line in (out / "samples.jsonl").read_text().splitlines()]
    model_errors, other_error = {ids[1], ids[7]}, ids[4]
    _mark_errors(out, model_errors, "model:connection")
    _mark_errors(out, {other_error}, "sample:timeout")
    code, stdout, err = invoke(*base, "--resume")
    assert code == 0 and "0 samples run (12 resumed" in stdout  # a plain resume keeps errors as results
    code, stdout, err = invoke(*base, "--resume", "--retry-errors")
    assert code == 0, err
    assert "2 samples run (10 resumed, 0 errors)" in stdout
    samples = load_samples(out / "samples.jsonl")
    assert sorted(samples.samples) == sorted(ids) and samples.duplicates == 0  # nothing lost or counted twice
    assert all(samples.samples[i].status == "ok" for i in model_errors)
    assert samples.samples[other_error].error_kind == "sample:timeout"  # not a model error: kept as it was
    kept = [json.loads(line) for line in (out / "samples.retried.jsonl").read_text().splitlines()]
    assert sorted(k["sample_id"] for k in kept) == sorted(model_errors)  # the errored lines are kept
    assert all(r.n == 6 for r in read_summary(out) if r.metric == "validity")
