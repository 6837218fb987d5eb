"""Type-checking a ``.pym`` script once, when it is loaded: pydantic-monty's checker, no code run.

The code is fed with a sentinel name on its first line: the checker runs before any code, and the
sentinel's lookup suspends the feed before the first statement would run. A module the checker does
not know (``subprocess``, ``socket``) makes it ask the host for stubs first; the host has none to give,
and the checker then reports the import as unresolved, at the import's line.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Protocol

import pydantic_monty as pm

from harness.sandbox.errors import CheckError, ParseError
from harness.sandbox.runtime.pool import get_pool


class CheckedSource(Protocol):
    """What the checker reads of a script (a ``Script`` is one): no import of the script module, which
    imports this one when it loads a script."""

    @property
    def code(self) -> str: ...
    @property
    def stubs(self) -> str: ...
    @property
    def filename(self) -> str: ...


CHECK_SENTINEL = "PYM_CHECK_ONLY"
"""A name prepended on its own line when type-checking: its lookup suspends the feed before any code runs."""

_STUB_REQUEST = "import_stubs"
"""The OS call with which the checker asks the host for the stubs of a module it does not know."""


def _check_cache_dir() -> Path:
    import platformdirs

    return Path(platformdirs.user_cache_dir("harness")) / "pym-check"


def type_check_script(script: CheckedSource) -> None:
    """Type-check ``script`` once (pydantic-monty's checker with the script's stubs); no code runs.

    A passing check is remembered on disk, keyed by the code, the stubs and the pydantic-monty version.
    Raises CheckError (type errors and unknown modules, with the ``.pym`` lines) or ParseError (syntax
    Monty rejects).
    """
    stubs = script.stubs + f"{CHECK_SENTINEL}: Any\n"
    key = hashlib.sha256(f"{pm.__version__}\0{script.code}\0{stubs}".encode()).hexdigest()
    marker = _check_cache_dir() / key
    if marker.exists():
        return
    fname = script.filename
    code = f"{CHECK_SENTINEL}\n{script.code}"
    with get_pool().monty.checkout(
        script_name=fname, type_check=True, type_check_stubs=stubs, type_check_format="concise"
    ) as session:
        try:
            snapshot = session.feed_start(code)
            while (
                isinstance(snapshot, pm.FunctionSnapshot)
                and snapshot.is_os_function
                and snapshot.function_name == _STUB_REQUEST
            ):
                snapshot = snapshot.resume_not_handled()  # no stubs: the checker reports the import
        except pm.MontyTypingError as e:
            text = _shift_lines(e.display(), fname)
            if "unresolved-import" in text:
                text += "\n(the sandbox has no such module: see the modules it provides in the tools' README)"
            raise CheckError(f"{fname}: type check failed:\n{text}", script=fname) from e
        except pm.MontySyntaxError as e:
            line = _frame_line(e, shift=1)
            raise ParseError(f"{fname} line {line}: {e.display('msg')}", script=fname, line=line) from e
        except pm.MontyRuntimeError as e:
            line = _frame_line(e, shift=1)
            cls = ParseError if isinstance(e.exception(), NotImplementedError) else CheckError
            raise cls(f"{fname} line {line}: {e.display('type-msg')}", script=fname, line=line) from e
    if not (isinstance(snapshot, pm.NameLookupSnapshot) and snapshot.variable_name == CHECK_SENTINEL):
        raise CheckError(
            f"{fname}: the type checker asked the host for something it cannot answer before the "
            f"script ran ({snapshot!r})",
            script=fname,
        )
    try:
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.touch()
    except OSError:
        pass


def _shift_lines(text: str, fname: str) -> str:
    """Diagnostics name ``fname:LINE:COL``; take back the sentinel line added in front of the code."""
    pattern = re.compile(rf"^({re.escape(fname)}):(\d+):", re.MULTILINE)
    return pattern.sub(lambda m: f"{m.group(1)}:{int(m.group(2)) - 1}:", text).rstrip()


def _frame_line(error: pm.MontySyntaxError | pm.MontyRuntimeError, shift: int = 0) -> int | None:
    frames = error.traceback()
    return frames[-1].line - shift if frames else None


__all__ = ["CHECK_SENTINEL", "CheckedSource", "type_check_script"]
