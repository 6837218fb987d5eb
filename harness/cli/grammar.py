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

app = typer.Typer(
    help="Show a strategy's grammar and payload; check calls against it token by token.", no_args_is_help=True
)

_FAMILY_HELP = "Model family: function_gemma or qwen."
_TOOLS_HELP = 'OpenAI-style tools list (JSON: [{"type": "function", "function": {...}}, ...]) or a .pym folder.'
_PARALLEL_HELP = "Build the grammar with allow_parallel_calls (several calls per answer)."

FamilyOpt = Annotated[str, typer.Option("--family", help=_FAMILY_HELP)]
ToolsOpt = Annotated[Path, typer.Option("--tools", help=_TOOLS_HELP)]
ParallelOpt = Annotated[bool, typer.Option("--parallel", help=_PARALLEL_HELP)]


class BadInput(Exception):
    """A problem with the command's input: exit code 2 with this message."""


def _fail(message: str) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code=2)


def _check_choice(value: str, allowed: tuple[str, ...], what: str) -> None:
    if value not in allowed:
        raise BadInput(f"unknown {what} {value!r}: expected one of {', '.join(allowed)}")


def _load_tools(path: Path) -> list[Any]:
    from harness.bench.inputs import load_tool_schemas

    try:
        return load_tool_schemas(path)
    except (FileNotFoundError, ValueError) as exc:
        raise BadInput(str(exc)) from exc


def _load_calls(path: Path) -> list[tuple[int, list[dict[str, Any]]]]:
    """(line number, calls) per non-blank line."""
    from harness.files import InputError, read_json_lines

    try:
        lines = read_json_lines(path)
    except InputError as exc:
        raise BadInput(str(exc)) from exc
    out = []
    for n, obj in lines:
        calls = obj.get("calls") if isinstance(obj, dict) else None
        if not isinstance(calls, list):
            raise BadInput(f'{path}:{n}: expected an object {{"calls": [...]}}')
        for c in calls:
            if not isinstance(c, dict) or not isinstance(c.get("name"), str):
                raise BadInput(f'{path}:{n}: each call needs a string "name"')
            if not isinstance(c.get("arguments", {}), dict):
                raise BadInput(f'{path}:{n}: "arguments" must be an object')
        out.append((n, calls))
    if not out:
        raise BadInput(f"{path}: no calls (the file has no non-blank lines)")
    return out


def _payload(family: str, strategy: str, tools: list[Any], parallel: bool) -> tuple[Any, Any, Any]:
    from harness.agents.constraint import ConstraintError, DecodingConstraint
    from harness.agents.families import get_adapter

    adapter = get_adapter(family)
    try:
        constraint = DecodingConstraint(strategy=strategy, allow_parallel_calls=parallel)  # type: ignore[arg-type]
        payload = adapter.build_payload(tools, constraint)
    except ConstraintError as exc:
        raise BadInput(f"cannot build the {strategy} constraint for these tools: {exc}") from exc
    return adapter, constraint, payload


def _show_artifact(artifact: Any) -> str:
    if artifact.kind == "grammar":
        return str(artifact.value).rstrip("\n")
    try:
        return json.dumps(json.loads(artifact.value), indent=2, ensure_ascii=False)
    except ValueError:
        return str(artifact.value)


@app.command("show")
def show(
    family: FamilyOpt,
    strategy: Annotated[str, typer.Option("--strategy", help="none, ebnf, structural_tag or json_schema.")],
    tools_path: ToolsOpt,
    parallel: ParallelOpt = False,
) -> None:
    """Print the grammar (or tag, or schema) a strategy builds, then the request payload."""
    from harness.agents.constraint import STRATEGIES
    from harness.agents.families import FAMILIES

    try:
        _check_choice(family, tuple(FAMILIES), "family")
        _check_choice(strategy, STRATEGIES, "strategy")
        tools = _load_tools(tools_path)
        _, _, payload = _payload(family, strategy, tools, parallel)
    except BadInput as exc:
        raise _fail(str(exc)) from None
    artifact = payload.artifact
    if artifact is None:
        typer.echo(f"# {family} / {strategy}: no constraint (native tool calling, tools sent to the API)")
    else:
        typer.echo(f"# {family} / {strategy}: {artifact.kind}")
        typer.echo(_show_artifact(artifact))
    typer.echo("# request payload")
    body = {"extra_body": payload.extra_body, "stop": list(payload.stop)}
    typer.echo(json.dumps(body, indent=2, ensure_ascii=False))


@app.command("check")
def check(
    family: FamilyOpt,
    strategy: Annotated[str, typer.Option("--strategy", help="ebnf, structural_tag or json_schema.")],
    tools_path: ToolsOpt,
    calls_path: Annotated[
        Path, typer.Option("--calls", help='JSONL, one {"calls": [{"name", "arguments"}]} per line.')
    ],
    parallel: ParallelOpt = False,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Also report accepted items on stderr.")
    ] = False,
) -> None:
    """Walk each line's rendered calls through the compiled grammar; print a JSON summary last."""
    from harness.agents.constraint import CONSTRAINED_STRATEGIES, ConstraintError
    from harness.agents.families import FAMILIES

    try:
        _check_choice(family, tuple(FAMILIES), "family")
        _check_choice(strategy, CONSTRAINED_STRATEGIES, "strategy")
        tools = _load_tools(tools_path)
        items = _load_calls(calls_path)
        adapter, constraint, payload = _payload(family, strategy, tools, parallel)
        if payload.artifact is None:
            raise BadInput(f"strategy {strategy} built no artifact for {family}")
    except BadInput as exc:
        raise _fail(str(exc)) from None

    from harness.agents.types import ToolCall
    from harness.bench.measure import GoldText, check_outputs
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
        raise _fail(str(exc)) from None
    except ConstraintError as exc:
        raise _fail(f"the {strategy} artifact does not compile: {exc}") from None
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
        **result.figures(),
    }
    typer.echo(json.dumps(summary))
    raise typer.Exit(code=0 if rejected == 0 else 1)
