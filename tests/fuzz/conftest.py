"""Hypothesis profiles: ``fast`` (default, CI: a few seconds per property) and ``long`` (the tox
``fuzz`` env, selected with ``HYPOTHESIS_PROFILE=long``). Properties that need no grammar compile
scale their example count from the profile's ``max_examples``."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

_COMMON = {
    "deadline": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
    "print_blob": True,
}
settings.register_profile("fast", max_examples=15, **_COMMON)
settings.register_profile("long", max_examples=400, **_COMMON)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "fast"))
