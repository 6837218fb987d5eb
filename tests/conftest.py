"""Shared fixtures. The real tokenizers are expensive (built once into the user cache, ~1 s to load):
one instance per test session.

Hypothesis profiles, for every test: ``fast`` (default, CI: a few seconds per property) and ``long``
(the tox ``fuzz`` env, ``HYPOTHESIS_PROFILE=long``). A property that needs more examples than the
profile's scales the profile's count (``k * settings().max_examples``), so ``long`` deepens it too."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

_COMMON = {
    "deadline": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
    "print_blob": True,
}
settings.register_profile("fast", max_examples=15, **_COMMON)
settings.register_profile("long", max_examples=400, **_COMMON)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "fast"))


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
def _grammar_store():
    """The on-disk grammar store is off for the test session (every compile of every test serialized and
    written cost minutes): a test of the store names its own folder (``monkeypatch.setenv``), and the
    user cache is never written."""
    import os

    before = os.environ.get("HARNESS_GRAMMAR_CACHE")
    os.environ["HARNESS_GRAMMAR_CACHE"] = "off"
    yield
    if before is None:
        os.environ.pop("HARNESS_GRAMMAR_CACHE", None)
    else:
        os.environ["HARNESS_GRAMMAR_CACHE"] = before


SERIAL_GROUPS = {"real_vllm": "real_vllm", "test_report_page.py": "browser"}
"""Folders and modules whose tests share one session's setup, by the group they run in: under pytest-xdist
(``-n 2 --dist loadgroup``, the quick loop's option; the whole suite runs in one process) a group runs on
one worker. tests/real_vllm starts its two vLLM servers once;
the browser tests install Debian's chromium with apt-get (two at once would fight over dpkg's lock)."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        for part in item.path.parts:
            if part in SERIAL_GROUPS:
                item.add_marker(pytest.mark.xdist_group(SERIAL_GROUPS[part]))
                break
