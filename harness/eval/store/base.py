"""The base of every record of a run directory (``records``, ``run_parts``): strict and immutable."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


class Record(BaseModel):
    """Strict and immutable: unknown fields are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def renamed(data: Any, old: str, new: str) -> Any:
    """``data`` with its key ``old`` called ``new`` (files written before the rename)."""
    if isinstance(data, dict) and old in data and new not in data:
        return {(new if k == old else k): v for k, v in data.items()}
    return data


__all__ = ["Record", "renamed"]
