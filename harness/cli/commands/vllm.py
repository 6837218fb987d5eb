"""``harness vllm up|down|list``: vLLM servers kept up across runs.

``up`` starts (or finds) a kept server per family with the flags ``harness run --engine vllm`` uses, so
the runs that follow skip the 60-110 s start; ``down`` stops them; ``list`` shows them. A kept server is
not tied to the harness's life (it survives the command that started it): its state file in the user
cache names its pid, port, model and command line (``harness.engines.vllm.kept``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from harness.cli.errors import fail, make_app, warn
from harness.cli.options import Families, example

if TYPE_CHECKING:
    from harness.engines.vllm import KeptServer

app = make_app(help="vLLM servers kept up across runs (harness run --engine vllm uses a matching one at once).")

ModelsOpt = Annotated[
    list[str] | None,
    typer.Option("--model", metavar="[FAMILY=]NAME", help="A family's model folder or hub id (default: the "
                 "family's built-in model); repeatable."),
]
VllmArgsOpt = Annotated[
    list[str] | None,
    typer.Option("--vllm-arg", metavar="ARGS", help="Added to each server's command line (as harness run's)."),
]


@app.command("up", epilog=example("harness vllm up --family function_gemma,qwen",
                                  "harness run smoke --engine vllm --family function_gemma,qwen   # no start"))
def up(family: Families = None, model: ModelsOpt = None, vllm_arg: VllmArgsOpt = None) -> None:
    """Start a kept vLLM server per family (or find the one already up) and wait until it serves."""
    from harness.engines import EngineError
    from harness.engines.vllm import VllmServers, state_dir, vllm_unavailable
    from harness.eval.run import ConfigError, parse_models, split_vllm_args

    try:  # the flags first: a flag the harness owns is refused whether or not vLLM can run here
        bare, models = parse_models(model or [])
        args = split_vllm_args(vllm_arg or [])
    except ConfigError as exc:
        fail(str(exc))
    why = vllm_unavailable()
    if why:
        fail(f"vLLM cannot run here: {why}")
    families = list(family) if family else list(models) or ["function_gemma"]
    if bare is not None and len(families) != 1:
        fail("--model NAME serves one family: pass one --family, or --model FAMILY=NAME for each")
    kept = VllmServers(log_dir=state_dir(), model_arg=bare, model_args=models, extra_args=tuple(args), keep=True,
                    log=lambda m: typer.echo(m, err=True))
    try:
        kept.prepare(families)
    except EngineError as exc:
        fail(str(exc))
    except KeyboardInterrupt:
        for server in kept.servers.values():
            if hasattr(server, "stop"):
                server.stop()
        raise
    for name, server in kept.servers.items():
        typer.echo(f"{name}: {kept.model_for(name)} at {server.base_url} (kept: harness vllm down stops it)")


def _survey() -> list[KeptServer]:
    """The live kept servers (``harness.engines.vllm.kept.survey``, as a run sees them); each stale state
    file removed is named on stderr."""
    from harness.engines.vllm import survey

    found = survey()
    for line in found.stale:
        warn(line)
    return found.servers


@app.command("down", epilog=example("harness vllm down", "harness vllm down --family qwen"))
def down(family: Families = None) -> None:
    """Stop the kept vLLM servers (of the families given; default: all) and remove their state files."""
    from harness.engines.vllm import stop_kept

    servers = [s for s in _survey() if not family or s.family in family]
    if not servers:
        typer.echo("no kept vLLM server is up")
        return
    for server in servers:
        if stop_kept(server):
            typer.echo(f"stopped {server.family}: {server.model} at {server.base_url} (pid {server.pid})")
        else:
            typer.echo(f"{server.family}: its process (pid {server.pid}) was gone already; state file removed")


@app.command("list", epilog=example("harness vllm list"))
def list_servers() -> None:
    """List the kept vLLM servers: family, model, URL, pid, whether it serves, and its log."""
    servers = _survey()
    if not servers:
        typer.echo("no kept vLLM server is up (harness vllm up, or harness run --engine vllm --keep-server)")
        return
    for server in servers:
        state = "serving" if server.healthy() else "starting (or not answering)"
        typer.echo(f"{server.family:16} {server.model:40} {server.base_url:28} pid {server.pid:<8} {state}; "
                   f"log {server.log}")


__all__ = ["app", "down", "list_servers", "up"]
