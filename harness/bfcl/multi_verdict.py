"""BFCL's own verdict of its multi-turn cases, computed in the Python-tool worker.

A case with BFCL's ground truth (``bfcl_ground_truth``: every imported BFCL multi-turn entry) is judged
by BFCL's own ``multi_turn_checker`` and then its ``multi_turn_irrelevance_checker``, run in the tool
worker on the model's calls as BFCL decodes them (one list of call strings per response with calls;
responses without calls are dropped, as BFCL's runner drops them). Its failure is ``bfcl:<BFCL's error
type>`` (``bfcl:multi_turn:instance_state_mismatch``, ``bfcl:multi_turn:execution_response_mismatch``,
``bfcl:multi_turn:empty_turn_model_response``, ``bfcl:multi_turn:irrelevance_error:decoder_success``). A
model's call whose name or an argument key is not a Python identifier (or is a keyword) cannot be
written as the call source BFCL's checker takes: the verdict is ``state:bad_call``, and BFCL's checker
is not asked. Every other episode gets the harness's verdict (``episodes``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness.eval.data import EpisodeCase
from harness.eval.score import PASS, Call, Verdict, fail
from harness.tools import PythonClassSource, ToolSource, WorkerFailure, call_text
from harness.vocabulary import ErrorKind, bfcl_error_kind


def bfcl_entry(case: EpisodeCase) -> dict[str, Any]:
    """What BFCL's checker reads of an entry."""
    return {"id": case.id, "initial_config": case.initial_config, "involved_classes": case.involved_classes}


async def bfcl_multi_turn_verdict(source: ToolSource, case: EpisodeCase, truth: Sequence[Sequence[str]],
                       steps_by_turn: Sequence[Sequence[Sequence[Call]]]) -> Verdict:
    """BFCL's verdict of one episode (see the module doc)."""
    if not isinstance(source, PythonClassSource):  # BFCL's checker runs in the Python-tool worker only
        return fail(ErrorKind.tool_unavailable)
    try:
        model = [[[call_text(c.name, c.arguments) for c in step] for step in turn if step] for turn in steps_by_turn]
    except ValueError:  # a key that is not an identifier: never spliced into a call's source
        return fail(ErrorKind.state_bad_call)
    try:
        valid, error_type = await source.check("bfcl", bfcl_entry(case), model, truth)
    except WorkerFailure as exc:
        return fail(exc.kind)
    return PASS if valid else fail(bfcl_error_kind(str(error_type)))


__all__ = ["bfcl_entry", "bfcl_multi_turn_verdict"]
