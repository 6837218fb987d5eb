"""The table of benchmarks (``harness.benchmarks``): every seam it names imports, and a lookup it cannot
answer says what it knows."""

from __future__ import annotations

import pytest

from harness.benchmarks import BENCHMARKS, CORPUS, EXECUTION, SEAMS, seam, with_seam

ENTRIES = [(name, part) for name, info in BENCHMARKS.items() for part in info.seams]


@pytest.mark.parametrize(("name", "part"), ENTRIES)
def test_every_seam_in_the_table_imports(name: str, part: str) -> None:
    assert part in SEAMS
    assert callable(seam(name, part)) or part == EXECUTION  # a mode is an object with methods
    assert BENCHMARKS[name].seams[part].startswith(f"harness.{name}.")  # the benchmark's own folder


def test_a_lookup_the_table_cannot_answer_names_what_it_has() -> None:
    with pytest.raises(LookupError, match="no benchmark 'nope' with a corpus \\(known: bfcl\\)"):
        seam("nope", CORPUS)
    assert with_seam(CORPUS) == ("bfcl",)
