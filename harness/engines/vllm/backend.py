"""vLLM's own structured-output backend, in process: the oracle's ``--target vllm``.

:class:`VllmGrammarTarget` compiles a request's constraint exactly as a vLLM server started by the
harness does: vLLM's ``StructuredOutputsParams`` -> ``get_structured_output_key`` -> its
``XgrammarBackend.compile_grammar``, with the server's ``disable_any_whitespace`` setting, vLLM's
tokenizer for the model folder (``TokenizerInfo.from_huggingface``: every vocabulary entry is text,
special tokens included) and the stop tokens vLLM gives the matcher (the generation config's end
ids). Replaying gold through it predicts what the server's grammar accepts, with no server running.

What it finds that the plain oracle cannot (measured on the SHELLper gold, 205 distinct calls): no
gold answer is rejected, but wherever a grammar allows free text (strings, ~25-30% of the steps) vLLM
also allows special tokens such as ``<pad>``, ``<unused0>``, ``[multimodal]`` or ``<|im_start|>`` as
one token, which the harness's own vocabulary blanks. :func:`mask_difference` counts those steps.
"""

from __future__ import annotations

import threading
import time
import types
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from harness.agents import ConstraintArtifact, ConstraintError
from harness.engines.shapes import MaskDifference
from harness.engines.vllm.models import ModelFolder
from harness.files import read_json


@dataclass
class VllmGrammarTarget:
    """Compiles constraints as vLLM does for ``model`` (a folder the harness's servers would load)."""

    model: ModelFolder
    disable_any_whitespace: bool = True
    """The server setting the harness starts vLLM with."""
    _backend: Any = field(default=None, repr=False)
    _stop_ids: list[int] = field(default_factory=list, repr=False)
    _vocab_size: int = 0
    _cache: dict[tuple[str, str], Any] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def load(self) -> None:
        """Import vLLM and build its backend (a few seconds: vLLM's tokenizer and xgrammar's vocabulary)."""
        if self._backend is not None:
            return
        from vllm.tokenizers import get_tokenizer
        from vllm.v1.structured_output.backend_xgrammar import XgrammarBackend

        config = read_json(self.model.path / "config.json")
        generation = read_json(self.model.path / "generation_config.json")
        eos = generation.get("eos_token_id", config.get("eos_token_id"))
        self._stop_ids = list(eos) if isinstance(eos, list) else [int(eos)]
        self._vocab_size = int(config["vocab_size"])
        # Only the fields XgrammarBackend reads: the server's whitespace setting, the model type (a
        # special case for one model family) and speculative decoding (off).
        vllm_config = types.SimpleNamespace(
            structured_outputs_config=types.SimpleNamespace(disable_any_whitespace=self.disable_any_whitespace),
            model_config=types.SimpleNamespace(hf_config=types.SimpleNamespace(model_type=config.get("model_type"))),
            speculative_config=None,
        )
        self._backend = XgrammarBackend(
            vllm_config=vllm_config,  # type: ignore[arg-type]  # duck-typed: the fields it reads
            tokenizer=get_tokenizer(str(self.model.path)), vocab_size=self._vocab_size
        )

    @property
    def stop_ids(self) -> list[int]:
        return list(self._stop_ids)

    @property
    def vocab_size(self) -> int:
        return self._vocab_size

    def compile(self, artifact: ConstraintArtifact) -> tuple[Any, float, bool]:
        """(xgrammar CompiledGrammar, compile ms, cached) for ``artifact`` through vLLM's code path.
        Raises ConstraintError where vLLM would fail the request."""
        from vllm.sampling_params import StructuredOutputsParams
        from vllm.v1.structured_output.request import get_structured_output_key

        self.load()
        key = (artifact.kind, artifact.value)
        started = time.perf_counter()
        with self._lock:
            hit = self._cache.get(key)
        if hit is not None:
            return hit, (time.perf_counter() - started) * 1000.0, True
        try:
            params = StructuredOutputsParams(**{artifact.kind: artifact.value})  # type: ignore[arg-type]
            request_type, spec = get_structured_output_key(params)
            grammar = self._backend.compile_grammar(request_type, spec, stop_token_ids=set(self._stop_ids))
        except Exception as exc:
            raise ConstraintError(f"vLLM's backend refuses the {artifact.kind} artifact: {exc}") from exc
        ms = (time.perf_counter() - started) * 1000.0
        with self._lock:
            self._cache[key] = grammar.ctx
        return grammar.ctx, ms, False

    def matcher(self, compiled: Any) -> Any:
        """A matcher as vLLM makes one (its stop tokens override the tokenizer's)."""
        import xgrammar as xgr

        return xgr.GrammarMatcher(compiled, override_stop_tokens=self._stop_ids)

    def difference(self, target_grammar: Any, harness_grammar: Any, ids: list[int]) -> MaskDifference:
        """``GrammarTarget.difference``: see :func:`mask_difference`."""
        return mask_difference(self, target_grammar, harness_grammar, ids)


def mask_difference(target: VllmGrammarTarget, target_grammar: Any, harness_grammar: Any, ids: list[int],
                    *, examples: int = 8) -> MaskDifference:
    """Walk ``ids`` through both grammars side by side and compare the allowed sets at every step (up
    to the first token either rejects). Stop tokens are left out: the two sides name them differently."""
    import xgrammar as xgr

    vocab = target.vocab_size
    theirs, ours = target.matcher(target_grammar), xgr.GrammarMatcher(harness_grammar)
    t_mask, o_mask = xgr.allocate_token_bitmask(1, vocab), xgr.allocate_token_bitmask(1, vocab)
    stops = np.array(sorted(set(target.stop_ids)), dtype=np.intp)
    steps = differing = 0
    t_only: set[int] = set()
    o_only: set[int] = set()
    for position in range(len(ids) + 1):
        theirs.fill_next_token_bitmask(t_mask)
        ours.fill_next_token_bitmask(o_mask)
        t_bits = np.unpackbits(t_mask[0].numpy().view(np.uint8), bitorder="little", count=vocab).astype(bool)
        o_bits = np.unpackbits(o_mask[0].numpy().view(np.uint8), bitorder="little", count=vocab).astype(bool)
        t_bits[stops] = o_bits[stops] = False
        steps += 1
        if (t_bits != o_bits).any():
            differing += 1
            t_only.update(np.flatnonzero(t_bits & ~o_bits)[:examples].tolist())
            o_only.update(np.flatnonzero(o_bits & ~t_bits)[:examples].tolist())
        if position == len(ids) or not (theirs.accept_token(ids[position]) and ours.accept_token(ids[position])):
            break
    return MaskDifference(steps, differing, tuple(sorted(t_only)[:examples]), tuple(sorted(o_only)[:examples]))


def grammar_target(family: str) -> VllmGrammarTarget:
    """The registry's ``grammar_target`` for vllm: vLLM's backend on ``family``'s default model folder."""
    from harness.engines.vllm.models import default_model

    return VllmGrammarTarget(default_model(family))


__all__ = ["VllmGrammarTarget", "grammar_target", "mask_difference"]
