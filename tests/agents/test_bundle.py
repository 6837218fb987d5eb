"""bundle.yaml validation (errors name the file and the field) and Agent.from_bundle wiring."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from harness.agents import Agent, BundleError, ModelRequestEvent, RecordingObserver, load_bundle_config
from harness.agents.testing import ScriptedClient, line_adapter

REPO = Path(__file__).resolve().parents[2]
SHELLPER = REPO / "bundles" / "shellper"

VALID = """\
name: demo
system_prompt: Be brief.
model:
  family: qwen
  id: Qwen/Qwen3-0.6B
  base_url: http://127.0.0.1:9/v1
constraint:
  strategy: json_schema
"""


def write_bundle(tmp_path: Path, text: str) -> Path:
    folder = tmp_path / "bundles" / "x"
    folder.mkdir(parents=True)
    (folder / "bundle.yaml").write_text(textwrap.dedent(text))
    return folder


def error_of(tmp_path: Path, text: str) -> BundleError:
    folder = write_bundle(tmp_path, text)
    with pytest.raises(BundleError) as info:
        load_bundle_config(folder)
    return info.value


def test_shellper_bundle_loads() -> None:
    cfg = load_bundle_config(SHELLPER)
    assert cfg.name == "shellper"
    assert cfg.model.family == "function_gemma"
    assert cfg.model.id == "google/functiongemma-270m-it"
    assert cfg.constraint.strategy == "ebnf"
    assert cfg.limits == "default"
    assert cfg.system_prompt and len(cfg.system_prompt) > 50


def test_defaults_and_file_or_folder(tmp_path: Path) -> None:
    folder = write_bundle(tmp_path, VALID)
    cfg = load_bundle_config(folder / "bundle.yaml")
    assert cfg == load_bundle_config(folder)
    assert cfg.tools_dir == "tools" and cfg.limits == "default" and cfg.kernel.max_steps >= 1
    assert cfg.model.api_key_env == "OPENAI_API_KEY"


@pytest.mark.parametrize("key", ["max_steps", "max_turns"])
def test_step_bound_is_read_under_its_old_name_too(tmp_path: Path, key: str) -> None:
    cfg = load_bundle_config(write_bundle(tmp_path, VALID + f"kernel:\n  {key}: 3\n"))
    assert cfg.kernel.max_steps == 3


def test_bad_family_names_file_and_field(tmp_path: Path) -> None:
    err = error_of(tmp_path, VALID.replace("family: qwen", "family: gemma"))
    file = tmp_path / "bundles" / "x" / "bundle.yaml"
    assert str(err) == f"{file}: model.family: unknown model family 'gemma': expected one of function_gemma, qwen"


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (("base_url:", "bse_url:"), "model.bse_url: unknown key: did you mean 'base_url'?"),
        (("strategy: json_schema", "strategy: ebfn"), "constraint.strategy: Input should be 'none', 'ebnf'"),
        (("name: demo", "nme: demo"), "nme: unknown key: did you mean 'name'?"),
        (("  id: Qwen/Qwen3-0.6B\n", ""), "model.id: Field required"),
        (
            ("constraint:", "kernel:\n  max_steps: 0\nconstraint:"),
            "kernel.max_steps: Input should be greater than or equal to 1",
        ),
        (  # the name bundles used before "step" meant a model call
            ("constraint:", "kernel:\n  max_turns: 0\nconstraint:"),
            "kernel.max_turns: Input should be greater than or equal to 1",
        ),
        (
            ("constraint:", "tools:\n  - name: ls\n  - nam: cd\nconstraint:"),
            "tools[1].nam: unknown key: did you mean 'name'?",
        ),
        (
            ("constraint:", "tools:\n  - name: ls\n  - name: ls\nconstraint:"),
            "tools: tool overrides repeat ls",
        ),
    ],
)
def test_field_errors(tmp_path: Path, edit: tuple[str, str], expected: str) -> None:
    err = error_of(tmp_path, VALID.replace(*edit))
    assert str(err).startswith(str(tmp_path / "bundles" / "x" / "bundle.yaml") + ": ")
    assert expected in str(err)


def test_several_errors_are_all_reported(tmp_path: Path) -> None:
    err = error_of(tmp_path, VALID.replace("family: qwen", "family: x").replace("name: demo", "name: ''"))
    assert len(err.problems) == 2
    assert {p.split(":")[0] for p in err.problems} == {"name", "model.family"}


def test_unreadable_or_invalid_yaml(tmp_path: Path) -> None:
    with pytest.raises(BundleError, match="missing: not found"):
        load_bundle_config(tmp_path / "missing")
    assert "invalid YAML" in str(error_of(tmp_path, "name: [unclosed\n"))


def test_top_level_must_be_mapping(tmp_path: Path) -> None:
    assert "expected a mapping" in str(error_of(tmp_path, "- a\n- b\n"))


# -- Agent.from_bundle wiring ------------------------------------------------------------------
# the adapter lookup and the tool loader are other areas' seams; these tests replace them with test doubles
# (tests/test_bundles.py takes the real road: the sandbox's tools and the real adapters).


class AdapterLookup:
    """TEST DOUBLE for the family registry's ``get_adapter``: the line format under any family's name."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def __call__(self, family: str) -> Any:
        self.asked.append(family)
        return line_adapter(family)


@pytest.fixture
def adapter_double() -> AdapterLookup:
    return AdapterLookup()


def no_tools(file: Path, config: Any) -> list[Any]:  # test double for a ToolLoader
    return []


async def test_from_bundle_wires_model_id_strategy_and_prompt(
    tmp_path: Path, adapter_double: AdapterLookup
) -> None:
    folder = write_bundle(tmp_path, VALID)
    client = ScriptedClient([ScriptedClient.reply("hello")])
    rec = RecordingObserver()
    agent = Agent.from_bundle(folder, tool_loader=no_tools, adapter_of=adapter_double, client=client, observers=[rec])
    assert adapter_double.asked == ["qwen"]
    kernel = agent.make_kernel()
    assert kernel.model == "Qwen/Qwen3-0.6B" and kernel.agent_id == "demo"
    assert kernel.constraint.strategy == "json_schema"
    assert agent.tools == ()
    result = await agent.run("say hi")
    assert result.termination_reason == "no_tool_calls"
    (req,) = client.requests
    assert req.model == "Qwen/Qwen3-0.6B"  # the served id, never the family
    assert [(m.role, m.content) for m in req.messages] == [("system", "Be brief."), ("user", "say hi")]
    assert len(rec.of_type(ModelRequestEvent)) == 1


def test_from_bundle_and_variant_overrides(tmp_path: Path, adapter_double: AdapterLookup) -> None:
    folder = write_bundle(tmp_path, VALID)
    agent = Agent.from_bundle(
        folder, tool_loader=no_tools, adapter_of=adapter_double, client=ScriptedClient([]), family="function_gemma",
        strategy="ebnf",
    )
    assert adapter_double.asked == ["function_gemma"]
    assert agent.constraint.strategy == "ebnf" and not agent.constraint.allow_text_answer
    assert agent.model_id == "Qwen/Qwen3-0.6B"
    other = agent.variant(strategy="none", allow_text_answer=True, model_id="served-7b", max_tokens=9)
    kernel = other.make_kernel()
    assert (kernel.constraint.strategy, kernel.constraint.allow_text_answer) == ("none", True)
    assert (kernel.model, kernel.max_tokens) == ("served-7b", 9)
    assert other.tools is agent.tools  # loaded once
    with pytest.raises(BundleError, match=r"constraint\.strategy: unknown decoding strategy 'ebfn'"):
        Agent.from_bundle(folder, tool_loader=no_tools, adapter_of=adapter_double, client=ScriptedClient([]),
                          strategy="ebfn")
    with pytest.raises(BundleError, match=r"constraint\.strategy: unknown decoding strategy 'ebfn'"):
        agent.variant(strategy="ebfn")


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (("max_concurrency: 1", "max_concurrency: 3"), (3, None)),
        (("max_concurrency: 1", "max_history_messages: 6"), (1, 6)),
    ],
)
def test_kernel_settings_reach_the_kernel(
    tmp_path: Path, adapter_double: AdapterLookup, edit: tuple[str, str], expected: tuple[int, int | None]
) -> None:
    text = VALID + "kernel:\n  max_concurrency: 1\n"
    agent = Agent.from_bundle(write_bundle(tmp_path, text.replace(*edit)), tool_loader=no_tools,
                              adapter_of=adapter_double, client=ScriptedClient([]))
    kernel = agent.make_kernel()
    assert (kernel.max_concurrency, kernel.max_history_messages) == expected


def test_the_tool_loader_gets_the_bundle_file_and_config(tmp_path: Path, adapter_double: AdapterLookup) -> None:
    seen: list[tuple[Path, str]] = []

    def loader(file: Path, config: Any) -> list[Any]:  # test double for a ToolLoader
        seen.append((file, config.name))
        return []

    folder = write_bundle(tmp_path, VALID)
    Agent.from_bundle(folder, tool_loader=loader, adapter_of=adapter_double, client=ScriptedClient([]))
    assert seen == [(folder / "bundle.yaml", "demo")]


def test_no_client_and_no_base_url_says_why(tmp_path: Path, adapter_double: AdapterLookup) -> None:
    agent = Agent.from_bundle(write_bundle(tmp_path, VALID), tool_loader=no_tools, adapter_of=adapter_double)
    with pytest.raises(BundleError, match=r"model\.base_url: required when no client is given"):
        agent.make_kernel()


# A bundle names the variable its key comes from (issue 22, item 7): an API-key variable only, so a
# downloaded bundle cannot send another secret of the environment to its base_url. (name, accepted)
API_KEY_ENVS: list[tuple[str, bool]] = [
    ("OPENAI_API_KEY", True),
    ("VLLM_API_KEY", True),
    ("MY_SERVER_2_API_KEY", True),
    ("GITHUB_TOKEN", False),
    ("HF_TOKEN", False),
    ("AWS_SECRET_ACCESS_KEY", False),
    ("HOME", False),
    ("PATH", False),
    ("API_KEY", False),
    ("openai_api_key", False),
    ("OPENAI_API_KEY_BACKUP", False),
    ("X_API_KEY\nPATH", False),
]


@pytest.mark.parametrize(("name", "accepted"), API_KEY_ENVS, ids=[n for n, _ in API_KEY_ENVS])
def test_api_key_env_names_an_api_key_variable_only(tmp_path: Path, name: str, accepted: bool) -> None:
    text = VALID.replace("  base_url: http://127.0.0.1:9/v1\n", f"  base_url: http://127.0.0.1:9/v1\n  api_key_env: {name!r}\n")
    folder = write_bundle(tmp_path, text.replace("'", '"') if "\n" in name else text)
    if accepted:
        assert load_bundle_config(folder).model.api_key_env == name
        return
    with pytest.raises(BundleError) as info:
        load_bundle_config(folder)
    assert "model.api_key_env" in str(info.value) and "not the name of an API key variable" in str(info.value)
