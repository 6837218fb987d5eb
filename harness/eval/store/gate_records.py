"""The records the regression gate reads in a run directory (re-exported by ``records``): what the
epochs of a run say about a rate (``Repeats``, in summary.json) and what determines a run's scores
(``SetupIdentity``, in run.json). Both are absent in files written before them."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pydantic import model_validator

from harness.eval.store.base import Record


class KFigure(Record):
    """One estimate for k tries (pass@k or pass^k), with its 95% interval over cases."""

    k: int
    """Tries."""
    value: float
    """The estimate, averaged over cases."""
    ci_low: float
    """95% interval, low end (Wilson with the case as the unit)."""
    ci_high: float
    """95% interval, high end."""


class Repeats(Record):
    """What the epochs of a run say about one rate (runs with epochs > 1; ``harness.stats``)."""

    epochs: int
    """Tries per case (the fewest any case has, when a run was cut short)."""
    cases: int
    """Cases: the unit of every interval here."""
    pass_at_k: tuple[KFigure, ...]
    """pass@k for k = 1..epochs: the chance that at least one of k tries passes (unbiased estimator)."""
    pass_hat_k: tuple[KFigure, ...]
    """pass^k for k = 1..epochs: the chance that all of k tries pass (unbiased estimator)."""
    stable_pass: int
    """Cases that passed every try."""
    flaky: int
    """Cases that passed some tries and failed others."""
    stable_fail: int
    """Cases that failed every try."""


class SetupIdentity(Record):
    """What determines a run's scores beside the code, bundle and cases under test: two runs whose
    identities are equal measured the same setup (two seeds of one setup are an A/A pair, so the seed
    is not part of it). ``harness compare`` refuses runs whose setups differ, naming each field.
    Built by ``harness.eval.run.setup_identity``; per-family fields are keyed by family."""

    engine: str
    """The registered engine (``oracle --target vllm`` for a target run)."""
    models: dict[str, str]
    """Family -> the served model id its requests carried."""
    weights: dict[str, str | None]
    """Family -> a digest of the model's weights (None: no model, or a server's that cannot be read)."""
    servers: dict[str, str | None]
    """Family -> the server's version and the arguments that shape answers (vLLM: its command line,
    without host, port and paths, which are named by digest instead); None: no server, or unknown."""
    chat_templates: dict[str, str | None]
    """Family -> a digest of the chat template the server rendered prompts with (None: the harness
    renders them itself, or unknown)."""
    grammar_library: str | None
    """The grammar engine and its version (``xgrammar 0.2.8``)."""
    max_tokens: int | None
    """The token bound per model response."""
    max_steps_per_turn: int | None
    """The bound of model calls per user turn (episode suites; None for next-call suites, whose points
    are one model call each)."""
    suite: str
    """The suite's name and version."""
    temperature: float
    """Sampling temperature (0: greedy)."""
    top_p: float
    """Nucleus sampling."""
    digest: str
    """sha256 over the fields above (canonical JSON): equal digests, equal setups."""

    @model_validator(mode="before")
    @classmethod
    def _without_suite_digest(cls, data: Any) -> Any:
        """Identities written before 27 November 2026 held a second digest of the suite; the suite's one
        digest is ``RunInputs.suite_digest`` (the cases are what a run tests, not its setup)."""
        if isinstance(data, dict) and "suite_digest" in data:
            data = {k: v for k, v in data.items() if k != "suite_digest"}
        return data


_PER_FAMILY = ("models", "weights", "servers", "chat_templates")


def identity_with_digest(**fields: Any) -> SetupIdentity:
    """A ``SetupIdentity`` of ``fields``, its digest the sha256 of their canonical JSON."""
    text = json.dumps(fields, sort_keys=True, separators=(",", ":"), default=str)
    return SetupIdentity(**fields, digest="sha256:" + hashlib.sha256(text.encode()).hexdigest()[:16])


def setup_fields(identity: SetupIdentity) -> dict[str, Any]:
    """The identity as flat ``field`` / ``field[family]`` -> value pairs (the digest left out): the
    names ``setup_differences`` reports."""
    out: dict[str, Any] = {}
    for name in SetupIdentity.model_fields:
        value = getattr(identity, name)
        if name == "digest":
            continue
        if name in _PER_FAMILY:
            out.update({f"{name}[{family}]": v for family, v in value.items()})
        else:
            out[name] = value
    return out


def setup_differences(baseline: dict[str, Any], candidate: dict[str, Any]) -> list[str]:
    """``field: baseline X, candidate Y`` for every field both sides know and that differs (a family
    one side did not run is not a difference: its lanes do not pair)."""
    return [f"{name}: baseline {baseline[name]!r}, candidate {candidate[name]!r}"
            for name in baseline if name in candidate and baseline[name] != candidate[name]]


__all__ = ["KFigure", "Repeats", "SetupIdentity", "identity_with_digest", "setup_differences", "setup_fields"]
