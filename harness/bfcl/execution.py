"""BFCL's ``execute_multi_turn_func_call`` without ``eval``: the executor of the worker's ``bfcl`` mode
(``MODE``, the ``execution`` seam of ``harness.benchmarks``), and the one BFCL's ``multi_turn_checker``
calls in the worker process (``install`` sets it there).

BFCL's own executor prefixes each method name in a call string with its instance's name and hands the
string to ``eval``: a suite's ground-truth string, or a model's argument key spliced into a call, would
run as Python in the worker. This one keeps all of BFCL's executor but the ``eval`` (the instances set
up and kept in BFCL's module globals under BFCL's names, the later class winning a method name two
share, BFCL's name rewriting, its deny-list, its result formatting, its ``Error during execution: ...``
texts), and reads the rewritten string with ``ast`` instead: it must be one call of a public method of
one of the instances, with arguments ``ast.literal_eval`` accepts (``method(literal, key=literal)``:
BFCL's ground truth passes some positionally), and that method is called with those values. Anything
else is that call's error result, as a call BFCL's ``eval`` fails on is: a syntax error worded as
``eval`` words it, a name no instance has as ``eval``'s NameError, any other shape as a refusal.
"""

from __future__ import annotations

import ast
import copy
import importlib
import inspect
import itertools
import json
import re
from collections.abc import Mapping
from typing import Any

from harness.benchmarks import ExecutionMode

BFCL_UTILS = "bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils"
BFCL_CHECKER = "bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker"
BFCL_BACKEND = "bfcl_eval.constants.executable_backend_config"
DENIED = ("kill", "exit", "quit", "remove", "unlink", "popen", "Popen", "run")
"""BFCL's deny-list of function names, checked as BFCL checks it (before the call is read)."""


class CallRefused(ValueError):
    """A call string that is not ``method(literal, key=literal, ...)`` of an instance's method."""


def install() -> tuple[Any, Any]:
    """BFCL's executor and checker modules, both made to execute through this module's function. In the
    worker process only: the harness's own process keeps BFCL's code as it is (tests compare with it)."""
    utils: Any = importlib.import_module(BFCL_UTILS)
    checker: Any = importlib.import_module(BFCL_CHECKER)
    utils.execute_multi_turn_func_call = checker.execute_multi_turn_func_call = execute_multi_turn_func_call
    return utils, checker


def bfcl_classes() -> frozenset[str]:
    """The class names BFCL's executor can instantiate (its ``CLASS_FILE_PATH_MAPPING``)."""
    return frozenset(importlib.import_module(BFCL_BACKEND).CLASS_FILE_PATH_MAPPING)


def execute_multi_turn_func_call(
    func_call_list: list[str],
    initial_config: dict[str, Any],
    involved_classes: list[str],
    model_name: str,
    test_entry_id: str,
    long_context: bool = False,
    is_evaL_run: bool = False,  # BFCL's spelling: its checker passes it by keyword
) -> tuple[list[str], dict[str, Any]]:
    """BFCL's function of the same name and signature, calls read with ``ast`` (see the module doc)."""
    utils, backend = importlib.import_module(BFCL_UTILS), importlib.import_module(BFCL_BACKEND)
    store = vars(utils)  # BFCL's module globals, where BFCL keeps its instances between turns
    if is_evaL_run:
        model_name += "_eval"
    owners: dict[str, str] = {}
    instances: dict[str, Any] = {}
    for class_name in involved_classes:
        instance_name = re.sub(r"[-./:]", "_", f"{model_name}_{test_entry_id}_{class_name}_instance")
        if instance_name not in store:
            instance = getattr(importlib.import_module(backend.CLASS_FILE_PATH_MAPPING[class_name]), class_name)()
            if class_name not in backend.STATELESS_CLASSES:
                instance._load_scenario(copy.deepcopy(initial_config.get(class_name, {})), long_context=long_context)
            store[instance_name] = instance
        instances[class_name] = store[instance_name]
        for method_name, _ in inspect.getmembers(store[instance_name], predicate=inspect.ismethod):
            if not method_name.startswith("_"):
                owners[method_name] = instance_name
    results = []
    for func_call in func_call_list:
        func_call = utils._process_method_calls(func_call, owners)
        try:
            name = func_call.split("(")[0] if "(" in func_call else func_call
            name = name.split(".")[1] if "." in name else name
            if name in DENIED:
                raise Exception(f"Function call {name} is not allowed.")
            results.append(_as_text(_call(func_call, owners, store)))
        except Exception as exc:
            results.append(f"Error during execution: {exc}")
    return results, instances


def _call(text: str, owners: dict[str, str], store: dict[str, Any]) -> Any:
    """Run one rewritten call string (``instance.method(...)``) without evaluating it."""
    tree = ast.parse(text.lstrip(" \t"), "<string>", "eval")  # eval strips the same; same SyntaxError
    compile(tree, "<string>", "eval")  # the errors eval's compiler raises on a parsed tree (a repeated key)
    node = tree.body
    func = node.func if isinstance(node, ast.Call) else node
    if isinstance(func, ast.Name):  # not rewritten: no instance has that method, BFCL's eval finds no such name
        raise NameError(f"name {func.id!r} is not defined")
    if not isinstance(node, ast.Call):
        raise CallRefused("not a call of a function with literal arguments")
    if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and owners.get(func.attr) == func.value.id):
        raise CallRefused(f"not a call of a function: {ast.unparse(func)[:80]}")
    args = [_literal(a) for a in node.args]
    kwargs: dict[str, Any] = {}
    for keyword in node.keywords:
        if keyword.arg is None:
            raise CallRefused("**arguments are not literal arguments")
        kwargs[keyword.arg] = _literal(keyword.value)
    return getattr(store[func.value.id], func.attr)(*args, **kwargs)


def _literal(node: ast.expr) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise CallRefused(f"not a literal argument: {ast.unparse(node)[:80]}") from None


def _as_text(result: Any) -> str:
    """A call's result as BFCL's executor writes it: a string as it is, a dict as JSON where it can."""
    if type(result) is str:
        return result
    if type(result) is dict:
        try:
            return json.dumps(result)
        except Exception:
            return str(result)
    return str(result)


class BfclMode:
    """The worker's ``execution: bfcl`` mode (``harness.benchmarks.ExecutionMode``): calls run as BFCL's
    own ``execute_multi_turn_func_call`` runs them (results and error texts as BFCL makes them), read
    with ``ast``; sessions loaded the way BFCL loads them; ``check`` is BFCL's ``multi_turn_checker``."""

    def __init__(self) -> None:
        self._checks = itertools.count(1)

    def problems(self, classes: Mapping[str, str]) -> list[str]:
        try:
            install()
            known = bfcl_classes()
        except ImportError as exc:
            return [f"BFCL's package: {exc}"]
        return [f"{name} ({target}): execution: bfcl runs BFCL's own classes (its executable backend's "
                f"table names {', '.join(sorted(known))}), not {name}"
                for name, target in classes.items() if name not in known]

    def _execute(self, session: dict[str, Any], calls: list[str]) -> tuple[list[str], dict[str, Any]]:
        return execute_multi_turn_func_call(calls, session["config"], session["names"], session["tag"], session["entry"],
                                            long_context=session["long_context"])

    def open(self, session: dict[str, Any]) -> dict[str, Any]:
        return self._execute(session, [])[1]

    def call(self, session: dict[str, Any], text: str) -> Any:
        return self._execute(session, [text])[0][0]

    def close(self, session: dict[str, Any]) -> None:
        _forget(importlib.import_module(BFCL_UTILS), session["tag"])

    def check(self, request: dict[str, Any]) -> dict[str, Any]:
        utils, checker = install()
        tag = f"harness_check_{next(self._checks)}"
        entry, model, truth = request["entry"], request["model"], request["truth"]
        try:  # BFCL's runner calls multi_turn_checker alone (it imports its irrelevance checker, unused)
            result = checker.multi_turn_checker(model, truth, entry, entry["id"].rsplit("_", 1)[0], tag)
        finally:
            _forget(utils, tag)
        return {"valid": bool(result.get("valid")), "error_type": result.get("error_type"),
                "error_message": result.get("error_message")}


def _forget(utils: Any, tag: str) -> None:
    """Drop the instances BFCL's executor keeps in its module globals under ``tag`` (it keys them by a
    model name, which the harness makes unique per session and per check)."""
    for key in [k for k in vars(utils) if k.startswith(f"{tag}_") and k.endswith("_instance")]:
        del vars(utils)[key]


MODE: ExecutionMode = BfclMode()
"""The mode the worker loads for ``execution: bfcl`` (one per worker process: the checks' counter)."""


__all__ = ["BFCL_CHECKER", "BFCL_UTILS", "MODE", "BfclMode", "CallRefused", "execute_multi_turn_func_call", "install"]
