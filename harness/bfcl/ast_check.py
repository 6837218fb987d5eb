"""BFCL's single-turn verdict on an answer, by BFCL's own checker, in-process.

BFCL scores a model that takes tools in the request (its "FC" models) like this: the answer's tool
calls become ``[{name: arguments}, ...]``; an answer without calls (plain text) fails to decode. Then

- the AST categories (``simple_python``, ``multiple``, ``parallel``, ``parallel_multiple`` and their
  ``live_`` forms): an answer that does not decode fails as ``ast_decoder:decoder_failed``; else
  ``ast_checker`` (``bfcl_eval/eval_checker/ast_eval/ast_checker.py``) judges the calls against the
  function docs and the possible answers, and names its failure (``simple_function_checker:missing_required``,
  ``value_error:string``, ``parallel_function_checker_no_order:cannot_find_match``, ...);
- the irrelevance categories: right when no call decodes (``irrelevance_error:decoder_success`` else).

``bfcl_verdict`` gives that verdict; its error type is recorded as ``bfcl:<BFCL's type>``. The checker
is BFCL's own function: ``ast_checker.py`` is executed from the installed package's source
(``harness.bfcl.data.load_bfcl_module``) with one import replaced: ``bfcl_eval.constants.model_config``, which
imports every model handler and its SDK, and from which the checker reads one flag of the model it
scores, ``underscore_to_dot`` (the model was sent names with ``.`` replaced by ``_``: the checker maps
the expected name the same way). The harness sends names that way, so its stand-in model config says
``underscore_to_dot: True``. Everything else (the Java and JavaScript type converters, the type
tables, the language enum) is imported as BFCL imports it: the standard library only.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from harness.vocabulary import bfcl_error_kind

CHECKER_MODULE = "bfcl_eval.eval_checker.ast_eval.ast_checker"
MODEL_CONFIG_MODULE = "bfcl_eval.constants.model_config"
MODEL_NAME = "harness"
"""The model name the checker is given (its config says: names were sent with ``_`` for ``.``)."""
DECODER_FAILED = "ast_decoder:decoder_failed"
IRRELEVANCE_FAILED = "irrelevance_error:decoder_success"
CHECKER_RAISED = "checker_raised"
"""Not BFCL's: its checker raised on this answer (BFCL's evaluation would stop there)."""


class Call(Protocol):
    """A tool call: a sample's ``CallRecord`` or a suite's ``CallSpec``."""

    @property
    def name(self) -> str: ...

    @property
    def arguments(self) -> dict[str, Any]: ...


@dataclass(frozen=True, slots=True)
class ModelConfig:
    """The one field of BFCL's ``ModelConfig`` its AST checker reads."""

    underscore_to_dot: bool = True


@dataclass(frozen=True, slots=True)
class BfclVerdict:
    """BFCL's verdict on one answer."""

    valid: bool
    error_type: str | None = None
    """BFCL's own name of the failure (None when valid)."""
    errors: tuple[str, ...] = ()
    """BFCL's messages, as text."""

    @property
    def error_kind(self) -> str | None:
        """``bfcl:<BFCL's type>``, the harness's error kind."""
        return None if self.error_type is None else bfcl_error_kind(self.error_type)


def is_irrelevance(category: str) -> bool:
    """BFCL's test: the right answer is no call (``irrelevance``, ``live_irrelevance``)."""
    return "irrelevance" in category


@functools.cache
def ast_checker() -> Callable[..., dict[str, Any]]:
    """BFCL's ``ast_checker``, loaded once (see the module doc); BfclDataError when not installed."""
    from harness.bfcl.data import load_bfcl_module

    module = load_bfcl_module(
        CHECKER_MODULE, {MODEL_CONFIG_MODULE: {"MODEL_CONFIG_MAPPING": {MODEL_NAME: ModelConfig()}}}
    )
    return module.ast_checker  # type: ignore[no-any-return]


@functools.cache
def _python() -> Any:
    from bfcl_eval.constants.enums import Language

    return Language.PYTHON


def _messages(errors: Any) -> tuple[str, ...]:
    return tuple(str(e) for e in errors) if isinstance(errors, list) else (str(errors),)


def bfcl_verdict(
    category: str,
    functions: Sequence[Mapping[str, Any]],
    possible_answer: Sequence[Mapping[str, Any]],
    calls: Sequence[Call] | None,
) -> BfclVerdict:
    """BFCL's verdict on an answer whose calls are ``calls`` (None or empty: nothing decoded, a plain
    answer or a broken call), for an entry of ``category`` with BFCL's ``functions`` docs and
    ``possible_answer`` (its ``ground_truth``)."""
    if is_irrelevance(category):
        if calls:
            return BfclVerdict(False, IRRELEVANCE_FAILED, ("Valid syntax. Successfully decode AST when it should not.",))
        return BfclVerdict(True)
    if not calls:
        return BfclVerdict(False, DECODER_FAILED, ("Invalid syntax. Failed to decode AST.",))
    output = [{c.name: copy.deepcopy(dict(c.arguments))} for c in calls]
    try:
        result = ast_checker()(
            copy.deepcopy(list(functions)), output, copy.deepcopy(list(possible_answer)), _python(), category, MODEL_NAME,
        )
    except Exception as exc:  # BFCL's own run would stop here; the harness counts it
        return BfclVerdict(False, CHECKER_RAISED, (f"{type(exc).__name__}: {exc}",))
    if result.get("valid"):
        return BfclVerdict(True)
    return BfclVerdict(False, str(result.get("error_type") or "unclear"), _messages(result.get("error", [])))


__all__ = [
    "CHECKER_RAISED",
    "DECODER_FAILED",
    "IRRELEVANCE_FAILED",
    "MODEL_NAME",
    "BfclVerdict",
    "ModelConfig",
    "ast_checker",
    "bfcl_verdict",
    "is_irrelevance",
]
