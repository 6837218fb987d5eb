"""prompts.jsonl: every prompt a run sent, rendered by its family's chat template, once each.

A step of samples.jsonl names its prompt by id (``StepRecord.prompt_id``); the text is kept here once,
however many calls sent it (the same case sends the same prompt under every strategy). Lines are
appended as samples finish. A prompt is what the viewer shows as "the exact prompt sent"; a line torn
by a kill loses one prompt's text (the report then says so), never a sample, so this file is written
without the fsync samples.jsonl pays for.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from pydantic import ValidationError

from harness.eval.store.run_inputs import PromptRecord

PROMPTS_FILE = "prompts.jsonl"


def prompt_id(family: str, text: str) -> str:
    """The id of a prompt: a digest of its family and text."""
    return hashlib.sha256(f"{family}\0{text}".encode()).hexdigest()[:20]


def read_prompts(run_dir: Path) -> dict[str, PromptRecord]:
    """The prompts of a run directory by id ({} when it kept none). Lines that do not read (a torn last
    line, a file from elsewhere) are skipped: a prompt is shown when it is there."""
    path = Path(run_dir) / PROMPTS_FILE
    if not path.is_file():
        return {}
    prompts: dict[str, PromptRecord] = {}
    with open(path, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            try:
                record = PromptRecord.model_validate_json(line)
            except (ValidationError, ValueError):
                continue
            prompts[record.id] = record
    return prompts


class PromptLog:
    """Appends each new prompt of a run to prompts.jsonl (ids already there are not written again)."""

    def __init__(self, run_dir: Path) -> None:
        self.path = Path(run_dir) / PROMPTS_FILE
        self.known: set[str] = set(read_prompts(run_dir))

    def add(self, family: str, text: str) -> str:
        """The prompt's id, writing its line when it is new."""
        key = prompt_id(family, text)
        if key not in self.known:
            line = json.dumps({"id": key, "family": family, "text": text}, ensure_ascii=False)
            with open(self.path, "a", encoding="utf-8") as fh:
                fh.write(line + "\n")
            self.known.add(key)
        return key


__all__ = ["PROMPTS_FILE", "PromptLog", "prompt_id", "read_prompts"]
