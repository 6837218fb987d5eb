"""``harness grammar show|check``: inspect a strategy's grammar and walk calls through it.

``show`` prints the artifact a strategy builds for a tool list (EBNF, structural tag or JSON schema)
and the request payload a vLLM server would receive.

``check`` renders each line of a CALLS.jsonl file (``{"calls": [{"name": ..., "arguments": {...}}]}``)
in the family's output format for the strategy, walks it token by token through the compiled grammar
with the family's real tokenizer (mask filled at every step, the gold token checked against it, the
grammar required to end right after the text), prints one line per rejected item to stderr and, as
its last stdout output, one JSON summary. Exit 0: all accepted; 1: any rejected; 2: bad input.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from harness.cli.errors import fail, make_app
from harness.cli.options import ConstrainedStrategy, Family, Strategy, example

app = make_app(help="Show a strategy's grammar and payload; check calls against it token by token.")

_FAMILY_HELP = "Model family (its prompt and call format)."
_TOOLS_HELP = 'OpenAI-style tools list (JSON: [{"type": "function", "function": {...}}, ...]) or a .pym folder.'
_PARALLEL_HELP = "Build the grammar with allow_parallel_calls (several calls per answer)."

FamilyOpt = Annotated[Family, typer.Option("--family", help=_FAMILY_HELP)]
ToolsOpt = Annotated[Path, typer.Option("--tools", metavar="PATH", help=_TOOLS_HELP)]
ParallelOpt = Annotated[bool, typer.Option("--parallel", help=_PARALLEL_HELP)]


def _load_tools(path: Path) -> list[Any]:
    from harness.bench.inputs import load_tool_schemas

    try:
        return load_tool_schemas(path)
    except (FileNotFoundError, ValueError) as exc:
        fail(str(exc))


def _load_calls(path: Path) -> list[tuple[int, list[dict[str, Any]]]]:
    """(line number, calls) per non-blank line."""
    from harness.files import InputError, read_json_lines

    try:
        lines = read_json_lines(path)
    except InputError as exc:
        fail(str(exc))
    out = []
    for n, obj in lines:
        calls = obj.get("calls") if isinstance(obj, dict) else None
        if not isinstance(calls, list):
            fail(f'{path}:{n}: expected an object {{"calls": [...]}}')
        for c in calls:
            if not isinstance(c, dict) or not isinstance(c.get("name"), str):
                fail(f'{path}:{n}: each call needs a string "name"')
            if not isinstance(c.get("arguments", {}), dict):
                fail(f'{path}:{n}: "arguments" must be an object')
        out.append((n, calls))
    if not out:
        fail(f"{path}: no calls (the file has no non-blank lines)")
    return out


def _payload(family: str, strategy: str, tools: list[Any], parallel: bool) -> tuple[Any, Any, Any]:
    from harness.agents.constraint import ConstraintError, DecodingConstraint
    from harness.agents.families import get_adapter

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
    if artifact is None:
        typer.echo(f"# {family} / {strategy}: no constraint (native tool calling, tools sent to the API)")
    else:
        typer.echo(f"# {family} / {strategy}: {artifact.kind}")
        typer.echo(_show_artifact(artifact))
    typer.echo("# request payload")
    body = {"extra_body": payload.extra_body, "stop": list(payload.stop)}
    typer.echo(json.dumps(body, indent=2, ensure_ascii=False))


@app.command("check", epilog=example(
    "harness grammar check --family function_gemma --strategy structural_tag --tools bundles/shellper/tools \\",
    "    --calls calls.jsonl"))
def check(
    family_choice: FamilyOpt,
    strategy_choice: Annotated[ConstrainedStrategy, typer.Option("--strategy", help="The constraint strategy.")],
    tools_path: ToolsOpt,
    calls_path: Annotated[
        Path, typer.Option("--calls", metavar="FILE", help='JSONL, one {"calls": [{"name", "arguments"}]} per line.')
    ],
    parallel: ParallelOpt = False,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Also report accepted items on stderr.")
    ] = False,
) -> None:
    """Walk each line's rendered calls through the compiled grammar; print a JSON summary last.

    Exit 0: every line accepted; 1: a line rejected (listed on stderr); 2: bad input."""
    from harness.agents.constraint import ConstraintError

    family, strategy = family_choice.value, strategy_choice.value
    tools = _load_tools(tools_path)
    items = _load_calls(calls_path)
    adapter, constraint, payload = _payload(family, strategy, tools, parallel)
    if payload.artifact is None:
        fail(f"strategy {strategy} built no artifact for {family}")

    from harness.agents.types import ToolCall
    from harness.bench.grammar.measure import GoldText, check_outputs
    from harness.grammar.tokenizers import TokenizerUnavailable

    texts: list[GoldText] = []
    for line, calls in items:
        try:
            rendered = adapter.render_output(
                [ToolCall.create(c["name"], c.get("arguments") or {}) for c in calls], constraint
            )
        except (ConstraintError, ValueError, TypeError, KeyError) as exc:
            typer.echo(f"{calls_path}:{line}: rejected: cannot render the calls: {exc}", err=True)
            continue
        texts.append(GoldText(str(line), rendered))
    try:
        result = check_outputs(payload.artifact, family, texts)
    except TokenizerUnavailable as exc:
        fail(str(exc))
    except ConstraintError as exc:
        fail(f"the {strategy} artifact does not compile: {exc}")
    for out in result.outputs:
        if not out.accepted:
            typer.echo(f"{calls_path}:{out.output.output_id}: rejected: {out.reason}", err=True)
        elif verbose:
            typer.echo(f"{calls_path}:{out.output.output_id}: accepted ({out.tokens} tokens)", err=True)
    accepted = sum(o.accepted for o in result.outputs)
    rejected = len(items) - accepted
    summary = {
        "family": family,
        "strategy": strategy,
        "artifact": payload.artifact.kind,
        "parallel": parallel,
        "accepted": accepted,
        "rejected": rejected,
        "total": len(items),
        **result.figures().dump(),
    }
    typer.echo(json.dumps(summary))
    raise typer.Exit(code=0 if rejected == 0 else 1)
