"""``harness bench engine``: speed of the embedded engine, constrained against unconstrained.

One engine, the SHELLper tool prompt (18 tools), FunctionGemma's format (the only family it has
weights for). Figures:

- tokens/s after the first token, per strategy, mask policy and decoding loop (``verify``: jump-forward
  drafts checked by the model; ``append``: forced tokens appended unchecked; ``plain``: one model step
  per token, the engine's default), the median of ``repeats`` runs that are
  interleaved with unconstrained runs of the same prompt (the machine is shared and noisy: the ratio
  is taken within the same round, then the median of the ratios);
- per run, the fraction of tokens the grammar forced (appended without a model step) and the model's
  forward passes per token; the forced fraction depends on what the model writes (a runaway string
  argument is free text, a call's punctuation and names are forced);
- grammar time per token (matcher, mask fills, picking among allowed ids, jump-forward lookups) and how
  often the lazy policy had to fill the mask;
- unconstrained tokens/s with a 20-token prompt and no tools (attention over the ~2,000-token tool
  prompt costs about a sixth of the speed);
- time to first token: ``ttft_ms_first`` with an empty KV cache and the grammar cache cleared (the
  full tool prompt is evaluated and the grammar compiled), ``ttft_ms_repeat`` for the same request
  again and ``ttft_ms_next_case`` for another user message with the same tools.

Parallel calls are allowed so a constrained answer runs to ``max_tokens`` (a base model repeats calls):
every run produces the same number of tokens to time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from harness.agents import (
    CONSTRAINED_STRATEGIES,
    CompletionRequest,
    CompletionResponse,
    DecodingConstraint,
    Message,
    ToolSchema,
)
from harness.bench.inputs import load_tool_schemas
from harness.bench.records import BenchRecord, SparseRecord
from harness.stats import rounded_percentile
from harness.vocabulary import Strategy

SYSTEM = (
    "You operate a file system for the user through the tools you are given. Each turn, make the single "
    "tool call that moves the task forward."
)
USER_PROMPTS = (
    "Create a directory called reports, then list what is in the current directory.",
    "Show me the last 5 lines of server.log.",
    "Rename draft.txt to final.txt.",
)
GOALS = {"constrained_tok_s": 50.0, "constrained_over_unconstrained": 1.5, "ttft_speedup": 5.0}
"""With jump-forward verify (outputs unchanged), lazy mask policy, worst strategy."""
LOOPS = {"verify": "verify", "append": "append", "plain": "off"}
"""The decoding loops timed (``harness.grammar.decode``): jump-forward drafts checked by the model (the
engine's default), forced tokens appended unchecked, and one model step per token."""


class TtftFigures(BenchRecord):
    """Time to first token of one strategy: cold, the same request again, another user message."""

    ttft_ms_first: float
    """Empty KV cache, grammar cache cleared: the whole tool prompt evaluated, the grammar compiled."""
    ttft_ms_repeat: float
    """The same request again."""
    ttft_ms_next_case: float
    """Another user message with the same tools."""
    speedup_repeat: float | None
    """``ttft_ms_first / ttft_ms_repeat``."""
    speedup_next_case: float | None
    """``ttft_ms_first / ttft_ms_next_case``."""
    prompt_tokens: int | None
    """The prompt's tokens."""
    reused_tokens_next_case: int | None
    """Prompt tokens the next case took from the KV cache."""
    compile_ms_cold: float | None
    """The grammar's compile in the first request."""


class LoopFigures(SparseRecord):
    """Medians over the rounds of one strategy x mask policy x decoding loop (the unconstrained runs:
    ``tok_s_median`` only)."""

    tok_s_median: float | None = None
    """Tokens per second after the first token."""
    grammar_us_per_token_median: float | None = None
    """Grammar time per token (matcher, mask fills, picking, jump-forward lookups)."""
    mask_fills_per_token_median: float | None = None
    """How often the mask was filled, per token."""
    forced_fraction_median: float | None = None
    """Tokens the grammar forced (appended without a model step)."""
    steps_per_token_median: float | None = None
    """The model's forward passes per token."""
    tokens_median: float | None = None
    """Tokens generated per run."""
    ratio_median: float | None = None
    """Tokens/s over the unconstrained run of the same round."""


class EngineBench(BenchRecord):
    """``harness bench engine``'s figures (its JSON line): worst strategy per loop, then the details."""

    engine: str
    """The embedded engine and its model."""
    family: str
    """The family it runs in."""
    threads: int
    """llama.cpp's threads."""
    max_tokens: int
    """Tokens per timed run."""
    repeats: int
    """Timed rounds."""
    tools: int
    """Tools in the prompt."""
    constrained_tok_s: float | None
    """Worst strategy's median tokens/s, jump-forward verify, lazy masks."""
    unconstrained_tok_s: float
    """Median unconstrained tokens/s, same prompt."""
    unconstrained_tok_s_short_prompt: float | None
    """Median unconstrained tokens/s with a 20-token prompt and no tools."""
    constrained_over_unconstrained: float | None
    """Worst strategy's median ratio to unconstrained (verify)."""
    constrained_tok_s_append: float | None
    """As ``constrained_tok_s``, forced tokens appended unchecked."""
    constrained_over_unconstrained_append: float | None
    """As ``constrained_over_unconstrained``, append."""
    constrained_tok_s_plain: float | None
    """As ``constrained_tok_s``, one model step per token (the engine's default)."""
    constrained_over_unconstrained_plain: float | None
    """As ``constrained_over_unconstrained``, plain loop."""
    forced_fraction: dict[str, float | None]
    """``family/strategy/loop`` -> median forced fraction (lazy masks)."""
    ttft_ms_first: float | None
    """Worst strategy's cold time to first token."""
    ttft_ms_repeat: float | None
    """Worst strategy's time to first token for the same request again."""
    ttft_speedup_next_case: float | None
    """Worst strategy's speedup of the next case over the cold request."""
    worst_of: str
    """What "worst" is taken over, in words."""
    per_strategy: dict[str, LoopFigures]
    """``strategy/policy/loop`` (and ``none``) -> its medians."""
    ttft: dict[str, TtftFigures]
    """Strategy -> its time to first token."""
    goals: dict[str, float]
    """The project's goals."""
    goals_met: dict[str, bool]
    """Each goal met or not."""


def _request(engine: Any, tools: Sequence[ToolSchema], strategy: str, user: str, max_tokens: int) -> CompletionRequest:
    from harness.grammar.families import get_adapter

    payload = get_adapter(engine.family).build_payload(
        tools, DecodingConstraint(strategy=strategy, allow_parallel_calls=True)
    )
    return CompletionRequest(
        model=engine.model_id,
        messages=(Message("developer", SYSTEM), Message("user", user)),
        tools=tuple(tools),
        extra_body=payload.extra_body,
        stop=payload.stop,
        max_tokens=max_tokens,
        temperature=0.0,
    )


def _run(engine: Any, request: CompletionRequest) -> tuple[CompletionResponse, dict[str, float]]:
    """One timed run: the response and its figures by name (``LoopFigures`` takes their medians)."""
    response = engine.complete(request)
    result = engine.last_decode
    tokens = max(1, response.stats.generated_tokens if response.stats else 1)
    figures = {
        "tok_s": response.stats.tokens_per_s or 0.0 if response.stats else 0.0,
        "grammar_us_per_token": result.grammar_us / tokens,
        "mask_fills_per_token": len(result.mask_us) / tokens,
        "forced_fraction": result.forced / tokens,
        "steps_per_token": result.steps / tokens,
        "tokens": float(tokens),
    }
    return response, figures


def run_engine_bench(
    *,
    tools_path: str | Path | None = None,
    strategies: Sequence[str] = CONSTRAINED_STRATEGIES,
    policies: Sequence[str] = ("lazy", "always"),
    repeats: int = 3,
    max_tokens: int = 64,
    log: Callable[[str], None] = print,
) -> EngineBench:
    """Run the benchmark and return its figures (see the module doc)."""
    from harness.engines.local import LOCAL_MODEL_ID, LocalEngine

    tools = load_tool_schemas(tools_path)
    engine = LocalEngine()
    runtime = engine.load()
    log(f"engine: {LOCAL_MODEL_ID}, {runtime.n_threads} threads, load {runtime.load_ms:.0f} ms, {len(tools)} tools")
    ttft = {strategy: _ttft(engine, runtime, tools, strategy, log) for strategy in (Strategy.none, *strategies)}
    runs = _rounds(engine, tools, strategies, policies, repeats, max_tokens, log)
    engine.mask_policy, engine.jump = "lazy", "off"
    short = []
    for _ in range(repeats):  # the same model with a 20-token prompt: where the reference's figure was taken
        bare = CompletionRequest(model=engine.model_id, messages=(Message("user", USER_PROMPTS[0]),), max_tokens=max_tokens)
        short.append(_run(engine, bare)[1]["tok_s"])
    per = {
        key: LoopFigures.model_validate({f"{k}_median": rounded_percentile(v, 50) for k, v in slot.items()})
        for key, slot in runs.items()
    }
    worst = {loop: _worst(per, strategies, loop) for loop in LOOPS}
    constrained_ttft = [ttft[s] for s in strategies]
    worst_speedup = min((t.speedup_next_case or 0.0) for t in constrained_ttft) if constrained_ttft else None
    worst_tok, worst_ratio = worst["verify"]
    return EngineBench(
        engine=f"local:{LOCAL_MODEL_ID}", family=engine.family, threads=runtime.n_threads, max_tokens=max_tokens,
        repeats=repeats, tools=len(tools), constrained_tok_s=worst_tok,
        unconstrained_tok_s=per[Strategy.none].tok_s_median or 0.0,
        unconstrained_tok_s_short_prompt=rounded_percentile(short, 50), constrained_over_unconstrained=worst_ratio,
        constrained_tok_s_append=worst["append"][0], constrained_over_unconstrained_append=worst["append"][1],
        constrained_tok_s_plain=worst["plain"][0], constrained_over_unconstrained_plain=worst["plain"][1],
        forced_fraction={
            f"{engine.family}/{s}/{loop}": per[f"{s}/lazy/{loop}"].forced_fraction_median
            for s in strategies
            for loop in ("verify", "append")
        },
        ttft_ms_first=max(t.ttft_ms_first for t in constrained_ttft) if constrained_ttft else None,
        ttft_ms_repeat=max(t.ttft_ms_repeat for t in constrained_ttft) if constrained_ttft else None,
        ttft_speedup_next_case=worst_speedup,
        worst_of="lazy mask policy, over " + ", ".join(strategies)
        + "; jump-forward verify (outputs the plain loop's); _append: forced tokens unchecked; _plain: without"
        " jump-forward (the engine's default)",
        per_strategy=per, ttft=ttft, goals=GOALS,
        goals_met={
            "constrained_tok_s": worst_tok is not None and worst_tok >= GOALS["constrained_tok_s"],
            "constrained_over_unconstrained": worst_ratio is not None and worst_ratio >= GOALS["constrained_over_unconstrained"],
            "ttft_speedup": worst_speedup is not None and worst_speedup >= GOALS["ttft_speedup"],
        },
    )


def _ttft(engine: Any, runtime: Any, tools: Sequence[ToolSchema], strategy: str, log: Callable[[str], None]) -> TtftFigures:
    """Time to first token of ``strategy``: cold (KV and grammar caches cleared), again, next case."""
    from harness.grammar import clear_compile_cache

    runtime.reset()
    clear_compile_cache(engine.family)
    first = engine.complete(_request(engine, tools, strategy, USER_PROMPTS[0], 1))
    repeat = engine.complete(_request(engine, tools, strategy, USER_PROMPTS[0], 1))
    nxt = engine.complete(_request(engine, tools, strategy, USER_PROMPTS[1], 1))
    t_first, t_rep, t_next = first.ttft_ms or 0.0, repeat.ttft_ms or 0.0, nxt.ttft_ms or 0.0
    log(f"ttft {strategy:>14}: first {t_first:7.1f} ms, repeat {t_rep:6.1f} ms, next case {t_next:6.1f} ms")
    return TtftFigures(
        ttft_ms_first=round(t_first, 1),
        ttft_ms_repeat=round(t_rep, 1),
        ttft_ms_next_case=round(t_next, 1),
        speedup_repeat=round(t_first / t_rep, 1) if t_rep else None,
        speedup_next_case=round(t_first / t_next, 1) if t_next else None,
        prompt_tokens=first.usage.prompt_tokens if first.usage else None,
        reused_tokens_next_case=nxt.stats.reused_prompt_tokens if nxt.stats else None,
        compile_ms_cold=round(first.stats.compile_ms, 2) if first.stats and first.stats.compile_ms else None,
    )


def _rounds(
    engine: Any, tools: Sequence[ToolSchema], strategies: Sequence[str], policies: Sequence[str], repeats: int,
    max_tokens: int, log: Callable[[str], None],
) -> dict[str, dict[str, list[float]]]:
    """``repeats`` rounds, each an unconstrained run then every strategy x policy x loop on the same
    prompt: ``strategy/policy/loop`` (and ``none``) -> figure -> one value per round."""
    runs: dict[str, dict[str, list[float]]] = {}
    for r in range(repeats):
        user = USER_PROMPTS[r % len(USER_PROMPTS)]
        engine.mask_policy, engine.jump = "lazy", "off"
        _, base = _run(engine, _request(engine, tools, Strategy.none, user, max_tokens))
        runs.setdefault(Strategy.none, {}).setdefault("tok_s", []).append(base["tok_s"])
        for strategy in strategies:
            for policy in policies:
                for loop, jump in LOOPS.items():
                    engine.mask_policy, engine.jump = policy, jump
                    _, fig = _run(engine, _request(engine, tools, strategy, user, max_tokens))
                    slot = runs.setdefault(f"{strategy}/{policy}/{loop}", {})
                    for k, v in fig.items():
                        slot.setdefault(k, []).append(v)
                    slot.setdefault("ratio", []).append(fig["tok_s"] / base["tok_s"] if base["tok_s"] else 0.0)
                    log(f"round {r + 1} {strategy:>14}/{policy:<6}/{loop:<5}: {fig['tok_s']:5.1f} tok/s "
                        f"(unconstrained {base['tok_s']:5.1f}), forced {fig['forced_fraction']:4.0%}, "
                        f"grammar {fig['grammar_us_per_token']:6.1f} us/token")
    return runs


def _worst(per: dict[str, LoopFigures], strategies: Sequence[str], loop: str) -> tuple[float | None, float | None]:
    """The lowest median tokens/s and ratio to unconstrained over the strategies (lazy policy)."""
    cells = [per[f"{s}/lazy/{loop}"] for s in strategies if f"{s}/lazy/{loop}" in per]
    if not cells:
        return None, None
    return min(c.tok_s_median or 0.0 for c in cells), min(c.ratio_median or 0.0 for c in cells)
