"""Compiling constraint artifacts with xgrammar: one ``GrammarCompiler`` per family, cache on.

Dispatch on :class:`~harness.agents.constraint.ConstraintArtifact` ``kind``, as vLLM's xgrammar
backend does with ``StructuredOutputsParams``:

- ``grammar``: ``compile_grammar(ebnf)``;
- ``json``: ``compile_json_schema(schema, any_whitespace=False, separators=(",", ":"))``: exactly what
  vLLM's xgrammar backend compiles when the server runs with ``disable_any_whitespace`` (a server
  setting; vLLM ignores the request field of that name): compact JSON, no whitespace anywhere,
  properties in schema order, no extra properties. Without that setting vLLM compiles any
  whitespace, and a small model then emits newlines until max_tokens; the harness starts its vLLM
  servers with it and says so to users of other servers;
- ``structural_tag``: ``compile_structural_tag(json_text)``; the legacy ``{"structures": [...],
  "triggers": [...]}`` form goes through xgrammar's deprecated ``(tags, triggers)`` call, as vLLM does.

Timings: ``compile_ms`` is measured around the xgrammar call (or the read of a kept grammar);
``found`` says where the grammar came from: ``compiled`` (cold: compiled for this request), ``memory``
(this process compiled the same (kind, text) before: xgrammar's cache answers in microseconds) or
``disk`` (kept by an earlier process: ``harness.grammar.store``, for the engines that ask for it with
``keep=True``); ``cached`` is ``found != "compiled"``.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from harness.agents import ConstraintArtifact, ConstraintError

if TYPE_CHECKING:
    from harness.grammar.bounded import BuildBound

Found = Literal["compiled", "memory", "disk"]

JSON_ANY_WHITESPACE = False
JSON_SEPARATORS = (",", ":")
"""The choice recorded above: vLLM's language with ``disable_any_whitespace`` (compact JSON)."""
COMPILER_THREADS = 2


@dataclass(frozen=True, slots=True)
class CompiledConstraint:
    """A compiled artifact and what compiling it cost."""

    compiled: Any
    """``xgr.CompiledGrammar``."""
    compile_ms: float
    cached: bool
    kind: str
    family: str
    found: Found = "compiled"


_LOCK = threading.Lock()
_COMPILERS: dict[str, Any] = {}
_SEEN: dict[str, OrderedDict[bytes, None]] = {}
SEEN_KEPT = 4096
"""Artifacts per family remembered as compiled (by digest), for the ``cached`` flag."""
_CACHE_LIMIT_BYTES = -1
_LOADED: OrderedDict[tuple[str, bytes], Any] = OrderedDict()
LOADED_KEPT = 16
"""Grammars read from the on-disk store, kept in memory (xgrammar's compiler cache does not hold them)."""


def set_cache_limit(limit_bytes: int) -> None:
    """Bound the memory of xgrammar's compile cache, per family (``-1``: no bound, the default; a
    long-running server sets one). Compilers made before are dropped, so the bound holds from now on."""
    global _CACHE_LIMIT_BYTES
    with _LOCK:
        _CACHE_LIMIT_BYTES = limit_bytes
        _COMPILERS.clear()
        _SEEN.clear()
        _LOADED.clear()


def get_compiler(family: str) -> Any:
    """The process-wide ``xgr.GrammarCompiler`` of ``family`` (``max_threads=2``, cache enabled, bounded
    by ``set_cache_limit``)."""
    with _LOCK:
        compiler = _COMPILERS.get(family)
        if compiler is None:
            import xgrammar as xgr

            from harness.grammar.tokenizers import get_tokenizer

            compiler = xgr.GrammarCompiler(
                get_tokenizer(family).info, max_threads=COMPILER_THREADS, cache_enabled=True,
                cache_limit_bytes=_CACHE_LIMIT_BYTES,
            )
            _COMPILERS[family] = compiler
            _SEEN[family] = OrderedDict()
        return compiler


def clear_compile_cache(family: str) -> None:
    """Forget every compiled grammar of ``family`` (the next compile is cold again)."""
    compiler = get_compiler(family)
    with _LOCK:
        compiler.clear_cache()
        _SEEN[family] = OrderedDict()
        for key in [k for k in _LOADED if k[0] == family]:
            del _LOADED[key]


def was_compiled(artifact: ConstraintArtifact, family: str) -> bool:
    """Whether this process compiled ``artifact`` for ``family`` lately (so a compile is most likely a
    cache hit; xgrammar may have evicted it since, under its cache bound)."""
    with _LOCK:
        return _digest(artifact) in _SEEN.get(family, ())


def is_kept(artifact: ConstraintArtifact, family: str) -> bool:
    """Whether the on-disk store holds a regular file (not a link) within its read bound for ``artifact``
    (its content is read and checked only when used)."""
    from harness.grammar import store

    folder = store.store_folder()
    return folder is not None and store.holds(folder, store.store_key(artifact, family))


def _digest(artifact: ConstraintArtifact) -> bytes:
    return hashlib.blake2b(f"{artifact.kind}\0{artifact.value}".encode("utf-8", "surrogatepass"), digest_size=16).digest()


def compile_artifact(artifact: ConstraintArtifact, family: str, *, keep: bool = False,
                     bound: BuildBound | Literal["engine"] | None = "engine") -> CompiledConstraint:
    """Compile ``artifact`` for ``family``'s tokenizer. Raises ConstraintError when xgrammar
    refuses the artifact (bad EBNF, bad schema, bad tag) or the kind is unknown.

    ``keep``: look for the grammar in the on-disk store first and keep what is compiled there
    (``harness.grammar.store``): the engines that serve runs ask for it; benchmarks of cold compiles
    do not. ``bound``: a big grammar is compiled first in a child under this bound
    (``harness.grammar.bounded``; ConstraintError naming it when it does not compile within it);
    ``engine``, the default: the process's bound when ``keep``, none otherwise (a benchmark's cold
    compile); None: none."""
    compiler = get_compiler(family)
    key = _digest(artifact)
    t0 = time.perf_counter_ns()
    with _LOCK:
        seen = _SEEN.setdefault(family, OrderedDict())
        cached = key in seen
        loaded = _LOADED.get((family, key))
        if loaded is not None:
            _LOADED.move_to_end((family, key))
    if loaded is not None:  # read from disk earlier: xgrammar's own cache does not hold it
        ms = (time.perf_counter_ns() - t0) / 1e6
        return CompiledConstraint(compiled=loaded, compile_ms=ms, cached=True, kind=artifact.kind, family=family,
                                  found="memory")
    kept = None if cached or not keep else _from_store(artifact, family)
    if kept is not None:
        return _loaded(artifact, family, key, seen, kept, t0)
    if bound == "engine":
        from harness.grammar.bounded import build_bound

        bound = build_bound() if keep else None
    if bound is not None and not cached:
        from harness.grammar.bounded import check_build, needs_child

        check_build(artifact, family, bound, keep=keep)
        # where the child kept it (a short grammar had no child: the store was read above)
        kept = _from_store(artifact, family) if keep and needs_child(artifact, bound) else None
        if kept is not None:
            return _loaded(artifact, family, key, seen, kept, t0)
    try:
        compiled = _compile(compiler, artifact)
    except ConstraintError:
        raise
    except Exception as exc:  # xgrammar raises RuntimeError/ValueError/pydantic errors
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ConstraintError(f"xgrammar cannot compile the {artifact.kind} artifact: {first}") from exc
    ms = (time.perf_counter_ns() - t0) / 1e6
    _remember(seen, key)
    if keep and not cached:
        _to_store(artifact, family, compiled)
    return CompiledConstraint(
        compiled=compiled, compile_ms=ms, cached=cached, kind=artifact.kind, family=family,
        found="memory" if cached else "compiled",
    )


def _loaded(artifact: ConstraintArtifact, family: str, key: bytes, seen: OrderedDict[bytes, None], kept: Any,
            t0: int) -> CompiledConstraint:
    """A grammar read from the store, remembered in memory."""
    ms = (time.perf_counter_ns() - t0) / 1e6
    _remember(seen, key)
    with _LOCK:
        _LOADED[(family, key)] = kept
        while len(_LOADED) > LOADED_KEPT:
            _LOADED.popitem(last=False)
    return CompiledConstraint(compiled=kept, compile_ms=ms, cached=True, kind=artifact.kind, family=family,
                              found="disk")


def _remember(seen: OrderedDict[bytes, None], key: bytes) -> None:
    with _LOCK:
        seen[key] = None
        seen.move_to_end(key)
        while len(seen) > SEEN_KEPT:
            seen.popitem(last=False)


def _from_store(artifact: ConstraintArtifact, family: str) -> Any | None:
    from harness.grammar import store
    from harness.grammar.tokenizers import get_tokenizer

    folder = store.store_folder()
    if folder is None:
        return None
    return store.load(folder, store.store_key(artifact, family), get_tokenizer(family).info)


def _to_store(artifact: ConstraintArtifact, family: str, compiled: Any) -> None:
    from harness.grammar import store

    folder = store.store_folder()
    if folder is not None:
        store.save(folder, store.store_key(artifact, family), compiled, store.limit_bytes())


def _json_or_error(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ConstraintError(f"structural_tag is not valid JSON: {exc}") from exc


def _compile(compiler: Any, artifact: ConstraintArtifact) -> Any:
    if artifact.kind == "grammar":
        return compiler.compile_grammar(artifact.value)
    if artifact.kind == "json":
        return compiler.compile_json_schema(
            artifact.value, any_whitespace=JSON_ANY_WHITESPACE, separators=JSON_SEPARATORS
        )
    if artifact.kind == "structural_tag":
        # Parse the text only when it may be the legacy form: a parse costs 20-40 us, ten times a cache
        # hit, and xgrammar parses the text itself anyway.
        tag = _json_or_error(artifact.value) if '"structures"' in artifact.value else None
        if isinstance(tag, dict) and "structures" in tag:
            import warnings

            import xgrammar as xgr

            try:
                items = [
                    xgr.StructuralTagItem(
                        begin=s["begin"], schema=json.dumps(s.get("schema") or {}), end=s["end"]
                    )
                    for s in tag["structures"]
                ]
                triggers = list(tag["triggers"])
            except (KeyError, TypeError) as exc:
                raise ConstraintError(
                    f"legacy structural_tag needs structures[begin, schema, end] and triggers: {exc}"
                ) from exc
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                return compiler.compile_structural_tag(items, triggers)
        try:
            return compiler.compile_structural_tag(artifact.value)
        except Exception:
            _json_or_error(artifact.value)  # the clearer message when the text is not JSON at all
            raise
    raise ConstraintError(
        f"unknown artifact kind {artifact.kind!r}: expected grammar, json or structural_tag"
    )
