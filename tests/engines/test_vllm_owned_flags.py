"""The vLLM flags the harness owns (``harness.engines.vllm.flags``): every spelling vLLM's parser reads as
one of them (a prefix, ``_`` for ``-``, ``--flag=value``, a JSON flag's keys, a bare word, ``--config``)
is refused with exit 2 before anything starts, in ``harness run --engine vllm --vllm-arg``, ``--config``'s
``server.vllm_args`` and ``harness vllm up --vllm-arg``; flags left to the user pass. Decided on the
installed vLLM's option table (read once into the user cache) and, where vLLM is not importable, by the
rule alone; a FAKE ``vllm`` package (a test stand-in) checks how the table is read and cached. No vLLM
server starts; the test against vLLM's own parser is ``slow`` (it imports vLLM, ~10-30 s)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.cli.main import app
from harness.engines.vllm import flags
from harness.eval.run.config_file import ConfigError, load_config_file, split_vllm_args

runner = CliRunner()

REFUSED = [  # (--vllm-arg value, the flag named; every one caught by the rule as well as by vLLM's table)
    ("--hos 0.0.0.0", "--host"),
    ("--ho=0.0.0.0", "--host"),
    ("--host=0.0.0.0", "--host"),
    ("--por 8001", "--port"),
    ("--port=9", "--port"),
    ("--served-model other", "--served-model-name"),
    ("--served_model_name other", "--served-model-name"),
    ("--served-model-name=a", "--served-model-name"),
    ("--mod /etc", "--model"),
    ("--model=/etc", "--model"),
    ("--chat_template /tmp/t.jinja", "--chat-template"),
    ("--tool-call-p pythonic", "--tool-call-parser"),
    ("--no-enable-auto-tool-choice", "--enable-auto-tool-choice"),
    ("--structured-outputs-config.backend guidance", "--structured-outputs-config.backend"),
    ("--structured_outputs_config.disable_any_whitespace=false", "--structured-outputs-config.disable_any_whitespace"),
    ("--structured-outputs.reasoning_parser x", "--structured-outputs-config"),
    ("--structured-outputs-config '{\"backend\": \"guidance\"}'", "--structured-outputs-config"),
    ("--conf run.yaml", "--config"),
    ("--uds /tmp/vllm.sock", "--uds"),
]
TABLE_ONLY = [  # what only vLLM's table knows: a bare word is its positional model
    ("--enforce-eager /etc", "the model"),
    ("-- /etc", "the model"),
]
HARMLESS = [
    "--max-num-seqs 8", "--dtype float32", "--max-model-len 8192", "--max_num_seqs=8", "--enforce-eager",
    "--generation-config auto", "--tensor-parallel-size=2", "-tp 2", "--chat-template-content-format openai",
    "--model-impl transformers", "--structured-outputs-config.reasoning_parser qwen3", "-O3",
]


@pytest.fixture(scope="module")
def vllm_table() -> flags.OptionTable:
    """The installed vLLM's option table (from the user cache; read once per vLLM install)."""
    table = flags.vllm_options()
    if table is None:
        pytest.skip("vLLM is not importable here: the rule decides (tested on its own)")
    return table


@pytest.fixture(params=["vllm", "rule"])
def table(request: pytest.FixtureRequest) -> flags.OptionTable | None:
    return request.getfixturevalue("vllm_table") if request.param == "vllm" else None


@pytest.mark.parametrize(("value", "flag"), REFUSED)
def test_every_spelling_of_an_owned_flag_is_refused(table: flags.OptionTable | None, value: str, flag: str) -> None:
    found = flags.owned_flag([(value, shlex.split(value))], table)
    assert found is not None and found[0] == value and f"vLLM reads it as {flag}" in found[1]


@pytest.mark.parametrize(("value", "flag"), TABLE_ONLY)
def test_a_bare_word_is_the_model_to_vllms_parser(vllm_table: flags.OptionTable, value: str, flag: str) -> None:
    found = flags.owned_flag([(value, shlex.split(value))], vllm_table)
    assert found is not None and f"vLLM reads it as {flag}" in found[1]


@pytest.mark.parametrize("value", HARMLESS)
def test_flags_left_to_the_user_pass(table: flags.OptionTable | None, value: str) -> None:
    assert flags.owned_flag([(value, shlex.split(value))], table) is None


def test_a_flag_and_its_value_in_two_values_are_read_together(table: flags.OptionTable | None) -> None:
    given = [("--max-model-len 8192", ["--max-model-len", "8192"]), ("--port", ["--port"]), ("9", ["9"])]
    found = flags.owned_flag(given, table)
    assert found is not None and found[0] == "--port" and "vLLM reads it as --port" in found[1]
    split = [("--chat-template-content-format", ["--chat-template-content-format"]), ("openai", ["openai"])]
    assert flags.owned_flag(split, table) is None


def test_split_vllm_args_names_the_value_and_the_flag() -> None:
    assert split_vllm_args(["--max-num-seqs 8", "--dtype float32"]) == ["--max-num-seqs", "8", "--dtype", "float32"]
    with pytest.raises(ConfigError, match=r"^--vllm-arg '--hos 0.0.0.0': vLLM reads it as --host; --host is set by"):
        split_vllm_args(["--max-num-seqs 8", "--hos 0.0.0.0"])


# -- the CLI: exit 2 before anything starts --------------------------------------------------------------

def _refused(result: object, value: str, flag: str) -> None:
    assert result.exit_code == 2, result.output  # type: ignore[attr-defined]
    err = result.stderr  # type: ignore[attr-defined]
    assert "Traceback" not in result.output and repr(value) in err and f"vLLM reads it as {flag}" in err, err  # type: ignore[attr-defined]


@pytest.mark.parametrize(("value", "flag"), REFUSED)
def test_run_vllm_arg_refuses_it(tmp_path: Path, value: str, flag: str) -> None:
    result = runner.invoke(app, ["run", "smoke", "--engine", "vllm", "--out", str(tmp_path / "r"), "--vllm-arg", value])
    _refused(result, value, flag)
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize(("value", "flag"), REFUSED)
def test_a_config_files_server_vllm_args_refuses_it(tmp_path: Path, value: str, flag: str) -> None:
    (tmp_path / "run.yaml").write_text(f"server:\n  vllm_args: {json.dumps(['--max-num-seqs 8', value])}\n")
    result = runner.invoke(app, ["run", "smoke", "--engine", "vllm", "--out", str(tmp_path / "r"),
                                 "--config", str(tmp_path / "run.yaml")])
    _refused(result, value, flag)
    assert "run.yaml: server.vllm_args" in result.stderr


@pytest.mark.parametrize(("value", "flag"), REFUSED)
def test_vllm_up_refuses_it(value: str, flag: str) -> None:
    _refused(runner.invoke(app, ["vllm", "up", "--vllm-arg", value]), value, flag)


@pytest.mark.parametrize("command", ["run", "up"])
def test_harmless_flags_pass_the_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str) -> None:
    """They get past the check, to where vLLM would start (stopped there: 'not here')."""
    import harness.engines.vllm as package
    from harness.engines.vllm import launch

    assert package.vllm_unavailable is launch.vllm_unavailable  # loaded: the face keeps what it loaded
    for module in (package, launch):
        monkeypatch.setattr(module, "vllm_unavailable", lambda: "not here (test)")
    values = [a for v in HARMLESS[:4] for a in ("--vllm-arg", v)]
    args = (["run", "smoke", "--engine", "vllm", "--out", str(tmp_path / "r"), *values] if command == "run"
            else ["vllm", "up", *values])
    result = runner.invoke(app, args)
    assert "not here (test)" in result.stderr and "vLLM reads it as" not in result.stderr, result.output


def test_a_vllm_server_built_in_code_is_refused_too(tmp_path: Path) -> None:
    from harness.engines.vllm.launch import VllmError, launch_plan_here

    with pytest.raises(VllmError, match="--vllm-arg '--hos': vLLM reads it as --host"):
        launch_plan_here(("--max-num-seqs", "8", "--hos", "0.0.0.0"))


# -- the installed vLLM's table: read in a child process, cached -----------------------------------------

FAKE_VLLM_PACKAGE = {  # a FAKE vllm package (a test stand-in): --host has a short alias vLLM 0.32 lacks
    "vllm/__init__.py": "",
    "vllm/utils/__init__.py": "from argparse import ArgumentParser as FlexibleArgumentParser\n",
    "vllm/entrypoints/__init__.py": "",
    "vllm/entrypoints/openai/__init__.py": "",
    "vllm/entrypoints/openai/cli_args.py": textwrap.dedent("""\
        def make_arg_parser(parser):
            parser.add_argument("model_tag", nargs="?")
            parser.add_argument("--host", "-H")
            parser.add_argument("--port", type=int)
            parser.add_argument("--max-num-seqs", type=int)
            return parser
        """),
}


@pytest.fixture
def fake_vllm(tmp_path: Path) -> dict[str, str]:
    """An environment whose Python imports the fake ``vllm`` package."""
    for name, text in FAKE_VLLM_PACKAGE.items():
        (tmp_path / "fake" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "fake" / name).write_text(text)
    return {**os.environ, "PYTHONPATH": str(tmp_path / "fake")}


def test_the_table_is_read_from_the_installed_vllms_parser(fake_vllm: dict[str, str]) -> None:
    data = flags.read_table(fake_vllm)
    assert data is not None and data["source"] == "vllm.entrypoints.openai.cli_args"
    table = flags.OptionTable.from_json(data)
    assert (("--host", "-H"), "host", None) in table.options
    assert flags.owned_flags(["-H", "0.0.0.0"], table) and not flags.owned_flags(["-H", "0.0.0.0"], None)
    assert flags.owned_flags(["--max", "8"], table) == []


def test_a_vllm_that_cannot_be_read_leaves_the_rule(fake_vllm: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "fake" / "vllm" / "__init__.py").write_text("raise ImportError('broken (test)')\n")
    assert flags.read_table(fake_vllm) is None


@pytest.fixture
def fresh_cache() -> Iterator[None]:
    flags.vllm_options.cache_clear()
    yield
    flags.vllm_options.cache_clear()


def test_the_table_is_read_once_and_then_comes_from_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              fake_vllm: dict[str, str], fresh_cache: None) -> None:
    reads: list[int] = []
    real_read = flags.read_table

    def read() -> dict | None:
        reads.append(1)
        return real_read(fake_vllm)

    monkeypatch.setattr(flags, "_table_path", lambda: tmp_path / "cache" / "options.json")
    monkeypatch.setattr(flags, "read_table", read)
    first = flags.vllm_options()
    flags.vllm_options.cache_clear()
    assert first is not None and flags.vllm_options() == first and len(reads) == 1
    assert (tmp_path / "cache" / "options.json").exists()


def test_without_vllm_the_rule_decides(monkeypatch: pytest.MonkeyPatch, fresh_cache: None) -> None:
    monkeypatch.setattr(flags.importlib.util, "find_spec", lambda name: None)
    assert flags.vllm_options() is None
    with pytest.raises(ConfigError, match="vLLM reads it as --host"):
        split_vllm_args(["--hos 0.0.0.0"])


def test_a_config_file_is_checked_when_it_is_read(tmp_path: Path) -> None:
    (tmp_path / "run.yaml").write_text("server:\n  vllm_args: ['--max-model-len 8192', '--por 8001']\n")
    with pytest.raises(ConfigError, match=r"run\.yaml: server\.vllm_args '--por 8001': vLLM reads it as --port"):
        load_config_file(tmp_path / "run.yaml")


# -- against vLLM's own parser ---------------------------------------------------------------------------

_TRUTH = r"""
import json, sys
from vllm.utils.argparse_utils import FlexibleArgumentParser
from vllm.entrypoints.launchers.cli_args import make_arg_parser
HARNESS = ["--model", "M", "--served-model-name", "S", "--host", "127.0.0.1", "--port", "8000",
           "--enable-auto-tool-choice", "--tool-call-parser", "hermes", "--chat-template", "T",
           "--structured-outputs-config.backend", "xgrammar", "--structured-outputs-config.disable_any_whitespace", "true"]
KEYS = ("model", "model_tag", "served_model_name", "host", "port", "uds", "config", "chat_template",
        "tool_call_parser", "enable_auto_tool_choice", "headless", "grpc")
def state(words):
    parser = make_arg_parser(FlexibleArgumentParser())
    def error(message):
        raise ValueError(message)
    parser.error = error
    try:
        ns = parser.parse_args(HARNESS + words)
    except Exception as exc:
        return "refused: " + str(exc).splitlines()[0]
    so = ns.structured_outputs_config
    return repr([getattr(ns, k, None) for k in KEYS] + [so.backend, so.disable_any_whitespace])
out = {"": state([])}
for words in json.loads(sys.stdin.read()):
    out[" ".join(words)] = state(words)
print(json.dumps(out))
"""


@pytest.mark.slow
def test_the_check_agrees_with_vllms_own_parser(vllm_table: flags.OptionTable) -> None:
    """What vLLM's parser, given the harness's flags and the user's, ends with: each value that changes
    an owned setting (or that vLLM would start with at all) is refused; each harmless one leaves them."""
    cases = [shlex.split(v) for v, _ in REFUSED + TABLE_ONLY] + [shlex.split(v) for v in HARMLESS]
    done = subprocess.run([sys.executable, "-c", _TRUTH], input=json.dumps(cases), capture_output=True, text=True,
                          timeout=600, check=True, env={**os.environ, "VLLM_LOGGING_LEVEL": "ERROR"})
    truth = json.loads(done.stdout.strip().splitlines()[-1])
    base = truth.pop("")
    moved_any = 0
    for words in cases:
        moved = not truth[" ".join(words)].startswith("refused") and truth[" ".join(words)] != base
        refused = bool(flags.owned_flags(words, vllm_table))
        moved_any += moved
        if moved:
            assert refused, f"{words}: vLLM ends with {truth[' '.join(words)]}, but the check lets it pass"
        if shlex.join(words) in {shlex.join(shlex.split(v)) for v in HARMLESS}:
            assert not refused and truth[" ".join(words)] == base, words
    assert moved_any >= len(REFUSED) // 2  # most spellings do move a setting in vLLM (the rest it refuses)
    # The JSON form is refused though vLLM starts with the harness's settings: it drops the user's value.
    assert truth['--structured-outputs-config {"backend": "guidance"}'] == base
