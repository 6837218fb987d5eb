"""The oracle engine: gold answers replayed through the request's own grammar, no model (it measures
grammars). ``engine`` holds ``OracleEngine`` and ``ServedOracle`` (``harness serve --engine oracle``),
``opener`` sets it up for a run. Names load on first use: importing this package imports neither
xgrammar nor torch."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.lazy import lazy_exports

if TYPE_CHECKING:
    from harness.engines.oracle.engine import CLOSING_TEXT, NOTE, OracleEngine, ServedOracle

__getattr__, __dir__ = lazy_exports(__name__, {
    **{name: "engine" for name in ("CLOSING_TEXT", "NOTE", "OracleEngine", "ServedOracle")},
})

__all__ = ["CLOSING_TEXT", "NOTE", "OracleEngine", "ServedOracle"]
