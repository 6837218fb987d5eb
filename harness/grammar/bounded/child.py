"""The child process of a bounded grammar build (``harness.grammar.bounded``): it bounds its own address
space before it imports xgrammar, compiles the artifact it reads on stdin (keeping it in the on-disk
store when asked) and prints its verdict on one line: ``HARNESS-BUILD ok`` or why not."""

from __future__ import annotations

import json
import sys

from harness.agents import ConstraintArtifact, ConstraintError
from harness.grammar.bounded import ANSWER, MIB


def _child(memory_bytes: int) -> None:
    """The child: bound its address space, compile the artifact read from stdin, say the verdict."""
    import resource

    if memory_bytes > 0:
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    request = json.loads(sys.stdin.buffer.read().decode("utf-8", "surrogatepass"))
    from harness.grammar.compile import compile_artifact

    artifact = ConstraintArtifact(request["kind"], request["value"])
    size = f"a {artifact.kind} artifact of {len(artifact.value)} bytes"
    try:
        compile_artifact(artifact, request["family"], keep=bool(request["keep"]), bound=None)
        verdict = "ok"
    except ConstraintError as exc:
        verdict = str(exc)
    except MemoryError:
        verdict = f"{size}: the grammar build ran out of memory (the bound: {memory_bytes // MIB} MiB)"
    except Exception as exc:  # xgrammar's own failures have no common type
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if "bad_alloc" in text:
            verdict = f"{size}: the grammar build ran out of memory (the bound: {memory_bytes // MIB} MiB)"
        else:
            verdict = f"xgrammar cannot compile the {artifact.kind} artifact: {text}"
    print(ANSWER + " ".join(verdict.split()), flush=True)


if __name__ == "__main__":
    _child(int(sys.argv[1]))
