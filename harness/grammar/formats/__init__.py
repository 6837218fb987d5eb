"""The grammar builder: a family's call format (``CallFormat``) and a tool set -> every strategy's
constraint (EBNF text, a structural tag's JSON text, the json_schema strategy's schema), request
payload and gold output. One builder serves every family; what differs is the record.

- ``_builder``: ``CallFormat`` and the builders;
- ``_ebnf``: JSON schema -> EBNF value rules (``EbnfBuilder``), over a value syntax (``_syntax``:
  JSON, FunctionGemma's ``<escape>`` strings) with the keyword rules of ``harness.grammar.schema``;
- ``_strict``: a tool's parameters as the grammars enforce them, as a JSON schema (json_schema and
  ``harness fuzz``'s judge); ``_calls``: the json_schema strategy's call schema and output;
- ``_values``: values as the formats write them (the canonical key order, JSON, FunctionGemma text);
- ``vllm_tools``: what vLLM builds itself for its own ``required`` and ``strict`` strategies.

Nothing here imports xgrammar (but for vLLM's own strategies, whose buildability it checks):
grammars are text.
"""

from harness.grammar.formats._builder import (
    CallFormat,
    build_ebnf,
    build_payload,
    render_output,
)
from harness.grammar.formats._calls import canonical_schema, index_tools, json_calls_text, ordered_schema
from harness.grammar.formats._ebnf import EbnfBuilder
from harness.grammar.formats._strict import strict_schema
from harness.grammar.formats._syntax import (
    FG_SYNTAX,
    FG_SYNTAX_PORTABLE,
    JSON_SYNTAX,
    Syntax,
    ebnf_literal,
    rule_name,
)
from harness.grammar.formats._values import (
    ESCAPE,
    MAX_JSON_WS,
    canonical_keys,
    canonical_value,
    check_fg_name,
    fg_text,
    json_text,
)
from harness.grammar.formats.vllm_tools import (
    ServerConstraint,
    ToolRequest,
    json_array_schema,
    openai_tools,
    server_constraint,
    strategy_request,
    vllm_own_constraint,
)

__all__ = [
    "ESCAPE",
    "FG_SYNTAX",
    "FG_SYNTAX_PORTABLE",
    "JSON_SYNTAX",
    "MAX_JSON_WS",
    "CallFormat",
    "EbnfBuilder",
    "ServerConstraint",
    "Syntax",
    "ToolRequest",
    "build_ebnf",
    "build_payload",
    "canonical_keys",
    "canonical_schema",
    "canonical_value",
    "check_fg_name",
    "ebnf_literal",
    "fg_text",
    "index_tools",
    "json_array_schema",
    "json_calls_text",
    "json_text",
    "openai_tools",
    "ordered_schema",
    "render_output",
    "rule_name",
    "server_constraint",
    "strategy_request",
    "strict_schema",
    "vllm_own_constraint",
]
