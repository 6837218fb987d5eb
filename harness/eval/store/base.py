"""The base of every record of a results directory."""

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


__all__ = ["OmitsAbsent", "Record"]
