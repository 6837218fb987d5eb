"""Reading a constraint out of a chat-completions request, with vLLM's field names and types.

vLLM (v0.12+) takes ``structured_outputs`` (its ``StructuredOutputsParams``) with exactly one of
``json`` (str | dict), ``regex`` (str), ``choice`` (list[str]), ``grammar`` (str), ``json_object``
(bool) and ``structural_tag`` (str: a JSON text), plus options (``disable_fallback``,
``disable_any_whitespace``, ``disable_additional_properties``, ``whitespace_pattern``); and
``response_format`` of type ``text``, ``json_object``, ``json_schema`` (``{"json_schema": {"name",
"schema", ...}}``) or ``structural_tag`` (the newer ``{"format": {...}}`` and the legacy
``{"structures": [{"begin", "schema", "end"}], "triggers": [...]}``).

vLLM ignores unknown fields with a warning (a misspelled constraint fails open). Here an unknown
``structured_outputs`` key, a removed ``guided_*`` field, two constraints at once, a wrong type or an
unknown ``response_format`` type raise :class:`ConstraintError` (the server answers 400).

Every result is one of the three artifact kinds: ``choice`` and ``regex`` become EBNF grammars,
``json_object`` the schema ``{"type": "object"}``, ``response_format`` structural tags their JSON text
(``json.dumps`` of the whole object, as vLLM does).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from harness.agents import ConstraintArtifact, ConstraintError
from harness.files import InputFileError, TooDeep, load_json
from harness.grammar.families import ebnf_literal

CONSTRAINT_FIELDS: tuple[str, ...] = ("json", "regex", "choice", "grammar", "json_object", "structural_tag")
"""The constraint fields of vLLM's ``StructuredOutputsParams`` (exactly one may be set)."""
OPTION_FIELDS: dict[str, tuple[type, ...]] = {
    "disable_fallback": (bool,),
    "disable_any_whitespace": (bool,),
    "disable_additional_properties": (bool,),
    "whitespace_pattern": (str,),
}
"""Non-constraint options vLLM accepts next to them (None is always allowed)."""
_REMOVED = (
    "guided_json",
    "guided_regex",
    "guided_choice",
    "guided_grammar",
    "guided_json_object",
    "guided_decoding_backend",
    "guided_whitespace_pattern",
)
RESPONSE_FORMAT_TYPES = ("text", "json_object", "json_schema", "structural_tag")


def constraint_from_request(
    extra_body: Mapping[str, Any] | None, response_format: Mapping[str, Any] | None = None
) -> ConstraintArtifact | None:
    """The one constraint a request asks for, or None. See the module doc for the rules."""
    found: list[tuple[str, ConstraintArtifact]] = []
    body = extra_body or {}
    removed = [k for k in body if k in _REMOVED]
    if removed:
        raise ConstraintError(
            f"{', '.join(removed)}: removed from vLLM in v0.12; use structured_outputs "
            "(json, regex, choice, grammar, json_object, structural_tag)"
        )
    so = body.get("structured_outputs")
    if so is not None:
        found.extend(_from_structured_outputs(so))
    if response_format is not None:
        art = _from_response_format(response_format)
        if art is not None:
            found.append((f"response_format.{response_format.get('type')}", art))
    if len(found) > 1:
        raise ConstraintError(
            "only one kind of structured outputs constraint may be given, got: "
            + ", ".join(n for n, _ in found)
        )
    return found[0][1] if found else None


def _from_structured_outputs(so: Any) -> list[tuple[str, ConstraintArtifact]]:
    if not isinstance(so, Mapping):
        raise ConstraintError(f"structured_outputs must be an object, got {type(so).__name__}")
    unknown = [k for k in so if k not in CONSTRAINT_FIELDS and k not in OPTION_FIELDS]
    if unknown:
        raise ConstraintError(
            f"unknown structured_outputs field(s) {', '.join(map(repr, unknown))}: expected one of "
            f"{', '.join(CONSTRAINT_FIELDS)} and options {', '.join(OPTION_FIELDS)}"
        )
    for name, types in OPTION_FIELDS.items():
        value = so.get(name)
        if value is not None and not isinstance(value, types):
            raise ConstraintError(
                f"structured_outputs.{name} must be {types[0].__name__}, got {type(value).__name__}"
            )
    present = [k for k in CONSTRAINT_FIELDS if so.get(k) is not None]
    if not present:
        raise ConstraintError(
            f"structured_outputs names no constraint: set exactly one of {', '.join(CONSTRAINT_FIELDS)}"
        )
    out = []
    for name in present:
        out.append((f"structured_outputs.{name}", _artifact(name, so[name])))
    return out


def _artifact(name: str, value: Any) -> ConstraintArtifact:
    where = f"structured_outputs.{name}"
    if name == "json":
        if isinstance(value, dict):
            return ConstraintArtifact("json", json.dumps(value))
        if isinstance(value, str):
            _json_text(value, where)
            return ConstraintArtifact("json", value)
        raise ConstraintError(f"{where} must be a JSON schema object or its text, got {type(value).__name__}")
    if name == "grammar":
        if not isinstance(value, str):
            raise ConstraintError(f"{where} must be an EBNF string, got {type(value).__name__}")
        return ConstraintArtifact("grammar", value)
    if name == "structural_tag":
        if not isinstance(value, str):
            raise ConstraintError(
                f"{where} must be a string (the tag as JSON text; vLLM's field is a str), got {type(value).__name__}"
            )
        if not isinstance(_json_text(value, where), dict):
            raise ConstraintError(f"{where} must be the JSON text of an object")
        return ConstraintArtifact("structural_tag", value)
    if name == "json_object":
        if value is not True:
            raise ConstraintError(f"{where} must be true when given, got {value!r}")
        return ConstraintArtifact("json", json.dumps({"type": "object"}))
    if name == "choice":
        if not isinstance(value, list) or not value or not all(isinstance(c, str) for c in value):
            raise ConstraintError(f"{where} must be a non-empty list of strings")
        return ConstraintArtifact("grammar", choice_grammar(value))
    if name == "regex":
        if not isinstance(value, str):
            raise ConstraintError(f"{where} must be a string, got {type(value).__name__}")
        return ConstraintArtifact("grammar", regex_grammar(value))
    raise ConstraintError(f"unknown constraint {name!r}")  # pragma: no cover - guarded above


def _json_text(text: str, where: str) -> Any:
    """The JSON value of a constraint sent as text; ConstraintError when it is not JSON or nests deeper
    than ``MAX_JSON_DEPTH`` (parsing deeper text would exhaust Python's stack: a RecursionError)."""
    try:
        return load_json(text, where)
    except InputFileError as exc:
        raise ConstraintError(f"{where} is not valid JSON: {exc.reason}" if not isinstance(exc, TooDeep)
                              else str(exc)) from None


def _from_response_format(rf: Any) -> ConstraintArtifact | None:
    if not isinstance(rf, Mapping):
        raise ConstraintError(f"response_format must be an object, got {type(rf).__name__}")
    kind = rf.get("type")
    if kind not in RESPONSE_FORMAT_TYPES:
        raise ConstraintError(
            f"response_format.type {kind!r} is not one of {', '.join(RESPONSE_FORMAT_TYPES)}"
        )
    if kind == "text":
        return None
    if kind == "json_object":
        return ConstraintArtifact("json", json.dumps({"type": "object"}))
    if kind == "json_schema":
        js = rf.get("json_schema")
        if not isinstance(js, Mapping) or not isinstance(js.get("name"), str):
            raise ConstraintError(
                'response_format json_schema needs {"json_schema": {"name": str, "schema": {...}}}'
            )
        schema = js.get("schema")
        if not isinstance(schema, dict):
            raise ConstraintError("response_format.json_schema.schema must be a JSON schema object")
        return ConstraintArtifact("json", json.dumps(schema))
    # structural_tag: the newer {"format": ...} or the legacy {"structures": [...], "triggers": [...]}
    if "format" in rf:
        if not isinstance(rf["format"], Mapping):
            raise ConstraintError("response_format.format must be an object")
        return ConstraintArtifact("structural_tag", json.dumps(dict(rf)))
    structures, triggers = rf.get("structures"), rf.get("triggers")
    if not isinstance(structures, list) or not isinstance(triggers, list):
        raise ConstraintError(
            'response_format structural_tag needs "format", or legacy "structures" and "triggers" lists'
        )
    for s in structures:
        if (
            not isinstance(s, Mapping)
            or not isinstance(s.get("begin"), str)
            or not isinstance(s.get("end"), str)
        ):
            raise ConstraintError("each structural_tag structure needs string begin and end (and a schema)")
    if not all(isinstance(t, str) for t in triggers):
        raise ConstraintError("structural_tag triggers must be strings")
    return ConstraintArtifact("structural_tag", json.dumps(dict(rf)))


def choice_grammar(choices: list[str]) -> str:
    """vLLM's ``choice``: the output is exactly one of the strings."""
    return "root ::= " + " | ".join(ebnf_literal(c) for c in choices) + "\n"


def regex_grammar(pattern: str) -> str:
    """vLLM's ``regex`` as EBNF (xgrammar converts the regex; imported only for this)."""
    try:
        import xgrammar as xgr

        return str(xgr.Grammar.from_regex(pattern))
    except ImportError as exc:  # pragma: no cover - xgrammar is part of harness[grammar]
        raise ConstraintError(f"regex constraints need xgrammar: {exc}") from exc
    except Exception as exc:
        raise ConstraintError(f"structured_outputs.regex is not a regex xgrammar accepts: {exc}") from exc
