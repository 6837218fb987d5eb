"""The tool-source seam: where a bundle's tools come from, and where their state lives.

A ``ToolSource`` gives its tools (each with its owner: the class whose method it is, None for a tool of
no class), opens a ``ToolSession`` per sample from a ``SessionSetup`` (what a case says of its starting
state), and owns the verdict that compares two snapshots of that state (``difference``, ``lines``,
``holds``). A session calls a tool, snapshots its state and closes; what the kernel passes to every
tool of the sample is its ``workspace``. Runner and scoring see only this protocol: the turn-by-turn
episode verdict (``harness.eval.score.episodes``) is the same for every source.

``bundle.yaml`` names its source (``source:``; without it ``python`` when ``python:`` is given, else
``pym``) and one table maps names to implementations (``harness.tools.registry``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from harness.agents import Tool, ToolResult

EchoMode = Literal["overwrite", "append"]
StateKind = Literal["file_system", "instances"]
"""What a source's snapshots are, as details.jsonl names a state difference."""

@dataclass(frozen=True, slots=True)
class HistoryCall:
    """A call replayed before a sample starts (a next-call point's history)."""

    name: str
    arguments: Mapping[str, Any]

@dataclass(frozen=True, slots=True)
class SessionSetup:
    """What a case says of the state one sample starts from; each source reads its part."""

    entry: str
    """The case's id (a session's name in the worker; the key of a cached history state)."""
    tree: Mapping[str, Any] | None = None
    """The file system before the first message, as GorillaFileSystem nodes (``.pym`` tools)."""
    cwd: str = ""
    """Start directory relative to the root ("docs/old")."""
    classes: tuple[str, ...] = ()
    """The classes whose instances the sample uses, in order (Python classes)."""
    config: Mapping[str, Any] = field(default_factory=dict)
    """Class name -> its initial state."""
    long_context: bool = False
    echo_mode: EchoMode = "overwrite"
    """The suite's ``echo`` semantics (``.pym`` tools)."""
    history: tuple[HistoryCall, ...] = ()
    """Calls replayed on the opened state before the sample's own (a next-call point's history)."""

@runtime_checkable
class ToolSession(Protocol):
    """One sample's state, opened by a source."""

    @property
    def workspace(self) -> Any:
        """What the kernel passes to every tool call of the sample (``ToolContext.workspace``)."""
        ...

    async def call(self, name: str, arguments: Mapping[str, Any]) -> ToolResult:
        """Run one call on this session's state (never raises: an unknown tool is an error result)."""
        ...

    async def snapshot(self) -> Any:
        """The state now, as the source's verdict compares it (kept unchanged by later calls)."""
        ...

    async def close(self) -> None: ...

@runtime_checkable
class ToolSource(Protocol):
    """A bundle's tools and their state (see the module doc)."""

    state_kind: StateKind
    unwanted_calls_fail: bool
    """An episode's turn without ground truth must make no call (the multi-turn benchmark's irrelevance rule). The
    ``.pym`` file-system episodes run such a turn's calls and check nothing, as they always have."""

    @property
    def tools(self) -> tuple[Tool, ...]: ...

    def owner(self, tool: Tool) -> str | None:
        """The class one of its tools belongs to (None: a tool of no class). Per tool, not per name:
        two classes may share a method name (a case's later class wins it)."""
        ...

    async def open(self, setup: SessionSetup) -> ToolSession:
        """A session on the setup's state, its history replayed (close it when the sample ends).
        ``harness.tools.ToolUnavailable`` (or the source's own failure) when it cannot be opened."""
        ...

    def difference(self, gold: Any, model: Any, *, cwd: bool = True) -> str | None:
        """None when two snapshots are the same state, else the ``state:`` kind that tells them apart
        (``cwd``: the current folder counts too, where a source has one)."""
        ...

    def lines(self, snapshot: Any) -> list[str]:
        """A snapshot as text lines, for the diff details.jsonl keeps of a state failure."""
        ...

    def holds(self, snapshot: Any, expected: Mapping[str, Mapping[str, Any]]) -> bool:
        """A case's ``expected_state`` (owner -> attribute -> value) holds in ``snapshot``."""
        ...

    def close(self) -> None: ...

class ToolUnavailable(Exception):
    """A session the source cannot open (a class it lacks, a config its loader refuses); ``kind`` is
    the ``checker:reason`` a sample gets for it."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind

def tree_lines(tree: Mapping[str, Any], prefix: str = "/") -> list[str]:
    """A file tree (folder name -> subtree, file name -> content) as ``/folder/`` per folder and
    ``/file = "content"`` per file, sorted: how a file-system snapshot's diff is written."""
    out: list[str] = []
    for name in sorted(tree):
        node, path = tree[name], f"{prefix}{name}"
        if isinstance(node, Mapping):
            out += [f"{path}/", *tree_lines(node, f"{path}/")]
        else:
            out.append(f"{path} = {json.dumps(node, ensure_ascii=False)}")
    return out


def owners(source: ToolSource) -> dict[str, str]:
    """Tool name -> its class, for the source's tools of a class (a name two classes share: the later's)."""
    return {t.schema.name: owner for t in source.tools if (owner := source.owner(t)) is not None}


__all__ = ["EchoMode", "HistoryCall", "SessionSetup", "StateKind", "ToolSession", "ToolSource", "ToolUnavailable", "owners",
           "tree_lines"]
