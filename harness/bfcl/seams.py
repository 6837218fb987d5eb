"""BFCL's small seams of ``harness.benchmarks``: what ``harness validate`` checks of BFCL's own ground truth
(``truth_problems``) and BFCL's tool corpus (``corpus``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from harness.agents import ToolSchema
from harness.bfcl.multi_import import CallSyntaxError, parse_python_call
from harness.eval.data import EpisodeCase


def truth_problems(case: EpisodeCase, tools: Mapping[str, ToolSchema | None],
                   unknown_tool: Callable[[str], str]) -> list[tuple[str, str]]:
    """Each ``bfcl_ground_truth`` string that is not a call of a known tool with literal arguments. BFCL's
    checker runs these strings; the worker reads them with ``ast`` and runs only such calls, so any
    other string is a mistake in the suite (or code smuggled into it), refused before a run."""
    order = {name: list((schema.parameters.get("properties") or {}) if schema is not None else ())
             for name, schema in tools.items()}
    out: list[tuple[str, str]] = []
    for t, turn in enumerate(case.bfcl_ground_truth or []):
        for k, text in enumerate(turn):
            said = f"case {case.id!r}, turn {t}: {text[:200]!r} is not a call of a known function with literal arguments"
            try:
                call = parse_python_call(text, order)
            except CallSyntaxError as exc:
                out.append((f"bfcl_ground_truth[{t}][{k}]", f"{said} ({exc})"))
                continue
            if call.name not in tools:
                out.append((f"bfcl_ground_truth[{t}][{k}]", f"{said} ({unknown_tool(call.name)})"))
    return out


def corpus() -> list[dict[str, Any]]:
    """BFCL's distinct single-turn tools as OpenAI tool dicts (converted as BFCL converts them), for
    ``harness fuzz --tools bfcl`` and ``harness bench grammar --growth-tools bfcl``. ImportError saying
    what to install when BFCL's package is missing."""
    try:
        from harness.bfcl.data import distinct_tools

        return distinct_tools()
    except ImportError as exc:
        raise ImportError(f"BFCL's package is not installed ({exc}): pip install --no-deps bfcl-eval") from None


__all__ = ["corpus", "truth_problems"]
