"""Data in, mutations out: the DataProvider and ResultHandler protocols and the Workspace of one run.

A tool call reads the virtual files and hidden inputs the ``DataProvider`` gives, runs as a pure
function, and returns ``{"output": ..., "mutations": [...]}``; the ``ResultHandler`` then applies the
mutations on the host. The kernel passes one ``Workspace`` per run to every tool as
``ToolContext.workspace``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from harness.sandbox.gorilla.state import FileSystemState

EchoMode = Literal["overwrite", "append"]


@runtime_checkable
class DataProvider(Protocol):
    """What a script can read: virtual files, and values for its hidden inputs."""

    def load_files(self, tool_name: str, arguments: Mapping[str, Any]) -> Mapping[str, Any]:
        """Absolute virtual path -> file content (str/bytes) or directory (dict of name -> node)."""
        ...

    def host_inputs(self, tool_name: str) -> Mapping[str, Any]:
        """Values for hidden inputs (``Input(..., hidden=True)``); names a script does not declare are ignored."""
        ...


@runtime_checkable
class ResultHandler(Protocol):
    """Receives the mutations a call returned, after the call succeeded."""

    def handle(self, tool_name: str, mutations: Sequence[Mapping[str, Any]]) -> None:
        """Apply (or record) the mutations; raise ``ValueError`` when one cannot be applied."""
        ...


@dataclass
class StaticDataProvider:
    """Fixed virtual files and hidden-input values, the same for every call."""

    files: Mapping[str, Any] = field(default_factory=dict)
    inputs: Mapping[str, Any] = field(default_factory=dict)

    def load_files(self, tool_name: str, arguments: Mapping[str, Any]) -> Mapping[str, Any]:
        return self.files

    def host_inputs(self, tool_name: str) -> Mapping[str, Any]:
        return self.inputs


@dataclass
class RecordingResultHandler:
    """Keeps every ``(tool_name, mutations)`` in order; applies nothing."""

    records: list[tuple[str, list[dict[str, Any]]]] = field(default_factory=list)

    def handle(self, tool_name: str, mutations: Sequence[Mapping[str, Any]]) -> None:
        self.records.append((tool_name, [dict(m) for m in mutations]))


@dataclass
class FileSystemBridge:
    """A FileSystemState as both DataProvider and ResultHandler for the Gorilla file-system tools.

    Hidden inputs (a script gets those it declares): ``here``, the current directory's entries (name ->
    a file's content or a folder's dict, in listing order), and ``root``, the whole tree: the state in
    one input each, copied into the sandbox with the call (one round trip, ~0.03 ms for 20 files,
    instead of ~0.1-0.2 ms per virtual-file operation); ``cwd``, the current directory's virtual path
    (what mutations name); and ``echo_mode``: ``"overwrite"`` (GorillaFileSystem: ``echo`` replaces an existing
    file's content, a missing file is an error) or ``"append"`` (SHELLper's bash mapping ``echo "..."
    >> file``: creates the file if needed and appends the content and a newline). The tree is also
    served read-only as virtual files under ``/fs/<root name>``, for scripts that read files.
    """

    state: FileSystemState
    echo_mode: EchoMode = "overwrite"

    def load_files(self, tool_name: str, arguments: Mapping[str, Any]) -> Mapping[str, Any]:
        return self.state.virtual_files()

    def host_inputs(self, tool_name: str) -> Mapping[str, Any]:
        state = self.state
        return {"cwd": state.cwd_path, "echo_mode": self.echo_mode, "here": state.here, "root": state.tree}

    def handle(self, tool_name: str, mutations: Sequence[Mapping[str, Any]]) -> None:
        self.state.apply(mutations)


class Workspace:
    """The per-run state the sandboxed tools act on: a DataProvider and a ResultHandler.

    ``Workspace.filesystem(state)`` is the one for the Gorilla file-system tools; ``Workspace()`` with
    no arguments gives scripts no files and records mutations. ``environ`` is the whole environment a
    script can read (``os.getenv``); the host's is never visible.

    Calls on one workspace run one at a time, in the order they were made (``lock``): a call reads the
    state the previous call's mutations left, as the multi-turn benchmark executes a turn's calls, even when the kernel
    runs a step's calls concurrently.
    """

    def __init__(
        self,
        data: DataProvider | None = None,
        results: ResultHandler | None = None,
        *,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.data: DataProvider = data if data is not None else StaticDataProvider()
        self.results: ResultHandler = results if results is not None else RecordingResultHandler()
        self.environ: dict[str, str] = dict(environ or {})
        self._lock: tuple[asyncio.AbstractEventLoop, asyncio.Lock] | None = None

    @property
    def lock(self) -> asyncio.Lock:
        """The lock calls on this workspace hold (one per event loop)."""
        loop = asyncio.get_running_loop()
        if self._lock is None or self._lock[0] is not loop:
            self._lock = (loop, asyncio.Lock())
        return self._lock[1]

    @classmethod
    def filesystem(cls, state: FileSystemState, *, echo_mode: EchoMode = "overwrite") -> Workspace:
        """A workspace over a Gorilla file-system state (mutations are applied to ``state`` in place)."""
        if echo_mode not in ("overwrite", "append"):
            raise ValueError(f"echo_mode must be 'overwrite' or 'append', not {echo_mode!r}")
        bridge = FileSystemBridge(state, echo_mode)
        return cls(bridge, bridge)

    @property
    def fs(self) -> FileSystemState | None:
        """The file-system state when this is a file-system workspace."""
        return self.data.state if isinstance(self.data, FileSystemBridge) else None

    def __repr__(self) -> str:
        return f"Workspace(data={type(self.data).__name__}, results={type(self.results).__name__})"
