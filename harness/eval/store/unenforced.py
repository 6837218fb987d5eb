"""What a run's samples say of the engine's grammar, beside the model: the answers the engine let
through that the harness's own compiled constraint (xgrammar, the family's tokenizer) rejects
(``constraint:not_enforced``: a server that ignored the field, or a server's grammar engine that
differs from xgrammar), and whether the run's token counts were the engine's or the harness's. The
report and ``harness compare --side-by-side`` list them per run, so a run on llama.cpp's server names
each answer its GBNF engine accepted where xgrammar would not have."""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from harness.eval.store.records import SampleRecord
from harness.vocabulary import ErrorKind

ANSWER_SHOWN = 160
"""Characters of an answer quoted in a listing (the sample in report.html has all of it)."""


class UnenforcedAnswer(NamedTuple):
    """One sample whose answer broke its lane's constraint."""

    sample_id: str
    strategy: str
    reason: str
    """Where the harness's grammar rejected it (``token 12/40 ... not allowed after ...``)."""
    answer: str
    """The answer, cut to ``ANSWER_SHOWN`` characters."""


def unenforced_answers(samples: Iterable[SampleRecord]) -> list[UnenforcedAnswer]:
    """Each ``constraint:not_enforced`` sample, in sample-id order."""
    out = []
    for sample in samples:
        if sample.error_kind != ErrorKind.constraint_not_enforced:
            continue
        answer = next((s.output for s in reversed(sample.steps) if s.output), None) or ""
        cut = answer if len(answer) <= ANSWER_SHOWN else answer[:ANSWER_SHOWN] + "..."
        out.append(UnenforcedAnswer(sample.sample_id, str(sample.strategy), sample.error or "", cut))
    return sorted(out)


def counted_by(samples: Iterable[SampleRecord]) -> str | None:
    """Who counted the tokens of any of the run's answers when its engine did not (``harness``: the
    server sent no usage, the answer's text was counted with the family's tokenizer); None: the engine."""
    return next((s.usage.counted_by for sample in samples for s in sample.steps
                 if s.usage is not None and s.usage.counted_by), None)


__all__ = ["UnenforcedAnswer", "counted_by", "unenforced_answers"]
