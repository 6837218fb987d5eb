"""The cases of a suite, typed: what ``cases.jsonl`` holds, one case per line.

A next-call case (``NextCallCase``) is a scoring point: a history and the call that should come next;
an episode (``EpisodeCase``) is several user turns with the ground-truth calls of each. Both start
from a BFCL-shaped file system (``FsTree``; a case of tools that touch no files may leave it out: one
empty folder). A single-turn case (``SingleTurnCase``) is an entry of BFCL's single-turn categories: its
own tools, one answer, BFCL's possible answers. Every model forbids unknown fields.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    field_validator,
    model_serializer,
    model_validator,
)

from harness.agents import Message, ToolCall, ToolSchema
from harness.tools import HistoryCall, SessionSetup


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CallSpec(_Strict):
    """One tool call: a name and its arguments (a JSON object)."""

    name: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)

    @model_serializer(mode="wrap")
    def _always_arguments(self, handler: Any) -> dict[str, Any]:
        out: dict[str, Any] = handler(self)
        out.setdefault("arguments", dict(self.arguments))
        return out

    def to_tool_call(self, call_id: str) -> ToolCall:
        return ToolCall(id=call_id, name=self.name, arguments=dict(self.arguments))


class ChatMessage(_Strict):
    """A message of a case's history. Tool calls only on assistant messages; tool turns are allowed."""

    role: Literal["system", "user", "assistant", "tool"]
    content: str | None = None
    tool_calls: list[CallSpec] = Field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None

    @model_validator(mode="after")
    def _shape(self) -> ChatMessage:
        if self.tool_calls and self.role != "assistant":
            raise ValueError("tool_calls are only allowed on assistant messages")
        if self.role in ("system", "user", "tool") and self.content is None:
            raise ValueError(f"a {self.role} message needs a content string")
        if self.role == "assistant" and not self.tool_calls and not self.content:
            raise ValueError("an assistant message needs tool_calls or content")
        return self


class FileNode(_Strict):
    type: Literal["file"]
    content: str


class DirNode(_Strict):
    type: Literal["directory"]
    contents: dict[str, Annotated[FileNode | DirNode, Field(discriminator="type")]]

    @field_validator("contents")
    @classmethod
    def _names(cls, v: dict[str, Any]) -> dict[str, Any]:
        for name in v:
            if not name or "/" in name or name in (".", ".."):
                raise ValueError(f"invalid file or directory name {name!r}")
        return v


class FsTree(_Strict):
    """A BFCL ``initial_config["GorillaFileSystem"]`` tree: ``{"root": {NAME: directory}}``."""

    root: dict[str, DirNode]

    @field_validator("root")
    @classmethod
    def _one_root(cls, v: dict[str, DirNode]) -> dict[str, DirNode]:
        if len(v) != 1:
            raise ValueError(f"needs exactly one top-level directory, found {len(v)}")
        return v

    @property
    def root_name(self) -> str:
        return next(iter(self.root))

    def directory(self, rel_path: str) -> DirNode | None:
        """The directory at ``rel_path`` ("a/b", relative to the root directory), or None."""
        node: DirNode = self.root[self.root_name]
        for part in [p for p in rel_path.split("/") if p]:
            child = node.contents.get(part)
            if not isinstance(child, DirNode):
                return None
            node = child
        return node

    def to_nodes(self) -> dict[str, Any]:
        """Plain dict in GorillaFileSystem's node shape, for ``FileSystemState.from_nodes``."""
        return self.model_dump(mode="json")


EMPTY_WORKSPACE: dict[str, Any] = {"root": {"workspace": {"type": "directory", "contents": {}}}}
"""The tree of a case that gives no ``initial_fs``: one empty folder (tools that touch no files need no more)."""


def _empty_workspace() -> FsTree:
    return FsTree.model_validate(EMPTY_WORKSPACE)


class _CaseBase(_Strict):
    id: str = Field(min_length=1)


class NextCallCase(_CaseBase):
    """A next-call scoring point: given ``messages``, the model's next call should be ``expected``.

    ``initial_fs``/``cwd`` describe the state before the first message; to execute a point, replay the
    assistant ``tool_calls`` of ``messages`` (``history_calls()``), then run the predicted call.
    ``state_check: false`` marks points whose file system is unknown (imported SHELLper data): the
    state comparison is not applicable there. ``expected_alternatives`` are also correct answers
    (e.g. equal by the tool's defaults); the oracle replays ``expected``.
    """

    messages: list[ChatMessage] = Field(min_length=1)
    expected: CallSpec
    expected_alternatives: list[CallSpec] = Field(default_factory=list)
    state_check: bool = True
    conversation: str | None = None
    """Id of the conversation this point was expanded from (several points share one)."""
    tags: list[str] = Field(default_factory=list)
    cwd: str = ""
    """Start directory relative to the root directory ("docs/old"); "" is the root directory."""
    initial_fs: FsTree = Field(default_factory=_empty_workspace)
    """The file system before the first message (default: one empty folder, for tools that touch no files)."""

    def history(self) -> list[Message]:
        """The messages as kernel messages; history calls get ids ``<case id>-h<n>``."""
        out: list[Message] = []
        n = 0
        for m in self.messages:
            calls = []
            for c in m.tool_calls:
                n += 1
                calls.append(c.to_tool_call(f"{self.id}-h{n}"))
            out.append(
                Message(role=m.role, content=m.content, tool_calls=tuple(calls),
                        tool_call_id=m.tool_call_id, name=m.name)
            )
        return out

    def history_calls(self) -> list[CallSpec]:
        return [c for m in self.messages for c in m.tool_calls]

    def gold_calls(self) -> list[CallSpec]:
        return [self.expected, *self.expected_alternatives]


class EpisodeCase(_CaseBase):
    """A multi-turn episode: user ``turns``, and per turn the ground-truth calls (BFCL style)."""

    turns: list[list[ChatMessage]] = Field(min_length=1)
    ground_truth: list[list[CallSpec]]
    excluded_tools: list[str] = Field(default_factory=list)
    """Tools not offered in this episode at all."""
    held_out_tools: dict[int, list[str]] = Field(default_factory=dict)
    """Tools offered only from a user turn on: turn index -> tool names (BFCL miss_func's
    ``missed_function``: the turn before asks for what the missing tool does, and nothing should be
    done there; the turn that adds it tells the model so)."""
    tags: list[str] = Field(default_factory=list)
    cwd: str = ""
    """Start directory relative to the root directory ("docs/old"); "" is the root directory."""
    initial_fs: FsTree = Field(default_factory=_empty_workspace)
    """The file system before the first message (default: one empty folder, for tools that touch no files)."""
    involved_classes: list[str] = Field(default_factory=list)
    """For a bundle of Python classes (``python:``): the classes whose instances the episode uses, in
    order (BFCL's ``involved_classes``; a later class wins a method name two share). Empty: ``.pym``
    tools on ``initial_fs``."""
    initial_config: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """Class name -> its initial state, given to the instance's ``_load_scenario(config, long_context=...)``
    (BFCL's ``initial_config``)."""
    long_context: bool = False
    """Load the instances with ``long_context=True`` (BFCL's long-context entries)."""
    bfcl_ground_truth: list[list[str]] | None = None
    """BFCL's own ground-truth calls per turn, as its file writes them: a case with them is judged by
    BFCL's ``multi_turn_checker`` (run in the tool worker). ``ground_truth`` holds the same calls parsed."""
    note: str = ""
    """Why the episode is tagged (``bad_entry``: which ground-truth call its tool's schema refuses)."""
    expected_state: dict[str, dict[str, Any]] | None = None
    """Python-class episodes without BFCL's checker: public attributes each instance must hold at the
    end (class -> attribute -> value), checked besides the ground truth's end state."""

    @model_validator(mode="after")
    def _bfcl_turns(self) -> EpisodeCase:
        if self.bfcl_ground_truth is not None and len(self.bfcl_ground_truth) != len(self.ground_truth):
            raise ValueError("bfcl_ground_truth: needs one list of calls per turn of ground_truth")
        if self.bfcl_ground_truth is not None and self.expected_state is not None:
            # BFCL's checker is the verdict of such a case: an expected state would be ignored without a word
            raise ValueError("expected_state: a case with bfcl_ground_truth is judged by BFCL's checker, which "
                             "compares the instances' end state with the gold's; remove one of the two")
        return self

    def gold_calls(self) -> list[CallSpec]:
        return [c for turn in self.ground_truth for c in turn]

    @property
    def checker(self) -> tuple[str, list[list[str]]] | None:
        """The benchmark whose own checker judges this episode (its key in ``harness.benchmarks``) with
        that checker's ground truth, or None: the harness's episode verdict."""
        return None if self.bfcl_ground_truth is None else ("bfcl", self.bfcl_ground_truth)

    def offered(self, names: Iterable[str], turn: int) -> list[str]:
        """Of ``names`` (in their order), the tools offered in user turn ``turn``: neither excluded
        nor held out until a later turn."""
        hidden = set(self.excluded_tools)
        hidden.update(n for start, held in self.held_out_tools.items() if start > turn for n in held)
        return [n for n in names if n not in hidden]

    def uses(self, owner: str | None) -> bool:
        """Whether a tool of class ``owner`` (None: a ``.pym`` tool) belongs to this episode."""
        return owner in self.involved_classes if self.involved_classes else owner is None


BAD_ENTRY = "bad_entry"
"""A single-turn case's tag: BFCL lists an answer its converted schema refuses (``bfcl_single``)."""
NO_VALID_ANSWER = "no_valid_answer"
"""A single-turn case's tag: none of BFCL's listed answers fits the converted schema."""
UNPASSABLE = "unpassable"
"""A single-turn case's tag: BFCL's own checker passes none of its listed answers (a parameter the
function requires is listed only as ``""`` or not at all, or a listed parameter the function lacks
cannot be left out)."""


class SingleTurnCase(_CaseBase):
    """An entry of BFCL's single-turn categories (``harness.bfcl.single_import``): one answer to
    ``messages``, judged by BFCL's own checker against ``possible_answer``.

    The tools are the entry's own: ``functions`` are BFCL's function docs as its package holds them
    (its checker reads them), sent to the model converted as BFCL converts them for OpenAI-style APIs
    (``tool_schemas``). ``expected`` is what the oracle replays: empty in the irrelevance categories
    (no call is right), else an answer BFCL accepts (see ``bfcl_single``)."""

    category: str = Field(min_length=1)
    """BFCL's category (``simple_python``, ``live_multiple``, ``irrelevance``, ...): the checker's mode."""
    messages: list[ChatMessage] = Field(min_length=1)
    functions: list[dict[str, Any]]
    """BFCL's function docs (a few live_irrelevance entries have none)."""
    possible_answer: list[dict[str, dict[str, Any]]] = Field(default_factory=list)
    """BFCL's ``ground_truth``: per call ``{name: {param: [acceptable values]}}`` (``""``: may be left out)."""
    expected: list[CallSpec] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    note: str = ""
    """Why the entry is tagged (a bad entry: which value fails the converted schema)."""
    _schemas: tuple[ToolSchema, ...] = PrivateAttr(default=())
    BENCHMARK: ClassVar[str] = "bfcl"
    """The benchmark whose function docs, verdict and scoring these cases take (``harness.benchmarks``)."""
    ACCEPTED_BY: ClassVar[str] = "BFCL"
    """Who accepts the listed answers, as report.html says it."""

    @model_validator(mode="after")
    def _convert(self) -> SingleTurnCase:
        from harness.benchmarks import FUNCTION_DOCS, seam

        self._schemas = tuple(seam(self.BENCHMARK, FUNCTION_DOCS)(self.functions))  # ValueError naming the function
        names = [t.name for t in self._schemas]
        if len(set(names)) != len(names):
            raise ValueError(f"functions: two tools are named alike once '.' is replaced: {names}")
        return self

    def tool_schemas(self) -> tuple[ToolSchema, ...]:
        """The entry's tools as the model is sent them (names with ``_`` for ``.``, JSON-schema types)."""
        return self._schemas

    def history(self) -> list[Message]:
        return [Message(role=m.role, content=m.content) for m in self.messages]

    def gold_calls(self) -> list[CallSpec]:
        return list(self.expected)


Case = NextCallCase | EpisodeCase | SingleTurnCase
FsCase = NextCallCase | EpisodeCase
"""The cases that run on a tool source's state (single-turn cases execute nothing)."""


def session_setup(case: FsCase, echo_mode: Literal["overwrite", "append"] = "overwrite") -> SessionSetup:
    """What the tool source opens for a sample of ``case``: its starting state, and for a next-call
    point the history's calls, replayed before the sample's own."""
    history = case.history_calls() if isinstance(case, NextCallCase) else []
    episode = case if isinstance(case, EpisodeCase) else None
    return SessionSetup(
        entry=case.id, tree=case.initial_fs.to_nodes(), cwd=case.cwd, echo_mode=echo_mode,
        classes=tuple(episode.involved_classes) if episode else (),
        config=episode.initial_config if episode else {}, long_context=episode.long_context if episode else False,
        history=tuple(HistoryCall(c.name, c.arguments) for c in history),
    )


__all__ = [
    "BAD_ENTRY",
    "EMPTY_WORKSPACE",
    "NO_VALID_ANSWER",
    "UNPASSABLE",
    "CallSpec",
    "Case",
    "ChatMessage",
    "DirNode",
    "EpisodeCase",
    "FileNode",
    "FsCase",
    "FsTree",
    "NextCallCase",
    "SingleTurnCase",
    "session_setup",
]
