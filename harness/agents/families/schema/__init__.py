"""JSON-schema keywords as grammar rules, for the EBNF builder (``families._ebnf``) and the keyword
table: regular expressions (``pattern``) and ``format`` as rules over a string's characters in a
family's value syntax, exact number bounds and ``multipleOf``, and ``$ref`` (resolving, refusing cycles
with no base case, hoisting definitions when parameters are embedded in a larger schema).
Nothing here imports xgrammar: grammars are text."""

from harness.agents.families.schema._numbers import (
    MAX_LISTED,
    MAX_MODULUS,
    multiple_rule,
    number_bounds,
    number_range,
)
from harness.agents.families.schema._refs import check_refs, embeddable, pointers, resolve
from harness.agents.families.schema._regex import RegexError, regex_rule
from harness.agents.families.schema._strict import (
    embedded_schema,
    satisfiable_schema,
    standalone_schema,
    strict_schema,
)
from harness.agents.families.schema._strings import (
    FORMAT_REGEXES,
    class_text,
    fg_chars,
    format_problem,
    format_regex,
    json_chars,
    string_rule,
)

__all__ = [
    "FORMAT_REGEXES",
    "MAX_LISTED",
    "MAX_MODULUS",
    "RegexError",
    "check_refs",
    "class_text",
    "embeddable",
    "embedded_schema",
    "fg_chars",
    "format_problem",
    "format_regex",
    "json_chars",
    "multiple_rule",
    "number_bounds",
    "number_range",
    "pointers",
    "regex_rule",
    "resolve",
    "satisfiable_schema",
    "standalone_schema",
    "strict_schema",
    "string_rule",
]
