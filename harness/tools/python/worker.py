"""The worker process of Python-class tools: ``python -m harness.tools.python.worker MEMORY_BYTES LIFE_FD SEARCH_PATH...``.

Python tools are the user's own code, run with the user's privileges; this process keeps them out of
the harness's process, so that a tool that crashes, hangs, forks or eats memory costs one call, never
the run. The harness (``harness.tools.python.client``) starts it, bounds its address space here with
``RLIMIT_AS`` before any tool is imported, bounds each call's wall clock from outside (an overdue
worker is killed with its process group and started again) and reads one JSON line per request.

Nothing it or its tools start outlives the harness: the worker is a child subreaper (Linux), so what a
tool forks away (a double fork, a ``setsid`` daemon) stays its descendant and is killed at the end of
the call; a thread watches ``LIFE_FD``, a pipe whose write end only the harness holds, and when it ends
(the harness exited, ``kill -9`` included) kills every descendant and the worker; at the end of its
requests the worker exits without waiting for threads a tool left running.

Requests (one JSON object a line on stdin; one answer a line on the protocol pipe, which is the
original stdout: a tool's ``print`` goes to stderr instead):

- ``load``: import the classes (``module:Class``); ``execution``: ``python`` (the default) calls their
  methods, another name is a benchmark's own execution mode (``harness.benchmarks.ExecutionMode``, the
  table's ``execution`` seam), which opens sessions and runs each call from its source text.
- ``open`` / ``close``: a session (one sample's instances) with the case's classes and initial configs,
  each given to the instance's ``_load_scenario(config, long_context=...)``.
- ``call``: one method of a session's instances (the later class wins a name two classes share).
- ``snapshot``: each instance's public attributes.
- ``check``: a named execution mode's own verdict on the model's calls (whatever mode the calls ran in).
"""

from __future__ import annotations

import contextlib
import copy
import importlib
import inspect
import json
import os
import resource
import signal
import sys
import threading
import traceback
from typing import Any, BinaryIO, NoReturn

from harness.benchmarks import EXECUTION, ExecutionMode, seam


def _error(kind: str, message: str) -> dict[str, Any]:
    return {"error": kind, "message": message}


def _import(target: str) -> type:
    module_name, _, class_name = target.partition(":")
    module = importlib.import_module(module_name)
    found = getattr(module, class_name, None)
    if not isinstance(found, type):
        raise ImportError(f"{module_name} defines no class {class_name!r}")
    return found


def _public(instance: Any) -> dict[str, Any]:
    return {name: value for name, value in vars(instance).items() if not name.startswith("_")}


class Worker:
    """The state of the worker: the loaded classes and the open sessions."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.classes: dict[str, type] = {}
        self.mode: ExecutionMode | None = None
        self.max_output = 1 << 20
        self.sessions: dict[str, dict[str, Any]] = {}

    # -- requests --------------------------------------------------------------------------------
    def load(self, request: dict[str, Any]) -> dict[str, Any]:
        execution = str(request.get("execution") or "python")
        self.max_output = int(request.get("max_output") or self.max_output)
        problems = []
        for name, target in request["classes"].items():
            try:
                self.classes[name] = _import(target)
            except BaseException as exc:  # any import failure is the user's, reported by name
                problems.append(f"{name} ({target}): {type(exc).__name__}: {exc}")
        if execution != "python":
            try:
                self.mode = seam(execution, EXECUTION)
            except LookupError as exc:
                problems.append(f"execution: {exc}")
            else:
                problems += self.mode.problems(request["classes"])
        return _error("tool:load_error", "; ".join(problems)) if problems else {"ok": True}

    def describe(self, request: dict[str, Any]) -> dict[str, Any]:
        """Each loaded class's public methods as tool schemas, from signatures and docstrings."""
        from harness.tools.python.signatures import method_schemas

        return {"tools": {name: method_schemas(cls) for name, cls in self.classes.items()}}

    def open(self, request: dict[str, Any]) -> dict[str, Any]:
        names, config = request["classes"], request.get("config") or {}
        unknown = [n for n in names if n not in self.classes]
        if unknown:
            return _error("tool:unknown", f"no class {', '.join(unknown)} in the bundle")
        session: dict[str, Any] = {"names": names, "config": config, "long_context": bool(request.get("long_context")),
                                   "entry": request.get("entry", "case"), "tag": f"harness_{request['session']}"}
        if self.mode is not None:
            session["instances"] = self.mode.open(session)
        else:
            instances = {}
            for name in names:
                instance = self.classes[name]()
                loader = getattr(instance, "_load_scenario", None)
                if loader is not None:
                    loader(copy.deepcopy(config.get(name, {})), long_context=session["long_context"])
                elif config.get(name):
                    return _error("tool:load_error", f"{name} has an initial config but no _load_scenario method")
                instances[name] = instance
            session["instances"] = instances
        methods: dict[str, Any] = {}
        for instance in session["instances"].values():
            for method, bound in inspect.getmembers(instance, predicate=inspect.ismethod):
                if not method.startswith("_"):
                    methods[method] = bound
        session["methods"] = methods
        self.sessions[request["session"]] = session
        return {"ok": True}

    def close(self, request: dict[str, Any]) -> dict[str, Any]:
        session = self.sessions.pop(request["session"], None)
        if session is not None and self.mode is not None:
            self.mode.close(session)
        return {"ok": True}

    def call(self, request: dict[str, Any]) -> dict[str, Any]:
        session = self.sessions.get(request["session"])
        if session is None:
            return _error("tool:internal_error", "no such session")
        name, arguments = request["name"], request.get("arguments") or {}
        method = session["methods"].get(name)
        if method is None:
            return _error("tool:unknown", f"no tool {name!r} among the case's classes")
        if self.mode is not None:
            return self._output(self.mode.call(session, request["text"]))
        try:
            inspect.signature(method).bind(**arguments)
        except TypeError as exc:
            return _error("tool:bad_arguments", f"{name}: {exc}")
        try:
            result = method(**arguments)
        except MemoryError:
            raise  # the address-space limit: reported as tool:limit
        except Exception as exc:
            return _error("tool:exception", f"{name} raised {type(exc).__name__}: {exc}")
        return self._output(result)

    def _output(self, result: Any) -> dict[str, Any]:
        try:
            text = json.dumps(result, ensure_ascii=False)
        except (TypeError, ValueError) as exc:
            return _error("tool:bad_output", f"the result ({type(result).__name__}) is not JSON: {exc}")
        if len(text) > self.max_output:
            return _error("tool:limit", f"the result is {len(text)} bytes of JSON, over max_output ({self.max_output})")
        return {"output_json": text}

    def snapshot(self, request: dict[str, Any]) -> dict[str, Any]:
        session = self.sessions.get(request["session"])
        if session is None:
            return _error("tool:internal_error", "no such session")
        state = {name: _public(instance) for name, instance in session["instances"].items()}
        return {"state_json": json.dumps(state, ensure_ascii=False, sort_keys=True, default=repr)}

    def check(self, request: dict[str, Any]) -> dict[str, Any]:
        """The named execution mode's own checker (whichever mode the bundle's calls run in)."""
        try:
            mode: ExecutionMode = seam(str(request.get("execution")), EXECUTION)
        except LookupError as exc:
            return _error("tool:internal_error", f"execution: {exc}")
        return mode.check(request)


def _children() -> list[Any]:
    """The processes a tool started (forks included, and theirs), running or not yet reaped. Linux's
    /proc lists a process's children directly (psutil scans every process of the machine: ~20 ms a
    call on a busy one); psutil serves where /proc does not."""
    if not os.path.isdir(f"/proc/{os.getpid()}/task"):
        import psutil

        return list(psutil.Process().children(recursive=True))
    found: list[_Pid] = []
    parents = [os.getpid()]
    while parents:
        pid = parents.pop()
        try:
            tasks = list(os.scandir(f"/proc/{pid}/task"))
        except OSError:  # gone meanwhile
            continue
        for task in tasks:
            try:
                with open(f"{task.path}/children") as listed:
                    kids = [int(p) for p in listed.read().split()]
            except OSError:
                continue
            found += [_Pid(k) for k in kids]
            parents += kids
    return found


class _Pid:
    """A child process by id (``kill``, ``wait``), where psutil is missing."""

    def __init__(self, pid: int) -> None:
        self.pid = pid

    def kill(self) -> None:
        try:
            os.kill(self.pid, 9)
        except ProcessLookupError:
            pass

    def wait(self, timeout: float) -> None:
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:  # a grandchild: its own parent reaps it
            pass


def _handle(worker: Worker, request: dict[str, Any]) -> dict[str, Any]:
    op = request.get("op")
    handler = {"load": worker.load, "open": worker.open, "close": worker.close, "call": worker.call,
               "snapshot": worker.snapshot, "describe": worker.describe, "check": worker.check}.get(str(op))
    if handler is None:
        return _error("tool:internal_error", f"unknown request {op!r}")
    try:
        answer = handler(request)
    except MemoryError:
        answer = _error("tool:limit", "the worker ran out of memory (its address-space limit)")
        answer["worker_spent"] = True  # the call stopped part-way: the harness replaces this worker
    except Exception as exc:
        answer = _error("tool:exception", f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=-3)}")
    finally:
        if os.getpid() != worker.pid:  # a forked child of a tool never answers for the worker
            os._exit(0)
    children = _children()
    if children:
        for child in children:
            child.kill()
        for child in children:
            child.wait(timeout=5)
        return _error("tool:error", f"the tool started {len(children)} process(es); they were killed")
    return answer


def serve(requests: BinaryIO, answers: BinaryIO) -> None:
    worker = Worker()
    for line in requests:
        if not line.strip():
            continue
        request = json.loads(line)
        answer = {**_handle(worker, request), "id": request.get("id")}  # the client checks it answers its request
        answers.write(json.dumps(answer, ensure_ascii=False).encode() + b"\n")
        answers.flush()


PR_SET_CHILD_SUBREAPER = 36


def _adopt_orphans() -> None:
    """Linux: a tool's orphaned processes are reparented to this worker instead of init, so
    ``_children`` sees (and the end of the call kills) a double-forked or ``setsid`` daemon too."""
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def _end_all() -> NoReturn:
    """Kill every process the tools started, then this worker's group (itself included), at once."""
    for child in _children():
        child.kill()
    with contextlib.suppress(OSError):
        os.killpg(0, signal.SIGKILL)  # its own group: the client starts it in a session of its own
    os._exit(1)


def _die_with_harness(life_fd: int) -> None:
    """A thread that reads the life pipe until it ends (the harness is gone, however it died)."""

    def watch() -> None:
        while True:
            try:
                if not os.read(life_fd, 64):
                    break
            except InterruptedError:
                continue
            except OSError:
                break
        _end_all()

    threading.Thread(target=watch, name="harness-life", daemon=True).start()


def main(argv: list[str]) -> None:
    memory, life_fd = int(argv[0]), int(argv[1])
    sys.path[:0] = argv[2:]
    _adopt_orphans()
    if life_fd >= 0:
        _die_with_harness(life_fd)
    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # a tool's print goes to stderr, never into the protocol
    if memory > 0:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    serve(sys.stdin.buffer, answers)
    # stdin ended (the harness closed it): no tool's thread or process keeps this worker alive
    for child in _children():
        child.kill()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv[1:])
