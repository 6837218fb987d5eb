"""Which JSON-schema keywords each constrained strategy enforces: the table ``harness fuzz`` checks
its findings against and the README prints.

Two builders make the constraints: the harness's own EBNF builder (``_ebnf``: both families' ``ebnf``
and FunctionGemma's ``structural_tag``) and xgrammar's JSON-schema converter (``json_schema`` for both
families, and Qwen's ``structural_tag``, whose one-grammar form spells exactly what the converter
spells and falls back to it per tool otherwise). A keyword is, per builder:

- ``enforced``: the grammar allows a value only when the keyword allows it;
- ``not_enforced``: the grammar lets values through that the keyword forbids (the fuzz names every
  such acceptance "not enforced by this strategy", never counts it silently);
- ``approximated``: enforced in part (xgrammar's ``oneOf`` is ``anyOf``: a value matching two
  branches passes);
- ``refused``: building the constraint fails with a ``ConstraintError`` naming the keyword;
- ``rejects_valid``: the grammar rejects values the keyword allows (a builder gap the fuzz reports
  as a validation error).

Annotations (``description``, ``title``, ``default``, ``examples``, ``$comment``...) constrain
nothing and are not listed. Objects that declare ``properties`` are closed by design in every
strategy (``strict_schema``): the fuzz judges calls against that strict schema.
"""

from __future__ import annotations

from typing import Literal

Support = Literal["enforced", "not_enforced", "approximated", "refused", "rejects_valid"]
Builder = Literal["harness", "xgrammar"]

KEYWORDS: tuple[str, ...] = (
    "type", "enum", "const", "nullable",
    "properties", "required", "additionalProperties", "patternProperties", "propertyNames",
    "minProperties", "maxProperties", "dependentRequired", "dependentSchemas", "dependencies",
    "items", "prefixItems", "contains", "minItems", "maxItems", "uniqueItems",
    "minLength", "maxLength", "pattern", "format",
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
    "anyOf", "oneOf", "allOf", "not", "if", "$ref",
)
"""Every validation keyword the table speaks of, in the README's order."""

_HARNESS: dict[str, Support] = {
    "type": "enforced", "enum": "enforced", "const": "enforced", "nullable": "enforced",
    "properties": "enforced", "required": "enforced", "additionalProperties": "enforced",
    "items": "enforced", "anyOf": "enforced", "oneOf": "approximated", "allOf": "approximated",
    "$ref": "refused",
}
"""The EBNF builder as it stands (``allOf``: one schema; several are refused)."""

_XGRAMMAR: dict[str, Support] = {
    "type": "enforced", "enum": "enforced", "const": "enforced", "nullable": "not_enforced",
    "properties": "enforced", "required": "enforced", "additionalProperties": "enforced",
    "patternProperties": "rejects_valid", "propertyNames": "rejects_valid",
    "minProperties": "enforced", "maxProperties": "enforced",
    "items": "enforced", "prefixItems": "enforced", "contains": "rejects_valid",
    "minItems": "enforced", "maxItems": "enforced",
    "minLength": "enforced", "maxLength": "enforced", "pattern": "enforced", "format": "enforced",
    "minimum": "enforced", "maximum": "enforced", "exclusiveMinimum": "enforced",
    "exclusiveMaximum": "enforced", "multipleOf": "enforced",
    "anyOf": "enforced", "oneOf": "approximated", "allOf": "approximated", "$ref": "enforced",
}
"""xgrammar 0.2.8's converter, as probed value by value (``harness fuzz`` on the keyword tools)."""

TABLES: dict[Builder, dict[str, Support]] = {"harness": _HARNESS, "xgrammar": _XGRAMMAR}


def builder_of(family: str, strategy: str) -> Builder:
    """Which builder makes ``family``'s ``strategy`` constraint."""
    if strategy == "json_schema" or (strategy == "structural_tag" and family == "qwen"):
        return "xgrammar"
    return "harness"


def support(family: str, strategy: str, keyword: str) -> Support:
    """How ``family``'s ``strategy`` treats ``keyword`` (``not_enforced`` for what the table omits)."""
    return TABLES[builder_of(family, strategy)].get(keyword, "not_enforced")


def enforces(family: str, strategy: str, keyword: str) -> bool:
    """Whether a value breaking ``keyword`` must be rejected by the grammar (an acceptance is a bug)."""
    return support(family, strategy, keyword) == "enforced"


COLUMNS: tuple[tuple[str, Builder], ...] = (
    ("ebnf (both), structural_tag (function_gemma)", "harness"),
    ("json_schema (both), structural_tag (qwen)", "xgrammar"),
)


def markdown_table() -> str:
    """The README's table: keyword x strategy."""
    lines = ["| keyword | " + " | ".join(name for name, _ in COLUMNS) + " |", "| --- |" + " --- |" * len(COLUMNS)]
    for keyword in KEYWORDS:
        cells = [TABLES[builder].get(keyword, "not_enforced").replace("_", " ") for _, builder in COLUMNS]
        lines.append(f"| `{keyword}` | " + " | ".join(cells) + " |")
    return "\n".join(lines)


__all__ = ["COLUMNS", "KEYWORDS", "TABLES", "Builder", "Support", "builder_of", "enforces", "markdown_table", "support"]
