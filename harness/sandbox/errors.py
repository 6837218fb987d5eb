"""The ways a sandboxed ``.pym`` tool can fail: the seven kinds of a script, and one of the sandbox.

Every failure the sandbox reports is one of these, each with a message that names the line of the
``.pym`` file or the input concerned. ``kind`` is the class name (what ``ScriptErrorEvent.kind``
carries) and ``error_kind`` the ``checker:reason`` string a ``ToolResult`` carries.
"""

from __future__ import annotations

from harness.vocabulary import ErrorKind

MESSAGE_CHARS = 2000
"""Longest error message kept, in characters: a script's exception may carry megabytes (an 8 MB message
was printed whole, at 107 MB of memory); beyond, the message is cut and says how much was cut."""


def cut_message(message: str, limit: int = MESSAGE_CHARS) -> str:
    """``message``, cut to ``limit`` characters with a note of how many more there were."""
    if len(message) <= limit:
        return message
    return f"{message[:limit]}... [{len(message) - limit} more characters cut]"


class SandboxError(Exception):
    """Base class: a ``.pym`` script failed to load or to run. Its message is cut to ``MESSAGE_CHARS``."""

    error_kind = ErrorKind.tool_script_error

    def __init__(self, message: str, *, script: str | None = None, line: int | None = None) -> None:
        message = cut_message(message)
        super().__init__(message)
        self.message = message
        self.script = script
        self.line = line

    @property
    def kind(self) -> str:
        """The error kind's name: ``ParseError``, ``LimitError``, ..."""
        return type(self).__name__

    def __str__(self) -> str:
        return self.message


class ParseError(SandboxError):
    """The ``.pym`` file is not valid Python, or uses syntax the sandbox does not support."""

    error_kind = ErrorKind.tool_load_error


class CheckError(SandboxError):
    """A malformed ``Input()``/``@external`` declaration, or the type checker rejected the script."""

    error_kind = ErrorKind.tool_load_error


class ScriptInputError(SandboxError):
    """An input is missing, unknown or of the wrong type.

    ``from_model`` tells whether the input is one the model supplies (its arguments: the kind is then
    ``tool:bad_arguments``) or one the host supplies (a hidden input: a set-up error of the harness).
    """

    def __init__(
        self,
        message: str,
        *,
        input_name: str | None = None,
        from_model: bool = True,
        script: str | None = None,
    ) -> None:
        super().__init__(message, script=script)
        self.input_name = input_name
        self.from_model = from_model
        self.error_kind = ErrorKind.tool_bad_arguments if from_model else ErrorKind.tool_script_error


class ExternalError(SandboxError):
    """A declared ``@external`` has no implementation, an undeclared one was supplied, or one raised."""

    def __init__(
        self,
        message: str,
        *,
        function_name: str | None = None,
        script: str | None = None,
        line: int | None = None,
    ) -> None:
        super().__init__(message, script=script, line=line)
        self.function_name = function_name


class ExecutionError(SandboxError):
    """The script raised (TypeError, KeyError, ...) while running."""

    def __init__(
        self, message: str, *, exc_type: str | None = None, script: str | None = None, line: int | None = None
    ) -> None:
        super().__init__(message, script=script, line=line)
        self.exc_type = exc_type


class LimitError(SandboxError):
    """A resource limit was breached: ``limit`` names it.

    The sandbox's own: ``memory`` (also what an external hands back, and a worker killed for its
    memory), ``duration``, ``recursion``, ``suspensions``, ``sleep``. The host's: ``wall_clock``,
    ``print``, ``output_depth``, ``mutations``, and the file-system tree's ``tree_depth``,
    ``tree_entries``, ``tree_bytes``.
    """

    error_kind = ErrorKind.tool_limit

    def __init__(
        self, message: str, *, limit: str, script: str | None = None, line: int | None = None
    ) -> None:
        super().__init__(message, script=script, line=line)
        self.limit = limit


class OutputError(SandboxError):
    """The script's value failed the output model, is not JSON, or carries malformed mutations."""

    error_kind = ErrorKind.tool_bad_output


class UnavailableError(SandboxError):
    """The call never started: no sandbox worker was free within its ``max_wait`` (every one busy, or
    stuck in externals past their wall clock). Not a limit of the call's own: it did not run."""

    error_kind = ErrorKind.tool_unavailable


ERROR_KINDS: tuple[type[SandboxError], ...] = (
    ParseError,
    CheckError,
    ScriptInputError,
    ExternalError,
    ExecutionError,
    LimitError,
    OutputError,
    UnavailableError,
)
"""Every kind, in the order a call can meet them (the seven of a script, then the sandbox's own)."""
