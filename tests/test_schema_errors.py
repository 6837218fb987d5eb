"""One problem per mistake, with a did-you-mean for a misspelt key, in every file read into a model."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from harness.agents.bundle import BundleConfig, BundleError, load_bundle_config
from harness.eval.run.config_file import ConfigError, load_config_file
from harness.schema_errors import did_you_mean, fields_at, friendly_errors

BUNDLE = """name: demo
model:
  family: qwen
  id: Qwen/Qwen3-0.6B
constraint:
  strategy: ebnf
kernel:
  max_steps: 4
"""

MISTAKES = [  # (the edit, the one problem it gives)
    (("model:", "modle:"), "modle: unknown key: did you mean 'model'?"),
    (("  id:", "  idd:"), "model.idd: unknown key: did you mean 'id'?"),
    (("  strategy:", "  stratgy:"), "constraint.stratgy: unknown key: did you mean 'strategy'?"),
    (("  max_steps:", "  max_stpes:"), "kernel.max_stpes: unknown key: did you mean 'max_steps'?"),
    (("kernel:", "kernal:"), "kernal: unknown key: did you mean 'kernel'?"),
    (("name: demo", "name: demo\nflavour: x"), "flavour: unknown key: expected one of name, description,"),
]


@pytest.mark.parametrize(("edit", "problem"), MISTAKES)
def test_one_mistake_is_one_problem_with_a_did_you_mean(tmp_path: Path, edit: tuple[str, str], problem: str) -> None:
    (tmp_path / "bundle.yaml").write_text(BUNDLE.replace(*edit, 1))
    with pytest.raises(BundleError) as info:
        load_bundle_config(tmp_path)
    assert len(info.value.problems) == 1, info.value.problems
    assert info.value.problems[0].startswith(problem)


def test_two_mistakes_are_two_problems(tmp_path: Path) -> None:
    (tmp_path / "bundle.yaml").write_text(BUNDLE.replace("model:", "modle:").replace("  strategy:", "  stratgy:"))
    with pytest.raises(BundleError) as info:
        load_bundle_config(tmp_path)
    assert sorted(p.split(":")[0] for p in info.value.problems) == ["constraint.stratgy", "modle"]


def test_fields_at_walks_models_lists_and_unions() -> None:
    assert "strategy" in fields_at(BundleConfig, ("constraint",))
    assert fields_at(BundleConfig, ("tools", 3)) == ["name", "limits"]
    assert fields_at(BundleConfig, ("no_such",)) == []
    try:
        BundleConfig.model_validate({"name": "x", "model": {"family": "qwen", "id": "m"}, "tools": [{"nmae": "ls"}]})
    except ValidationError as exc:
        assert friendly_errors(exc, BundleConfig) == [(("tools", 0, "nmae"), "unknown key: did you mean 'name'?")]


@pytest.mark.parametrize(("word", "choices", "guess"), [
    ("modle", ["model", "name"], "model"), ("QWEN", ["qwen"], "qwen"), ("xyz", ["model", "name"], None),
])
def test_did_you_mean(word: str, choices: list[str], guess: str | None) -> None:
    assert did_you_mean(word, choices) == guess


CONFIGS = [  # (config file, the problem named)
    ("modles: {}\n", "modles: unknown key: did you mean 'models'?"),
    ("models: {qwenn: x}\n", "unknown family 'qwenn': did you mean 'qwen'?"),
    ("server: {vllm_arg: []}\n", "server.vllm_arg: unknown key: did you mean 'vllm_args'?"),
    ("server: {vllm_args: ['--port 1']}\n", "--port is set by the harness"),
    ("- 1\n", "expected a mapping at the top level"),
]


@pytest.mark.parametrize(("text", "problem"), CONFIGS)
def test_a_bad_run_config_names_the_file_and_field(tmp_path: Path, text: str, problem: str) -> None:
    (tmp_path / "run.yaml").write_text(text)
    with pytest.raises(ConfigError, match=r"run\.yaml") as info:
        load_config_file(tmp_path / "run.yaml")
    assert problem in str(info.value)
