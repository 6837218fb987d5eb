"""BFCL's own single-turn code and data, as BFCL runs them (helpers for the tests that compare the
harness against BFCL; no tests).

BFCL's functions are executed from the installed package's source (``harness.bfcl.data.load_bfcl_module``): the entry evaluations
``_evaluate_single_ast_entry`` and ``_evaluate_single_relevance_entry`` out of
``eval_checker/eval_runner.py`` (what BFCL's evaluation does per entry: decode, check the format, then
``ast_checker``, or the relevance rule); and the decoding of a model that takes tools in the request,
``OpenAICompletionsHandler.decode_ast`` (its FC branch). Only the names those modules import for
other purposes (SDKs, tree-sitter, folders created on import) are given here instead.

Importing this module needs ``bfcl_eval``: a test module skips first when it is missing.
"""

from __future__ import annotations

import copy
import functools
import json
from pathlib import Path
from typing import Any

from bfcl_eval.constants.enums import Language, ReturnFormat

from harness.bfcl.ast_check import MODEL_NAME, ast_checker
from harness.bfcl.data import data_dir, load_bfcl_module

SKIP_REASON = "BFCL's reference package is not installed: pip install --no-deps bfcl-eval==2026.3.23"


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@functools.cache
def entries(category: str) -> tuple[dict[str, Any], ...]:
    """The category's entries, as in the package."""
    return tuple(lines(data_dir() / f"BFCL_v4_{category}.json"))


@functools.cache
def answers(category: str) -> dict[str, Any]:
    """id -> ``ground_truth`` (empty for the irrelevance categories, which have no answer file)."""
    path = data_dir() / "possible_answer" / f"BFCL_v4_{category}.json"
    return {a["id"]: a["ground_truth"] for a in lines(path)} if path.is_file() else {}


@functools.cache
def _fc_handler() -> Any:
    """An ``OpenAICompletionsHandler`` of a model that takes tools in the request (BFCL's class, made
    without its ``__init__``, which builds an OpenAI client)."""
    module = load_bfcl_module(
        "bfcl_eval.model_handler.api_inference.openai_completion", only={"OpenAICompletionsHandler"},
        provide={"json": json, "BaseHandler": object, "retry_with_backoff": lambda **_: (lambda f: f),
                 "RateLimitError": Exception},
    )
    handler = object.__new__(module.OpenAICompletionsHandler)
    handler.is_fc_model = True
    return handler


@functools.cache
def _runner() -> Any:
    utils = load_bfcl_module(
        "bfcl_eval.utils", only={"is_function_calling_format_output", "is_empty_output"}, provide={},
    )
    return load_bfcl_module(
        "bfcl_eval.eval_checker.eval_runner", only={"_evaluate_single_ast_entry", "_evaluate_single_relevance_entry"},
        provide={"ast_checker": ast_checker(), "Language": Language, "ReturnFormat": ReturnFormat,
                 "is_function_calling_format_output": utils.is_function_calling_format_output,
                 "is_empty_output": utils.is_empty_output},
    )


def fc_result(calls: list[tuple[str, dict[str, Any]]] | str) -> list[dict[str, str]] | str:
    """What BFCL's FC handler records for an answer: ``[{name: arguments as JSON}]``, or the text of
    an answer without calls."""
    if isinstance(calls, str):
        return calls
    return [{name: json.dumps(arguments)} for name, arguments in calls]


def bfcl_entry_verdict(entry: dict[str, Any], result: list[dict[str, str]] | str) -> tuple[bool, str | None]:
    """(valid, BFCL's error type) of BFCL's own evaluation of one entry's model result."""
    category = entry["id"].rsplit("_", 1)[0]
    runner = _runner()
    if "irrelevance" in category:
        out = runner._evaluate_single_relevance_entry(_fc_handler(), entry["id"], result, entry, MODEL_NAME, category)
    else:
        out = runner._evaluate_single_ast_entry(
            _fc_handler(), entry["id"], copy.deepcopy(result), answers(category)[entry["id"]], entry, MODEL_NAME,
            category, Language.PYTHON, ReturnFormat.PYTHON,
        )
    return bool(out["valid"]), out.get("error_type")
