"""A grammar build under a time and memory bound: a big grammar is compiled first in a child process.

xgrammar compiles in C++ and cannot be interrupted or bounded from inside the process: a tool with a
100,000-value enum compiled for minutes, and an allocation that fails in one of xgrammar's compiler
threads (``std::bad_alloc``) aborts the whole process (SIGABRT: a run with no scores). So a grammar
whose text is longer than ``BuildBound.in_process_bytes`` is compiled first in a child process under
``RLIMIT_AS`` (``memory_bytes``, set by the child before it imports xgrammar) and a wall clock
(``timeout_s``; the child and its threads are killed past it). What the child finds is the verdict:

- it compiles: the caller compiles it too, or reads it from the on-disk store, where the child kept it
  (``harness.grammar.store``; a kept grammar never reaches the child again);
- xgrammar refuses it, the child runs out of memory or past its clock, or dies: ``ConstraintError``
  naming the bound, which a run counts as ``constraint:refused`` for that grammar and fuzz as a build
  error of its cell.

Every grammar the harness ships, and an imported corpus's tool sets, are a few KiB to tens of KiB and
compile in process in milliseconds: the child (an interpreter, xgrammar and a tokenizer: 3-12 s to
start) is paid only by grammars past 256 KiB, which take seconds to compile anyway. Verdicts are
remembered by digest for the process, so a refused grammar is refused once.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
from collections import OrderedDict
from dataclasses import dataclass

from harness.agents import ConstraintArtifact, ConstraintError

MIB = 1024 * 1024
ANSWER = "HARNESS-BUILD "
"""Marks the child's verdict line on its stdout (anything else it prints is ignored)."""


@dataclass(frozen=True, slots=True)
class BuildBound:
    """The bound of one grammar build."""

    timeout_s: float = 120.0
    """Longest a child may compile (a run sets its ``--sample-timeout`` when shorter; fuzz its
    ``--cell-timeout``)."""
    memory_bytes: int = 4096 * MIB
    """The child's address space (``RLIMIT_AS``): its interpreter, xgrammar and a tokenizer map about
    1 GiB, the rest is the grammar's."""
    in_process_bytes: int = 256 * 1024
    """A grammar this long or shorter compiles in the caller's process with no child (as
    ``harness serve`` bounds a request's constraint by default: ``max_constraint_bytes``)."""

    def describe(self) -> str:
        return f"timeout {self.timeout_s:g} s, memory {self.memory_bytes // MIB} MiB"


_LOCK = threading.Lock()
_BOUND = BuildBound()
_VERDICTS: OrderedDict[bytes, str | None] = OrderedDict()
VERDICTS_KEPT = 256


def build_bound() -> BuildBound:
    """The process's bound for engines' builds (``compile_artifact(keep=True)``)."""
    return _BOUND


def set_build_bound(bound: BuildBound) -> None:
    """Set the process's bound (a run sets it from its limits)."""
    global _BOUND
    with _LOCK:
        _BOUND = bound


def needs_child(artifact: ConstraintArtifact, bound: BuildBound) -> bool:
    return len(artifact.value) > bound.in_process_bytes


def check_build(artifact: ConstraintArtifact, family: str, bound: BuildBound, *, keep: bool) -> None:
    """Compile ``artifact`` in a child under ``bound`` (``keep``: the child keeps it in the store);
    ConstraintError when it does not compile within the bound. No child for a short grammar."""
    if not needs_child(artifact, bound):
        return
    text = f"{family}\0{artifact.kind}\0{bound}\0{artifact.value}"
    key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
    with _LOCK:
        known = key in _VERDICTS
        verdict = _VERDICTS.get(key)
    if not known:
        verdict = _in_child(artifact, family, bound, keep)
        with _LOCK:
            _VERDICTS[key] = verdict
            while len(_VERDICTS) > VERDICTS_KEPT:
                _VERDICTS.popitem(last=False)
    if verdict is not None:
        raise ConstraintError(verdict)


def _in_child(artifact: ConstraintArtifact, family: str, bound: BuildBound, keep: bool) -> str | None:
    """None when the child compiled it; else why not (naming the bound)."""
    size = f"a {artifact.kind} artifact of {len(artifact.value)} bytes"
    request = json.dumps({"family": family, "kind": artifact.kind, "value": artifact.value, "keep": keep})
    child = subprocess.Popen(
        [sys.executable, "-m", "harness.grammar.bounded.child", str(bound.memory_bytes)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        start_new_session=True,  # its own group: killed with every thread it started
    )
    try:
        out, _ = child.communicate(request.encode("utf-8", "surrogatepass"), timeout=bound.timeout_s)
    except subprocess.TimeoutExpired:
        _kill(child)
        return f"{size} did not compile within {bound.timeout_s:g} s (the grammar build's bound: {bound.describe()})"
    except BaseException:  # Ctrl-C or a cancelled sample: the child never outlives the wait
        _kill(child)
        raise
    lines = [line for line in out.decode("utf-8", "replace").splitlines() if line.startswith(ANSWER)]
    said = lines[-1].removeprefix(ANSWER) if lines else None
    if said == "ok":
        return None
    if said is not None:
        return said
    if child.returncode < 0:
        name = signal.Signals(-child.returncode).name
        return (f"{size}: the grammar build died ({name}: out of memory under the bound? {bound.describe()})")
    return f"{size}: the grammar build failed (exit {child.returncode}; the bound: {bound.describe()})"


def _kill(child: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    child.wait()


__all__ = ["BuildBound", "build_bound", "check_build", "set_build_bound"]
