"""The one road from a bundle to a running agent (``harness.bundles``), with its real parts: the
sandbox's ``.pym`` tools and limits, the family adapters, the OpenAI-compatible client."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path
from typing import Any

import pytest

from harness.agents import BundleError
from harness.agents.testing import ScriptedClient
from harness.bundles import load_agent, load_bundle
from harness.sandbox import Limits

SHELLPER_TOOLS = Path(__file__).resolve().parents[1] / "bundles" / "shellper" / "tools"

BUNDLE = f"""\
name: demo
model:
  family: qwen
  id: Qwen/Qwen3-0.6B
  base_url: http://127.0.0.1:9/v1
  api_key_env: HARNESS_TEST_NO_SUCH_API_KEY
tools_dir: {SHELLPER_TOOLS}
"""


def write(tmp_path: Path, text: str) -> Path:
    folder = tmp_path / "bundle"
    folder.mkdir(parents=True)
    (folder / "bundle.yaml").write_text(textwrap.dedent(text))
    return folder


def test_per_tool_limits_override_the_bundle_limits(tmp_path: Path) -> None:
    text = BUNDLE + "limits: strict\ntools:\n  - name: cd\n    limits: {max_memory: 1000}\n  - name: ls\n    limits: permissive\n"
    agent = load_agent(write(tmp_path, text), client=ScriptedClient([]))
    limits = {t.schema.name: t.limits for t in agent.tools}  # type: ignore[attr-defined]
    assert len(limits) == 18
    assert limits["cat"] == Limits.strict()
    assert limits["cd"] == Limits.strict().model_copy(update={"max_memory": 1000})  # keys set over the bundle's
    assert limits["ls"] == Limits.permissive()  # a preset replaces them


@pytest.mark.parametrize(
    ("extra", "problem"),
    [
        ("limits: {max_mmeory: 32mb}\n", "limits.max_mmeory: unknown key: did you mean 'max_memory'?"),
        ("tools:\n  - name: ls\n    limits: {wall_clock: soon}\n", "tools[0].limits.wall_clock:"),
        ("limits: lax\n", "limits: unknown limits preset 'lax'; expected one of strict, default, permissive"),
        ("limits: [1]\n", "limits.str: Input should be a valid string"),
        ("tools:\n  - name: cat\n  - name: format_disk\n", "tools[1].name: no tool named 'format_disk'"),
    ],
)
def test_bundle_problems_name_the_field(tmp_path: Path, extra: str, problem: str) -> None:
    folder = write(tmp_path, BUNDLE + extra)
    with pytest.raises(BundleError) as info:
        load_agent(folder, client=ScriptedClient([]))
    assert str(info.value).startswith(f"{folder / 'bundle.yaml'}: ")
    assert any(p.startswith(problem) for p in info.value.problems), info.value.problems


def test_load_bundle_checks_limits_before_any_tool_loads(tmp_path: Path) -> None:
    text = BUNDLE.replace(str(SHELLPER_TOOLS), "missing") + "limits: {max_memory: 32mb, wall_clock: 2s}\n"
    assert load_bundle(write(tmp_path, text)).limits == {"max_memory": "32mb", "wall_clock": "2s"}
    with pytest.raises(BundleError, match=r"limits\.max_mmeory"):
        load_bundle(write(tmp_path / "b", BUNDLE + "limits: {max_mmeory: 1}\n"))


def test_default_client_is_the_bundles_server_built_on_first_use(tmp_path: Path) -> None:
    from harness.engines import OpenAICompatibleClient

    agent = load_agent(write(tmp_path, BUNDLE))
    client = agent.client
    assert isinstance(client, OpenAICompatibleClient)
    assert client.base_url == "http://127.0.0.1:9/v1"
    assert agent.make_kernel().client is client


def test_real_adapter_and_bundle_constraint(tmp_path: Path) -> None:
    agent = load_agent(write(tmp_path, BUNDLE + "constraint:\n  strategy: json_schema\n  allow_parallel_calls: true\n"),
                       client=ScriptedClient([]))
    assert agent.family == "qwen"
    assert (agent.constraint.strategy, agent.constraint.allow_parallel_calls) == ("json_schema", True)
    payload = agent.adapter.build_payload([t.schema for t in agent.tools], agent.constraint)
    assert set(payload.extra_body["structured_outputs"]) == {"json"}  # whitespace is a vLLM server setting


def _field_paths(model: type, prefix: str = "") -> list[str]:
    """Every key a ``bundle.yaml`` may hold, dotted (``model.family``); nested models stepped into."""
    from pydantic import BaseModel

    paths: list[str] = []
    for name, field in model.model_fields.items():  # type: ignore[attr-defined]
        inner = field.annotation
        if isinstance(inner, type) and issubclass(inner, BaseModel):
            paths += _field_paths(inner, f"{prefix}{name}.")
        else:
            paths.append(f"{prefix}{name}")
    return paths


def test_the_bundle_reference_documents_every_key() -> None:
    from harness.agents.bundle import BundleConfig

    reference = (Path(__file__).resolve().parents[1] / "docs" / "bundle.md").read_text(encoding="utf-8")
    keys = _field_paths(BundleConfig)
    assert "model.family" in keys and "kernel.max_steps" in keys
    assert [k for k in keys if f"`{k}`" not in reference] == []


def _fifo(folder: Path) -> str:
    os.mkfifo(folder / "tools.json")
    return "tools.json"


def _huge(folder: Path) -> str:
    with open(folder / "tools.json", "wb") as f:  # sparse: no disk used, over the input bound
        f.truncate(1 << 40)
    return "tools.json"


def _boolean_parameters(folder: Path) -> str:
    (folder / "tools.json").write_text('{"Box": [{"name": "put", "description": "Put.", "parameters": true}]}')
    return "tools.json"


def _not_a_tool(folder: Path) -> str:
    (folder / "tools.json").write_text('{"Box": ["put"]}')
    return "tools.json"


@pytest.mark.parametrize(("make", "problem"), [
    (_fifo, "named pipe"),
    (lambda folder: "/dev/zero", "character device"),
    (_huge, "over the bound"),
    (lambda folder: "missing.json", "not found"),
    (_boolean_parameters, r"Box\[0\]: tool 'put': function\.parameters must be a JSON schema object, got bool"),
    (_not_a_tool, r"Box\[0\]: expected a tool object, got str"),
])
def test_a_python_bundles_tools_json_is_read_bounded(tmp_path: Path, make: Any, problem: str) -> None:
    folder = write(tmp_path, BUNDLE.replace(f"tools_dir: {SHELLPER_TOOLS}\n", ""))
    listed = make(folder)
    with (folder / "bundle.yaml").open("a") as f:
        f.write(f"python:\n  classes: {{Box: box:Box}}\n  tools_json: {listed}\n")
    with pytest.raises(BundleError, match=rf"python\.tools_json: .*{problem}"):  # at once: never opened to read
        load_agent(folder, client=ScriptedClient([]))


@pytest.mark.parametrize(("memory", "problem"), [
    ("1b", r"python\.memory: '1b' is 1 bytes: a worker's limit is between 256 MiB"),
    (10**30, r"python\.memory: .* between 256 MiB .* and 1024 TiB"),
])
def test_a_python_bundles_memory_out_of_range_is_a_bundle_error(tmp_path: Path, memory: Any, problem: str) -> None:
    folder = write(tmp_path, BUNDLE.replace(f"tools_dir: {SHELLPER_TOOLS}\n", ""))
    with (folder / "bundle.yaml").open("a") as f:
        f.write(f"python:\n  classes: {{Box: box:Box}}\n  memory: {memory}\n")
    with pytest.raises(BundleError, match=problem):  # before a worker starts under it
        load_agent(folder, client=ScriptedClient([]))


def test_a_class_that_does_not_import_is_a_bundle_error_with_a_tools_json_too(tmp_path: Path) -> None:
    folder = write(tmp_path, BUNDLE.replace(f"tools_dir: {SHELLPER_TOOLS}\n", ""))
    (folder / "tools.json").write_text('{"Box": [{"name": "put", "description": "Put.", "parameters": {"type": "object"}}]}')
    with (folder / "bundle.yaml").open("a") as f:
        f.write("python:\n  classes: {Box: no_such_module:Box}\n  tools_json: tools.json\n")
    with pytest.raises(BundleError, match=r"python\.classes: .*no_such_module"):  # not tool:load_error per sample
        load_agent(folder, client=ScriptedClient([]))


def test_execution_bfcl_with_a_class_that_is_not_bfcls_is_a_bundle_error(tmp_path: Path) -> None:
    pytest.importorskip("bfcl_eval")
    folder = write(tmp_path, BUNDLE.replace(f"tools_dir: {SHELLPER_TOOLS}\n", ""))
    (folder / "box.py").write_text("class Box:\n    def put(self, item: str) -> str:\n        \"\"\"Put.\"\"\"\n        return item\n")
    with (folder / "bundle.yaml").open("a") as f:
        f.write("python:\n  classes: {Box: box:Box}\n  execution: bfcl\n")
    with pytest.raises(BundleError, match=r"python\.classes: .*execution: bfcl runs BFCL's own classes .*GorillaFileSystem"):
        load_agent(folder, client=ScriptedClient([]))
