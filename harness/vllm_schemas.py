"""Which JSON schemas vLLM 0.32 refuses before decoding, as the harness's own copy of vLLM's rules.

vLLM checks a ``structured_outputs.json`` schema (the ``json_schema`` strategy; FunctionGemma's
``required`` array and named-function schema, which vLLM builds as JSON too) before compiling it:

- with ``--structured-outputs-config.backend xgrammar`` (what the harness starts vLLM with),
  ``validate_xgrammar_grammar`` answers 400 "The provided JSON schema contains features not supported
  by xgrammar." for every schema its ``has_xgrammar_unsupported_json_features``
  (``vllm/v1/structured_output/backend_xgrammar.py``) flags. :func:`xgrammar_unsupported` is that
  function, walked the same way (every dict value and every dict in a list, whatever its key), and it
  says which feature and where;
- with ``guidance`` vLLM hands the schema to llguidance and refuses none of these;
- with ``auto`` (vLLM's default, which the harness never starts but a user's server may run) a schema
  xgrammar's check flags falls back to guidance, or to outlines when
  ``has_guidance_unsupported_json_features`` (``patternProperties``) flags it too.

A structural tag (Qwen's ``hermes`` tag under ``required`` and ``strict``) goes through none of these
checks: vLLM only compiles it, and xgrammar's converter then compiles the same keywords with the
lengths beside a ``format`` or ``pattern``, ``multipleOf`` and ``uniqueItems`` ignored.

Nothing here imports vLLM: ``tests/grammar/test_vllm_schemas.py`` checks the verdicts equal vLLM's own
functions where vLLM is installed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

Backend = Literal["xgrammar", "guidance", "auto"]
"""vLLM's ``--structured-outputs-config.backend`` values the harness models."""

STRING_SUPPORTED_FORMATS: frozenset[str] = frozenset({
    "email", "date", "time", "date-time", "duration", "ipv4", "ipv6", "hostname", "uuid", "uri",
    "uri-reference", "uri-template", "json-pointer", "relative-json-pointer",
})
"""The string formats vLLM 0.32 lets through to xgrammar (its ``STRING_SUPPORTED_FORMATS``)."""

XGRAMMAR_REFUSAL = "The provided JSON schema contains features not supported by xgrammar."
"""vLLM's message for a schema its check flags (the 400's text)."""

MAX_JSON_NESTING = 64
"""vLLM's ``MAX_STRUCTURED_OUTPUT_JSON_NESTING``: objects and arrays a JSON schema may nest."""


def _types(schema: dict[str, Any]) -> set[str]:
    kind = schema.get("type")
    if isinstance(kind, str):
        return {kind}
    if isinstance(kind, list):
        return {k for k in kind if isinstance(k, str)}
    return set()


def _bounded_text(schema: dict[str, Any]) -> bool:
    return ("pattern" in schema or "format" in schema) and ("minLength" in schema or "maxLength" in schema)


def _object_problem(obj: dict[str, Any]) -> str | None:
    """The first feature of ``obj`` itself (not its children) that vLLM's check flags, in its order."""
    kinds = _types(obj)
    if kinds & {"integer", "number"} and "multipleOf" in obj:
        return "multipleOf"
    if "array" in kinds:
        for key in ("uniqueItems", "contains", "minContains", "maxContains"):
            if key in obj:
                return key
    if "string" in kinds and "format" in obj and obj["format"] not in STRING_SUPPORTED_FORMATS:
        return f"format {obj['format']!r} (not among the formats vLLM passes to xgrammar)"
    if "string" in kinds and _bounded_text(obj):
        return "minLength/maxLength beside " + ("a pattern" if "pattern" in obj else "a format")
    if "object" in kinds and "propertyNames" in obj:
        names = obj.get("propertyNames")
        if isinstance(names, dict) and _bounded_text(names):
            return "propertyNames with a pattern or format and lengths"
        for key in ("patternProperties", "properties"):
            if key in obj:
                return f"propertyNames beside {key}"
        if obj.get("unevaluatedProperties", True) is not True:
            return "propertyNames beside unevaluatedProperties"
    if "object" in kinds and isinstance(obj.get("patternProperties"), dict):
        if "properties" in obj:
            return "patternProperties beside properties"
        if len(obj["patternProperties"]) > 1:
            return "more than one patternProperties"
    all_of = obj.get("allOf")
    if isinstance(all_of, list) and len(all_of) >= 2:
        return "allOf with more than one schema"
    return None


_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
"""Keys whose value maps names to schemas: a place inside is named ``where.name``, as the harness's
other refusals name it (``parameters.tags``, not ``parameters.properties.tags``)."""


def _children(obj: dict[str, Any], where: str) -> Iterator[tuple[dict[str, Any], str]]:
    """Every dict vLLM's walk visits below ``obj``: dict values and dicts in list values, any key."""
    for key, value in obj.items():
        if isinstance(value, dict):
            yield value, where if key in _MAPS else f"{where}.{key}"
        elif isinstance(value, list):
            for i, item in enumerate(value):
                if isinstance(item, dict):
                    yield item, f"{where}.{key}[{i}]"


def xgrammar_unsupported(schema: Any, where: str = "parameters") -> str | None:
    """``where: feature`` for the first feature of ``schema`` vLLM's xgrammar check flags (depth first,
    as vLLM walks it), None when vLLM passes the schema to xgrammar."""
    if not isinstance(schema, dict):
        return None
    stack = [(schema, where)]
    while stack:  # depth first, children in order: the walk vLLM's recursion makes
        obj, at = stack.pop()
        if (found := _object_problem(obj)) is not None:
            return f"{at}: {found}"
        stack.extend(reversed(list(_children(obj, at))))
    return None


def guidance_unsupported(schema: Any, where: str = "parameters") -> str | None:
    """``where: patternProperties`` where vLLM's ``has_guidance_unsupported_json_features`` flags
    ``schema`` (its ``auto`` mode then falls back to outlines), None otherwise."""
    if not isinstance(schema, dict):
        return None
    stack = [(schema, where)]
    while stack:
        obj, at = stack.pop()
        if "patternProperties" in obj:
            return f"{at}: patternProperties"
        stack.extend(reversed(list(_children(obj, at))))
    return None


def exceeds_nesting(spec: Any, limit: int = MAX_JSON_NESTING) -> bool:
    """Whether ``spec`` nests objects and arrays deeper than ``limit`` (vLLM's ``_exceeds_json_nesting``)."""
    level = [spec]
    for _ in range(limit):
        level = [child for node in level if isinstance(node, dict | list)
                 for child in (node.values() if isinstance(node, dict) else node) if isinstance(child, dict | list)]
        if not level:
            return False
    return True


def lane_refusal(family: str, strategy: str, schema: Any, backend: Backend = "xgrammar") -> str | None:
    """vLLM's refusal of a tool's ``schema`` in a lane whose constraint vLLM checks as a JSON schema
    (``json_schema`` in both families; FunctionGemma's ``required``, a JSON array of the tools), None
    where vLLM takes it. Qwen's ``required``/``strict`` are a structural tag vLLM does not check."""
    if strategy == "json_schema" or (family, strategy) == ("function_gemma", "required"):
        verdict = json_schema_verdict(schema, backend)
        return verdict.reason if verdict.refused else None
    return None


def json_text_refusal(text: str, backend: Backend = "xgrammar") -> str | None:
    """vLLM's 400 for a ``structured_outputs.json`` text under ``backend``, None where vLLM passes it on
    (text that is not JSON is left to the compiler, which names what is wrong)."""
    try:
        schema = json.loads(text)
    except ValueError:
        return None
    verdict = json_schema_verdict(schema, backend, "schema")
    return verdict.reason if verdict.refused else None


@dataclass(frozen=True, slots=True)
class JsonVerdict:
    """What vLLM does with a JSON schema under one backend."""

    runs_on: str | None
    """The backend that decodes it (``xgrammar``, ``guidance``, ``outlines``); None: refused (400)."""
    reason: str | None = None
    """Refused: vLLM's message and the feature it flags, with its place. Fallen back (``auto``): why."""

    @property
    def refused(self) -> bool:
        return self.runs_on is None


def json_schema_verdict(schema: Any, backend: Backend = "xgrammar", where: str = "parameters") -> JsonVerdict:
    """What vLLM 0.32 started with ``backend`` does with ``schema`` as ``structured_outputs.json``
    (before xgrammar or llguidance compile it, which may still fail on their own); ``where`` names
    the schema's root in the reason."""
    if exceeds_nesting(schema):
        return JsonVerdict(None, f"{where}: nested too deeply (more than {MAX_JSON_NESTING} levels): vLLM answers 400")
    flagged = xgrammar_unsupported(schema, where)
    if backend == "guidance" or flagged is None:
        return JsonVerdict(backend if backend != "auto" else "xgrammar")
    if backend == "xgrammar":
        return JsonVerdict(None, f"{flagged}: vLLM (backend xgrammar) answers 400: {XGRAMMAR_REFUSAL}")
    if (also := guidance_unsupported(schema, where)) is not None:
        return JsonVerdict("outlines", f"auto: xgrammar's check flags {flagged}, guidance's {also}")
    return JsonVerdict("guidance", f"auto: xgrammar's check flags {flagged}")


__all__ = [
    "MAX_JSON_NESTING",
    "STRING_SUPPORTED_FORMATS",
    "XGRAMMAR_REFUSAL",
    "Backend",
    "JsonVerdict",
    "exceeds_nesting",
    "guidance_unsupported",
    "json_schema_verdict",
    "json_text_refusal",
    "lane_refusal",
    "xgrammar_unsupported",
]
