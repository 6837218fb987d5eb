"""JSON-schema keywords as grammar rules, for the EBNF builder (``harness.grammar.formats``), and the
keyword table (``keywords``: which keywords each strategy's builder enforces, and why a tool is
refused): regular expressions (``pattern``) and ``format`` as rules over a string's characters in a
family's value syntax, exact number bounds and ``multipleOf``, ``$ref`` (resolving, refusing cycles
with no base case, hoisting definitions when parameters are embedded in a larger schema), and the JSON
types of values. Nothing here imports xgrammar: grammars are text."""

from harness.grammar.schema._numbers import multiple_rule, number_range
from harness.grammar.schema._refs import check_refs, embeddable, resolve, top_branches
from harness.grammar.schema._regex import RegexError, regex_rule
from harness.grammar.schema._strings import format_problem, string_rule
from harness.grammar.schema._text import ebnf_literal
from harness.grammar.schema._types import NoValue, fits_type, integer_bounds, integer_range
from harness.grammar.schema.keywords import (
    builder_of,
    enforces,
    keywords_used,
    markdown_table,
    refused_keyword,
    support,
    tool_problem,
)

__all__ = [
    "NoValue",
    "RegexError",
    "builder_of",
    "check_refs",
    "ebnf_literal",
    "embeddable",
    "enforces",
    "fits_type",
    "format_problem",
    "integer_bounds",
    "integer_range",
    "keywords_used",
    "markdown_table",
    "multiple_rule",
    "number_range",
    "refused_keyword",
    "regex_rule",
    "resolve",
    "string_rule",
    "support",
    "tool_problem",
    "top_branches",
]
