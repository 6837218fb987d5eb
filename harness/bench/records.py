"""The records every benchmark writes: pydantic models with a docstring per field, like a run's records.

``BenchRecord`` is strict (an unknown field is an error) and written whole; two kinds keep a file's keys
as they have always been when a part was not measured: ``SparseRecord`` (written with the fields that
were given) and ``OmitsAbsent`` (its named fields left out when None).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, SerializerFunctionWrapHandler, model_serializer

from harness.stats import spread


class BenchRecord(BaseModel):
    """A benchmark's record: strict (an unknown field is an error); a figure that is not a number
    (a re-timing that failed) is written as ``NaN``, as ``json.dumps`` writes it."""

    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="constants")

    def dump(self) -> dict[str, Any]:
        """The JSON object of this record."""
        return self.model_dump(mode="json")


class OmitsAbsent(BenchRecord):
    """A record whose ``OMITTED_WHEN_NONE`` fields are left out when None (a part that was not
    measured is absent from the file, as it always was), wherever it is nested."""

    OMITTED_WHEN_NONE: ClassVar[tuple[str, ...]] = ()

    @model_serializer(mode="wrap")
    def _without_absent(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        return {k: v for k, v in data.items() if not (k in self.OMITTED_WHEN_NONE and v is None)}


class SparseRecord(BenchRecord):
    """A record whose fields depend on what was measured: written with the fields that were given
    (None included), wherever it is nested, so a file keeps the keys it always had."""

    @model_serializer(mode="wrap")
    def _given_fields(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        return {k: v for k, v in data.items() if k in self.model_fields_set}

    def given(self) -> dict[str, Any]:
        """The fields that were given, as values (to build a larger record from this one)."""
        return {k: getattr(self, k) for k in type(self).model_fields if k in self.model_fields_set}


def spread_fields(values: Sequence[float], prefix: str) -> dict[str, Any]:
    """``harness.stats.spread`` as a record's fields: ``{prefix}_p50``, ``_p90``, ``_p99``, ``_max``."""
    return dict(spread(values, prefix))


__all__ = ["BenchRecord", "OmitsAbsent", "SparseRecord", "spread_fields"]
