"""Running a loaded script: its limits (``script_limits``), the process-wide pydantic-monty pool
(``pool``), the read-only virtual files it sees (``vfs``) and one run with its host-side bounds and
errors (``execute``). pydantic-monty is imported by ``pool``, ``vfs`` and ``execute``: their names load
on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.lazy import lazy_exports
from harness.sandbox.runtime.script_limits import PRESETS, Limits, PresetName

if TYPE_CHECKING:
    from harness.sandbox.runtime.execute import run_script
    from harness.sandbox.runtime.pool import Abandoned, Job, SandboxPool, close_pool, get_pool
    from harness.sandbox.runtime.vfs import TreeOS

__getattr__, __dir__ = lazy_exports(__name__, {
    "run_script": "execute",
    "Abandoned": "pool",
    "Job": "pool",
    "SandboxPool": "pool",
    "close_pool": "pool",
    "get_pool": "pool",
    "TreeOS": "vfs",
})

__all__ = [
    "PRESETS",
    "Abandoned",
    "Job",
    "Limits",
    "PresetName",
    "SandboxPool",
    "TreeOS",
    "close_pool",
    "get_pool",
    "run_script",
]
