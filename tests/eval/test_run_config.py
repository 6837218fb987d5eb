"""Models per family and server settings: ``--model [FAMILY=]NAME``, ``--vllm-arg``, ``--config``, the
suite's ``models``, and which wins."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.cli.main import app
from harness.engines.registry import get_engine
from harness.eval.data import load_suite
from harness.eval.run.config_file import ConfigError, parse_models, split_vllm_args
from harness.eval.run.resolve import model_args
from harness.run_options import RunOptions

runner = CliRunner()

MODELS = [  # (--model values, (bare, per family))
    ([], (None, {})),
    (["Qwen/Qwen3-0.6B"], ("Qwen/Qwen3-0.6B", {})),
    (["qwen=/m/q", "function_gemma=/m/g"], (None, {"qwen": "/m/q", "function_gemma": "/m/g"})),
    (["x", "qwen=/m/q=v2"], ("x", {"qwen": "/m/q=v2"})),
]


@pytest.mark.parametrize(("given", "parsed"), MODELS)
def test_model_flags(given: list[str], parsed: tuple) -> None:
    assert parse_models(given) == parsed


@pytest.mark.parametrize(("given", "problem"), [
    (["qwn=/m"], "unknown family 'qwn': did you mean 'qwen'?"),
    (["qwen="], "no model after '='"),
    (["qwen=a", "qwen=b"], "qwen is given twice"),
    (["a", "b"], "a second model for every family"),
])
def test_bad_model_flags_are_named(given: list[str], problem: str) -> None:
    with pytest.raises(ConfigError, match=problem):
        parse_models(given)


@pytest.mark.parametrize(("given", "argv"), [
    (["--max-model-len 8192"], ["--max-model-len", "8192"]),
    (["--tensor-parallel-size=2", "--gpu-memory-utilization 0.8"],
     ["--tensor-parallel-size=2", "--gpu-memory-utilization", "0.8"]),
    (["--override-generation-config '{\"a\": 1}'"], ["--override-generation-config", '{"a": 1}']),
])
def test_vllm_args_split_like_a_shell_line(given: list[str], argv: list[str]) -> None:
    assert split_vllm_args(given) == argv


@pytest.mark.parametrize("flag", ["--model x", "--port=9", "--served-model-name a", "--host 0.0.0.0"])
def test_vllm_args_may_not_move_what_the_harness_sets(flag: str) -> None:
    with pytest.raises(ConfigError, match="is set by the harness"):
        split_vllm_args([flag])


def test_flags_win_over_the_suite_and_engines_without_models_ignore_the_suites(tmp_path: Path) -> None:
    suite = load_suite("smoke")
    suite = type(suite)(suite.path, suite.spec.model_copy(update={"models": {"qwen": "s-q", "function_gemma": "s-g"}}),
                        suite.cases)
    openai, oracle = get_engine("openai"), get_engine("oracle")
    assert model_args(RunOptions(engine="openai", models={"qwen": "f-q"}), suite, openai) == {
        "qwen": "f-q", "function_gemma": "s-g"}
    assert model_args(RunOptions(engine="openai", families=["qwen"]), suite, openai) == {"qwen": "s-q"}
    assert model_args(RunOptions(engine="openai", model="bare"), suite, openai) == {}  # a bare --model: all
    assert model_args(RunOptions(engine="oracle"), suite, oracle) == {}


BAD_RUNS = [  # (extra flags, the problem named)
    (["--engine", "oracle", "--model", "qwen=x"], "--base-url and --model are for a server engine"),
    (["--engine", "oracle", "--vllm-arg", "--max-model-len 9"], "--vllm-arg and --keep-server are for --engine vllm"),
    (["--engine", "openai", "--keep-server"], "--vllm-arg and --keep-server are for --engine vllm"),
    (["--engine", "vllm", "--vllm-arg", "--port 8"], "--port is set by the harness"),
    (["--engine", "oracle", "--model", "qwn=x"], "did you mean 'qwen'?"),
]


@pytest.mark.parametrize(("args", "problem"), BAD_RUNS)
def test_bad_model_and_server_flags_exit_2(tmp_path: Path, args: list[str], problem: str) -> None:
    result = runner.invoke(app, ["run", "smoke", "--out", str(tmp_path / "r"), *args])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert problem in result.stderr


def test_a_config_files_mistake_exits_2_with_a_did_you_mean(tmp_path: Path) -> None:
    (tmp_path / "run.yaml").write_text("models:\n  qwen: x\nserver:\n  keeep: true\n")
    result = runner.invoke(app, ["run", "smoke", "--engine", "vllm", "--config", str(tmp_path / "run.yaml")])
    assert result.exit_code == 2 and "server.keeep: unknown key: did you mean 'keep'?" in result.stderr
