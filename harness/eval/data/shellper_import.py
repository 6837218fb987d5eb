"""SHELLper (distil-labs' format) -> a next-call suite.

Each line ``{"question": "<JSON message list>", "answer": "<JSON {name, parameters}>"}``. Every
assistant call in the history is a scoring point too, as upstream scores it: a line whose messages hold
k calls gives k+1 points. Identical points (same history, same call) from different lines are kept
once; the same history with a different call becomes an ``expected_alternatives`` entry of the first
point (counted as a conflict). The data has no file system: points get an empty ``workspace`` root and
``state_check: false`` (state_match is not applicable); nothing is inferred.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from harness.eval.data.cases import EMPTY_WORKSPACE, CallSpec, Case, ChatMessage, NextCallCase
from harness.eval.data.importing import (
    ImportFailure,
    ImportReport,
    check_new_suite,
    read_lines,
    slug,
    suite_name,
)
from harness.eval.data.suite import SuiteSpec, format_loc, write_suite
from harness.files import check_depth, load_json


def _json_field(raw: Mapping[str, Any], key: str) -> Any:
    if key not in raw:
        raise ValueError(f"missing field {key!r}")
    value = raw[key]
    if isinstance(value, str):
        return load_json(value, key)
    return check_depth(value, key)


def _call(raw: Any, where: str) -> CallSpec:
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: expected an object, got {type(raw).__name__}")
    fn = raw.get("function", raw)
    if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
        raise ValueError(f"{where}: no function name")
    args = fn.get("arguments", fn.get("parameters", {}))
    if isinstance(args, str):
        args = load_json(args, f"{where}.arguments") if args.strip() else {}
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise ValueError(f"{where}.arguments: expected an object, got {type(args).__name__}")
    return CallSpec(name=fn["name"], arguments=args)


MAX_CONVERSATION_MESSAGES = 256
"""Longest conversation a line may hold: each of its calls becomes a point holding the history before
it, so a conversation's points grow as its length squared (10,000 turns: ~40 GB); SHELLper's own
conversations hold a few dozen messages. A longer one is a bad line, named, and the import stays linear."""


def _shellper_messages(raw: Any) -> list[ChatMessage]:
    if not isinstance(raw, list) or not raw:
        raise ValueError("question: expected a non-empty message list")
    if len(raw) > MAX_CONVERSATION_MESSAGES:
        raise ValueError(f"question: {len(raw)} messages, over the bound of {MAX_CONVERSATION_MESSAGES} "
                         "(MAX_CONVERSATION_MESSAGES): each call becomes a point holding its whole history")
    out: list[ChatMessage] = []
    for i, m in enumerate(raw):
        if not isinstance(m, dict):
            raise ValueError(f"question[{i}]: expected an object")
        role = m.get("role")
        calls = [_call(c, f"question[{i}].tool_calls[{k}]") for k, c in enumerate(m.get("tool_calls") or [])]
        if role == "assistant" and len(calls) != 1:
            raise ValueError(f"question[{i}]: an assistant turn needs exactly one call, found {len(calls)}")
        content = m.get("content")
        if role == "assistant" and not content:
            content = None
        try:
            out.append(ChatMessage.model_validate({"role": role, "content": content, "tool_calls": calls}))
        except ValidationError as exc:
            err = exc.errors()[0]
            raise ValueError(f"question[{i}].{format_loc(err['loc']) or 'message'}: {err['msg']}") from None
    return out


def shellper_points(messages: list[ChatMessage], answer: CallSpec) -> Iterator[tuple[list[ChatMessage], CallSpec]]:
    """Every (history, next call) pair of one SHELLper line: one per assistant call, then the answer."""
    for j, m in enumerate(messages):
        if m.role == "assistant" and m.tool_calls:
            if j == 0:
                raise ValueError("question[0]: the conversation starts with an assistant call")
            yield messages[:j], m.tool_calls[0]
    yield messages, answer


def _key(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False)


def _prefix_keys(messages: list[ChatMessage]) -> list[str]:
    """The key of every history ``messages[:j]`` (index ``j``), each message serialized once: a running
    digest, so keying a conversation's points is linear in its length."""
    import hashlib

    running, keys = hashlib.sha256(), []
    keys.append(running.hexdigest())
    for m in messages:
        running.update(_key(m.model_dump(mode="json")).encode() + b"\0")
        keys.append(running.hexdigest())
    return keys


def import_shellper(
    src: str | Path, out: str | Path, *, name: str | None = None, bundle: str = "shellper",
    skip_invalid: bool = False,
) -> ImportReport:
    """Convert a distil-SHELLper JSONL file into a next-call suite in ``out``."""
    src, out = Path(src), Path(out)
    check_new_suite(out)
    report = ImportReport(out_dir=out, source=str(src))
    stem = slug(src.stem)
    points: dict[str, NextCallCase] = {}  # history key -> point
    exact: set[str] = set()
    problems: list[str] = []
    conversations = 0
    for lineno, raw in read_lines(src):
        report.records += 1
        where = f"{src}:{lineno}"
        try:
            if isinstance(raw, Exception):
                raise raw
            if not isinstance(raw, dict):
                raise ValueError("expected a JSON object")
            messages = _shellper_messages(_json_field(raw, "question"))
            answer = _call(_json_field(raw, "answer"), "answer")
            pairs = list(shellper_points(messages, answer))
        except ValueError as exc:
            problems.append(f"{where}: {exc}")
            continue
        conversations += 1
        prefixes = _prefix_keys(messages)
        for k, (history, call) in enumerate(pairs):
            hkey = prefixes[len(history)]
            ckey = _key(call.model_dump(mode="json"))
            if hkey + ckey in exact:
                report.duplicates += 1
                continue
            exact.add(hkey + ckey)
            if hkey in points:
                first = points[hkey]
                points[hkey] = first.model_copy(update={"expected_alternatives": [*first.expected_alternatives, call]})
                report.conflicts += 1
                continue
            points[hkey] = NextCallCase.model_validate({
                "id": f"{stem}-{lineno:04d}-{k}",
                "conversation": f"{stem}-{lineno:04d}",
                "messages": [m.model_dump(mode="json") for m in history],
                "initial_fs": EMPTY_WORKSPACE,
                "expected": call.model_dump(mode="json"),
                "state_check": False,
            })
    if problems and not skip_invalid:
        raise ImportFailure(problems)
    report.errors = problems
    cases: list[Case] = list(points.values())
    if not cases:
        raise ImportFailure([*problems, f"{src}: no scoring points found"])
    report.cases, report.conversations = len(cases), conversations
    spec = SuiteSpec(
        name=suite_name(out, name), version="1", kind="next_call", bundle=bundle,
        description=(f"Imported from {src.name}: {conversations} conversations expanded to {len(cases)} "
                     "next-call points. No file system in the source: state_check is off."),
        source=f"distil-SHELLper format file {src.name}", licence="as the source file's",
        echo_mode="append",  # SHELLper runs its calls as bash: `echo "..." >> file`
    )
    write_suite(out, spec, cases)
    return report


__all__ = ["MAX_CONVERSATION_MESSAGES", "import_shellper", "shellper_points"]
