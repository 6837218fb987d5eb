"""The state verdict of an episode, one for every tool source: the multi-turn benchmark's rules, turn by turn.

The model's calls and the ground truth run turn by turn in two sessions of the case's state (the gold
side once per case: ``Golds.trace``). A turn with ground truth needs calls (``state:empty_turn``), the
same state after it by the source's own verdict (``ToolSource.difference``, the current folder not
compared: the benchmark compares the file system's public attributes; ``state:tree_differs``,
``state:instance_differs``), and the gold results an unordered subset of the model's results so far
(``state:response_missing``). A turn without ground truth must make no call where the source says so
(``state:unwanted_call``: the benchmark's irrelevance rule; ``.pym`` file-system episodes run such a turn's
calls and check nothing). At the end, the case's ``expected_state`` must hold (``state:instance_differs``).

A case with a benchmark's own ground truth (``EpisodeCase.checker``) is judged by that benchmark's checker
instead (the ``episode_verdict`` seam of ``harness.benchmarks``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from harness.eval.data import EpisodeCase
from harness.eval.score.golds import Trace, compared, state_difference
from harness.eval.score.verdicts import PASS, Call, Verdict, fail
from harness.eval.store import StateDifference
from harness.tools import ToolSource
from harness.vocabulary import ErrorKind


def _canonical(output: Any) -> str:
    return output if isinstance(output, str) else json.dumps(output, sort_keys=True, ensure_ascii=False)


def unordered_subset(needles: Iterable[Any], haystack: Iterable[Any]) -> bool:
    """Every needle is found in the haystack, each haystack item used at most once (the benchmark compares
    the outputs as text: a string as it is, any other value as its JSON)."""
    pool: dict[str, int] = {}
    for item in haystack:
        key = _canonical(item)
        pool[key] = pool.get(key, 0) + 1
    for item in needles:
        key = _canonical(item)
        if pool.get(key, 0) <= 0:
            return False
        pool[key] -= 1
    return True


def episode_verdict(source: ToolSource, case: EpisodeCase, per_turn: Sequence[Sequence[Call]], gold: Trace,
                    model: Trace) -> tuple[Verdict, StateDifference | None]:
    """The verdict of the model's calls (``per_turn``, run: ``model``) against the ground truth's run
    (``gold``), and where the states part ways when they do (see the module doc)."""
    seen: list[Any] = []
    for turn, (calls, truth, gold_run, model_run) in enumerate(zip(per_turn, case.ground_truth, gold, model,
                                                                   strict=True)):
        seen.extend(compared(r) for r in model_run.results)
        if not truth:  # nothing to achieve in this turn
            if calls and source.unwanted_calls_fail:
                return fail(ErrorKind.state_unwanted_call), None
            continue
        if not calls:
            return fail(ErrorKind.state_empty_turn), None
        reason = source.difference(gold_run.snapshot, model_run.snapshot, cwd=False)
        if reason:
            return fail(reason), state_difference(source, turn, gold_run.snapshot, model_run.snapshot)
        if not unordered_subset([compared(r) for r in gold_run.results], seen):
            return fail(ErrorKind.state_response_missing), None
    if case.expected_state and not source.holds(model[-1].snapshot, case.expected_state):
        return fail(ErrorKind.state_instance_differs), None
    return PASS, None


__all__ = ["episode_verdict", "unordered_subset"]
