"""The quick loop's workers (`python -m pytest -m "not slow" -n 2 --dist loadgroup`) get whole units: a
module's tests on one worker (its module fixtures built once), tests/real_vllm on one (its two vLLM
servers started once), the browser tests on one (apt-get's lock). tests/conftest.py's scheduler reads the
unit from the test's id, since xdist's own loadgroup does nothing under pytest 9."""

from __future__ import annotations

import pytest

from tests.conftest import work_unit


@pytest.mark.parametrize(
    ("nodeid", "unit"),
    [
        ("tests/real_vllm/test_real_vllm.py::test_smoke[qwen]", "real_vllm"),
        ("tests/real_vllm/test_serve_like_vllm.py::test_harness_serve_answers_as_vllm[tool-choice]", "real_vllm"),
        ("tests/eval/test_report_page.py::test_the_page_opens", "browser"),
        ("tests/grammar/test_unions.py::test_a[x@y.example]", "tests/grammar/test_unions.py"),
        ("tests/grammar/test_unions.py::TestKind::test_b", "tests/grammar/test_unions.py"),
        ("tests/test_stats.py::test_percentile", "tests/test_stats.py"),
    ],
)
def test_a_test_goes_out_with_its_module_or_shared_unit(nodeid: str, unit: str) -> None:
    assert work_unit(nodeid) == unit
