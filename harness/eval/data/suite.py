"""Suites: ``suites/<name>/suite.yaml`` plus ``cases.jsonl``, read into typed models.

suite.yaml::

    name: shellper                 # [a-z0-9][a-z0-9_.-]*
    version: "1"                   # a string (numbers are read as strings)
    kind: next_call                # next_call | episode | single_turn
    bundle: ../../bundles/shellper # a path relative to the suite dir, or a bare bundle name
    cases: cases.jsonl             # default
    families: [function_gemma, qwen]                        # default: both
    strategies: [none, ebnf, structural_tag, json_schema]   # default: all four
    description: ...
    source: ...                    # where the cases come from
    licence: ...
    echo_mode: overwrite           # overwrite (GorillaFileSystem, default) | append (SHELLper's bash `>>`)
    max_tokens: 64                 # bound per model response (default: derived from the longest gold answer)
    temperature: 1.0               # sampling defaults of the suite's runs (flags override): default 0, greedy
    top_p: 0.95                    #   default 1
    seed: 7                        #   default: a random run seed, recorded in run.json
    models: {qwen: Qwen/Qwen3-0.6B}  # per family, for server engines (a run's --model overrides it)

cases.jsonl holds one case per line (see ``NextCallCase`` and ``EpisodeCase``). Every model forbids
unknown fields; problems are reported as ``<file>:<line>: <field path>: <message>``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator

from harness import packaged
from harness.eval.data.cases import BAD_ENTRY, Case, ChatMessage, EpisodeCase, NextCallCase, SingleTurnCase
from harness.files import InputFileError, load_json, read_text, read_yaml
from harness.vocabulary import FAMILIES, HARNESS_STRATEGIES, STRATEGIES, Family, Strategy

SuiteKind = Literal["next_call", "episode", "single_turn"]
EchoMode = Literal["overwrite", "append"]


class SuiteSpec(BaseModel):
    """The contents of ``suite.yaml``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_.-]*$")
    version: str
    kind: SuiteKind
    bundle: str = Field(min_length=1)
    cases: str = "cases.jsonl"
    families: list[Family] = Field(default_factory=lambda: list(FAMILIES), min_length=1)
    strategies: list[Strategy] = Field(default_factory=lambda: [Strategy.none, *HARNESS_STRATEGIES], min_length=1)
    description: str = ""
    source: str = ""
    licence: str = ""
    echo_mode: EchoMode = "overwrite"
    """What the file-system tool ``echo`` does with a file name, in runs and in scoring: ``overwrite``
    (the GorillaFileSystem's: replace an existing file's content; a missing file is an error) or
    ``append`` (SHELLper's bash mapping ``echo "..." >> file``: create the file if needed, append the
    text and a newline)."""
    max_tokens: int | None = Field(default=None, ge=1)
    """Bound per model response in this suite's runs (``--max-tokens`` overrides it). None: derived
    from the longest gold answer with headroom (``harness.eval.run.token_bound``). An answer cut by it
    fails as ``length:max_tokens``."""
    temperature: float | None = Field(default=None, ge=0, le=2, allow_inf_nan=False)
    """Sampling temperature of this suite's runs (``--temperature`` overrides it); None: 0, greedy."""
    top_p: float | None = Field(default=None, gt=0, le=1, allow_inf_nan=False)
    """Nucleus sampling of this suite's runs (``--top-p`` overrides it); None: 1."""
    seed: int | None = Field(default=None, ge=0, lt=2**63)
    """The run seed of this suite's runs (``--seed`` overrides it); None: a random one, recorded."""

    models: dict[Family, str] = Field(default_factory=dict)
    """The model each family runs on server engines (a folder, hub id or served id), unless the run
    names one (``--model``, ``--config``); engines that serve no model (oracle, local) ignore it."""
    allow_text_answer: bool | None = None
    """Whether constrained grammars also allow a plain-text answer (no call). None: only in episode
    suites (a turn must end); imported single-turn suites say so explicitly."""

    @field_validator("version", mode="before")
    @classmethod
    def _version_str(cls, v: Any) -> Any:
        return str(v) if isinstance(v, int | float) and not isinstance(v, bool) else v

    @field_validator("families", "strategies", mode="before")
    @classmethod
    def _names(cls, v: Any, info: ValidationInfo) -> Any:
        """An unknown name is named with the known ones (before the list is read as members)."""
        what, known = ("family", FAMILIES) if info.field_name == "families" else ("strategy", STRATEGIES)
        bad = [n for n in v if n not in known] if isinstance(v, list) else []
        if bad:
            raise ValueError(f"unknown {what} {bad[0]!r}: expected one of {', '.join(known)}")
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
    bundle_path: Path | None = None
    """The bundle's folder when it is not where ``spec.bundle`` says (a run directory's copy of both)."""

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
        return self.bundle_path or resolve_bundle(self.path, self.spec.bundle)

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
    suite dir's ancestors, then in the working directory, then among the bundles that ship with the
    harness (``harness.packaged``). The result may not exist."""
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
    local = Path.cwd() / "bundles" / bundle
    return local if local.is_dir() else packaged.packaged_bundle(bundle) or local


def format_loc(loc: Iterable[int | str]) -> str:
    """('turns', 1, 0, 'content') -> 'turns[1][0].content'."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def _validation_problems(where: str, err: ValidationError, model: Any = None) -> list[str]:
    """One line per mistake (a misspelt key: one line with a did-you-mean; ``harness.schema_errors``)."""
    from harness.schema_errors import friendly_errors

    out = []
    for loc, msg in friendly_errors(err, model):
        where_in = format_loc(loc)
        out.append(f"{where}: {where_in}: {msg}" if where_in else f"{where}: {msg}")
    return out


def _tool_turn_problems(messages: list[ChatMessage]) -> list[tuple[str, str]]:
    """A ``tool`` message answers a call: it follows an assistant message with ``tool_calls`` (or another
    tool message answering the same), and there are no more of them than that message's calls."""
    out: list[tuple[str, str]] = []
    open_calls = 0  # calls of the last assistant message not answered yet
    for i, m in enumerate(messages):
        if m.role == "tool":
            if open_calls == 0:
                out.append((f"messages[{i}].role", "a tool message without its call: it must follow an assistant "
                                                   "message with tool_calls (one tool message per call)"))
            open_calls = max(0, open_calls - 1)
        else:
            open_calls = len(m.tool_calls) if m.role == "assistant" else 0
    return out


def _semantic_problems(case: Case) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    if isinstance(case, SingleTurnCase):
        return out
    if isinstance(case, NextCallCase):
        out.extend(_tool_turn_problems(case.messages))
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
            if BAD_ENTRY in case.tags:
                continue  # its ground truth is known to break the protocol, and says how (note)
            for t, calls in enumerate(case.ground_truth[:start]):
                out.extend((f"ground_truth[{t}]", f"calls {c.name!r}, held out until turn {start}")
                           for c in calls if c.name in held)
    return out


def load_spec(suite_dir: Path) -> SuiteSpec:
    where = str(suite_dir / "suite.yaml")
    try:
        raw = read_yaml(suite_dir / "suite.yaml")
    except InputFileError as exc:
        raise SuiteError([str(exc)]) from None
    if not isinstance(raw, dict):
        raise SuiteError([f"{where}: expected a mapping"])
    try:
        return SuiteSpec.model_validate(raw)
    except ValidationError as exc:
        raise SuiteError(_validation_problems(where, exc, SuiteSpec)) from None


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
    except InputFileError as exc:
        return [], [f"{where}: {exc.reason}"]
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        at = f"{where}:{lineno}"
        try:
            raw = load_json(line, at)
        except InputFileError as exc:
            problems.append(str(exc))
            continue
        if not isinstance(raw, dict):
            problems.append(f"{at}: expected a JSON object, got {type(raw).__name__}")
            continue
        try:
            case = model.model_validate(raw)
        except ValidationError as exc:
            problems.extend(_validation_problems(at, exc, model))
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
    except InputFileError:
        return out
    for lineno, line in enumerate(text.splitlines(), start=1):
        try:
            raw = load_json(line, path)
        except InputFileError:
            continue
        if isinstance(raw, dict) and isinstance(raw.get("id"), str):
            out.setdefault(raw["id"], lineno)
    return out


def load_suite(path: str | Path, bundle_dir: Path | None = None) -> Suite:
    """Load and structurally validate a suite directory (or a shipped suite's name: ``smoke``); raises
    ``SuiteError`` listing all problems.

    ``bundle_dir`` replaces the bundle suite.yaml names (a run directory keeps copies of both).
    Tool names and arguments are checked by ``validate_suite`` (harness.eval.data.validate)."""
    suite_dir = packaged.suite_dir(path)
    if not suite_dir.is_dir():
        names = ", ".join(s.name for s in packaged.packaged_suites())
        raise SuiteError([f"{suite_dir}: not a directory, nor the name of a suite that ships with the harness "
                          f"({names or 'none installed'}; harness suites list)"])
    spec = load_spec(suite_dir)
    cases, problems = read_cases(suite_dir / spec.cases, spec.kind, str(suite_dir / spec.cases))
    if not problems and not cases:
        problems.append(f"{suite_dir / spec.cases}: no cases")
    if problems:
        raise SuiteError(problems)
    return Suite(path=suite_dir, spec=spec, cases=cases, bundle_path=bundle_dir)


def dump_case(case: Case) -> str:
    """One cases.jsonl line: defaults left out, unicode kept."""
    return json.dumps(case.model_dump(mode="json", exclude_defaults=True), ensure_ascii=False)


def write_suite(out_dir: str | Path, spec: SuiteSpec, cases: Sequence[Case]) -> Path:
    """Write ``suite.yaml`` and the cases file into ``out_dir`` (created if needed); returns the dir."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    optional = ("max_tokens", "temperature", "top_p", "seed", "allow_text_answer")  # left out when not set, as the suite always read
    unset = {name for name in optional if getattr(spec, name) is None} | ({"models"} if not spec.models else set())
    data = spec.model_dump(mode="json", exclude=unset or None)
    # Each file through a temp file and a rename: a link in its place is replaced, never written through.
    cases_tmp = out / f".{spec.cases}.tmp"
    with cases_tmp.open("w", encoding="utf-8") as fh:
        for case in cases:
            fh.write(dump_case(case) + "\n")
    os.replace(cases_tmp, out / spec.cases)
    suite_tmp = out / ".suite.yaml.tmp"
    suite_tmp.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100), encoding="utf-8")
    os.replace(suite_tmp, out / "suite.yaml")
    return out


__all__ = [
    "EchoMode",
    "Suite",
    "SuiteError",
    "SuiteKind",
    "SuiteSpec",
    "case_line_numbers",
    "dump_case",
    "format_loc",
    "load_spec",
    "load_suite",
    "read_cases",
    "resolve_bundle",
    "write_suite",
]
