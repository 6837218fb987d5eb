"""The project's one markdown-table writer (report.md, bench.md)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any


def cell(value: Any) -> str:
    """A value as a table cell: ``|`` escaped, line breaks as spaces, None as blank."""
    if value is None:
        return ""
    return str(value).replace("\\", "\\\\").replace("|", "\\|").replace("\r", " ").replace("\n", " ")


def markdown_table(headers: Sequence[Any], rows: Iterable[Sequence[Any]]) -> str:
    """A GitHub-flavoured markdown table; every cell goes through :func:`cell`."""
    lines = ["| " + " | ".join(cell(h) for h in headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


__all__ = ["cell", "markdown_table"]
