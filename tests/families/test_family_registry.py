"""The one family registry: names, adapters, tokenizers and model-id hints agree."""

from __future__ import annotations

import pytest

from harness.grammar.families import FAMILIES, REGISTRY, check_family, families_of_model, get_adapter
from harness.grammar.tokenizers import TOKENIZER_FAMILIES


@pytest.mark.parametrize("family", FAMILIES)
def test_each_family_module_defines_its_adapter(family: str) -> None:
    assert get_adapter(family).family == family


def test_every_family_has_a_tokenizer_recipe() -> None:
    assert set(FAMILIES) <= set(TOKENIZER_FAMILIES)


def test_unknown_family_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match="unknown model family 'gemma': expected one of function_gemma, qwen"):
        check_family("gemma")
    with pytest.raises(ValueError, match="unknown model family"):
        get_adapter("llama")


@pytest.mark.parametrize(
    ("model_id", "expected"),
    [
        ("Qwen/Qwen3-0.6B", ["qwen"]),
        ("google/functiongemma-270m-it", ["function_gemma"]),
        ("oracle-qwen", ["qwen"]),
        ("meta-llama/Llama-3.2-1B", []),
    ],
)
def test_families_of_model(model_id: str, expected: list[str]) -> None:
    assert families_of_model(model_id) == expected


def test_registry_keys_are_the_names() -> None:
    assert all(name == info.name for name, info in REGISTRY.items())
