"""A bundle's tools, through the sandbox: ``tools_dir``, ``limits`` and the per-tool overrides.

``load_bundle_tools`` is the kernel's ``ToolLoader`` for sandboxed ``.pym`` tools. Limits are checked
by the sandbox's own ``Limits`` model, so a typo in a limit key is reported with its field path
(``limits.max_mmeory``, ``tools[0].limits.wall_clock``). A per-tool override given as a preset name
replaces the bundle's limits for that tool; given as limit keys, it sets those keys over the bundle's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from harness.agents import BundleConfig, BundleError, field_path, validation_problems
from harness.sandbox.errors import SandboxError
from harness.sandbox.runtime.script_limits import Limits
from harness.sandbox.tool import PymTool, discover_tools


def _limits(spec: Any, base: Limits | None, loc: tuple[int | str, ...], problems: list[str]) -> Limits | None:
    try:
        if isinstance(spec, dict) and base is not None:
            return base.merge(Limits(**spec))
        return Limits.coerce(spec)
    except ValidationError as exc:
        problems += validation_problems(exc, loc, model=Limits)
    except (ValueError, TypeError) as exc:
        problems.append(f"{field_path(loc)}: {exc}")
    return None


def bundle_limits(file: Path, config: BundleConfig) -> tuple[Limits, dict[str, Limits]]:
    """The bundle's limits and each overridden tool's; BundleError lists every bad limit."""
    problems: list[str] = []
    base = _limits(config.limits, None, ("limits",), problems)
    per_tool: dict[str, Limits] = {}
    for n, override in enumerate(config.tools):
        if override.limits is not None:
            limits = _limits(override.limits, base, ("tools", n, "limits"), problems)
            if limits is not None:
                per_tool[override.name] = limits
    if problems or base is None:
        raise BundleError(file, problems)
    return base, per_tool


def load_bundle_tools(file: Path, config: BundleConfig) -> list[PymTool]:
    """The ``.pym`` tools of the bundle whose ``bundle.yaml`` is ``file``, sorted by name, each with
    its limits. A script that does not load or check, or an override naming no tool, is a BundleError."""
    base, per_tool = bundle_limits(file, config)
    folder = file.parent / config.tools_dir
    if not folder.is_dir():
        if config.tools:
            raise BundleError(file, [f"tools: overrides given but tools_dir {str(folder)!r} does not exist"])
        return []
    try:
        tools = discover_tools(folder, limits=base)
    except SandboxError as exc:  # a broken tool set is not run
        raise BundleError(file, [f"tools_dir: {exc}"]) from exc
    names = {t.name for t in tools}
    unknown = [f"tools[{n}].name: no tool named {o.name!r} in {folder}" for n, o in enumerate(config.tools)
               if o.name not in names]
    if unknown:
        raise BundleError(file, unknown)
    return [PymTool(t.script, limits=per_tool[t.name]) if t.name in per_tool else t for t in tools]


__all__ = ["bundle_limits", "load_bundle_tools"]
