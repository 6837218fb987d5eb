"""``harness fuzz --reference llguidance``: a token-level differential of each cell's grammar against a
second engine (``differential``), its engines (``engines``) and what it reports (``records``)."""

from __future__ import annotations

from harness.fuzz.reference.records import (
    OVER,
    SPECIAL,
    UNDER,
    UNRESOLVED,
    DisagreementExample,
    ReferenceCell,
    reference_summary,
)
from harness.fuzz.reference.table import junit_text, print_reference_table


def compare_cell(grammar: object, case: object, name: str, *, seed: int, budget_s: float) -> ReferenceCell:
    """The differential of one cell (loads numpy and the engines on first use)."""
    from harness.fuzz.reference.differential import compare_cell as compare

    return compare(grammar, case, name, seed=seed, budget_s=budget_s)


__all__ = [
    "OVER",
    "SPECIAL",
    "UNDER",
    "UNRESOLVED",
    "DisagreementExample",
    "ReferenceCell",
    "compare_cell",
    "junit_text",
    "print_reference_table",
    "reference_summary",
]
