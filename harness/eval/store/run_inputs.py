"""What went into a run, as its records keep it: the prompts a
run sent (prompts.jsonl), which cases it took (``Selection``, ``Shard``: defined with the run's options in
``harness.run_options``) and the copies of its inputs
(``RunInputs``). ``records`` uses them in ``StepRecord`` and ``RunRecord``."""

from __future__ import annotations

from harness.eval.store.base import Record
from harness.run_options import Selection, Shard
from harness.vocabulary import Family


class PromptRecord(Record):
    """One line of prompts.jsonl: a prompt the run sent, once however many calls sent it."""

    id: str
    """A digest of the text (what ``StepRecord.prompt_id`` names)."""
    family: Family
    """The family whose chat template rendered it."""
    text: str
    """The prompt exactly as the family's chat template renders the request's messages and tools (what
    the harness's own engines feed the model, and what a vLLM server started with the family's template
    renders: checked token for token)."""


class RunInputs(Record):
    """The copies a run directory keeps of what it ran, so it scores and reports anywhere, later."""

    suite: str
    """The suite's copy, relative to the run directory (suite.yaml and its cases)."""
    suite_digest: str
    """sha256 of the suite's files (names and bytes): the same suite gives the same digest."""
    bundle: str
    """The bundle's copy, relative to the run directory (bundle.yaml and its .pym tools)."""
    bundle_digest: str
    """sha256 of the bundle's files."""


__all__ = ["PromptRecord", "RunInputs", "Selection", "Shard"]
