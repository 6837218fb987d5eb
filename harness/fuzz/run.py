"""``harness fuzz``'s run: draw values per tool, build and compile each family x strategy constraint,
run every cell's checks, shrink what failed, and keep it.

Values are drawn once per tool (Hypothesis, seeded; ``values.values_for``) and checked in every cell.
A failed check keeps its first example; Hypothesis' ``find`` then looks for the smallest example
failing the same way, with the same check as its predicate and the example database in the user
cache: a rerun replays the kept failures first (``reuse``), and a cell whose stored failure still
fails reports it even when the new examples miss it. Where ``find`` cannot meet the failure again
within the examples asked, the first example stands, marked unshrunk.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import random
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.agents import ConstraintError, DecodingConstraint, Strategy, ToolSchema
from harness.fuzz.bounds import OverTime, hypothesis_home, time_limit
from harness.fuzz.cell import (
    CellState,
    Finding,
    Grammar,
    ToolCase,
    check_mutants,
    check_valid,
    counterexample,
    finish,
    run_cell,
)
from harness.fuzz.defects import attach_defects, unique_defects
from harness.fuzz.outcomes import CellReport, FuzzInterrupted, FuzzReport, Outcome, vllm_refusal, worst
from harness.fuzz.reference import compare_cell
from harness.fuzz.toolset_defects import attach_toolset_defects
from harness.fuzz.walker import GrammarWalker, target_walker
from harness.grammar.families import strict_schema


@dataclass(frozen=True)
class FuzzOptions:
    """How a fuzz run goes."""

    families: tuple[str, ...]
    strategies: tuple[str, ...]
    examples: int = 100
    """Values drawn per tool (fewer when the schema has fewer distinct values)."""
    seed: int = 0
    walks: int | None = None
    """Random walks per cell (default: a twentieth of ``examples``, at least 4)."""
    cell_timeout_s: float = 60.0
    generation_timeout_s: float = 30.0
    """Drawing a tool's values longer than this is ``generation_slow``."""
    target: str | None = None
    """``vllm``: also judge every text with vLLM's own grammar backend."""
    parallel: bool = False
    database: Path | None = None
    """Hypothesis' example database (None: none kept)."""
    shrink: bool = True
    jobs: int = 1
    """Worker processes (tools are shared out among them)."""
    reference: str | None = None
    """``llguidance``: also compare every cell's masks with that engine's, token by token."""
    hypothesis_home: Path | None = None
    """Hypothesis' own storage folder (None: left as it is, ``.hypothesis`` in the current folder)."""

    @property
    def walk_count(self) -> int:
        return self.walks if self.walks is not None else max(4, self.examples // 20)


Progress = Callable[[str, int], None]
"""Called with a note and the number of cells just finished."""


CELL_GRACE_S = 5.0
"""Past its --cell-timeout, how long a cell's own deadline checks get before the timer stops it."""


class _Enough(Exception):
    """Stops drawing when the time budget is spent."""


def draw_case(tool: ToolSchema, options: FuzzOptions) -> ToolCase:
    """The tool's valid values (distinct), or the problem that stopped drawing them."""
    from hypothesis import HealthCheck, Phase, Verbosity, given, seed, settings
    from hypothesis.errors import FailedHealthCheck, Unsatisfiable

    from harness.fuzz.values import schema_problem, validator, values_for

    schema = strict_schema(tool.parameters)
    case = ToolCase(tool=tool, check=None)
    seen: dict[str, dict[str, Any]] = {}
    limit = min(options.generation_timeout_s, options.cell_timeout_s)
    stop_at = time.monotonic() + options.generation_timeout_s

    def collect() -> None:
        case.check = validator(schema)
        problem = schema_problem(tool.parameters)
        if problem is not None:
            case.problem = (Outcome.schema_invalid, problem)
            return

        @settings(max_examples=options.examples, database=None, phases=[Phase.generate], deadline=None,
                  verbosity=Verbosity.quiet, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                                    HealthCheck.large_base_example])
        @seed(_seed_of(options.seed, tool.name))
        @given(values_for(schema))
        def draw(value: Any) -> None:
            seen.setdefault(json.dumps(value, sort_keys=True), value)
            if time.monotonic() > stop_at:
                raise _Enough

        draw()

    try:
        with time_limit(limit):  # hypothesis-jsonschema checks an enum in O(n^2): a huge one stops here
            collect()
    except OverTime:
        case.problem = (Outcome.generation_slow, f"{len(seen)} values drawn before the limit of {limit:g} s "
                        "(--cell-timeout, or the generation timeout): a huge enum or a slow schema")
    except _Enough:
        case.problem = (Outcome.generation_slow, f"{len(seen)} values drawn in {options.generation_timeout_s:g} s")
    except (Unsatisfiable, FailedHealthCheck) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        case.problem = (Outcome.schema_unsatisfiable, f"no value found for the schema: {first}"[:300])
    except Exception as exc:  # hypothesis-jsonschema's refusals (a bad regex, an unknown format...)
        case.problem = (Outcome.schema_invalid, f"values cannot be drawn: {type(exc).__name__}: {exc}"[:300])
    if case.check is None:
        case.check = validator(schema)
    case.values = list(seen.values())
    rng = random.Random(_seed_of(options.seed, tool.name + "/mutants"))
    case.seeds = [rng.randrange(2**20) for _ in case.values]
    return case


def _seed_of(seed: int, text: str) -> int:
    return int.from_bytes(hashlib.blake2b(f"{seed}\0{text}".encode(), digest_size=8).digest(), "big")


def build_grammar(family: str, strategy: str, tools: Sequence[ToolSchema], options: FuzzOptions) -> Grammar:
    """The constraint of ``tools`` compiled cold; tools whose build fails are named and left out."""
    from harness.fuzz.values import validator
    from harness.grammar import BuildBound, clear_compile_cache, compile_artifact, get_tokenizer
    from harness.grammar.families import get_adapter

    adapter = get_adapter(family)
    constraint = DecodingConstraint(strategy=strategy, allow_parallel_calls=options.parallel)  # type: ignore[arg-type]
    grammar = Grammar(family, strategy, adapter, constraint, list(tools))
    built = _buildable(grammar, options.cell_timeout_s)
    grammar.tools = [t for t in tools if t.name not in grammar.build_errors]
    grammar.checks = {t.name: validator(strict_schema(t.parameters)) for t in grammar.tools}
    if built is None:
        return grammar
    try:
        clear_compile_cache(family)
        # a big grammar compiles first in a child bounded by the cell's time (harness.grammar.bounded)
        compiled = compile_artifact(built, family, bound=BuildBound(timeout_s=options.cell_timeout_s))
    except ConstraintError as exc:
        grammar.build_errors["*"] = str(exc)
        return grammar
    grammar.compile_ms = round(compiled.compile_ms, 3)
    grammar.artifact = built
    grammar.walker = GrammarWalker(compiled.compiled, get_tokenizer(family))
    if options.target == "vllm":
        grammar.target = target_walker(family, built)
    return grammar


def _buildable(grammar: Grammar, limit_s: float) -> Any:
    """The artifact of every tool that builds (failures recorded per tool); None when none builds. Each
    build stops at ``limit_s`` (--cell-timeout): a builder slow on one tool (a huge enum) fails that tool."""
    slow = f"its constraint did not build within {limit_s:g} s (--cell-timeout)"
    try:
        with time_limit(limit_s):
            artifact = grammar.adapter.build_payload(grammar.tools, grammar.constraint).artifact
        grammar.build_errors.update(artifact.refused if artifact is not None else ())  # refusals are per tool
        return artifact
    except (ConstraintError, OverTime):
        pass
    for tool in grammar.tools:
        try:
            with time_limit(limit_s):
                grammar.adapter.build_payload([tool], grammar.constraint)
        except ConstraintError as exc:
            grammar.build_errors[tool.name] = str(exc)
        except OverTime:
            grammar.build_errors[tool.name] = slow
    rest = [t for t in grammar.tools if t.name not in grammar.build_errors]
    if not rest:
        return None
    try:
        with time_limit(limit_s):
            return grammar.adapter.build_payload(rest, grammar.constraint).artifact
    except ConstraintError as exc:  # each builds alone, not together (two tools of one name...)
        grammar.build_errors["*"] = str(exc)
    except OverTime:
        grammar.build_errors["*"] = slow
    return None


def fuzz(tools: Sequence[ToolSchema], options: FuzzOptions, *, tools_path: str = "",
         progress: Progress | None = None, problems: Sequence[tuple[str, str]] = ()) -> FuzzReport:
    """Every cell (each tool in each lane: family x strategy), checked and reported. With ``options.jobs`` above 1 the
    tools are shared out to that many worker processes (each loads the tokenizers and compiles the
    constraints once); cells come back in tool, family, strategy order either way. ``problems``: tools
    that could not be read (name, why), reported as ``schema_invalid`` cells. A KeyboardInterrupt
    (Ctrl-C, or SIGTERM turned into one by the command) stops the workers and raises FuzzInterrupted
    with the report of the cells that finished."""
    started = time.monotonic()
    jobs = min(options.jobs, len(tools))
    run_id = uuid.uuid4().hex
    if options.hypothesis_home is not None:
        hypothesis_home(options.hypothesis_home)
    by_tool: dict[int, list[CellReport]] = {}
    interrupted = False
    try:
        if jobs <= 1:
            for index, tool in enumerate(tools):
                _note(progress, f"{tool.name}: drawing values")
                by_tool[index] = fuzz_tool(tools, index, options, run_id)
                _note(progress, f"{tool.name} done", len(by_tool[index]))
        else:
            _in_workers(tools, options, run_id, jobs, by_tool, progress)
    except KeyboardInterrupt:
        interrupted = True
    for key in [k for k in _GRAMMARS if k[0] == run_id]:
        del _GRAMMARS[key]
    cells = [cell for index in sorted(by_tool) for cell in by_tool[index]]
    cells += [CellReport(tool=name, family=f, strategy=s, outcome=Outcome.schema_invalid,
                         classes={Outcome.schema_invalid.value: 1}, message=why)
              for name, why in problems for f in options.families for s in options.strategies]
    if problems:
        _note(progress, "tools that could not be read", len(problems) * len(options.families) * len(options.strategies))
    report = FuzzReport(tools_path=tools_path, families=list(options.families), strategies=list(options.strategies),
                        examples=options.examples, seed=options.seed, target=options.target, cells=cells,
                        seconds=round(time.monotonic() - started, 3), reference=options.reference,
                        defects=unique_defects(cells))
    if interrupted:
        raise FuzzInterrupted(report)
    return report


def _in_workers(tools: Sequence[ToolSchema], options: FuzzOptions, run_id: str, jobs: int,
                by_tool: dict[int, list[CellReport]], progress: Progress | None) -> None:
    """The tools shared out to ``jobs`` worker processes. The tool set goes to each worker once (its
    initializer), a task is an index: sending the set with every task grew as tools squared, and a
    stopped run could not get past the queue. Workers ignore SIGINT: the command stops them
    (``terminate``, and the pool joins them: no zombie is left)."""
    import multiprocessing

    _note(progress, f"starting {jobs} worker processes")
    pool = multiprocessing.get_context("spawn").Pool(jobs, initializer=_worker_start, initargs=(list(tools),))
    try:
        for index, cells in pool.imap_unordered(_fuzz_tool_at, [(i, options, run_id) for i in range(len(tools))]):
            by_tool[index] = cells
            _note(progress, f"{tools[index].name} done", len(cells))
    except BaseException:
        pool.terminate()
        pool.join()
        raise
    pool.close()
    pool.join()


_WORKER_TOOLS: list[ToolSchema] = []
"""In a worker process: the run's tool set (given once, by ``_worker_start``)."""


def _worker_start(tools: list[ToolSchema]) -> None:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole group: the command stops the pool
    _WORKER_TOOLS[:] = tools


def _note(progress: Progress | None, text: str, done: int = 0) -> None:
    if progress is not None:
        progress(text, done)


_GRAMMARS: dict[tuple[str, str, str], Grammar] = {}
"""Constraints compiled in this process for a run, by (run id, family, strategy): a worker compiles
each once for all the tools it is given; the run forgets them when it ends."""


def grammar_for(family: str, strategy: str, tools: Sequence[ToolSchema], options: FuzzOptions, run_id: str) -> Grammar:
    key = (run_id, family, strategy)
    if key not in _GRAMMARS:
        _GRAMMARS[key] = build_grammar(family, strategy, tools, options)
    return _GRAMMARS[key]


def _fuzz_tool_at(work: tuple[int, FuzzOptions, str]) -> tuple[int, list[CellReport]]:
    index, options, run_id = work
    return index, fuzz_tool(_WORKER_TOOLS, index, options, run_id)


def fuzz_tool(tools: Sequence[ToolSchema], index: int, options: FuzzOptions, run_id: str) -> list[CellReport]:
    """The cells of ``tools[index]``: its values drawn once, then in every lane (family x strategy)."""
    case = draw_case(tools[index], options)
    case.tools_seen = list(tools)
    grammars = [grammar_for(f, s, tools, options, run_id) for f in options.families for s in options.strategies]
    cells = [_cell(grammar, case, options) for grammar in grammars]
    attach_defects(case, cells, deadline=time.monotonic() + options.cell_timeout_s)
    attach_toolset_defects(case, cells, [g.artifact for g in grammars], deadline=time.monotonic() + options.cell_timeout_s)
    return cells


def _cell(grammar: Grammar, case: ToolCase, options: FuzzOptions) -> CellReport:
    from harness.fuzz.outcomes import predicted

    report = _cell_report(grammar, case, options)
    expected = {c.value for c in predicted(grammar.family, grammar.strategy, case.tool.parameters)}
    bad_input = {Outcome.schema_invalid.value, Outcome.schema_unsatisfiable.value, Outcome.generation_slow.value}
    report.unpredicted = sorted(set(report.classes) - expected - bad_input)
    return report


def _cell_report(grammar: Grammar, case: ToolCase, options: FuzzOptions) -> CellReport:
    name = case.tool.name
    if not case.values:  # bad input comes first: no grammar can be judged without values
        outcome, message = case.problem or (Outcome.schema_unsatisfiable, "no value drawn")
        return CellReport(tool=name, family=grammar.family, strategy=grammar.strategy, outcome=outcome,
                          classes={outcome.value: 1}, message=message, compile_ms=grammar.compile_ms)
    error = grammar.build_errors.get(name) or grammar.build_errors.get("*")
    if error is not None or grammar.walker is None:
        free = error is None and Strategy(grammar.strategy).server_built  # vLLM builds nothing: its gap
        refused = vllm_refusal(grammar.family, grammar.strategy, case.tool.parameters or {}, grammar.build_errors.get(name, ""))
        outcome, why = ((Outcome.vllm_gap, "vLLM builds no constraint") if free else (Outcome.vllm_gap, refused)
                        if refused else (Outcome.build_error, error))  # vLLM's predicted 400 is its gap too
        return CellReport(tool=name, family=grammar.family, strategy=grammar.strategy, outcome=outcome,
                          classes={outcome.value: 1}, message=why or "nothing compiled")
    deadline = time.monotonic() + options.cell_timeout_s
    try:
        with time_limit(options.cell_timeout_s + CELL_GRACE_S):  # what the cooperative checks do not reach
            state = run_cell(grammar, case, walks=options.walk_count, seed=_seed_of(options.seed, name),
                             deadline=deadline)
    except OverTime:
        return CellReport(tool=name, family=grammar.family, strategy=grammar.strategy, outcome=Outcome.timeout,
                          classes={Outcome.timeout.value: 1}, compile_ms=grammar.compile_ms,
                          message=f"the cell ran past --cell-timeout {options.cell_timeout_s:g} s")
    with contextlib.suppress(OverTime), time_limit(max(0.0, deadline - time.monotonic()) + CELL_GRACE_S):
        _replay_kept(grammar, case, options, state)
    _keep(grammar, case, options, state, deadline)
    if options.reference is not None:  # the token-level differential, in a budget of its own
        state.report.reference = compare_cell(grammar, case, options.reference, seed=_seed_of(options.seed, name), budget_s=options.cell_timeout_s)
    if case.problem is not None:
        state.report.classes[case.problem[0].value] = 1
        state.report.message = case.problem[1]
        state.report.outcome = worst({Outcome(k) for k in state.report.classes})
    return state.report


# --- shrinking and the example database ------------------------------------------------------------

_VALUE_CLASSES = (Outcome.validation_error, Outcome.round_trip_error, Outcome.parser_crash, Outcome.target_disagreement)
_MUTANT_CLASSES = (Outcome.invalidation_error, Outcome.vllm_gap, Outcome.parser_crash, Outcome.target_disagreement)


def _key(grammar: Grammar, case: ToolCase, kind: str, outcome: Outcome) -> bytes:
    schema = json.dumps(case.tool.parameters, sort_keys=True)
    return f"harness-fuzz/{case.tool.name}/{schema}/{grammar.family}/{grammar.strategy}/{kind}/{outcome.value}".encode()


def _predicate(grammar: Grammar, case: ToolCase, kind: str, outcome: Outcome) -> Callable[[Any], bool]:
    if kind == "value":
        def fails_valid(value: Any) -> bool:
            found = check_valid(grammar, case, value)
            return found is not None and found.outcome is outcome
        return fails_valid

    def fails_mutant(pair: Any) -> bool:
        return any(f.outcome is outcome for f in check_mutants(grammar, case, pair[0], pair[1])[2])
    return fails_mutant


def _find(grammar: Grammar, case: ToolCase, kind: str, outcome: Outcome, options: FuzzOptions,
          *, reuse_only: bool) -> Any | None:
    """The smallest example failing with ``outcome`` (None when Hypothesis meets none)."""
    from hypothesis import HealthCheck, Phase, Verbosity, find, settings
    from hypothesis import strategies as st
    from hypothesis.database import DirectoryBasedExampleDatabase

    from harness.fuzz.values import values_for

    database = DirectoryBasedExampleDatabase(str(options.database)) if options.database is not None else None
    key = _key(grammar, case, kind, outcome)
    if reuse_only and (database is None or not list(database.fetch(key))):
        return None
    values = values_for(strict_schema(case.tool.parameters))
    strategy = values if kind == "value" else st.tuples(values, st.integers(0, 2**20))
    phases = [Phase.reuse] if reuse_only else [Phase.reuse, Phase.generate, Phase.shrink]
    config = settings(max_examples=max(options.examples, 200), database=database, deadline=None, phases=phases,
                      verbosity=Verbosity.quiet, suppress_health_check=list(HealthCheck))
    # A seeded search keeps no database (Hypothesis' rule): seed it only when nothing is kept.
    seeded = random.Random(options.seed) if database is None else None
    try:
        return find(strategy, _predicate(grammar, case, kind, outcome), settings=config, random=seeded,
                    database_key=key)
    except Exception:  # NoSuchExample, Unsatisfiable, a health check: the unshrunk example stands
        return None


def _finding_of(grammar: Grammar, case: ToolCase, kind: str, outcome: Outcome, example: Any) -> Finding | None:
    if kind == "value":
        return check_valid(grammar, case, example)
    return next((f for f in check_mutants(grammar, case, example[0], example[1])[2] if f.outcome is outcome), None)


def _replay_kept(grammar: Grammar, case: ToolCase, options: FuzzOptions, state: CellState) -> None:
    """Failures kept by earlier runs that this run's examples did not meet, replayed first."""
    if options.database is None:
        return
    for kind, classes in (("value", _VALUE_CLASSES), ("mutant", _MUTANT_CLASSES)):
        for outcome in classes:
            if outcome in state.findings:
                continue
            example = _find(grammar, case, kind, outcome, options, reuse_only=True)
            finding = None if example is None else _finding_of(grammar, case, kind, outcome, example)
            if finding is not None and finding.outcome is outcome:
                state.add(finding)
    finish(state)


def _keep(grammar: Grammar, case: ToolCase, options: FuzzOptions, state: CellState, deadline: float) -> None:
    """One counterexample per failing class, shrunk where Hypothesis can before the cell's deadline
    (after it, the first example stands, marked unshrunk)."""
    for outcome, finding in state.findings.items():
        kind = "value" if finding.seed is None else "mutant"
        shrunk = None
        left = deadline - time.monotonic()
        if options.shrink and finding.value is not None and left > 0:
            with contextlib.suppress(OverTime), time_limit(left):
                example = _find(grammar, case, kind, outcome, options, reuse_only=False)
                shrunk = None if example is None else _finding_of(grammar, case, kind, outcome, example)
        best = shrunk if shrunk is not None and shrunk.outcome is outcome else finding
        state.report.counterexamples.append(counterexample(grammar, case, best, shrunk=best is shrunk))


__all__ = ["FuzzInterrupted", "FuzzOptions", "Progress", "build_grammar", "draw_case", "fuzz", "fuzz_tool", "grammar_for"]
