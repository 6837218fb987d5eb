"""``harness bench sandbox|grammar|engine``: benchmarks that print JSON figures as their last output."""

from __future__ import annotations

from typing import Annotated

import typer

app = typer.Typer(help="Benchmarks: sandboxed tool calls, grammar overhead per strategy, the embedded engine.", no_args_is_help=True)


@app.command("sandbox")
def sandbox(
    n: Annotated[int, typer.Option("--n", min=1, help="Timed tool calls (rounded up to whole cycles).")] = 1000,
    limits: Annotated[str, typer.Option("--limits", help="Limits preset: strict, default or permissive.")] = "default",
    tool: Annotated[str | None, typer.Option("--tool", help="Time only this tool (default: all 18 in turn).")] = None,
    tools: Annotated[
        str | None, typer.Option("--tools", help="A .pym folder (default: bundles/shellper/tools).")
    ] = None,
) -> None:
    """Time one file-system tool call (fresh session, 20 virtual files, mutations applied); JSON last."""
    import json

    from harness.bench.sandbox import bench_sandbox

    try:
        figures = bench_sandbox(n=n, preset=limits, tool=tool, tools_dir=tools)
    except ValueError as e:
        raise typer.BadParameter(str(e)) from e
    typer.echo(
        f"sandbox tool call ({figures['tool']}, preset {figures['preset']}, n={figures['n']}): "
        f"p50 {figures['tool_call_us_p50']:.0f} us, p90 {figures['tool_call_us_p90']:.0f} us, "
        f"p99 {figures['tool_call_us_p99']:.0f} us (goal p50 <= 500 us, p99 <= 2000 us)"
    )
    for name, us in figures["per_tool_us_p50"].items():
        typer.echo(f"  {name:6s} p50 {us:7.0f} us")
    typer.echo(json.dumps(figures))


@app.command("engine")
def engine(
    repeats: int = typer.Option(3, "--repeats", min=1, help="Timed rounds (each: unconstrained + every strategy)."),
    max_tokens: int = typer.Option(64, "--max-tokens", min=2, help="Tokens generated per timed run."),
    strategies: str | None = typer.Option(
        None, "--strategies", help="Comma-separated (default: every constrained strategy)."
    ),
    policies: str = typer.Option("lazy,always", "--policies", help="Mask policies to time (lazy is the engine's)."),
    tools: str | None = typer.Option(None, "--tools", help="Tools: OpenAI JSON list or .pym folder (default: SHELLper)."),
) -> None:
    """The embedded engine: tokens/s constrained (with and without jump-forward) vs unconstrained, the
    forced-token fraction, time to first token cold vs with the tool prompt cached; JSON last."""
    import json

    from harness.agents.constraint import CONSTRAINED_STRATEGIES
    from harness.bench.engine import run_engine_bench

    chosen = [s.strip() for s in (strategies or ",".join(CONSTRAINED_STRATEGIES)).split(",") if s.strip()]
    bad = [s for s in chosen if s not in CONSTRAINED_STRATEGIES]
    if bad:
        raise typer.BadParameter(f"unknown strategies {bad}: expected {', '.join(CONSTRAINED_STRATEGIES)}")
    pols = [p.strip() for p in policies.split(",") if p.strip()]
    if "lazy" not in pols or any(p not in ("lazy", "always") for p in pols):
        raise typer.BadParameter("policies: lazy (required) and optionally always")
    try:
        figures = run_engine_bench(
            tools_path=tools, strategies=chosen, policies=pols, repeats=repeats, max_tokens=max_tokens, log=typer.echo
        )
    except (FileNotFoundError, ValueError) as e:
        raise typer.BadParameter(str(e)) from e
    typer.echo(
        f"constrained {figures['constrained_tok_s']} tok/s (worst strategy, jump-forward verify), "
        f"unconstrained {figures['unconstrained_tok_s']} tok/s, ratio {figures['constrained_over_unconstrained']} "
        f"(append {figures['constrained_over_unconstrained_append']}, without jump-forward "
        f"{figures['constrained_over_unconstrained_plain']}), forced "
        f"{figures['forced_fraction']}; ttft first "
        f"{figures['ttft_ms_first']} ms, repeat {figures['ttft_ms_repeat']} ms, next-case speedup "
        f"{figures['ttft_speedup_next_case']}x; goals met: {figures['goals_met']}"
    )
    typer.echo(json.dumps(figures))


@app.command("jump")
def jump(
    suite: str = typer.Argument("suites/shellper", help="Suite directory."),
    limit: int | None = typer.Option(None, "--limit", min=1, help="Only the first N cases."),
    strategies: str | None = typer.Option(
        None, "--strategies", help="Comma-separated (default: every constrained strategy)."
    ),
    out: str | None = typer.Option(None, "--out", help="Output folder (default results/bench/jump-<UTC time>)."),
) -> None:
    """Jump-forward against the plain decoding loop on a suite (embedded engine): the suite run and
    scored with each loop (plain, append, verify), each request of the jump-forward runs also decoded
    by the plain loop; how many outputs differ and why, tokens/s and model steps. Writes plain/,
    append/, verify/, pairs.jsonl, jump.json; JSON last."""
    import json
    from datetime import UTC, datetime
    from pathlib import Path

    from harness.agents.constraint import CONSTRAINED_STRATEGIES
    from harness.bench.jump import run_jump_bench

    chosen = [s.strip() for s in (strategies or ",".join(CONSTRAINED_STRATEGIES)).split(",") if s.strip()]
    bad = [s for s in chosen if s not in CONSTRAINED_STRATEGIES]
    if bad:
        raise typer.BadParameter(f"unknown strategies {bad}: expected {', '.join(CONSTRAINED_STRATEGIES)}")
    folder = Path(out) if out else Path("results") / "bench" / f"jump-{datetime.now(UTC).strftime('%Y%m%d-%H%M%S')}"
    try:
        result = run_jump_bench(Path(suite), folder, strategies=chosen, limit=limit, log=typer.echo)
    except (FileNotFoundError, ValueError) as e:
        raise typer.BadParameter(str(e)) from e
    for mode, per in result["per_mode"].items():
        for strategy, fig in per.items():
            scores = " ".join(
                f"{m} {fig['scores_plain'].get(m, {}).get('value')}->{fig['scores'].get(m, {}).get('value')}"
                for m in ("validity", "exact_match")
            )
            typer.echo(
                f"{mode:>6} {strategy:>14}: {scores}; samples differing {fig['samples_differing']}; requests "
                f"{fig['requests']}, same tokens {fig['same_tokens']}, differ {fig['differ']}; speedup "
                f"{fig['speedup_median']}x, forced {fig['forced_fraction']}"
            )
    typer.echo(f"wrote {folder}/jump.json, pairs.jsonl, plain/, append/ and verify/")
    typer.echo(json.dumps(result))


@app.command("grammar")
def grammar(
    family: str | None = typer.Option(None, "--family", help="Model families, comma-separated (default: all)."),
    strategy: str | None = typer.Option(
        None, "--strategy", help="Strategies, comma-separated (default: every constrained strategy)."
    ),
    tools: str | None = typer.Option(None, "--tools", help="Tools: OpenAI JSON list or .pym folder (default: SHELLper)."),
    calls: str | None = typer.Option(
        None, "--calls", help="Gold calls: .jsonl ({calls:[...]}, {name, arguments} or suite cases) or a suite folder."
    ),
    out: str | None = typer.Option(None, "--out", help="Output folder (default results/bench/grammar-<UTC time>)."),
    quick: bool = typer.Option(False, "--quick", help="Fewer outputs, repeats and growth points (a smoke run)."),
    engine: str = typer.Option("xgrammar,llguidance", "--engine", help="Grammar engines, comma-separated."),
    growth: bool = typer.Option(True, "--growth/--no-growth", help="Also measure growth with tools and output length."),
    repeats: int = typer.Option(0, "--repeats", min=0, help="Compile repeats (0: 5, quick 3)."),
) -> None:
    """Strategy overhead per family and grammar engine: compile cold/cached, mask and accept time per
    token, mask application, gold acceptance; growth with tools and output length. Writes bench.json,
    bench.md and PNG plots, prints the table; a JSON summary is the last line."""
    import json

    from harness.agents.constraint import CONSTRAINED_STRATEGIES
    from harness.agents.families import FAMILIES
    from harness.bench.grammar import GRAMMAR_ENGINES, GrammarBenchConfig, run_grammar_bench
    from harness.bench.output import print_table

    def pick(text: str | None, allowed: tuple[str, ...], what: str) -> tuple[str, ...]:
        chosen = tuple(x.strip() for x in (text or ",".join(allowed)).split(",") if x.strip())
        bad = [x for x in chosen if x not in allowed]
        if bad or not chosen:
            raise typer.BadParameter(f"{what}: unknown {bad or text!r}; expected {', '.join(allowed)}")
        return chosen

    cfg = GrammarBenchConfig(
        families=pick(family, FAMILIES, "--family"),
        strategies=pick(strategy, CONSTRAINED_STRATEGIES, "--strategy"),
        engines=pick(engine, GRAMMAR_ENGINES, "--engine"),
        tools_path=tools,
        calls_path=calls,
        out_dir=out,
        quick=quick,
        growth=growth,
        repeats=repeats,
    )
    try:
        bench = run_grammar_bench(cfg, log=typer.echo)
    except (FileNotFoundError, ValueError) as e:
        raise typer.BadParameter(str(e)) from e
    print_table(bench)
    typer.echo(f"wrote {bench['summary']['out']}/bench.json, bench.md and PNG plots")
    typer.echo(json.dumps(bench["summary"]))
