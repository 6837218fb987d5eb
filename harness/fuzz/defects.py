"""Defects of the grammar library that ``harness fuzz`` meets, as reproductions a user can send upstream.

The tool-level checks (``cell``) find a valid call rejected or an invalid one accepted; where the cell's
constraint comes from xgrammar's JSON-schema converter (``json_schema``, Qwen's ``structural_tag``), the
fault may be xgrammar's. This module asks xgrammar alone, with no tokenizer and none of the harness's
rendering: for every instance the cell checked (the drawn values and their mutants) and every place in
it, deepest first, the sub-schema there (``properties``, ``items``, ``prefixItems``) is converted by
``xgrammar.Grammar.from_json_schema`` as the harness converts it (compact separators; not in strict
mode: the harness's schemas close their objects explicitly, and a reduced schema must keep JSON
Schema's meaning), members in the canonical order the families write, and
the sub-instance's JSON text is matched against it character by character. Where xgrammar's verdict is
not the JSON-schema validator's (``jsonschema``, formats checked), the place is a defect of the library.

A defect is then made minimal: the keywords of the sub-schema that it does not need are dropped, and
the instance is shrunk (characters of a string, digits of a number, items, members) while xgrammar and
the validator still disagree. One reproduction per defect (its label, ``format:email``, ``minimum``...,
and its kind) is written under ``OUT/defects/<label>-<kind>/``: ``README.md`` (the schema, the
instance, what the validator says, what xgrammar did, the xgrammar version) and ``reproduce.py``, a
standalone script that needs xgrammar only (jsonschema, when installed, adds the validator's verdict):
it exits 1 while the defect is there and 0 once it is fixed.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from harness.fuzz.mutants import _get, _paths

Kind = Literal["rejects_valid", "accepts_invalid"]
SEPARATORS = (",", ":")
"""As the harness compiles JSON schemas (``harness.grammar`` compiles with compact separators)."""
MAX_INSTANCES = 400
"""Instances checked per tool (values first, then mutants)."""
SHRINK_TRIES = 300
"""Candidate reductions tried per defect."""
CONSTRAINING = ("format", "pattern", "minLength", "maxLength", "minimum", "maximum", "exclusiveMinimum",
                "exclusiveMaximum", "multipleOf", "minItems", "maxItems", "uniqueItems", "prefixItems",
                "minProperties", "maxProperties", "enum", "const", "anyOf", "oneOf", "allOf",
                "additionalProperties", "required", "properties", "items", "type")
"""Keywords in the order a defect's label names them: the most specific first."""


class Defect(BaseModel):
    """One disagreement of xgrammar's JSON-schema converter with the JSON-schema validator, minimal."""

    model_config = ConfigDict(frozen=True)

    label: str
    """The keyword involved (``format:<name>`` for a format)."""
    kind: Kind
    minimal_schema: dict[str, Any]
    instance: str
    """The instance's JSON text, as the grammar was asked to match it."""
    validator_says: str
    """``valid``, or the validator's message."""
    grammar_did: str
    """``accepted``, or where xgrammar stopped (``rejected at character 3 ('A')``)."""
    xgrammar_version: str
    tool: str
    path: str
    """Where in the tool's arguments the fuzz met it."""
    file: str | None = None

    @property
    def key(self) -> str:
        return f"{self.label}-{self.kind}"

    @property
    def title(self) -> str:
        what = "rejects a valid instance" if self.kind == "rejects_valid" else "accepts an invalid instance"
        return f"xgrammar's JSON-schema converter {what} ({self.label})"


def xgrammar_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("xgrammar")
    except PackageNotFoundError:
        return "?"


@functools.lru_cache(maxsize=1024)
def _grammar(schema_text: str) -> Any:
    import xgrammar as xgr

    try:
        return xgr.Grammar.from_json_schema(schema_text, any_whitespace=False, separators=SEPARATORS, strict_mode=False)
    except Exception:  # a sub-schema xgrammar refuses is no defect of matching: nothing to compare
        return None


def _matches(grammar: Any, text: str, *, whole: bool = True) -> bool:
    import xgrammar as xgr

    return bool(xgr.testing._is_grammar_accept_string(grammar, text, require_termination=whole))


def xgrammar_accepts(schema: Any, text: str) -> bool | None:
    """xgrammar's verdict on ``text`` under ``schema`` (None: the schema does not convert)."""
    grammar = _grammar(json.dumps(schema))
    return None if grammar is None else _matches(grammar, text)


def rejected_at(schema: Any, text: str) -> str:
    """What xgrammar did with a text it rejects: the first character no longer matched, or the end."""
    grammar = _grammar(json.dumps(schema))
    low, high = 0, len(text)  # the longest prefix xgrammar can still continue
    while low < high:
        mid = (low + high + 1) // 2
        if _matches(grammar, text[:mid], whole=False):
            low = mid
        else:
            high = mid - 1
    if low >= len(text):
        return "rejected at the end: the whole text is matched but the grammar cannot end there"
    return f"rejected at character {low} ({text[low]!r}): the text before it is matched"


def subschema_at(schema: Any, path: Sequence[Any]) -> Any:
    """The schema that governs ``path`` of an instance of ``schema`` (None where a combinator or a
    reference makes it ambiguous, or where nothing governs it)."""
    for step in path:
        if not isinstance(schema, Mapping) or any(k in schema for k in ("$ref", "anyOf", "oneOf", "allOf", "not")):
            return None
        if isinstance(step, str):
            props = schema.get("properties")
            if isinstance(props, Mapping) and step in props:
                schema = props[step]
            else:
                schema = schema.get("additionalProperties")
        else:
            prefix = schema.get("prefixItems")
            schema = prefix[step] if isinstance(prefix, list) and step < len(prefix) else schema.get("items")
    if not isinstance(schema, Mapping) or "$ref" in json.dumps(schema):
        return None
    return dict(schema)


def _text(value: Any) -> str:
    """The JSON text of ``value`` as the families write it: compact, members in canonical order (the
    order the harness's schemas list properties in, which xgrammar enforces)."""
    from harness.grammar.families import canonical_value

    return json.dumps(canonical_value(value), ensure_ascii=False, separators=SEPARATORS)


def _disagrees(schema: dict[str, Any], value: Any) -> Kind | None:
    from harness.fuzz.values import validator

    try:
        valid = validator(schema).is_valid(value)
    except Exception:  # a reduced schema the validator cannot read
        return None
    accepted = xgrammar_accepts(schema, _text(value))
    if accepted is None or accepted == valid:
        return None
    return "rejects_valid" if valid else "accepts_invalid"


def _fewer_keywords(schema: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for key in schema:
        if key != "type":
            yield {k: v for k, v in schema.items() if k != key}
    props = schema.get("properties")
    if isinstance(props, dict):
        for name in props:
            yield {**schema, "properties": {k: v for k, v in props.items() if k != name},
                   "required": [r for r in schema.get("required", []) if r != name]}


def _smaller_values(value: Any) -> Iterator[Any]:
    if isinstance(value, str):
        for i in range(len(value)):
            yield value[:i] + value[i + 1:]
    elif isinstance(value, float):
        for digits in range(7):
            yield round(value, digits)
        if value == int(value):
            yield int(value)
    elif isinstance(value, list):
        for i in range(len(value)):
            yield value[:i] + value[i + 1:]
    elif isinstance(value, dict):
        for key in value:
            yield {k: v for k, v in value.items() if k != key}


def shrink(schema: dict[str, Any], value: Any, kind: Kind) -> tuple[dict[str, Any], Any]:
    """The smallest schema and instance (greedy, bounded) on which the same disagreement holds."""
    tries = 0
    progress = True
    while progress and tries < SHRINK_TRIES:
        progress = False
        for smaller in _fewer_keywords(schema):
            tries += 1
            if _disagrees(smaller, value) == kind:
                schema, progress = smaller, True
                break
        # A format's string is kept whole: validators check formats loosely (jsonschema calls any text
        # holding an "@" an email), and a reduced "@" would report the validator's leniency instead.
        for candidate in () if "format" in schema else _smaller_values(value):
            tries += 1
            if len(_text(candidate)) <= len(_text(value)) and candidate != value and _disagrees(schema, candidate) == kind:
                value, progress = candidate, True
                break
    return schema, value


def label_of(schema: Mapping[str, Any]) -> str:
    """The most specific keyword of ``schema`` (``format:<name>`` for a format a validator checks; an
    unknown format, Gorilla's ``float``, is an annotation and names nothing)."""
    from harness.fuzz.values import validator

    checked = validator(dict(schema)).FORMAT_CHECKER.checkers
    keyword = next((k for k in CONSTRAINING if k in schema and (k != "format" or schema[k] in checked)), "type")
    named = f"format:{schema['format']}" if keyword == "format" else keyword
    lengths = "+".join(k for k in ("minLength", "maxLength") if k in schema)
    if lengths and keyword in ("format", "pattern"):  # xgrammar drops the lengths beside a format or pattern
        return f"{lengths}+{named}"
    return named


def find_defects(tool: Any, strict: dict[str, Any], instances: Sequence[Any], *, deadline: float) -> list[Defect]:
    """The library's defects met on ``instances`` of ``tool``'s arguments (``strict``: the schema
    the cells compile), one per label and kind, each minimal; stops at ``deadline``."""
    found: dict[str, Defect] = {}
    version = xgrammar_version()
    for instance in instances[:MAX_INSTANCES]:
        if time.monotonic() > deadline:
            break
        for path in sorted(_paths(instance), key=len, reverse=True):
            schema = subschema_at(strict, path)
            if schema is None:
                continue
            value = _get(instance, path)
            kind = _disagrees(schema, value)
            if kind is None:
                continue
            defect = _minimal(tool.name, path, schema, value, kind, version)
            known = found.get(defect.key)
            if known is None or len(defect.instance) < len(known.instance):
                found[defect.key] = defect
            break  # the deepest place explains this instance
    return sorted(found.values(), key=lambda d: d.key)


def _minimal(tool: str, path: Sequence[Any], schema: dict[str, Any], value: Any, kind: Kind, version: str) -> Defect:
    from harness.fuzz.values import first_error, validator

    schema, value = shrink(schema, value, kind)
    text = _text(value)
    error = first_error(validator(schema), value)
    return Defect(
        label=label_of(schema), kind=kind, minimal_schema=schema, instance=text,
        validator_says="valid" if error is None else f"invalid: {error.message}",
        grammar_did="accepted" if kind == "accepts_invalid" else rejected_at(schema, text),
        xgrammar_version=version, tool=tool, path="/".join(str(p) for p in path) or "(arguments)",
    )


def write_defects(defects: Sequence[Defect], folder: Path) -> list[Defect]:
    """One folder per defect (``README.md``, ``reproduce.py``, ``defect.json``); the defects with
    their folder set."""
    out = []
    for defect in defects:
        where = folder / defect.key.replace(":", "-").replace("/", "-")
        where.mkdir(parents=True, exist_ok=True)
        (where / "reproduce.py").write_text(script(defect), encoding="utf-8")
        (where / "README.md").write_text(readme(defect), encoding="utf-8")
        (where / "defect.json").write_text(defect.model_dump_json(indent=1) + "\n", encoding="utf-8")
        out.append(defect.model_copy(update={"file": str(where / "reproduce.py")}))
    return out


def keep_defects(report: Any, folder: Path) -> None:
    """Write ``report``'s defects under ``folder`` and point the report and its cells at the files."""
    report.defects = write_defects(report.defects, folder)
    written = {d.key: d.file for d in report.defects}
    for cell in report.cells:
        cell.defects = [d.model_copy(update={"file": written.get(d.key)}) for d in cell.defects]


def readme(defect: Defect) -> str:
    schema = json.dumps(defect.minimal_schema, indent=1, ensure_ascii=False)
    return f"""# {defect.title}

- xgrammar version: {defect.xgrammar_version}
- schema (converted with `xgrammar.Grammar.from_json_schema(schema, any_whitespace=False, separators=(",", ":"), strict_mode=False)`):

```json
{schema}
```

- instance (JSON text matched against the grammar): `{defect.instance}`
- the JSON-schema validator (jsonschema, Draft 2020-12, formats checked) says: {defect.validator_says}
- xgrammar: {defect.grammar_did}
- expected: {"accepted" if defect.kind == "rejects_valid" else "rejected"}

Reproduce with `python reproduce.py` (needs xgrammar only; exits 1 while the defect is there, 0 once
fixed). Found by `harness fuzz` in tool `{defect.tool}` at `{defect.path}`, then reduced.
"""


def script(defect: Defect) -> str:
    valid = defect.kind == "rejects_valid"
    return f'''#!/usr/bin/env python3
"""{defect.title}.

Found by harness fuzz with xgrammar {defect.xgrammar_version}. Exit status: 1 while the defect is there,
0 once xgrammar agrees with the JSON-schema validator.
"""

import json
import sys
from importlib.metadata import version

import xgrammar as xgr

SCHEMA = {json.dumps(defect.minimal_schema, ensure_ascii=True)!r}
INSTANCE = {defect.instance!r}
VALID = {valid!r}  # what the JSON-schema validator says of INSTANCE under SCHEMA

grammar = xgr.Grammar.from_json_schema(SCHEMA, any_whitespace=False, separators=(",", ":"), strict_mode=False)
accepted = xgr.testing._is_grammar_accept_string(grammar, INSTANCE)
print(f"xgrammar {{version('xgrammar')}}: schema {{SCHEMA}}")
print(f"instance {{INSTANCE}}: xgrammar {{'accepts' if accepted else 'rejects'}} it; it is {{'valid' if VALID else 'invalid'}}")
try:
    import jsonschema

    schema = json.loads(SCHEMA)
    check = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    print(f"jsonschema {{version('jsonschema')}} says: {{'valid' if check.is_valid(json.loads(INSTANCE)) else 'invalid'}}")
except ImportError:
    pass
if accepted != VALID:
    print("DEFECT REPRODUCED")
    sys.exit(1)
print("fixed: xgrammar agrees with the validator")
'''


_LIBRARY_FAILURES: dict[str, Kind] = {"validation_error": "rejects_valid", "invalidation_error": "accepts_invalid"}
"""The cell classes a library defect can explain, and the defect kind each is."""


def attach_defects(case: Any, cells: Sequence[Any], *, deadline: float) -> None:
    """Set ``defects`` on the cells of ``case``'s tool whose constraint xgrammar's JSON-schema converter
    builds and that rejected a valid call or accepted an invalid one: the library's defects found on
    the instances the cells checked (their counterexamples first: a random walk's invalid call is one),
    of the kind each cell showed."""
    from harness.grammar.families import builder_of, strict_schema

    suspects = [c for c in cells if builder_of(c.family, c.strategy) in ("xgrammar", "vllm") and set(c.classes) & set(_LIBRARY_FAILURES)]
    if not suspects or not case.values:
        return
    kept = [call["arguments"] for cell in suspects for found in cell.counterexamples for call in found.calls or ()
            if call.get("name") == case.tool.name and isinstance(call.get("arguments"), dict)]
    instances = kept + defect_instances(case.values, case.mutants, case.tool.name)
    found = find_defects(case.tool, strict_schema(case.tool.parameters), instances, deadline=deadline)
    for cell in suspects:
        kinds = {_LIBRARY_FAILURES[k] for k in cell.classes if k in _LIBRARY_FAILURES}
        cell.defects = [d for d in found if d.kind in kinds]


def unique_defects(cells: Sequence[Any]) -> list[Defect]:
    """Each defect the cells met, once (the shortest instance of each label and kind)."""
    best: dict[str, Defect] = {}
    for cell in cells:
        for defect in cell.defects:
            known = best.get(defect.key)
            if known is None or len(defect.instance) < len(known.instance):
                best[defect.key] = defect
    return sorted(best.values(), key=lambda d: d.key)


def defect_instances(values: Sequence[Any], mutants: Sequence[Sequence[Any]], tool_name: str) -> list[Any]:
    """The instances a tool's cells checked: each value, then the value mutants of that tool."""
    out = list(values)
    for group in mutants:
        out += [m.call.arguments for m in group if m.call is not None and m.call.name == tool_name]
    return out


__all__ = ["Defect", "attach_defects", "defect_instances", "find_defects", "keep_defects", "label_of", "readme", "script", "shrink", "subschema_at",
           "unique_defects", "write_defects", "xgrammar_accepts"]
