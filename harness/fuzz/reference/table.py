"""The differential on the console and in JUnit: one row per family x strategy, classes summed over the
tools, the keywords most involved, and where the engines could not be compared."""

from __future__ import annotations

from typing import Any

from harness.fuzz.reference.records import OVER, SPECIAL, UNDER, UNRESOLVED, ReferenceCell, reference_summary

TOP_KEYWORDS = 4


def table_rows(engine: str, cells: list[Any]) -> tuple[list[str], list[list[str]]]:
    """The header and rows of the console table."""
    header = ["family", "strategy", "cells", "not comparable", "instances", "prefixes", "disagreeing tokens",
              "classified", "over: xgrammar", f"over: {engine}", "under: xgrammar", f"under: {engine}",
              SPECIAL, UNRESOLVED, "keywords (over / under)"]
    rows = []
    for key, row in reference_summary(engine, cells).items():
        family, strategy = key.split("/", 1)
        classes = row["classes"]
        rows.append([
            family, strategy, str(row["cells"]), str(row["not_comparable"]), f"{row['instances']:,}",
            f"{row['prefixes']:,}", f"{row['disagreeing_tokens']:,}", f"{row['classified']:,}" + ("*" if row["sampled"] else ""),
            *(f"{classes.get(f'{cls}:{who}', 0):,}" for cls in (OVER, UNDER) for who in ("xgrammar", engine)),
            f"{classes.get(SPECIAL, 0):,}", f"{classes.get(UNRESOLVED, 0):,}", _keywords(row["by_keyword"]),
        ])
    return header, rows


def _keywords(by_keyword: dict[str, dict[str, int]]) -> str:
    def top(prefix: str) -> str:
        counts: dict[str, int] = {}
        for cls, keywords in by_keyword.items():
            if cls.startswith(prefix):
                for keyword, n in keywords.items():
                    counts[keyword] = counts.get(keyword, 0) + n
        best = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP_KEYWORDS]
        return ", ".join(f"{k} {n}" for k, n in best) or "-"

    return f"{top(OVER)} / {top(UNDER)}"


def print_reference_table(engine: str, cells: list[Any]) -> None:
    """The table on stdout (rich), with the reasons where the engines could not be compared."""
    from rich.console import Console
    from rich.table import Table

    header, rows = table_rows(engine, cells)
    table = Table(title=f"token-level differential: xgrammar against {engine} (* sampled: see classified)")
    for h in header:
        table.add_column(h, justify="left" if h in ("family", "strategy", "keywords (over / under)") else "right")
    for row in rows:
        table.add_row(*row)
    console = Console(width=240, soft_wrap=True)
    console.print(table)
    for key, row in reference_summary(engine, cells).items():
        for note in row["notes"]:
            console.print(f"{key}: not compared: {note}", highlight=False)


def junit_text(ref: ReferenceCell) -> str:
    """A cell's differential in a JUnit test case's system-out."""
    if not ref.comparable:
        return f"reference {ref.engine}: not compared: {ref.note}"
    lines = [f"reference {ref.engine}: {ref.instances} instances, {ref.prefixes} prefixes, "
             f"{ref.disagreeing_tokens} disagreeing tokens, {ref.classified} classified"
             f"{' (sampled)' if ref.sampled else ''}{' (timed out)' if ref.timed_out else ''}: "
             + ", ".join(f"{k} {n}" for k, n in sorted(ref.classes.items()))]
    for example in ref.examples:
        lines.append(f"  {example.cls} [{example.keyword}] token {example.token!r} after {example.prefix[-60:]!r}"
                     f" -> {example.verdict}")
    return "\n".join(lines)


__all__ = ["junit_text", "print_reference_table", "table_rows"]
