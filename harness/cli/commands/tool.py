"""``harness tool run``: run one .pym tool in the sandbox."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from harness.cli.errors import ExitCode, make_app
from harness.cli.options import LimitsPreset, example
from harness.vocabulary import ErrorKind

app = make_app(help="Run sandboxed .pym tools.")

_FILES_HELP = (
    "A host directory read into the file-system tree /fs/<DIR name> (the current directory of the "
    "file-system tools); symbolic links are never followed (each one skipped is named on stderr). "
    "Without it the tools see an empty /fs/workspace."
)


@app.command("run", epilog=example(
    "harness tool run bundles/shellper/tools/ls.pym --args '{\"a\": true}' --files some/dir"))
def run(
    script: Annotated[Path, typer.Argument(metavar="SCRIPT", help="The .pym script to run.")],
    args: Annotated[str, typer.Option("--args", metavar="JSON", help="The call's arguments as a JSON object.")] = "{}",
    limits: Annotated[LimitsPreset, typer.Option("--limits", help="The sandbox's limits preset.")] = LimitsPreset.default,
    files: Annotated[
        Path | None, typer.Option("--files", metavar="DIR", exists=True, file_okay=False, dir_okay=True, help=_FILES_HELP)
    ] = None,
) -> None:
    """Run SCRIPT once with ARGS in a fresh sandbox session.

    Prints one JSON object {"output": ..., "is_error": bool, "error_kind": str|null} and exits 1 when
    is_error. A script that does not load is reported the same way (error_kind tool:load_error). A
    --files directory that cannot be read or is too large is a usage error (exit 2).
    """
    import asyncio
    import json

    from harness.agents.tools import ToolContext
    from harness.agents.types import ToolCall
    from harness.files import InputError, load_json
    from harness.sandbox import FileSystemState, PymTool, SandboxError, Workspace, load_script

    def report(output: object, is_error: bool, error_kind: str | None) -> None:
        line = json.dumps(
            {"output": output, "is_error": is_error, "error_kind": error_kind}, ensure_ascii=False
        )
        typer.echo(line)
        raise typer.Exit(ExitCode.FAILED if is_error else ExitCode.OK)

    try:
        arguments = load_json(args, "--args")
    except InputError as e:
        report(str(e), True, ErrorKind.tool_bad_arguments)
    if not isinstance(arguments, dict):
        report(f"--args must be a JSON object, got {type(arguments).__name__}", True, ErrorKind.tool_bad_arguments)
    try:
        tool = PymTool(load_script(script), limits=limits.value)
    except SandboxError as e:
        report(f"{e.kind}: {e}", True, e.error_kind)
    def skipped(path: Path, why: str) -> None:
        typer.echo(f"--files: skipped {path} ({why}: links are not followed)", err=True)

    try:
        state = (
            FileSystemState.from_directory(files, on_skip=skipped) if files is not None else FileSystemState("workspace")
        )
    except ValueError as e:
        raise typer.BadParameter(str(e), param_hint="--files") from e
    context = ToolContext(call_id="call_cli", workspace=Workspace.filesystem(state))
    result = asyncio.run(tool.execute(ToolCall.create(tool.name, arguments), context))
    report(result.output, result.is_error, result.error_kind)
