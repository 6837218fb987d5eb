"""Which JSON-schema keywords each constrained strategy enforces: the table ``harness fuzz`` checks
its findings against and docs/schemas.md prints.

Two builders make the constraints: the harness's own EBNF builder (``harness.grammar.formats``: both families' ``ebnf``
and ``structural_tag``, whose content is the ebnf strategy's rules) and xgrammar's JSON-schema
converter (``json_schema`` for both families). A keyword is, per builder:

- ``enforced``: the grammar allows a value only when the keyword allows it;
- ``defective``: enforced, but ``harness fuzz`` finds values the grammar gets wrong (xgrammar's
  ``email`` format, some fractions under number bounds, escapes in length-bounded strings: docs/schemas.md
  lists them); the fuzz reports those as validation or invalidation errors;
- ``refused``: the tool is refused, named with the place and the keyword (``tool_problem``, asked
  before every build): it is left out of the constraint (the artifact's ``refused``) and the other
  tools are constrained; never a grammar that ignores the keyword.

A keyword that constrains one type only is vacuous on a schema of other types (``minItems`` on an
integer) and refused nowhere; a ``format`` no validator checks is an annotation.
Annotations (``description``, ``title``, ``default``, ``examples``, ``$comment``...) constrain
nothing and are not listed. A tool's arguments, and objects that list properties without saying
``additionalProperties``, are closed in every strategy while the ``close_objects`` setting is on
(``strict_schema``): the fuzz judges calls against that strict schema.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from harness.agents import ConstraintError
from harness.grammar.schema._refs import check_refs
from harness.grammar.schema._regex import RegexError, regex_rule
from harness.grammar.schema._strings import format_problem, string_problem
from harness.grammar.schema._types import declared_types
from harness.grammar.schema._unions import disjoint, noop_property_names

Support = Literal["enforced", "defective", "refused", "ignored"]
Builder = Literal["harness", "xgrammar", "vllm", "free"]

KEYWORDS: tuple[str, ...] = (
    "type", "enum", "const", "nullable",
    "properties", "required", "additionalProperties", "patternProperties", "propertyNames",
    "minProperties", "maxProperties", "dependentRequired", "dependentSchemas", "dependencies",
    "items", "prefixItems", "contains", "minItems", "maxItems", "uniqueItems",
    "minLength", "maxLength", "pattern", "format",
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
    "anyOf", "oneOf", "allOf", "not", "if", "$ref",
)
"""Every validation keyword the table speaks of, in docs/schemas.md's order."""

_ENFORCED_BY_BOTH = ("type", "enum", "const", "nullable", "properties", "required", "additionalProperties",
                     "items", "anyOf", "minItems", "maxItems", "oneOf", "allOf", "minProperties", "maxProperties",
                     "prefixItems", "pattern", "multipleOf", "$ref")
_HARNESS: dict[str, Support] = {k: "enforced" for k in (*_ENFORCED_BY_BOTH, "minimum", "maximum",
                                                          "exclusiveMinimum", "exclusiveMaximum", "minLength",
                                                          "maxLength", "format")}
"""The EBNF builder: what it spells (``oneOf`` of disjoint branches, ``allOf`` of one schema; strings'
``format``, ``pattern`` and lengths in the family's own string syntax, ``_strings``; exact number
bounds and integer ``multipleOf``, ``_numbers``); everything else is refused. Some combinations are
refused per tool with the reason (``NOTES``)."""

_XGRAMMAR: dict[str, Support] = {
    **{k: "enforced" for k in _ENFORCED_BY_BOTH},
    **{k: "defective" for k in ("minLength", "maxLength", "format", "minimum", "maximum", "exclusiveMinimum",
                                "exclusiveMaximum")},
}
"""xgrammar 0.2.8's converter, as ``harness fuzz`` probed it value by value. ``defective``: enforced,
but the fuzz finds values it gets wrong (docs/schemas.md lists them); ``oneOf`` of disjoint branches and
``allOf`` of one schema are enforced, other forms refused."""

_VLLM: dict[str, Support] = {k: _XGRAMMAR.get(k, "ignored") for k in KEYWORDS}
"""vLLM's own strategies where the arguments go through xgrammar's converter (``strict`` for Qwen,
``required`` for FunctionGemma): the same keywords enforced, but vLLM refuses nothing ahead: a keyword
xgrammar does not spell is ``ignored`` (values breaking it pass), and one xgrammar cannot compile
fails the request (the server's 400, a ``build_error`` in ``harness fuzz``)."""
_FREE: dict[str, Support] = dict.fromkeys(KEYWORDS, "ignored")
"""vLLM's own strategies that leave the arguments free: Qwen's ``required`` (a tool not marked strict
gets any JSON value as arguments in the hermes tag) and FunctionGemma's ``strict`` (its parser has no
structural tag, so nothing is built)."""

CHECKED_AFTER: tuple[str, ...] = ("uniqueItems", "propertyNames")
"""Keywords no grammar says, which a run may leave to a check after decoding instead of refusing the
tool (``DecodingConstraint.check_after``, ``--unenforceable check``): the tool is constrained by the
rest of its schema and a call breaking only these is ``validity:checked_after``."""

TABLES: dict[Builder, dict[str, Support]] = {"harness": _HARNESS, "xgrammar": _XGRAMMAR, "vllm": _VLLM, "free": _FREE}

_STRING = ("minLength", "maxLength", "pattern", "format")
_NUMBER = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")
_ARRAY = ("minItems", "maxItems", "uniqueItems", "contains", "minContains", "maxContains", "prefixItems")
_OBJECT = ("minProperties", "maxProperties", "patternProperties", "propertyNames", "dependentRequired",
           "dependentSchemas", "dependencies")
_APPLIES: dict[str, tuple[str, ...]] = {
    **{k: ("string",) for k in _STRING}, **{k: ("integer", "number") for k in _NUMBER},
    **{k: ("array",) for k in _ARRAY}, **{k: ("object",) for k in _OBJECT},
}
"""Keywords that constrain one type only: on a schema of other types they constrain nothing."""
_SUBSCHEMAS = ("items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames")
_SUBSCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SUBSCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")


def builder_of(family: str, strategy: str) -> Builder:
    """Which builder makes ``family``'s ``strategy`` constraint."""
    if strategy in ("required", "strict"):  # vLLM's own: see harness.grammar.formats.vllm_tools
        return "vllm" if (family, strategy) in (("qwen", "strict"), ("function_gemma", "required")) else "free"
    if strategy == "json_schema":
        return "xgrammar"
    return "harness"


def support(family: str, strategy: str, keyword: str) -> Support:
    """How ``family``'s ``strategy`` treats ``keyword``."""
    return TABLES[builder_of(family, strategy)].get(keyword, "refused")


def enforces(family: str, strategy: str, keyword: str) -> bool:
    """Whether a value breaking ``keyword`` must be rejected by the grammar (an acceptance is a bug)."""
    return support(family, strategy, keyword) in ("enforced", "defective")


def refused_keyword(schema: Any, builder: Builder, where: str = "parameters", root: Any = None, *,
                    check_after: bool = False) -> str | None:
    """The first keyword of ``schema`` that ``builder`` cannot enforce, with where it is (None when
    there is none): the reason a constraint is refused rather than built with the keyword ignored.
    ``root``: the schema ``$ref`` pointers resolve from (the tool's parameters; ``schema`` itself when
    not given), for a ``oneOf`` whose branches are pointers. ``check_after``: the ``CHECKED_AFTER``
    keywords are left to the check after decoding, not refused."""
    if not isinstance(schema, Mapping) or builder in ("vllm", "free"):
        return None  # vLLM refuses nothing ahead: what xgrammar does not spell passes
    root = schema if root is None else root
    table = TABLES[builder]
    kinds = declared_types(schema)
    for keyword in KEYWORDS:
        if keyword not in schema or keyword in ("oneOf", "allOf"):
            continue
        applies = _APPLIES.get(keyword)
        if applies and kinds is not None and not kinds & set(applies):
            continue  # e.g. minItems on an integer: constrains nothing
        if keyword == "format" and not _checked_format(schema[keyword]):
            continue  # an unknown format is an annotation (Gorilla's "float")
        if keyword == "propertyNames" and noop_property_names(schema[keyword]):
            continue  # every key is a string: zod's records say so
        if check_after and keyword in CHECKED_AFTER:
            continue
        if keyword == "format" and builder == "harness" and (problem := format_problem(schema[keyword])):
            return f"{where}: {problem}"
        if keyword == "pattern" and (problem := pattern_problem(schema[keyword])):
            return f"{where}: {problem}"
        if table.get(keyword, "refused") == "refused":
            return f"{where}: {keyword}"
    if builder == "harness" and (kinds is None or "string" in kinds) and (problem := string_problem(schema)):
        return f"{where}: {problem}"  # a format, a pattern and lengths whose intersection is past its budget
    if "oneOf" in schema and not disjoint(schema["oneOf"], root):
        return f"{where}: oneOf (branches a value can match together)"
    if isinstance(schema.get("allOf"), list) and len(schema["allOf"]) > 1:
        return f"{where}: allOf (more than one schema)"
    return _refused_inside(schema, builder, where, root, check_after)


def _refused_inside(schema: Mapping[str, Any], builder: Builder, where: str, root: Any, after: bool) -> str | None:
    for key in _SUBSCHEMAS:
        if after and key in CHECKED_AFTER:
            continue  # checked after decoding, with what it holds
        if (found := refused_keyword(schema.get(key), builder, f"{where}.{key}", root, check_after=after)) is not None:
            return found
    for key in _SUBSCHEMA_LISTS:
        listed = schema.get(key)
        for i, sub in enumerate(listed if isinstance(listed, list) else ()):
            if (found := refused_keyword(sub, builder, f"{where}.{key}[{i}]", root, check_after=after)) is not None:
                return found
    for key in _SUBSCHEMA_MAPS:
        subs = schema.get(key)
        for name, sub in subs.items() if isinstance(subs, Mapping) else ():
            if (found := refused_keyword(sub, builder, f"{where}.{name}", root, check_after=after)) is not None:
                return found
    return None


def keywords_used(schema: Any) -> set[str]:
    """The keywords of ``schema`` that constrain something (vacuous ones and annotations left out)."""
    if not isinstance(schema, Mapping):
        return set()
    kinds = declared_types(schema)
    used = {k for k in KEYWORDS if k in schema and not (
        (_APPLIES.get(k) and kinds is not None and not kinds & set(_APPLIES[k]))
        or (k == "format" and not _checked_format(schema[k]))
        or (k == "propertyNames" and noop_property_names(schema[k])))}
    for key in _SUBSCHEMAS:
        if key != "propertyNames" or "propertyNames" in used:
            used |= keywords_used(schema.get(key))
    for key in _SUBSCHEMA_LISTS:
        subs = schema.get(key)
        for sub in subs if isinstance(subs, list) else ():
            used |= keywords_used(sub)
    for key in _SUBSCHEMA_MAPS:
        subs = schema.get(key)
        for sub in subs.values() if isinstance(subs, Mapping) else ():
            used |= keywords_used(sub)
    return used


def _checked_format(name: Any) -> bool:
    from jsonschema import Draft202012Validator

    return isinstance(name, str) and name in Draft202012Validator.FORMAT_CHECKER.checkers


def pattern_problem(pattern: Any) -> str | None:
    """Why ``pattern`` is refused in every strategy (not a regular expression, or one no grammar
    spells: backreferences, lookaround...); None when it can be enforced."""
    try:
        regex_rule(pattern, lambda _ranges: "c", lambda hint, _body: hint, "pattern")
    except RegexError as exc:
        return str(exc)
    return None


def tool_problem(tool: Any, family: str, strategy: str, *, check_after: bool = False,
                 backend: str = "xgrammar") -> str | None:
    """Why ``family``'s ``strategy`` refuses ``tool`` (a keyword its builder would not enforce, a
    ``$ref`` cycle with no base case), naming the tool and the place; None when it builds.
    ``check_after``: the ``CHECKED_AFTER`` keywords are left to the check after decoding; ``backend``:
    vLLM's structured-outputs backend, whose JSON-schema check the json_schema lane applies."""
    from harness.vllm_schemas import lane_refusal

    builder = builder_of(family, strategy)
    if strategy == "json_schema" and (refusal := lane_refusal(family, strategy, tool.parameters or {},
                                                              "guidance" if backend == "guidance" else "xgrammar")):
        return f"tool {tool.name!r}: {refusal} (see docs/schemas.md)"  # what vLLM refuses, the lane refuses
    try:
        found = refused_keyword(tool.parameters, builder, check_after=check_after)
    except RecursionError:
        return f"tool {tool.name!r}: its schema is nested too deeply to read (past Python's recursion limit)"
    if found is not None:
        return (f"tool {tool.name!r}: {found} is not enforced by {strategy} for {family}: "
                "refused rather than ignored (see docs/schemas.md)")
    found = check_refs(tool.parameters) or huge_count(tool.parameters)
    return None if found is None else f"tool {tool.name!r}: {found}"


COUNT_KEYWORDS = frozenset({"minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties"})
MAX_COUNT = 2**31 - 1
"""The largest count a grammar's repetition says: xgrammar's EBNF lexer refuses ``{0,N}`` past its
integers and its JSON-schema converter says "maxLength must be an integer", for the whole grammar."""


def huge_count(schema: Any) -> str | None:
    """Where a length or count keyword is past ``MAX_COUNT`` (``maxLength: 10**30``), or None: refused
    for that tool alone, before a compile error would refuse every tool of the lane."""
    stack = [schema]
    while stack:  # no recursion: a schema may nest past Python's limit
        node = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                if key in COUNT_KEYWORDS and type(value) in (int, float) and not 0 <= value <= MAX_COUNT:
                    return f"`{key}` {value:.6g} is past the bound a grammar can say (0 to {MAX_COUNT})"
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return None


def check_keywords(tools: Any, family: str, strategy: str) -> None:
    """Refuse, with a ``ConstraintError`` naming the tool, the place and the keyword, a tool set whose
    schemas use a keyword the strategy's builder would not enforce."""
    for tool in tools:
        if (problem := tool_problem(tool, family, strategy)) is not None:
            raise ConstraintError(problem)


NOTES: dict[tuple[str, str], str] = {
    **{(b, "oneOf"): "enforced when no value can match two branches (types apart, or a required tag property "
                     "whose const/enum values differ: a discriminator); refused otherwise" for b in ("harness", "xgrammar")},
    **{(b, "propertyNames"): 'accepted when every key passes (`{"type": "string"}`: a no-op); refused otherwise'
       for b in ("harness", "xgrammar")},
    **{(b, "allOf"): "enforced for one schema; refused for several" for b in ("harness", "xgrammar")},
    ("harness", "format"): "enforced (the formats of `FORMAT_REGEXES`; another checked format is refused)",
    ("harness", "pattern"): "enforced (backreferences, lookaround, inner anchors refused), with a format and lengths "
                            "as their intersection",
    ("xgrammar", "pattern"): "enforced (an invalid one, backreferences, lookaround refused by name)",
    ("harness", "multipleOf"): "enforced for integer steps (with bounds: up to 2,000 multiples listed)",
    **{("harness", k): "enforced, exact as the number reads back (exponents in scientific notation: `5e-324`)"
       for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")},
    ("harness", "$ref"): "enforced, recursive ones included (a cycle with no base case refused)",
    ("xgrammar", "$ref"): "enforced (definitions hoisted when the parameters are embedded)",
}
"""Table cells that need more than a word."""

COLUMNS: tuple[tuple[str, Builder], ...] = (
    ("ebnf, structural_tag (both)", "harness"),
    ("json_schema (both)", "xgrammar"),
)


VLLM_COLUMNS: tuple[tuple[str, Builder], ...] = (
    ("strict (qwen), required (function_gemma)", "vllm"),
    ("required (qwen), strict (function_gemma)", "free"),
)
"""vLLM's own strategies (docs/vllm-strict.md)."""


def markdown_table(columns: tuple[tuple[str, Builder], ...] = COLUMNS) -> str:
    """docs/schemas.md's table: keyword x strategy (``VLLM_COLUMNS``: docs/vllm-strict.md's)."""
    lines = ["| keyword | " + " | ".join(name for name, _ in columns) + " |", "| --- |" + " --- |" * len(columns)]
    for keyword in KEYWORDS:
        cells = [NOTES.get((builder, keyword), TABLES[builder].get(keyword, "refused")) for _, builder in columns]
        lines.append(f"| `{keyword}` | " + " | ".join(cells) + " |")
    return "\n".join(lines)


__all__ = [
    "CHECKED_AFTER",
    "COLUMNS",
    "KEYWORDS",
    "TABLES",
    "VLLM_COLUMNS",
    "Builder",
    "Support",
    "builder_of",
    "check_keywords",
    "enforces",
    "keywords_used",
    "markdown_table",
    "pattern_problem",
    "refused_keyword",
    "support",
    "tool_problem",
]
