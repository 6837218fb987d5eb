"""``--engine oracle`` for a run: a fresh ``OracleEngine`` per sample, compiled grammars shared by the run.

With ``--target NAME`` each grammar is compiled by that engine's own grammar compiler (the registry's
``grammar_target``: vLLM's xgrammar backend) and the steps where it differs are counted; the oracle
asks the registry for it and names no other engine.
"""

from __future__ import annotations

from typing import Any

from harness.agents import LLMClient
from harness.engines.oracle.engine import NOTE, OracleEngine
from harness.engines.registry import (
    TARGET_NAMES,
    get_engine,
    grammar_target,
    refuse_server_options,
    unavailable,
)
from harness.engines.shapes import EngineContext, EngineError, GrammarTarget, PerSampleClients, SampleContext
from harness.run_options import RunOptions
from harness.vocabulary import GrammarBackend


def open_oracle(options: RunOptions, context: EngineContext) -> tuple[PerSampleClients, list[str] | None]:
    """The registry's opener (see the module doc)."""
    refuse_server_options("oracle", options)
    target = options.target
    if target is not None and target not in TARGET_NAMES:
        raise EngineError(f"unknown --target {target!r}: expected {', '.join(TARGET_NAMES)}")
    note = NOTE
    backend = _oracle_backend(options)
    if backend == "guidance":
        note = f"{NOTE}; grammars run by llguidance (vLLM's guidance backend), converted from the artifacts"
    if target is not None:
        why = unavailable(target)
        if why:
            raise EngineError(f"--target {target}: {why}")
        note = f"{NOTE}; {get_engine(target).target_note}"
    grammar_cache: dict[Any, Any] = {}
    targets: dict[str, GrammarTarget] = {}

    def client(sample: SampleContext) -> LLMClient:
        return OracleEngine(sample.family, answers=sample.gold, constraint=sample.constraint,
                            grammar_cache=grammar_cache, target=targets.get(sample.family), backend=backend)

    def warm(families: list[str]) -> None:
        # Seconds of loading tokenizers, xgrammar and torch are not a grammar's cost; compiling stays in samples.
        from harness.grammar import get_compiler, get_tokenizer

        for family in families:
            get_tokenizer(family)
            get_compiler(family)
            if backend == "guidance":
                from harness.grammar import get_llg_tokenizer

                get_llg_tokenizer(family)
            if target is not None:
                targets[family] = grammar_target(target, family)
                targets[family].load()

    families = [str(f) for f in options.families] if options.families else None
    return PerSampleClients("oracle", note, client, warm, model_id="oracle"), families


def _oracle_backend(options: RunOptions) -> GrammarBackend:
    """The oracle's grammar library; llguidance must be installed for ``guidance``."""
    backend = GrammarBackend(options.grammar_backend or "xgrammar")
    if backend == GrammarBackend.guidance:
        from harness.grammar import guidance_available

        why = guidance_available()
        if why:
            raise EngineError(f"--grammar-backend guidance: {why}")
        if options.target is not None:
            raise EngineError("--target vllm replays gold through vLLM's xgrammar backend: not with --grammar-backend guidance")
    return backend


__all__ = ["open_oracle"]
