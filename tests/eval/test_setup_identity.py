"""The setup identity run.json records (issue 23, item 4): what determines the scores, digested, with
the run-to-run noise of a command line (host, port, paths) left out."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.eval.run.setup_identity import folder_digest, server_arguments
from harness.eval.store.gate_records import (
    SetupIdentity,
    identity_with_digest,
    setup_differences,
    setup_fields,
)

VLLM = ["/usr/bin/python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "/cache/hf/gemma-abc",
        "--served-model-name", "gemma", "--host", "127.0.0.1", "--port", "41234", "--dtype", "bfloat16",
        "--chat-template", "/site/harness/templates/functiongemma.jinja", "--enforce-eager"]

# (command, what the identity keeps): ports, hosts and paths change from run to run, answers do not.
COMMANDS = [
    (VLLM, "vllm.entrypoints.openai.api_server --model <weights> --served-model-name gemma --dtype bfloat16 "
           "--chat-template <chat template> --enforce-eager"),
    ([*VLLM[:9], "--port", "5"], "vllm.entrypoints.openai.api_server --model <weights> --served-model-name gemma"),
]


@pytest.mark.parametrize(("command", "kept"), COMMANDS)
def test_server_arguments_keep_what_shapes_answers(command: list[str], kept: str) -> None:
    assert server_arguments(command) == kept


def test_a_changed_weights_file_changes_the_folder_digest(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    (tmp_path / "model.safetensors").write_bytes(b"\0" * (3 << 20))
    (tmp_path / "server.log").write_text("noise")
    before = folder_digest(tmp_path)
    (tmp_path / "server.log").write_text("other noise")
    assert folder_digest(tmp_path) == before  # logs are not weights
    (tmp_path / "model.safetensors").write_bytes(b"\0" * (3 << 20) + b"\1")
    assert folder_digest(tmp_path) != before
    assert folder_digest(tmp_path / "nowhere") is None


def _identity(**changes: object) -> SetupIdentity:
    fields = {"engine": "local", "models": {"function_gemma": "m"}, "weights": {"function_gemma": "sha256:1"},
              "servers": {"function_gemma": None}, "chat_templates": {"function_gemma": None},
              "grammar_library": "xgrammar 0.2.8", "max_tokens": 80, "max_steps_per_turn": 8, "suite": "smoke v1",
              "suite_digest": "sha256:2", "temperature": 1.0, "top_p": 1.0}
    return identity_with_digest(**{**fields, **changes})


def test_differences_are_named_field_by_field() -> None:
    a, b = _identity(), _identity(max_tokens=8, weights={"function_gemma": "sha256:9"})
    assert a.digest != b.digest and _identity().digest == a.digest
    assert setup_differences(setup_fields(a), setup_fields(b)) == [
        "weights[function_gemma]: baseline 'sha256:1', candidate 'sha256:9'", "max_tokens: baseline 80, candidate 8"]
