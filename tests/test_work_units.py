"""The suite's xdist workers (`-n auto --dist loadgroup`, pyproject's addopts) get whole units: a module's
tests on one worker (its module fixtures built once), tests/real_vllm and the whole-corpus BFCL walks on one
(the vLLM servers, then the walks, never both at once), the browser tests on one (apt-get's lock). The units
go out longest first. tests/conftest.py's scheduler reads the unit from the test's id, since xdist's own
loadgroup does nothing under pytest 9."""

from __future__ import annotations

import pytest

from tests.conftest import hand_out_rank, work_unit


@pytest.mark.parametrize(
    ("nodeid", "unit"),
    [
        ("tests/real_vllm/test_real_vllm.py::test_smoke[qwen]", "heavy"),
        ("tests/real_vllm/test_serve_like_vllm.py::test_harness_serve_answers_as_vllm[tool-choice]", "heavy"),
        ("tests/eval/test_bfcl_gold_replay.py::test_every_constrained_cell[simple_python]", "heavy"),
        ("tests/fuzz/test_bfcl_corpus.py::test_bfcl_tools_through_the_fuzz", "heavy"),
        ("tests/eval/test_bfcl_single.py::test_a_verdict", "tests/eval/test_bfcl_single.py"),
        ("tests/eval/test_report_page.py::test_the_page_opens", "browser"),
        ("tests/grammar/test_unions.py::test_a[x@y.example]", "tests/grammar/test_unions.py"),
        ("tests/grammar/test_unions.py::TestKind::test_b", "tests/grammar/test_unions.py"),
        ("tests/test_stats.py::test_percentile", "tests/test_stats.py"),
    ],
)
def test_a_test_goes_out_with_its_module_or_shared_unit(nodeid: str, unit: str) -> None:
    assert work_unit(nodeid) == unit


SLOW = frozenset({"tests/docs/test_tutorials.py"})


@pytest.mark.parametrize(
    ("nodeid", "rank"),
    [
        ("tests/real_vllm/test_kept_server.py::test_a_kept_server", 0),
        ("tests/eval/test_bfcl_multi_turn.py::test_verdicts_are_bfcls_on_every_entry", 1),
        ("tests/docs/test_tutorials.py::test_the_tutorial_runs_as_written[gate-ci]", 2),
        ("tests/docs/test_site.py::test_the_site_builds", 3),
        ("tests/eval/test_report_page.py::test_the_page_opens", 3),
    ],
)
def test_the_vllm_servers_go_out_first_then_the_walks_then_slow_modules(nodeid: str, rank: int) -> None:
    assert hand_out_rank(nodeid, SLOW) == rank
