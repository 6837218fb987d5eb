"""The base of every record of a run directory (``records``, ``run_inputs``, ``gate_records``): strict and
immutable."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, SerializerFunctionWrapHandler, model_serializer


class Record(BaseModel):
    """Strict and immutable: unknown fields are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class OmitsAbsent(Record):
    """A record whose ``OMITTED_WHEN_NONE`` fields are left out of the file when None, so a file
    without what they describe keeps the bytes it had before they existed."""

    OMITTED_WHEN_NONE: ClassVar[tuple[str, ...]] = ()

    @model_serializer(mode="wrap")
    def _without_absent(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        return {k: v for k, v in data.items() if not (k in self.OMITTED_WHEN_NONE and v is None)}


def renamed(data: Any, old: str, new: str) -> Any:
    """``data`` with its key ``old`` called ``new`` (files written before the rename)."""
    if isinstance(data, dict) and old in data and new not in data:
        return {(new if k == old else k): v for k, v in data.items()}
    return data


__all__ = ["OmitsAbsent", "Record", "renamed"]
