"""JSON-schema keywords as grammar rules, for the EBNF builder (``families._ebnf``) and the keyword
table: regular expressions (``pattern``) and ``format`` as rules over a string's characters in a
family's value syntax, exact number bounds and ``multipleOf``, ``$ref`` (resolving, refusing cycles
with no base case, hoisting definitions when parameters are embedded in a larger schema), and the JSON
types of values. Nothing here imports xgrammar: grammars are text."""

from harness.agents.families.schema._numbers import multiple_rule, number_range
from harness.agents.families.schema._refs import check_refs, embeddable, resolve
from harness.agents.families.schema._regex import RegexError, regex_rule
from harness.agents.families.schema._strings import format_problem, string_rule
from harness.agents.families.schema._text import ebnf_literal
from harness.agents.families.schema._types import NoValue, fits_type, integer_bounds, integer_range

__all__ = [
    "NoValue",
    "RegexError",
    "check_refs",
    "ebnf_literal",
    "embeddable",
    "fits_type",
    "format_problem",
    "integer_bounds",
    "integer_range",
    "multiple_rule",
    "number_range",
    "regex_rule",
    "resolve",
    "string_rule",
]
