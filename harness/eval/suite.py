"""Suites: ``suites/<name>/suite.yaml`` plus ``cases.jsonl``, read into typed models.

suite.yaml::

    name: shellper                 # [a-z0-9][a-z0-9_.-]*
    version: "1"                   # a string (numbers are read as strings)
    kind: next_call                # next_call | episode
    bundle: ../../bundles/shellper # a path relative to the suite dir, or a bare bundle name
    cases: cases.jsonl             # default
    families: [function_gemma, qwen]                        # default: both
    strategies: [none, ebnf, structural_tag, json_schema]   # default: all four
    description: ...
    source: ...                    # where the cases come from
    licence: ...
    echo_mode: overwrite           # overwrite (BFCL, default) | append (SHELLper's bash `>>`)
    max_tokens: 64                 # bound per model response (default: derived from the longest gold answer)

cases.jsonl holds one case per line (see ``NextCallCase`` and ``EpisodeCase``). Every model forbids
unknown fields; problems are reported as ``<file>:<line>: <field path>: <message>``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_serializer,
    model_validator,
)

from harness.agents.constraint import STRATEGIES
from harness.agents.families import FAMILIES
from harness.agents.types import Message, ToolCall, ToolSchema
from harness.files import InputError, load_json, read_text, read_yaml

SuiteKind = Literal["next_call", "episode", "single_turn"]
EchoMode = Literal["overwrite", "append"]


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

    def to_bfcl(self) -> dict[str, Any]:
        """Plain dict in BFCL's shape, for ``FileSystemState.from_bfcl``."""
        return self.model_dump(mode="json")


EMPTY_WORKSPACE: dict[str, Any] = {"root": {"workspace": {"type": "directory", "contents": {}}}}


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
    initial_fs: FsTree

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
    initial_fs: FsTree

    def gold_calls(self) -> list[CallSpec]:
        return [c for turn in self.ground_truth for c in turn]

    def offered(self, names: Iterable[str], turn: int) -> list[str]:
        """Of ``names`` (in their order), the tools offered in user turn ``turn``: neither excluded
        nor held out until a later turn."""
        hidden = set(self.excluded_tools)
        hidden.update(n for start, held in self.held_out_tools.items() if start > turn for n in held)
        return [n for n in names if n not in hidden]


class SingleTurnCase(_CaseBase):
    """An entry of BFCL's single-turn categories (``harness.eval.bfcl_single``): one answer to
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

    @model_validator(mode="after")
    def _convert(self) -> SingleTurnCase:
        from harness.eval.bfcl_tools import tool_schemas

        self._schemas = tuple(tool_schemas(self.functions))  # ValueError naming the function
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
"""The cases that run on a file system (single-turn cases execute nothing)."""


class SuiteSpec(_Strict):
    """The contents of ``suite.yaml``."""

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_.-]*$")
    version: str
    kind: SuiteKind
    bundle: str = Field(min_length=1)
    cases: str = "cases.jsonl"
    families: list[str] = Field(default_factory=lambda: list(FAMILIES), min_length=1)
    strategies: list[str] = Field(default_factory=lambda: list(STRATEGIES), min_length=1)
    description: str = ""
    source: str = ""
    licence: str = ""
    echo_mode: EchoMode = "overwrite"
    """What the file-system tool ``echo`` does with a file name, in runs and in scoring: ``overwrite``
    (BFCL's GorillaFileSystem: replace an existing file's content; a missing file is an error) or
    ``append`` (SHELLper's bash mapping ``echo "..." >> file``: create the file if needed, append the
    text and a newline)."""
    max_tokens: int | None = Field(default=None, ge=1)
    """Bound per model response in this suite's runs (``--max-tokens`` overrides it). None: derived
    from the longest gold answer with headroom (``harness.eval.token_bound``). An answer cut by it
    fails as ``length:max_tokens``."""
    allow_text_answer: bool | None = None
    """Whether constrained grammars also allow a plain-text answer (no call). None: only in episode
    suites (a turn must end); BFCL's single-turn suites say so explicitly (see ``bfcl_single``)."""

    @field_validator("version", mode="before")
    @classmethod
    def _version_str(cls, v: Any) -> Any:
        return str(v) if isinstance(v, int | float) and not isinstance(v, bool) else v

    @field_validator("families")
    @classmethod
    def _families(cls, v: list[str]) -> list[str]:
        bad = [f for f in v if f not in FAMILIES]
        if bad:
            raise ValueError(f"unknown family {bad[0]!r}: expected one of {', '.join(FAMILIES)}")
        return v

    @field_validator("strategies")
    @classmethod
    def _strategies(cls, v: list[str]) -> list[str]:
        bad = [s for s in v if s not in STRATEGIES]
        if bad:
            raise ValueError(f"unknown strategy {bad[0]!r}: expected one of {', '.join(STRATEGIES)}")
        return v


class SuiteError(ValueError):
    """A suite that cannot be loaded; ``problems`` lists every problem found."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        more = f" (+{len(self.problems) - 1} more)" if len(self.problems) > 1 else ""
        super().__init__((self.problems[0] if self.problems else "invalid suite") + more)


@dataclass(frozen=True)
class Suite:
    """A loaded suite: its spec, its directory and its typed cases."""

    path: Path
    spec: SuiteSpec
    cases: list[Case]

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def kind(self) -> SuiteKind:
        return self.spec.kind

    @property
    def cases_path(self) -> Path:
        return self.path / self.spec.cases

    @property
    def bundle_dir(self) -> Path:
        return resolve_bundle(self.path, self.spec.bundle)

    def next_call_cases(self) -> list[NextCallCase]:
        return [c for c in self.cases if isinstance(c, NextCallCase)]

    def episode_cases(self) -> list[EpisodeCase]:
        return [c for c in self.cases if isinstance(c, EpisodeCase)]

    def single_turn_cases(self) -> list[SingleTurnCase]:
        return [c for c in self.cases if isinstance(c, SingleTurnCase)]

    @property
    def text_answer(self) -> bool:
        """Whether this suite's grammars allow a plain-text answer (``SuiteSpec.allow_text_answer``)."""
        allowed = self.spec.allow_text_answer
        return self.kind == "episode" if allowed is None else allowed

    @property
    def scoring_points(self) -> int:
        """Next-call suites: one point per case; episode suites: one per episode."""
        return len(self.cases)

    def tools_used(self) -> list[str]:
        """Names of the tools in the gold calls, sorted."""
        return sorted({c.name for case in self.cases for c in case.gold_calls()})


def resolve_bundle(suite_dir: Path, bundle: str) -> Path:
    """A bundle path relative to the suite dir, or a bare name looked up as ``bundles/<name>`` in the
    suite dir's ancestors, then in the working directory. The result may not exist."""
    p = Path(bundle).expanduser()
    if p.is_absolute():
        return p
    if "/" in bundle or bundle.startswith("."):
        return (suite_dir / p).resolve()
    base = suite_dir.resolve()
    for anc in (base, *base.parents):
        cand = anc / "bundles" / bundle
        if cand.is_dir():
            return cand
    return Path.cwd() / "bundles" / bundle


def format_loc(loc: Iterable[int | str]) -> str:
    """('turns', 1, 0, 'content') -> 'turns[1][0].content'."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def _validation_problems(where: str, err: ValidationError) -> list[str]:
    out = []
    for e in err.errors():
        msg = str(e["msg"]).removeprefix("Value error, ")
        loc = format_loc(e["loc"])
        out.append(f"{where}: {loc}: {msg}" if loc else f"{where}: {msg}")
    return out


def _semantic_problems(case: Case) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    if isinstance(case, SingleTurnCase):
        return out
    if case.cwd and case.initial_fs.directory(case.cwd) is None:
        out.append(("cwd", f"{case.cwd!r} is not a directory of initial_fs"))
    if isinstance(case, EpisodeCase):
        if len(case.ground_truth) != len(case.turns):
            out.append(("ground_truth", f"{len(case.ground_truth)} lists for {len(case.turns)} turns"))
        for t, turn in enumerate(case.turns):
            for i, m in enumerate(turn):
                if m.role not in ("user", "system"):
                    out.append((f"turns[{t}][{i}].role", f"a turn holds user or system messages, not {m.role!r}"))
        for start, held in case.held_out_tools.items():
            if not 0 <= start < len(case.turns):
                out.append((f"held_out_tools.{start}", f"no turn {start} (the episode has {len(case.turns)})"))
            for t, calls in enumerate(case.ground_truth[:start]):
                out.extend((f"ground_truth[{t}]", f"calls {c.name!r}, held out until turn {start}")
                           for c in calls if c.name in held)
    return out


def load_spec(suite_dir: Path) -> SuiteSpec:
    where = str(suite_dir / "suite.yaml")
    try:
        raw = read_yaml(suite_dir / "suite.yaml")
    except InputError as exc:
        raise SuiteError([str(exc)]) from None
    if not isinstance(raw, dict):
        raise SuiteError([f"{where}: expected a mapping"])
    try:
        return SuiteSpec.model_validate(raw)
    except ValidationError as exc:
        raise SuiteError(_validation_problems(where, exc)) from None


def read_cases(path: Path, kind: SuiteKind, display: str | None = None) -> tuple[list[Case], list[str]]:
    """Parse a cases file. Returns the cases that validated and the problems found."""
    where = display or str(path)
    models: dict[str, type[NextCallCase] | type[EpisodeCase] | type[SingleTurnCase]] = {
        "next_call": NextCallCase, "episode": EpisodeCase, "single_turn": SingleTurnCase}
    model = models[kind]
    cases: list[Case] = []
    problems: list[str] = []
    first_line: dict[str, int] = {}
    try:
        text = read_text(path)
    except InputError as exc:
        return [], [f"{where}: {exc.reason}"]
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        at = f"{where}:{lineno}"
        try:
            raw = load_json(line, at)
        except InputError as exc:
            problems.append(str(exc))
            continue
        if not isinstance(raw, dict):
            problems.append(f"{at}: expected a JSON object, got {type(raw).__name__}")
            continue
        try:
            case = model.model_validate(raw)
        except ValidationError as exc:
            problems.extend(_validation_problems(at, exc))
            continue
        if case.id in first_line:
            problems.append(f"{at}: id: duplicate id {case.id!r} (first on line {first_line[case.id]})")
            continue
        first_line[case.id] = lineno
        sem = _semantic_problems(case)
        problems.extend(f"{at}: {field}: {msg}" for field, msg in sem)
        if not sem:
            cases.append(case)
    return cases, problems


def case_line_numbers(path: Path) -> dict[str, int]:
    """Case id -> line number, for reporting problems found after loading."""
    out: dict[str, int] = {}
    try:
        text = read_text(path)
    except InputError:
        return out
    for lineno, line in enumerate(text.splitlines(), start=1):
        try:
            raw = load_json(line, path)
        except InputError:
            continue
        if isinstance(raw, dict) and isinstance(raw.get("id"), str):
            out.setdefault(raw["id"], lineno)
    return out


def load_suite(path: str | Path) -> Suite:
    """Load and structurally validate a suite directory; raises ``SuiteError`` listing all problems.

    Tool names and arguments are checked by ``validate_suite`` (harness.eval.checks)."""
    suite_dir = Path(path)
    if not suite_dir.is_dir():
        raise SuiteError([f"{suite_dir}: not a directory"])
    spec = load_spec(suite_dir)
    cases, problems = read_cases(suite_dir / spec.cases, spec.kind, str(suite_dir / spec.cases))
    if not problems and not cases:
        problems.append(f"{suite_dir / spec.cases}: no cases")
    if problems:
        raise SuiteError(problems)
    return Suite(path=suite_dir, spec=spec, cases=cases)


def dump_case(case: Case) -> str:
    """One cases.jsonl line: defaults left out, unicode kept."""
    return json.dumps(case.model_dump(mode="json", exclude_defaults=True), ensure_ascii=False)


def write_suite(out_dir: str | Path, spec: SuiteSpec, cases: Sequence[Case]) -> Path:
    """Write ``suite.yaml`` and the cases file into ``out_dir`` (created if needed); returns the dir."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    unset = {k for k in ("max_tokens", "allow_text_answer") if getattr(spec, k) is None}
    data = spec.model_dump(mode="json", exclude=unset or None)
    (out / "suite.yaml").write_text(
        yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100), encoding="utf-8"
    )
    with (out / spec.cases).open("w", encoding="utf-8") as fh:
        for case in cases:
            fh.write(dump_case(case) + "\n")
    return out
