"""State verdicts of episodes whose tools are Python classes (``python:`` bundles), computed in the worker.

- A case with BFCL's ground truth (``bfcl_ground_truth``: every imported BFCL multi-turn entry) is
  judged by BFCL's own ``multi_turn_checker`` and then its ``multi_turn_irrelevance_checker``, run in
  the tool worker on the model's calls as BFCL decodes them (one list of call strings per response
  with calls; responses without calls are dropped, as BFCL's runner drops them). Its failure is
  ``bfcl:<BFCL's error type>`` (``bfcl:multi_turn:instance_state_mismatch``,
  ``bfcl:multi_turn:execution_response_mismatch``, ``bfcl:multi_turn:empty_turn_model_response``,
  ``bfcl:multi_turn:irrelevance_error:decoder_success``). A model's call whose name or an argument key
  is not a Python identifier (or is a keyword) cannot be written as the call source BFCL's checker takes: the verdict is
  ``state:bad_call``, and BFCL's checker is not asked.
- Any other Python-class episode (a user's classes) gets the same rules from the harness, on states
  the worker snapshots (each instance's public attributes): turn by turn, the model's calls and the
  ground truth's run on two sessions; a turn with ground truth needs calls (``state:empty_turn``),
  equal snapshots (``state:instance_differs``) and the gold results among the model's results so far
  (``state:response_missing``); a turn without ground truth must make no call
  (``state:unwanted_call``); at the end, the case's ``expected_state`` must hold.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from harness.agents import PythonClassSource, PythonSession, WorkerFailure, call_text
from harness.eval.data import EpisodeCase
from harness.eval.score.verdicts import PASS, Call, Verdict, fail
from harness.vocabulary import ErrorKind, bfcl_error_kind


def bfcl_entry(case: EpisodeCase) -> dict[str, Any]:
    """What BFCL's checker reads of an entry."""
    return {"id": case.id, "initial_config": case.initial_config, "involved_classes": case.involved_classes}


async def class_verdict(source: PythonClassSource, case: EpisodeCase,
                        steps_by_turn: Sequence[Sequence[Sequence[Call]]]) -> Verdict:
    """The state verdict of one episode (see the module doc)."""
    try:
        if case.bfcl_ground_truth is not None:
            try:
                model = [[[call_text(c.name, c.arguments) for c in step] for step in turn if step] for turn in steps_by_turn]
            except ValueError:  # a key that is not an identifier: never spliced into a call's source
                return fail(ErrorKind.state_bad_call)
            valid, error_type = await source.bfcl_check(bfcl_entry(case), model, case.bfcl_ground_truth)
            return PASS if valid else fail(bfcl_error_kind(str(error_type)))
        return await _harness_rules(source, case, steps_by_turn)
    except WorkerFailure as exc:
        return fail(exc.kind)


# A bound the worker enforced, or a worker that died, says how this machine ran the call (which bound
# was hit first, an exit status), not what the tool answered: two runs of the same call may word it
# differently (one allocation loop ends out of memory on a quiet machine, past the wall clock on a busy
# one). Such results are compared by their kind alone.
_KIND_ONLY = frozenset({ErrorKind.tool_limit, ErrorKind.tool_internal_error})


async def _run(session: PythonSession, calls: Sequence[Call]) -> list[Any]:
    outputs = []
    for call in calls:
        output, kind, message = await session.call(call.name, call.arguments)
        if kind is None:
            outputs.append(output)
        else:
            outputs.append(str(kind) if kind in _KIND_ONLY else f"{kind}: {message}")
    return outputs


def _subset(needles: Sequence[Any], haystack: Sequence[Any]) -> bool:
    pool = [json.dumps(h, sort_keys=True) for h in haystack]
    for needle in needles:
        key = json.dumps(needle, sort_keys=True)
        if key not in pool:
            return False
        pool.remove(key)
    return True


def _holds(state: Mapping[str, Any], expected: Mapping[str, Mapping[str, Any]]) -> bool:
    return all(state.get(cls, {}).get(attr) == value for cls, attrs in expected.items() for attr, value in attrs.items())


async def _harness_rules(source: PythonClassSource, case: EpisodeCase,
                         steps_by_turn: Sequence[Sequence[Sequence[Call]]]) -> Verdict:
    open_args = (case.involved_classes, case.initial_config)
    model = await source.open(*open_args, long_context=case.long_context, entry=case.id)
    gold = await source.open(*open_args, long_context=case.long_context, entry=case.id)
    try:
        seen: list[Any] = []
        for turn, truth in zip(steps_by_turn, case.ground_truth, strict=False):
            calls = [c for step in turn for c in step]
            seen.extend(await _run(model, calls))
            gold_outputs = await _run(gold, truth)
            if not truth:
                if calls:
                    return fail(ErrorKind.state_unwanted_call)
                continue
            if not calls:
                return fail(ErrorKind.state_empty_turn)
            if await model.snapshot() != await gold.snapshot():
                return fail(ErrorKind.state_instance_differs)
            if not _subset(gold_outputs, seen):
                return fail(ErrorKind.state_response_missing)
        if case.expected_state and not _holds(await model.snapshot(), case.expected_state):
            return fail(ErrorKind.state_instance_differs)
        return PASS
    finally:
        await model.close()
        await gold.close()


__all__ = ["bfcl_entry", "class_verdict"]
