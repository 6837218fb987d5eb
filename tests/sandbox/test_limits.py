"""Limits: presets, human-readable values, typos rejected, merge, the pydantic-monty keys."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from harness.sandbox import Limits


def test_presets_are_ordered() -> None:
    strict, default, permissive = Limits.strict(), Limits.default(), Limits.permissive()
    for field in ("max_memory", "max_duration", "max_recursion", "wall_clock"):
        assert getattr(strict, field) < getattr(default, field) < getattr(permissive, field), field
    assert Limits.preset("strict") == strict
    with pytest.raises(ValueError, match="unknown limits preset"):
        Limits.preset("lenient")


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("max_memory", "16mb", 16 * 1024**2),
        ("max_memory", "512KB", 512 * 1024),
        ("max_memory", "1.5g", int(1.5 * 1024**3)),
        ("max_memory", 4096, 4096),
        ("max_duration", "2s", 2.0),
        ("max_duration", "500ms", 0.5),
        ("max_duration", "1m", 60.0),
        ("wall_clock", 3, 3.0),
        ("max_sleep", "250 ms", 0.25),
    ],
)
def test_human_values(field: str, value: object, expected: float) -> None:
    assert getattr(Limits(**{field: value}), field) == expected


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_mmeory": "16mb"},
        {"max_memory": "lots"},
        {"max_duration": "-1s"},
        {"max_duration": True},
        {"max_recursion": 0},
        {"wall_clock": "2 days"},
    ],
)
def test_typos_and_bad_values_are_rejected(kwargs: dict) -> None:
    with pytest.raises(ValidationError):
        Limits(**kwargs)


def test_frozen() -> None:
    limits = Limits.default()
    with pytest.raises(ValidationError):
        limits.max_memory = 1  # type: ignore[misc]


def test_merge_overrides_only_what_is_set() -> None:
    merged = Limits.default().merge(Limits(max_duration="10s", max_sleep=None))
    assert merged.max_duration == 10.0
    assert merged.max_sleep is None  # explicitly cleared
    assert merged.max_memory == Limits.default().max_memory
    assert Limits.default().max_duration == 2.0  # the base is untouched


def test_coerce() -> None:
    assert Limits.coerce(None) == Limits.default()
    assert Limits.coerce("strict") == Limits.strict()
    assert Limits.coerce({"max_memory": "32mb"}).max_memory == 32 * 1024**2
    assert Limits.coerce({"max_memory": "32mb"}).wall_clock == Limits.default().wall_clock
    with pytest.raises(ValidationError):
        Limits.coerce({"max_memory_mb": 16})
    with pytest.raises(TypeError):
        Limits.coerce(3)  # type: ignore[arg-type]


def test_pydantic_monty_keys() -> None:
    keys = Limits.default().to_monty()
    assert keys == {
        "max_memory": 16 * 1024**2,
        "max_feed_duration_secs": 2.0,
        "max_recursion_depth": 400,
        "max_suspensions": 1000,
        "max_total_sleep_secs": 1.0,
    }
    assert "wall_clock" not in keys  # enforced on the host
    assert Limits().to_monty() == {}
