"""``harness bench sandbox|grammar|engine``: benchmarks that print JSON figures as their last output."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from harness.benchmarks import BENCHMARKS, CORPUS, with_seam
from harness.cli.errors import fail, make_app
from harness.cli.options import (
    CONSTRAINED,
    FAMILIES,
    GRAMMAR_ENGINES,
    BenchFamilies,
    BenchStrategies,
    Family,
    GrammarEngines,
    LimitsPreset,
    MaskPolicy,
    Names,
    Strategy,
    example,
    names_parser,
)

if TYPE_CHECKING:
    from harness.bench import ScoreFigure

CORPORA = with_seam(CORPUS)
"""The benchmarks whose tools ``--growth-tools`` takes by name (``harness.benchmarks``)."""
CORPORA_HELP = "; ".join(f"{name}: {BENCHMARKS[name].label}'s function documents" for name in CORPORA)

app = make_app(help="Benchmarks: sandboxed tool calls, grammar overhead per strategy, the embedded engine, the client at scale, harness serve under attack.")

ToolsOpt = Annotated[
    str | None, typer.Option("--tools", metavar="PATH", help="Tools: any .pym folder or an OpenAI JSON list (default: the shipped SHELLper tools).")
]


def goal_verdict(figure: float, goal: float) -> str:
    """``met`` or ``MISSED`` for a figure that must stay at or under ``goal``."""
    return "met" if figure <= goal else "MISSED"


def goals_line(goals: dict[str, tuple[float, float]], unit: str) -> str:
    """``goal p50 <= 500 us: met; p99 <= 2000 us: MISSED (2312 us)``: every goal said as met or missed."""
    parts = []
    for name, (figure, goal) in goals.items():
        verdict = goal_verdict(figure, goal)
        parts.append(f"{name} <= {goal:g} {unit}: {verdict}" + ("" if verdict == "met" else f" ({figure:.0f} {unit})"))
    return "goals: " + "; ".join(parts)


@app.command("sandbox", epilog=example("harness bench sandbox --n 2000 --tool cat", "harness bench sandbox --contention 12",
                                       "harness bench sandbox --mcp bundles/mcp-filesystem"))
def sandbox(
    n: Annotated[int, typer.Option("--n", min=1, metavar="N", help="Timed tool calls (rounded up to whole cycles).")] = 1000,
    limits: Annotated[LimitsPreset, typer.Option("--limits", help="The sandbox's limits preset.")] = LimitsPreset.default,
    tool: Annotated[str | None, typer.Option("--tool", metavar="NAME", help="Time only this tool (default: all 18 in turn).")] = None,
    tools: ToolsOpt = None,
    contention: Annotated[
        int | None,
        typer.Option("--contention", min=1, metavar="N",
                     help="Instead: N slow calls at once (an endless loop, a loop that catches its cancellation, an "
                          "external that blocks the host) and a healthy call made meanwhile; when each ended."),
    ] = None,
    mcp: Annotated[
        Path | None,
        typer.Option("--mcp", metavar="BUNDLE", help="Also time the calls of this MCP bundle's server over the same "
                     "20-file tree (its start timed apart), printed beside the sandbox's; the JSON gains an mcp object."),
    ] = None,
) -> None:
    """Time one tool call per tool (fresh session, a 20-file tree, mutations applied) of any .pym folder; or,
    with --contention, slow calls against a healthy one in the same pool. JSON last."""
    import json

    from harness.bench import GOAL, bench_sandbox

    if contention is not None:
        from harness.bench import bench_contention

        measured = bench_contention(contention)
        for row in measured.rows:
            typer.echo(f"{row.slow_calls} x {row.slow_kind}: ended {row.slow_end_s_min}-{row.slow_end_s_max} s after "
                       f"they were made (wall clock {row.wall_clock_s:g} s) as {row.slow_errors}; a healthy call made "
                       f"meanwhile: {row.healthy_result} in {row.healthy_s} s")
        typer.echo(json.dumps(measured.dump()))
        return

    try:
        figures = bench_sandbox(n=n, preset=limits.value, tool=tool, tools_dir=tools)
    except ValueError as e:
        fail(str(e))
    goals = {"p50": (figures.tool_call_us_p50 or 0.0, float(GOAL["tool_call_us_p50"])),
             "p99": (figures.tool_call_us_p99 or 0.0, float(GOAL["tool_call_us_p99"]))}
    typer.echo(
        f"sandbox tool call ({figures.tool}, preset {figures.preset}, n={figures.n}): "
        f"p50 {figures.tool_call_us_p50:.0f} us, p90 {figures.tool_call_us_p90:.0f} us, "
        f"p99 {figures.tool_call_us_p99:.0f} us; {goals_line(goals, 'us')}"
    )
    for name, us in figures.per_tool_us_p50.items():
        over = "  MISSED the goal" if name in figures.tools_over_goal else ""
        typer.echo(f"  {name:6s} p50 {us:7.0f} us  p99 {figures.per_tool_us_p99[name]:7.0f} us{over}")
    if mcp is None:
        typer.echo(json.dumps(figures.dump()))
        return
    from harness.agents import BundleError
    from harness.bench import bench_mcp

    try:
        server = bench_mcp(mcp, n=figures.n)
    except BundleError as exc:
        fail(str(exc))
    typer.echo(f"MCP server tool call ({server.bundle}, n={server.n}): p50 {server.tool_call_us_p50:.0f} us, "
               f"p99 {server.tool_call_us_p99:.0f} us; its start and first call {server.first_call_ms:.0f} ms; "
               f"{server.error_results} error results")
    typer.echo(json.dumps({**figures.dump(), "mcp": server.dump()}))


@app.command("serve", epilog=example("harness bench serve --attacks lockout"))
def serve(
    attacks: Annotated[
        Names | None,
        typer.Option("--attacks", parser=names_parser(("grammar", "lockout")), metavar="grammar|lockout[,...]",
                     help="grammar: huge and slow grammars, deep and big bodies (minutes); lockout: idle and "
                          "slowloris connections, a 64 MB header, short and slow bodies (~2 minutes). Default: both."),
    ] = None,
) -> None:
    """Hostile requests against `harness serve --engine oracle` (huge and slow grammars, deep and big bodies;
    connections that try to lock it out) with the server's and its compile worker's memory sampled, then
    healthy requests and a timed shutdown; JSON last. (Grammars are bounded the same way whatever the engine.)"""
    import json

    from harness.bench import PARTS, bench_serve

    figures = bench_serve(log=typer.echo, parts=tuple(attacks or PARTS))
    typer.echo(json.dumps(figures.dump()))


@app.command("engine", epilog=example("harness bench engine --repeats 2 --strategy ebnf,json_schema"))
def engine(
    repeats: Annotated[int, typer.Option("--repeats", min=1, metavar="N", help="Timed rounds (each: unconstrained + every strategy).")] = 3,
    max_tokens: Annotated[int, typer.Option("--max-tokens", min=2, metavar="N", help="Tokens generated per timed run.")] = 64,
    strategy: BenchStrategies = None,
    policy: Annotated[
        Names | None,
        typer.Option(
            "--mask-policy", parser=names_parser(tuple(MaskPolicy)), metavar="lazy|always[,...]",
            help="Mask policies to time, comma-separated (default: lazy,always; lazy, the engine's, is always timed).",
        ),
    ] = None,
    tools: ToolsOpt = None,
) -> None:
    """The embedded engine: tokens/s constrained (with and without jump-forward) vs unconstrained, the
    forced-token fraction, time to first token cold vs with the tool prompt cached; JSON last."""
    import json

    from harness.bench import run_engine_bench

    policies = list(dict.fromkeys(["lazy", *(policy or ("lazy", "always"))]))
    try:
        figures = run_engine_bench(
            tools_path=tools, strategies=list(strategy or CONSTRAINED), policies=policies, repeats=repeats,
            max_tokens=max_tokens, log=typer.echo,
        )
    except (FileNotFoundError, ValueError) as e:
        fail(str(e))
    typer.echo(
        f"constrained {figures.constrained_tok_s} tok/s (worst strategy, jump-forward verify), "
        f"unconstrained {figures.unconstrained_tok_s} tok/s, ratio {figures.constrained_over_unconstrained} "
        f"(append {figures.constrained_over_unconstrained_append}, without jump-forward "
        f"{figures.constrained_over_unconstrained_plain}), forced "
        f"{figures.forced_fraction}; ttft first "
        f"{figures.ttft_ms_first} ms, repeat {figures.ttft_ms_repeat} ms, next-case speedup "
        f"{figures.ttft_speedup_next_case}x"
    )
    typer.echo("goals: " + "; ".join(f"{name}: {'met' if ok else 'MISSED'}" for name, ok in figures.goals_met.items()))
    typer.echo(json.dumps(figures.dump()))


@app.command("jump", epilog=example("harness bench jump suites/shellper --limit 10 --strategy ebnf"))
def jump(
    suite: Annotated[str, typer.Argument(metavar="SUITE", help="Suite directory.")] = "suites/shellper",
    limit: Annotated[int | None, typer.Option("--limit", min=1, metavar="N", help="Only the first N cases.")] = None,
    strategy: BenchStrategies = None,
    out: Annotated[str | None, typer.Option("--out", metavar="DIR", help="Output folder (default results/bench/jump-<UTC time>).")] = None,
) -> None:
    """Jump-forward against the plain decoding loop on a suite (embedded engine): the suite run and
    scored with each loop (plain, append, verify), each request of the jump-forward runs also decoded
    by the plain loop; how many outputs differ and why, tokens/s and model steps. Writes plain/,
    append/, verify/, pairs.jsonl, jump.json; JSON last."""
    import json
    from datetime import UTC, datetime
    from pathlib import Path

    from harness.bench import run_jump_bench

    folder = Path(out) if out else Path("results") / "bench" / f"jump-{datetime.now(UTC).strftime('%Y%m%d-%H%M%S')}"
    try:
        result = run_jump_bench(Path(suite), folder, strategies=list(strategy or CONSTRAINED), limit=limit, log=typer.echo)
    except (FileNotFoundError, ValueError) as e:
        fail(str(e))
    for mode, per in result.per_mode.items():
        for name, fig in per.items():
            scores = " ".join(f"{m} {_value(fig.scores_plain.get(m))}->{_value(fig.scores.get(m))}"
                              for m in ("validity", "exact_match"))
            typer.echo(
                f"{mode:>6} {name:>14}: {scores}; samples differing {fig.samples_differing}; requests "
                f"{fig.requests}, same tokens {fig.same_tokens}, differ {fig.differ}; speedup "
                f"{fig.speedup_median}x, forced {fig.forced_fraction}"
            )
    typer.echo(f"wrote {folder}/jump.json, pairs.jsonl, plain/, append/ and verify/")
    typer.echo(json.dumps(result.dump()))


def _value(score: ScoreFigure | None) -> float | None:
    """A score's value (None when the run has no such score)."""
    return None if score is None else score.value


@app.command("grammar", epilog=example(
    "harness bench grammar --quick --family qwen --strategy ebnf --grammar-engine xgrammar",
    f"harness bench grammar --growth-tools {CORPORA[0]} --grammar-engine xgrammar",
))
def grammar(
    family: BenchFamilies = None,
    strategy: BenchStrategies = None,
    tools: ToolsOpt = None,
    calls: Annotated[
        str | None,
        typer.Option(
            "--calls", metavar="PATH", help="Gold calls: .jsonl ({calls:[...]}, {name, arguments} or suite cases) or a suite folder."
        ),
    ] = None,
    out: Annotated[str | None, typer.Option("--out", metavar="DIR", help="Output folder (default results/bench/grammar-<UTC time>).")] = None,
    quick: Annotated[bool, typer.Option("--quick", help="Fewer outputs, repeats and growth points (a smoke run).")] = False,
    grammar_engine: GrammarEngines = None,
    growth: Annotated[bool, typer.Option("--growth/--no-growth", show_default=False, help="Also measure growth with tools and output length (default: on).")] = True,
    repeats: Annotated[int, typer.Option("--repeats", min=0, metavar="N", help="Compile repeats (0: 5, quick 3).")] = 0,
    growth_tools: Annotated[str | None, typer.Option("--growth-tools", metavar="|".join(("PATH", *CORPORA)), help=f"Measure the tool-count growth on a real corpus (a tools JSON, .pym folder or bundle; {CORPORA_HELP}) at 10, 100, 400 and 1,000 tools.")] = None,
) -> None:
    """Strategy overhead per family and grammar engine: compile cold/cached, mask and accept time per
    token, mask application, gold acceptance; growth with tools and output length. Writes bench.json,
    bench.md and PNG plots, prints the table; a JSON summary is the last line."""
    import json

    from harness.bench.grammar import GrammarBenchConfig, print_table, run_grammar_bench

    cfg = GrammarBenchConfig(
        families=tuple(family or FAMILIES),
        strategies=tuple(strategy or CONSTRAINED),
        engines=tuple(grammar_engine or GRAMMAR_ENGINES),
        tools_path=tools,
        calls_path=calls,
        out_dir=out,
        quick=quick,
        growth=growth,
        repeats=repeats,
        growth_corpus=growth_tools,
    )
    try:
        bench = run_grammar_bench(cfg, log=typer.echo)
    except (FileNotFoundError, ValueError) as e:
        fail(str(e))
    print_table(bench)
    summary = bench.summary.dump() if bench.summary is not None else {}
    typer.echo(f"wrote {summary.get('out')}/bench.json, bench.md and PNG plots")
    typer.echo(json.dumps(summary))


@app.command("client", epilog=example("harness bench client --replicas 1,2 --concurrency 1,16,64 --limit 100"))
def client(
    suite: Annotated[str, typer.Option("--suite", help="Suite folder whose samples are run.")] = "suites/shellper",
    replicas: Annotated[str, typer.Option("--replicas", help="Replica counts, comma-separated.")] = "1,2,4",
    concurrency: Annotated[str, typer.Option("--concurrency", help="Samples in flight, comma-separated.")] = "1,4,16,64",
    family: Annotated[Family, typer.Option("--family", help="Model family.")] = Family.function_gemma,
    strategy: Annotated[Strategy, typer.Option("--strategy", help="Constraint strategy.")] = Strategy.ebnf,
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="Only the first N cases (default: all).")] = None,
    epochs: Annotated[int, typer.Option("--epochs", min=1, help="Repetitions of every case.")] = 1,
    out: Annotated[str | None, typer.Option("--out", help="Output folder (default results/bench/client-<UTC time>).")] = None,
) -> None:
    """The runner and OpenAI client at scale: `--engine openai` over 1, 2, 4 local `harness serve --engine
    oracle` replicas at each concurrency; samples/s and the harness's own ms per sample. Writes client.json
    and client.png; JSON last."""
    import json
    from datetime import UTC, datetime
    from pathlib import Path

    from harness.bench import run_client_bench

    def ints(text: str, what: str) -> list[int]:
        try:
            values = [int(x) for x in text.split(",") if x.strip()]
        except ValueError:
            fail(f"{what}: expected comma-separated integers, got {text!r}")
        if not values or min(values) < 1:
            fail(f"{what}: expected positive integers, got {text!r}")
        return values

    out_dir = Path(out) if out else Path("results/bench") / f"client-{datetime.now(UTC).strftime('%Y%m%d-%H%M%S')}"
    figures = run_client_bench(
        Path(suite), replicas=ints(replicas, "--replicas"), concurrency=ints(concurrency, "--concurrency"),
        family=family.value, strategy=strategy.value, limit=limit, epochs=epochs, out_dir=out_dir, log=typer.echo,
    )
    for name, goal in figures.goals.items():
        verdict = "met" if goal.met else "MISSED"
        typer.echo(f"{name}: {goal.measured} (goal {goal.goal}): {verdict}")
    typer.echo(f"wrote {out_dir / 'client.json'} and {out_dir / 'client.png'}")
    typer.echo(json.dumps(figures.dump()))
