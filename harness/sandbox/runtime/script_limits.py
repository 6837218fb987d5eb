"""Resource limits for sandboxed scripts: presets, human-readable values, merging.

``Limits`` is a frozen pydantic model that rejects unknown fields, so a typo such as ``max_mmeory``
fails loudly. Sizes accept ``"16mb"``/``"512kb"``/bytes, durations ``"2s"``/``"500ms"``/``"1m"``/seconds.
``to_monty()`` maps the sandbox's own fields onto pydantic-monty 1.4's ``ResourceLimits`` keys. The
others are enforced on the host, for costs the sandbox cannot see: ``wall_clock`` (time a script spends
waiting on the host, an external or a sleep, is not counted by the sandbox's duration limit),
``max_wait`` (a call waiting for a free worker), ``max_print``, ``max_output_depth`` and
``max_mutations``. A breach of any of them is ``tool:limit`` (``LimitError.limit`` names it), except
``max_wait``, which is ``tool:unavailable``: a call that never started is not charged a limit.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

PresetName = Literal["strict", "default", "permissive"]
PRESETS: tuple[PresetName, ...] = ("strict", "default", "permissive")

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(b|kb|k|kib|mb|m|mib|gb|g|gib)?\s*$", re.IGNORECASE)
_SIZE_UNITS = {
    None: 1,
    "b": 1,
    "k": 1024,
    "kb": 1024,
    "kib": 1024,
    "m": 1024**2,
    "mb": 1024**2,
    "mib": 1024**2,
    "g": 1024**3,
    "gb": 1024**3,
    "gib": 1024**3,
}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|sec|m|min)?\s*$", re.IGNORECASE)
_DURATION_UNITS = {None: 1.0, "s": 1.0, "sec": 1.0, "ms": 0.001, "m": 60.0, "min": 60.0}


def parse_size(value: Any) -> int | None:
    """``"16mb"`` -> 16777216; an int is bytes; ``None`` stays ``None`` (no limit)."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise ValueError(f"not a size: {value!r}")
    if isinstance(value, int | float):
        if value <= 0:
            raise ValueError(f"a size must be positive, got {value!r}")
        return int(value)
    if isinstance(value, str):
        m = _SIZE.match(value)
        if m:
            unit = m.group(2).lower() if m.group(2) else None
            size = int(float(m.group(1)) * _SIZE_UNITS[unit])
            if size > 0:
                return size
    raise ValueError(f"not a size: {value!r} (use bytes or a string such as '16mb', '512kb')")


def parse_duration(value: Any) -> float | None:
    """``"2s"`` -> 2.0, ``"500ms"`` -> 0.5; a number is seconds; ``None`` stays ``None`` (no limit)."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise ValueError(f"not a duration: {value!r}")
    if isinstance(value, int | float):
        if value <= 0:
            raise ValueError(f"a duration must be positive, got {value!r}")
        return float(value)
    if isinstance(value, str):
        m = _DURATION.match(value)
        if m:
            unit = m.group(2).lower() if m.group(2) else None
            seconds = float(m.group(1)) * _DURATION_UNITS[unit]
            if seconds > 0:
                return seconds
    raise ValueError(f"not a duration: {value!r} (use seconds or a string such as '2s', '500ms')")


class Limits(BaseModel):
    """Limits for one script run. ``None`` means no limit (recursion and suspensions keep Monty's 1000)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_memory: int | None = Field(default=None, description="Heap bytes ('16mb').")
    max_duration: float | None = Field(default=None, description="Sandbox execution seconds per run ('2s').")
    max_recursion: int | None = Field(default=None, gt=0, description="Call-stack depth.")
    max_suspensions: int | None = Field(
        default=None, gt=0, description="External calls, virtual-file operations and name lookups per run."
    )
    max_sleep: float | None = Field(default=None, description="Total seconds of time.sleep/asyncio.sleep.")
    gc_interval: int | None = Field(default=None, gt=0, description="Collect garbage every N allocations.")
    wall_clock: float | None = Field(
        default=None,
        description="Host-side bound on a call from the moment it starts, waiting on externals included ('5s'). "
        "An overdue call is abandoned: its worker is killed, its thread replaced.",
    )
    max_wait: float | None = Field(
        default=None,
        description="Host-side bound on the time a call waits for a free sandbox worker before it starts ('60s'); "
        "not part of wall_clock. Beyond it the call ends as tool:unavailable.",
    )
    max_print: int | None = Field(
        default=None,
        description="Bytes of print() output the host keeps for one run ('1mb'); more ends the run (limit 'print').",
    )
    max_output_depth: int | None = Field(
        default=None,
        gt=0,
        description="How deeply the script's value may nest (lists and dicts); a deeper value is refused (limit "
        "'output_depth') instead of coming back cut.",
    )
    max_mutations: int | None = Field(
        default=None, gt=0, description="Mutations one call may return (limit 'mutations')."
    )

    @field_validator("max_memory", "max_print", mode="before")
    @classmethod
    def _size(cls, value: Any) -> int | None:
        return parse_size(value)

    @field_validator("max_duration", "max_sleep", "wall_clock", "max_wait", mode="before")
    @classmethod
    def _duration(cls, value: Any) -> float | None:
        return parse_duration(value)

    @classmethod
    def strict(cls) -> Limits:
        """Small and fast: 8 MB, 0.5 s, recursion 200, 1 s on the wall clock, 64 KB of prints."""
        return cls.model_validate(
            {
                "max_memory": "8mb",
                "max_duration": "500ms",
                "max_recursion": 200,
                "max_suspensions": 200,
                "max_sleep": "200ms",
                "wall_clock": "1s",
                "max_wait": "10s",
                "max_print": "64kb",
                "max_output_depth": 100,
                "max_mutations": 100,
            }
        )

    @classmethod
    def default(cls) -> Limits:
        """The everyday preset: 16 MB, 2 s, recursion 400, 5 s on the wall clock, 1 MB of prints."""
        return cls.model_validate(
            {
                "max_memory": "16mb",
                "max_duration": "2s",
                "max_recursion": 400,
                "max_suspensions": 1000,
                "max_sleep": "1s",
                "wall_clock": "5s",
                "max_wait": "60s",
                "max_print": "1mb",
                "max_output_depth": 100,
                "max_mutations": 1000,
            }
        )

    @classmethod
    def permissive(cls) -> Limits:
        """Room for heavy scripts: 64 MB, 10 s, recursion 1000, 30 s on the wall clock, 8 MB of prints."""
        return cls.model_validate(
            {
                "max_memory": "64mb",
                "max_duration": "10s",
                "max_recursion": 1000,
                "max_suspensions": 10000,
                "max_sleep": "10s",
                "wall_clock": "30s",
                "max_wait": "300s",
                "max_print": "8mb",
                "max_output_depth": 100,
                "max_mutations": 10000,
            }
        )

    @classmethod
    def preset(cls, name: str) -> Limits:
        """A preset by name: ``strict``, ``default`` or ``permissive``."""
        if name not in PRESETS:
            raise ValueError(f"unknown limits preset {name!r}; expected one of {', '.join(PRESETS)}")
        return getattr(cls, name)()  # type: ignore[no-any-return]

    @classmethod
    def coerce(cls, value: Limits | str | dict[str, Any] | None) -> Limits:
        """A preset name, a dict of fields (merged over ``default``), a Limits, or None (``default``)."""
        if value is None:
            return cls.default()
        if isinstance(value, Limits):
            return value
        if isinstance(value, str):
            return cls.preset(value)
        if isinstance(value, dict):
            return cls.default().merge(cls(**value))
        raise TypeError(f"limits must be a preset name, a dict or Limits, not {type(value).__name__}")

    def merge(self, override: Limits) -> Limits:
        """A new Limits: the fields ``override`` sets explicitly replace this one's."""
        changes = {name: getattr(override, name) for name in override.model_fields_set}
        return self.model_copy(update=changes)

    def to_monty(self) -> dict[str, Any]:
        """pydantic-monty 1.4 ``ResourceLimits`` (the host-side fields are not included)."""
        out: dict[str, Any] = {}
        if self.max_memory is not None:
            out["max_memory"] = self.max_memory
        if self.max_duration is not None:
            out["max_feed_duration_secs"] = self.max_duration
        if self.max_recursion is not None:
            out["max_recursion_depth"] = self.max_recursion
        if self.max_suspensions is not None:
            out["max_suspensions"] = self.max_suspensions
        if self.max_sleep is not None:
            out["max_total_sleep_secs"] = self.max_sleep
        if self.gc_interval is not None:
            out["gc_interval"] = self.gc_interval
        return out
