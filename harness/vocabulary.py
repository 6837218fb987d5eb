"""The project's words, defined once: model families, constraint strategies, metrics and error kinds.

Each is a ``StrEnum`` whose values are the strings the files hold (suite.yaml, samples.jsonl,
scores.parquet, summary.json, errors.json, bench.json) and the CLI takes, so a member *is* its string:
it compares, hashes, formats and serialises as that string, and files keep the same bytes. This module
imports nothing of the harness and nothing heavy: every layer, ``harness --help`` included, may use it.

Adding a family or a strategy starts here (the registries in ``harness.agents`` are checked against
these lists by the tests); an error kind a checker produces is added to ``ErrorKind`` (a test reads
the source for ``checker:reason`` literals and fails on one that is not here).
"""

from __future__ import annotations

from enum import StrEnum, unique


@unique
class Family(StrEnum):
    """A model family: its prompt format, call syntax and grammars (``harness.grammar.families``)."""

    function_gemma = "function_gemma"
    qwen = "qwen"


@unique
class Strategy(StrEnum):
    """How a model's output is constrained, in the canonical order every table and plot uses."""

    none = "none"
    """No grammar: the server's native tool calling."""
    ebnf = "ebnf"
    """The family's EBNF grammar (vLLM's ``structured_outputs.grammar``)."""
    structural_tag = "structural_tag"
    """An xgrammar structural tag (vLLM's ``structured_outputs.structural_tag``)."""
    json_schema = "json_schema"
    """A JSON schema of the calls (vLLM's ``structured_outputs.json``)."""
    required = "required"
    """vLLM's own constraint for ``tool_choice: "required"``: the server builds it from the tools (its
    tool parser's structural tag, or a JSON array of calls where the parser has none)."""
    strict = "strict"
    """vLLM's own strict tool calling: every tool sent with ``"strict": true`` and ``tool_choice`` left at
    ``auto``; the server builds the constraint (its parser's structural tag, or none at all)."""

    @property
    def constrained(self) -> bool:
        """The strategy constrains the output (every one but ``none``)."""
        return self is not Strategy.none

    @property
    def server_built(self) -> bool:
        """vLLM builds the constraint itself from the request's tools (``required``, ``strict``); the
        harness sends no ``structured_outputs`` and predicts what the server builds."""
        return self in (Strategy.required, Strategy.strict)


@unique
class GrammarBackend(StrEnum):
    """The grammar library that compiles and runs a constraint: vLLM's two structured-outputs backends
    (its ``--structured-outputs-config.backend``), run in process by the oracle and ``harness serve``."""

    xgrammar = "xgrammar"
    guidance = "guidance"
    """llguidance (vLLM's ``guidance`` backend)."""


GRAMMAR_BACKENDS: tuple[GrammarBackend, ...] = tuple(GrammarBackend)
FAMILIES: tuple[Family, ...] = tuple(Family)
"""Every family, in registry order."""
STRATEGIES: tuple[Strategy, ...] = tuple(Strategy)
"""Every strategy, in the canonical order."""
CONSTRAINED_STRATEGIES: tuple[Strategy, ...] = tuple(s for s in Strategy if s.constrained)
"""The strategies that constrain the output (the harness's grammars and vLLM's own)."""
HARNESS_STRATEGIES: tuple[Strategy, ...] = tuple(s for s in Strategy if s.constrained and not s.server_built)
"""The strategies whose grammar the harness builds and sends (``ebnf``, ``structural_tag``, ``json_schema``)."""
SERVER_STRATEGIES: tuple[Strategy, ...] = tuple(s for s in Strategy if s.server_built)
"""The strategies whose constraint vLLM builds from the tools (``required``, ``strict``)."""


@unique
class Metric(StrEnum):
    """A figure of a run: the per-sample rates of scores.parquet (summary.json gives each one's rate
    under the same name) and the timing figures summary.json adds per family and strategy."""

    validity = "validity"
    """The answer parsed into calls of declared tools whose arguments fit their schemas."""
    exact_match = "exact_match"
    """The calls equal the expected ones (names and arguments)."""
    state_match = "state_match"
    """Running the calls leaves the file system the expected calls leave."""
    grammar_rejection = "grammar_rejection"
    """The constraint refused a gold answer (the oracle's finding: a grammar bug)."""
    truncated = "truncated"
    """The token bound cut an answer."""
    not_enforced = "not_enforced"
    """A constrained answer that its own constraint, compiled by the harness, rejects: the server did
    not enforce it (``constraint:not_enforced``); such samples are left out of the model's rates."""
    bfcl_match = "bfcl_match"
    """BFCL's own verdict on the answer (BFCL's single-turn suites only)."""
    bfcl_match_bad_entry = "bfcl_match_bad_entry"
    """The same verdict on BFCL's entries tagged ``bad_entry`` only (reported apart)."""
    ttft_ms_p50 = "ttft_ms_p50"
    latency_ms_p50 = "latency_ms_p50"
    ms_per_token_p50 = "ms_per_token_p50"
    tokens_per_s_p50 = "tokens_per_s_p50"
    tokens_p50 = "tokens_p50"
    grammar_us_per_token_p50 = "grammar_us_per_token_p50"
    compile_ms = "compile_ms"
    mask_us_p50 = "mask_us_p50"
    mask_us_p99 = "mask_us_p99"
    tool_us_p50 = "tool_us_p50"
    tool_us_p99 = "tool_us_p99"
    target_mask_diff = "target_mask_diff"
    """The rate of compared steps where ``--target vllm``'s grammar allows other tokens than the harness's."""


SAMPLE_METRICS: tuple[Metric, ...] = (
    Metric.validity, Metric.exact_match, Metric.state_match, Metric.grammar_rejection, Metric.truncated,
    Metric.bfcl_match, Metric.bfcl_match_bad_entry, Metric.not_enforced,
)
"""The per-sample metrics of scores.parquet, in their order."""
ACCURACY_METRICS: tuple[Metric, ...] = (
    Metric.validity, Metric.exact_match, Metric.state_match, Metric.bfcl_match, Metric.bfcl_match_bad_entry,
)
"""The rates where higher is better."""
BENCHMARK_METRICS: tuple[Metric, ...] = (Metric.bfcl_match, Metric.bfcl_match_bad_entry)
"""A benchmark's own verdicts: shown only where a suite scores them."""
HEADLINE_METRICS: tuple[Metric, ...] = (Metric.bfcl_match, Metric.state_match, Metric.exact_match)
"""The accuracy a view shows of a run: the first of these the run measured."""
TIMING_METRICS: tuple[Metric, ...] = (
    Metric.ttft_ms_p50, Metric.latency_ms_p50, Metric.ms_per_token_p50, Metric.tokens_per_s_p50, Metric.tokens_p50,
    Metric.grammar_us_per_token_p50, Metric.compile_ms, Metric.mask_us_p50, Metric.mask_us_p99, Metric.tool_us_p50,
    Metric.tool_us_p99,
)
"""The timing figures of summary.json, in their order."""


@unique
class ErrorKind(StrEnum):
    """Why a sample, a call or an answer failed, as ``checker:reason``: the checker that found it, then
    the reason. Records, errors.json, reports and ``harness compare`` carry these strings.

    Two families of kinds are not listed: ``model:http_<status>`` (a server's HTTP error status,
    ``http_error_kind``) and ``bfcl:<BFCL's error type>`` (BFCL's own checker's name of a failure,
    ``bfcl_error_kind``)."""

    # parsing a model's answer (the family's parser)
    parse_no_call = "parse:no_call"
    parse_bad_json = "parse:bad_json"
    parse_bad_arguments = "parse:bad_arguments"
    parse_unknown_tool = "parse:unknown_tool"
    parse_unterminated_call = "parse:unterminated_call"
    parse_error = "parse:error"
    """A parse failure that carried no kind of its own."""
    # scoring a sample
    validity_schema = "validity:schema"
    validity_unknown_tool = "validity:unknown_tool"
    exact_wrong_name = "exact:wrong_name"
    exact_wrong_arguments = "exact:wrong_arguments"
    exact_call_count = "exact:call_count"
    state_tree_differs = "state:tree_differs"
    state_cwd_differs = "state:cwd_differs"
    state_empty_turn = "state:empty_turn"
    state_force_terminated = "state:force_terminated"
    state_response_missing = "state:response_missing"
    state_instance_differs = "state:instance_differs"
    """A Python-class episode: an instance's public attributes differ from the ground truth's (or from
    the case's ``expected_state``)."""
    state_unwanted_call = "state:unwanted_call"
    """A Python-class episode: calls in a turn whose ground truth makes none (BFCL's irrelevance rule)."""
    state_bad_call = "state:bad_call"
    """An episode judged by BFCL's checker: a model's call whose name or an argument key is not an
    identifier Python takes as an argument name (a keyword such as ``class`` neither). BFCL's checker
    takes calls as Python source, and such a key is never spliced into one."""
    score_unknown_case = "score:unknown_case"
    length_max_tokens = "length:max_tokens"
    """The token bound cut the answer."""
    # the constraint
    grammar_rejected_gold = "grammar:rejected_gold"
    """The constraint forbids a gold answer (the oracle engine's finding: a grammar bug)."""
    constraint_empty_language = "constraint:empty_language"
    """The constraint allows no answer at all (no tool to call, and no plain answer allowed)."""
    constraint_refused = "constraint:refused"
    """The strategy cannot build the constraint (a schema keyword it does not enforce, named)."""
    constraint_not_enforced = "constraint:not_enforced"
    """An answer of a constrained lane that the lane's own grammar (compiled by the harness) rejects: the
    server did not apply the constraint (a field it ignores, a grammar engine that differs, a bug).
    Counted as the server's, never as the model's invalidity (``harness.engines.dialects.audit``)."""
    grammar_let_through = "grammar:let_through"
    """A constrained answer that breaks its tool's schema: the constraint let it through (a keyword the
    strategy's builder gets wrong: the README's keyword table, ``harness fuzz``), so the failure is the
    constraint's, not only the model's; scored instead of ``validity:schema`` under a constrained
    strategy."""
    validity_checked_after = "validity:checked_after"
    """A call that breaks only keywords no grammar says (``uniqueItems``, a ``propertyNames`` that
    constrains), which the run left to a check after decoding (``--unenforceable check``): counted apart
    from ``validity:schema`` (the model's miss) and ``grammar:let_through`` (a grammar's bug)."""
    grammar_dead_end = "grammar:dead_end"
    """The grammar allowed no token (neither text nor the end)."""
    llguidance_special_in_text = "llguidance:special_in_text"
    """``harness bench grammar``: llguidance refused a special token where the grammar expects text."""
    # the model or its server
    model_bad_request = "model:bad_request"
    model_bad_response = "model:bad_response"
    model_cancelled = "model:cancelled"
    model_connection = "model:connection"
    model_context_length = "model:context_length"
    model_no_weights = "model:no_weights"
    model_not_found = "model:not_found"
    model_oracle_exhausted = "model:oracle_exhausted"
    model_response_too_large = "model:response_too_large"
    model_timeout = "model:timeout"
    # tools
    tool_bad_arguments = "tool:bad_arguments"
    tool_bad_output = "tool:bad_output"
    tool_error = "tool:error"
    tool_exception = "tool:exception"
    tool_internal_error = "tool:internal_error"
    tool_limit = "tool:limit"
    tool_load_error = "tool:load_error"
    tool_script_error = "tool:script_error"
    tool_unavailable = "tool:unavailable"
    tool_unknown = "tool:unknown"
    # the run
    sample_timeout = "sample:timeout"
    sample_error = "sample:error"
    """A sample that ended in error without a kind."""
    sample_error_without_kind = "sample:error_without_kind"
    harness_exception = "harness:exception"

    @property
    def checker(self) -> str:
        """What found it: the part before the colon (``parse``, ``model``, ``tool``...)."""
        return self.value.partition(":")[0]


HTTP_ERROR_PREFIX = "model:http_"
"""The kinds of a server's HTTP error statuses: ``model:http_429``, ``model:http_500``..."""


def http_error_kind(status: int) -> str:
    """The error kind of an HTTP error status (``model:http_503``)."""
    return f"{HTTP_ERROR_PREFIX}{int(status)}"


BFCL_ERROR_PREFIX = "bfcl:"
"""The kinds of BFCL's own verdicts: ``bfcl:value_error:string``, ``bfcl:ast_decoder:decoder_failed``..."""


def bfcl_error_kind(error_type: str) -> str:
    """The error kind of a failure BFCL's checker names ``error_type``."""
    return f"{BFCL_ERROR_PREFIX}{error_type}"


BENCHMARK_STATE_DIFFERENCES = frozenset({bfcl_error_kind("multi_turn:instance_state_mismatch")})
"""A benchmark checker's failures that say the states compared were not equal."""


__all__ = [
    "ACCURACY_METRICS",
    "BENCHMARK_METRICS",
    "BENCHMARK_STATE_DIFFERENCES",
    "BFCL_ERROR_PREFIX",
    "CONSTRAINED_STRATEGIES",
    "FAMILIES",
    "GRAMMAR_BACKENDS",
    "HARNESS_STRATEGIES",
    "HEADLINE_METRICS",
    "HTTP_ERROR_PREFIX",
    "SAMPLE_METRICS",
    "SERVER_STRATEGIES",
    "STRATEGIES",
    "TIMING_METRICS",
    "ErrorKind",
    "Family",
    "GrammarBackend",
    "Metric",
    "Strategy",
    "bfcl_error_kind",
    "http_error_kind",
]
