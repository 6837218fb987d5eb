"""``harness grammar show|check``: inspect a strategy's grammar and walk calls through it.

``show`` prints the artifact a strategy builds for a tool list (EBNF, structural tag or JSON schema)
and the request payload a vLLM server would receive.

``fuzz`` (``harness fuzz``, registered at the top level): property-based checks of a tool set's
grammars and parsers (``harness.fuzz``); prints the failing cells, then a JSON summary last; exit 0
when every cell passes (or none is worse than ``--expected``), 1 otherwise, 2 on bad input.

``check`` renders each line of a CALLS.jsonl file (``{"calls": [{"name": ..., "arguments": {...}}]}``,
or a raw answer ``{"text": "..."}``; ``"expect": "rejected"`` marks a line the grammar must refuse, as
``harness fuzz`` writes its counterexamples) in the family's output format for the strategy, walks it token by token through the compiled grammar
with the family's real tokenizer (mask filled at every step, the gold token checked against it, the
grammar required to end right after the text), prints one line per rejected item to stderr and, as
its last stdout output, one JSON summary. Exit 0: every line as expected (accepted, unless it says
``"expect": "rejected"``); 1: any line not; 2: bad input.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import typer

from harness.cli.errors import ExitCode, fail, make_app
from harness.cli.options import (
    CONSTRAINED,
    FAMILIES,
    BenchFamilies,
    BenchStrategies,
    ConstrainedStrategy,
    Family,
    Reference,
    Strategy,
    Target,
    example,
)

app = make_app(help="Show a strategy's grammar and payload; check calls against it token by token.")

_FAMILY_HELP = "Model family (its prompt and call format)."
_TOOLS_HELP = 'OpenAI-style tools list (JSON: [{"type": "function", "function": {...}}, ...]) or a .pym folder.'
_PARALLEL_HELP = "Build the grammar with allow_parallel_calls (several calls per answer)."

FamilyOpt = Annotated[Family, typer.Option("--family", help=_FAMILY_HELP)]
ToolsOpt = Annotated[Path, typer.Option("--tools", metavar="PATH", help=_TOOLS_HELP)]
ParallelOpt = Annotated[bool, typer.Option("--parallel", help=_PARALLEL_HELP)]


def _load_tools(path: Path) -> list[Any]:
    from harness.bench import load_tool_schemas

    try:
        return load_tool_schemas(path)
    except (FileNotFoundError, ValueError) as exc:
        fail(str(exc))


def _load_calls(path: Path) -> list[tuple[int, list[dict[str, Any]] | str, bool]]:
    """(line number, calls or a raw text, whether the line expects acceptance) per non-blank line."""
    from harness.files import InputFileError, read_json_lines

    try:
        lines = read_json_lines(path)
    except InputFileError as exc:
        fail(str(exc))
    out: list[tuple[int, list[dict[str, Any]] | str, bool]] = []
    for n, obj in lines:
        expect = obj.get("expect", "accepted") if isinstance(obj, dict) else None
        if expect not in ("accepted", "rejected"):
            fail(f'{path}:{n}: "expect" must be "accepted" or "rejected"')
        if isinstance(obj, dict) and isinstance(obj.get("text"), str) and "calls" not in obj:
            out.append((n, obj["text"], expect == "accepted"))
            continue
        calls = obj.get("calls") if isinstance(obj, dict) else None
        if not isinstance(calls, list):
            fail(f'{path}:{n}: expected an object {{"calls": [...]}} (or {{"text": "..."}})')
        for c in calls:
            if not isinstance(c, dict) or not isinstance(c.get("name"), str):
                fail(f'{path}:{n}: each call needs a string "name"')
            if not isinstance(c.get("arguments", {}), dict):
                fail(f'{path}:{n}: "arguments" must be an object')
        out.append((n, calls, expect == "accepted"))
    if not out:
        fail(f"{path}: no calls (the file has no non-blank lines)")
    return out


def _payload(family: str, strategy: str, tools: list[Any], parallel: bool) -> tuple[Any, Any, Any]:
    from harness.agents import ConstraintError, DecodingConstraint
    from harness.grammar.families import get_adapter

    adapter = get_adapter(family)
    try:
        constraint = DecodingConstraint(strategy=strategy, allow_parallel_calls=parallel)
        payload = adapter.build_payload(tools, constraint)
    except ConstraintError as exc:
        fail(f"cannot build the {strategy} constraint for these tools: {exc}")
    return adapter, constraint, payload


def _show_artifact(artifact: Any) -> str:
    if artifact.kind == "grammar":
        return str(artifact.value).rstrip("\n")
    try:
        return json.dumps(json.loads(artifact.value), indent=2, ensure_ascii=False)
    except ValueError:
        return str(artifact.value)


@app.command("show", epilog=example(
    "harness grammar show --family qwen --strategy ebnf --tools bundles/shellper/tools"))
def show(
    family_choice: FamilyOpt,
    strategy_choice: Annotated[Strategy, typer.Option("--strategy", help="The constraint strategy.")],
    tools_path: ToolsOpt,
    parallel: ParallelOpt = False,
) -> None:
    """Print the grammar (or tag, or schema) a strategy builds, then the request payload."""
    family, strategy = family_choice.value, strategy_choice.value
    tools = _load_tools(tools_path)
    _, _, payload = _payload(family, strategy, tools, parallel)
    artifact = payload.artifact
    if Strategy(strategy).server_built:
        _show_server_built(family, strategy, tools, payload)
    elif artifact is None:
        typer.echo(f"# {family} / {strategy}: no constraint (native tool calling, tools sent to the API)")
    else:
        typer.echo(f"# {family} / {strategy}: {artifact.kind}")
        typer.echo(_show_artifact(artifact))
    typer.echo("# request payload")
    body: dict[str, Any] = {"extra_body": payload.extra_body, "stop": list(payload.stop)}
    if payload.tool_choice is not None:
        body["tool_choice"] = payload.tool_choice
    if payload.strict_tools:
        body["tools"] = 'each tool with "strict": true'
    if payload.parallel_tool_calls is not None:
        body["parallel_tool_calls"] = payload.parallel_tool_calls
    typer.echo(json.dumps(body, indent=2, ensure_ascii=False))


def _show_server_built(family: str, strategy: str, tools: list[Any], payload: Any) -> None:
    """vLLM's own constraint for ``required``/``strict``: built with vLLM's code where vLLM is installed,
    else the harness's copy of its rules, saying what is missing."""
    from harness.grammar.families import canonical_schema
    from harness.grammar.formats import ToolRequest, vllm_own_constraint

    request = ToolRequest(payload.tool_choice, payload.strict_tools, payload.parallel_tool_calls)
    try:
        built = vllm_own_constraint(family, [canonical_schema(t) for t in tools], request)
        source = "built with vLLM's own code (vllm.tool_parsers)"
    except ImportError as exc:
        built, source = None, f"vLLM is not importable here ({exc}): the harness's copy of vLLM 0.32's rules"
    typer.echo(f"# {source}")
    label, artifact = (payload.server_built, payload.artifact) if built is None else (built.label, built.artifact)
    if built is not None and (built.label, built.artifact) != (payload.server_built, payload.artifact):
        typer.echo("# note: the harness's copy of vLLM's rules predicts otherwise (the oracle uses its copy)")
    typer.echo(f"# {family} / {strategy}: vLLM builds {label}")
    if artifact is not None:
        typer.echo(_show_artifact(artifact))


def _gold_texts(adapter: Any, constraint: Any, items: list[tuple[int, Any, bool]], refused: dict[str, str],
                calls_path: Path) -> tuple[list[Any], dict[str, bool], int, int]:
    """Each line rendered as the model writes it (texts, what each line expects, lines that cannot be
    rendered though they expect acceptance, lines calling a refused tool: ``constraint:refused``)."""
    from harness.agents import ConstraintError, ToolCall
    from harness.bench.grammar import GoldText

    texts: list[GoldText] = []
    wanted: dict[str, bool] = {}
    unexpected = refused_lines = 0
    for line, calls, accept in items:
        if not isinstance(calls, str) and any(c.get("name") in refused for c in calls):
            refused_lines += 1  # the tool is left out of the constraint: the line is not walked
            continue
        wanted[str(line)] = accept
        if isinstance(calls, str):
            texts.append(GoldText(str(line), calls))
            continue
        try:
            rendered = adapter.render_output(
                [ToolCall.create(c["name"], c.get("arguments") or {}) for c in calls], constraint
            )
        except (ConstraintError, ValueError, TypeError, KeyError) as exc:
            unexpected += accept
            typer.echo(f"{calls_path}:{line}: rejected: cannot render the calls: {exc}", err=True)
            continue
        texts.append(GoldText(str(line), rendered))
    return texts, wanted, unexpected, refused_lines


@app.command("check", epilog=example(
    "harness grammar check --family function_gemma --strategy structural_tag --tools bundles/shellper/tools \\",
    "    --calls calls.jsonl"))
def check(
    family_choice: FamilyOpt,
    strategy_choice: Annotated[ConstrainedStrategy, typer.Option("--strategy", help="The constraint strategy.")],
    tools_path: ToolsOpt,
    calls_path: Annotated[
        Path, typer.Option("--calls", metavar="FILE", help='JSONL, one {"calls": [{"name", "arguments"}]} (or {"text": ...}) per line; "expect": "rejected" for a line the grammar must refuse.')
    ],
    parallel: ParallelOpt = False,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Also report accepted items on stderr.")
    ] = False,
) -> None:
    """Walk each line's rendered calls through the compiled grammar; print a JSON summary last.

    A tool the strategy refuses (a keyword it cannot enforce) is named on stderr and left out; lines
    calling it are counted as ``constraint:refused`` and the rest are walked. Exit 0: every walked
    line as expected (accepted, unless the line says "expect": "rejected"); 1: a line not (listed on
    stderr); 2: bad input (or every tool refused)."""
    from harness.agents import ConstraintError

    family, strategy = family_choice.value, strategy_choice.value
    tools = _load_tools(tools_path)
    items = _load_calls(calls_path)
    adapter, constraint, payload = _payload(family, strategy, tools, parallel)
    if payload.artifact is None:
        _nothing_built(family, strategy, payload, calls_path, items, parallel)

    from harness.bench.grammar import check_outputs
    from harness.grammar import TokenizerUnavailable

    refused = dict(payload.artifact.refused)
    for why in refused.values():
        typer.echo(f"{tools_path}: refused: {why}", err=True)
    texts, wanted, unexpected, refused_lines = _gold_texts(adapter, constraint, items, refused, calls_path)
    try:
        result = check_outputs(payload.artifact, family, texts)
    except TokenizerUnavailable as exc:
        fail(str(exc))
    except ConstraintError as exc:
        fail(f"the {strategy} artifact does not compile: {exc}")
    for out in result.outputs:
        expected = wanted[out.output.output_id]
        if out.accepted != expected:
            unexpected += 1
            said = f"rejected: {out.reason}" if not out.accepted else "accepted, but the line expects it rejected"
            typer.echo(f"{calls_path}:{out.output.output_id}: {said}", err=True)
        elif verbose:
            verdict = f"accepted ({out.tokens} tokens)" if out.accepted else f"rejected as expected: {out.reason}"
            typer.echo(f"{calls_path}:{out.output.output_id}: {verdict}", err=True)
    accepted = sum(o.accepted for o in result.outputs)
    summary = {
        "family": family,
        "strategy": strategy,
        "artifact": payload.artifact.kind,
        "parallel": parallel,
        "accepted": accepted,
        "rejected": len(items) - refused_lines - accepted,
        "constraint:refused": refused_lines,
        "refused_tools": sorted(refused),
        "unexpected": unexpected,
        "total": len(items),
        **result.figures().dump(),
    }
    typer.echo(json.dumps(summary))
    raise typer.Exit(code=0 if unexpected == 0 else 1)


def _nothing_built(family: str, strategy: str, payload: Any, calls_path: Path,
                   items: list[tuple[int, list[dict[str, Any]] | str, bool]], parallel: bool) -> None:
    """A strategy under which vLLM builds no constraint (FunctionGemma's ``strict``): every line passes,
    so each line that expects a rejection is unexpected (what vLLM lets through)."""
    if payload.server_built is None:
        fail(f"strategy {strategy} built no artifact for {family}")
    typer.echo(f"# {family} / {strategy}: vLLM builds no constraint ({payload.server_built}): every answer passes",
               err=True)
    unexpected = [line for line, _, accept in items if not accept]
    for line in unexpected:
        typer.echo(f"{calls_path}:{line}: accepted, but the line expects it rejected", err=True)
    typer.echo(json.dumps({"family": family, "strategy": strategy, "artifact": None, "parallel": parallel,
                           "accepted": len(items), "rejected": 0, "unexpected": len(unexpected), "total": len(items)}))
    raise typer.Exit(code=0 if not unexpected else 1)


# --- harness fuzz ----------------------------------------------------------------------------

_FUZZ_TOOLS_HELP = "The tools: an OpenAI tools JSON file, a folder of .pym tools, or a bundle (its folder or bundle.yaml)."


def default_jobs(target: Target | None) -> int:
    """Two worker processes where two cores are free to use; one with ``--target`` (each worker would
    load vLLM)."""
    return 1 if target is not None else max(1, min(2, os.cpu_count() or 1))


def fuzz(
    tools_path: Annotated[Path, typer.Option("--tools", metavar="PATH", help=_FUZZ_TOOLS_HELP)],
    families: BenchFamilies = None,
    strategies: BenchStrategies = None,
    examples: Annotated[int, typer.Option("--examples", min=1, metavar="N", help="Valid calls drawn per tool (each checked in every cell, with its mutants).")] = 100,
    seed: Annotated[int, typer.Option("--seed", metavar="S", help="Seed of Hypothesis and of the random walks.")] = 0,
    walks: Annotated[int | None, typer.Option("--walks", min=0, metavar="N", help="Random walks through the mask per cell (default: examples/20, at least 4).")] = None,
    target: Annotated[Target | None, typer.Option("--target", help="Also judge every text with vLLM's own grammar backend (in process) and report where it disagrees.")] = None,
    parallel: Annotated[bool, typer.Option("--parallel", help="Build the grammars with allow_parallel_calls.")] = False,
    expected: Annotated[Path | None, typer.Option("--expected", metavar="FILE", help="Baseline of failing classes per cell: exit 1 only where a cell is worse; better cells are reported.")] = None,
    update: Annotated[bool, typer.Option("--update", help="Rewrite the --expected file with this run's classes.")] = False,
    junit: Annotated[Path | None, typer.Option("--junit", metavar="FILE", help="Also write a JUnit XML file (one test case per cell).")] = None,
    out: Annotated[Path | None, typer.Option("--out", metavar="DIR", help="Where the report and counterexamples go (default: results/fuzz-<UTC time>).")] = None,
    jobs: Annotated[int | None, typer.Option("--jobs", min=1, metavar="N", help="Worker processes (default: 2 on two or more cores; 1 with --target).")] = None,
    cell_timeout: Annotated[float, typer.Option("--cell-timeout", min=0.1, metavar="S", help="Seconds one cell may take before it stops as a timeout.")] = 60.0,
    reference: Annotated[Reference | None, typer.Option("--reference", help="Also compare every cell's token masks with this second engine, prefix by prefix along the instances checked, and classify each disagreement as over- or under-constraining (docs/fuzz.md).")] = None,
    fail_on_vllm_gaps: Annotated[bool, typer.Option("--fail-on-vllm-gaps", help="Exit 1 on the gaps vLLM's own strategies leave by design (vllm_gap: Qwen's required leaves the arguments free, FunctionGemma's strict builds no constraint, vLLM answers 400 to a tool's schema under json_schema), as when --strategy names required or strict.")] = False,
    call_server: Annotated[bool, typer.Option("--call-server", help="With a bundle whose source is mcp: also send each tool's drawn valid calls to its server, and report the calls the server rejects (OUT/server_calls.jsonl).")] = False,
) -> None:
    """Fuzz every tool x family x strategy: valid calls accepted and parsed back, near misses
    rejected (or named as not enforced), random walks valid, the parser never raising. Defects of
    the grammar library are written as reproductions under OUT/defects; the gaps vLLM's own strategies
    leave by design are counted as vllm_gap, failing the run only when asked."""
    from harness.files import InputFileError
    from harness.fuzz import FuzzInterrupted, FuzzOptions, load_fuzz_tools, read_expected
    from harness.fuzz import fuzz as run_fuzz
    from harness.vocabulary import SERVER_STRATEGIES

    gaps_fail = fail_on_vllm_gaps or bool(set(strategies or ()) & set(SERVER_STRATEGIES))  # named: its gaps count
    if update and expected is None:
        fail("--update needs --expected FILE (the baseline to rewrite)")
    if call_server:
        from harness.cli.commands.server_calls import mcp_source_of

        mcp_source_of(tools_path)  # not an MCP bundle: said before the fuzz runs
    if reference is not None:
        from harness.grammar.guidance import available

        if (why := available()) is not None:
            fail(f"--reference {reference.value}: {why}")
    folder = out or Path("results") / f"fuzz-{datetime.now(UTC).strftime('%Y%m%dT%H%M%SZ')}"
    try:
        loaded = load_fuzz_tools(tools_path)
        baseline = read_expected(expected) if expected is not None and not update and expected.exists() else None
    except InputFileError as exc:
        fail(str(exc))
    except ValueError as exc:
        fail(str(exc))
    if expected is not None and not update and not expected.exists():
        fail(f"{expected}: no such baseline (write one with --expected {expected} --update)")
    try:
        _check_fuzz_outputs(folder, junit, expected if update else None)
    except InputFileError as exc:
        fail(str(exc))
    options = FuzzOptions(
        families=tuple(families or FAMILIES), strategies=tuple(strategies or CONSTRAINED), examples=examples,
        seed=seed, walks=walks, cell_timeout_s=cell_timeout, target=target.value if target else None,
        parallel=parallel, database=fuzz_database(), jobs=jobs or default_jobs(target),
        reference=reference.value if reference else None,
        hypothesis_home=fuzz_database().parent / "hypothesis",
    )
    cells = len(loaded.tools + loaded.problems) * len(options.families) * len(options.strategies)
    from harness.cli.progress import FuzzProgress

    try:
        with FuzzProgress(cells) as progress:
            report = run_fuzz(loaded.tools, options, tools_path=str(tools_path), progress=progress.update,
                              problems=loaded.problems)
    except FuzzInterrupted as stopped:  # SIGTERM or Ctrl-C: what finished is reported, exit 130
        typer.echo(f"harness fuzz: interrupted: {len(stopped.report.cells)} of {cells} cells finished", err=True)
        _finish(stopped.report, folder, None, False, None, junit, gaps_fail, code=ExitCode.INTERRUPTED)
    if call_server:
        from harness.cli.commands.server_calls import call_server as send

        send(tools_path, loaded.tools, options, folder)
    _finish(report, folder, expected, update, baseline, junit, gaps_fail)


def _check_fuzz_outputs(folder: Path, junit: Path | None, expected: Path | None) -> None:
    """Every path the run writes, checked before it starts (a fuzz's results are never lost to a path
    that cannot be written): the --out folder is made now and must take a file."""
    from harness.files import InputFileError, check_output_dir, check_output_file

    check_output_dir(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputFileError(f"--out {str(folder)!r}", f"cannot create it: {exc.strerror or exc}") from None
    check_output_file(folder / "report.json", "--out")
    for path, option in ((junit, "--junit"), (expected, "--expected")):
        if path is not None:
            check_output_file(path, option)


def fuzz_database() -> Path:
    """Hypothesis' example database in the user cache (``HARNESS_FUZZ_DB`` to move it)."""
    from platformdirs import user_cache_dir

    return Path(os.environ.get("HARNESS_FUZZ_DB") or Path(user_cache_dir("harness")) / "fuzz" / "examples")


def _finish(report: Any, folder: Path, expected: Path | None, update: bool, baseline: dict[str, list[str]] | None,
            junit: Path | None, gaps_fail: bool, code: ExitCode | None = None) -> None:
    from harness.fuzz import (
        VLLM_REFUSES,
        compare,
        keep_defects,
        write_calls_files,
        write_expected,
        write_junit,
    )

    report.vllm_gaps_fail = gaps_fail
    files = write_calls_files(report, folder / "counterexamples")
    report.counterexample_files = [str(f) for f in files]
    keep_defects(report, folder / "defects")
    (folder / "report.json").write_text(report.model_dump_json(indent=1) + "\n", encoding="utf-8")
    if junit is not None:
        write_junit(report, junit)
    for cell in report.cells:
        if cell.outcome.value != "passing" and (cell.outcome.value != "vllm_gap" or gaps_fail):
            named = ", ".join(f"{k} {n}" for k, n in sorted(cell.classes.items()))
            defective = f" defective: {', '.join(sorted({d.label for d in cell.defects}))}" if cell.defects else ""
            typer.echo(f"{cell.key}: {cell.outcome.value} ({named}){defective}{': ' + cell.message if cell.message else ''}")
            for found in cell.counterexamples:
                shown = json.dumps(found.calls if found.calls is not None else found.text, ensure_ascii=False)
                typer.echo(f"    {found.outcome.value}: {found.why} :: {shown[:240]}")
    interrupted = code
    if gaps := report.vllm_gaps():
        verdict = "failing the run" if gaps_fail else "not failing it (--fail-on-vllm-gaps or --strategy required|strict do)"
        typer.echo("vllm_gap: gaps vLLM's own strategies leave by design, not your tools' (docs/vllm-strict.md): "
                   + ", ".join(f"{k} {n} cells" for k, n in gaps.items()) + f"; {verdict}", err=True)
        for cell in report.cells if not gaps_fail else ():  # a refused schema, named with vLLM's reason
            if cell.outcome.value == "vllm_gap" and (cell.message or "").startswith(VLLM_REFUSES):
                typer.echo(f"vllm_gap: {cell.key}: {cell.message}", err=True)
    code = ExitCode.FAILED if any(c.outcome in report.failing_classes for c in report.cells) else ExitCode.OK
    if update and expected is not None:
        write_expected(report, expected)
        typer.echo(f"baseline written: {expected}", err=True)
        code = ExitCode.OK
    elif baseline is not None:
        worse, better = compare(report, baseline)
        for line in better:
            typer.echo(f"better than the baseline: {line}", err=True)
        for line in worse:
            typer.echo(f"worse than the baseline: {line}", err=True)
        code = ExitCode.FAILED if worse else ExitCode.OK
    if files:
        typer.echo(f"counterexamples: {folder / 'counterexamples'} (replay: harness grammar check --calls FILE ...)", err=True)
    for defect in report.defects:
        typer.echo(f"defect of xgrammar: {defect.title}: {defect.file}", err=True)
    if report.reference is not None:
        from harness.fuzz.reference import print_reference_table

        print_reference_table(report.reference, report.cells)
    typer.echo(json.dumps({**report.summary(), "out": str(folder)}))
    raise typer.Exit(code=int(interrupted or code))
