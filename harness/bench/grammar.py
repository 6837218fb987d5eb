"""``harness bench grammar``: what each constraint strategy costs, per model family and grammar engine.

For every family x strategy the family adapter builds the request's artifact for the tool set
(``build_payload``) and renders every gold call as the model would emit it (``render_output``); the
grammar is then measured with xgrammar (``measure``) and, where the strategy can be expressed
exactly, with llguidance (``llguidance``). Growth curves (``growth``) repeat the figures
for synthetic tool sets of growing size and for outputs of growing length. Outputs
(``output``): ``bench.json``, ``bench.md``, PNG plots, a rich table, and one JSON summary line.

Defaults: the SHELLper bundle's 18 tools and the gold calls of ``suites/shellper`` (each case's
``expected`` call and its ``expected_alternatives``, duplicates removed).
"""

from __future__ import annotations

import json
import platform
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness.agents.constraint import CONSTRAINED_STRATEGIES, ConstraintError, DecodingConstraint
from harness.agents.families import FAMILIES
from harness.agents.types import ToolCall, ToolSchema

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_SUITE = ROOT / "suites" / "shellper"
GRAMMAR_ENGINES = ("xgrammar", "llguidance")
"""Grammar engines the bench measures (not the model engines of ``harness run``)."""
GOALS = {
    "mask_us_p50": 25.0,
    "mask_us_p99": 250.0,
    "compile_ms_cold": 150.0,
    "compile_ms_cached": 0.2,
}
"""performance.md's goals for the 18-tool set (the figure must be <= the goal)."""

Log = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class GoldCalls:
    """One gold answer: the calls a model should make (usually one)."""

    output_id: str
    calls: tuple[ToolCall, ...]


@dataclass(slots=True)
class GrammarBenchConfig:
    families: tuple[str, ...] = FAMILIES
    strategies: tuple[str, ...] = CONSTRAINED_STRATEGIES
    engines: tuple[str, ...] = GRAMMAR_ENGINES
    tools_path: str | None = None
    calls_path: str | None = None
    out_dir: str | None = None
    quick: bool = False
    growth: bool = True
    repeats: int = 0
    """Compile repeats (0: 5, or 3 with ``quick``)."""
    budget_s: float = 0.0
    """Time budget per (family, strategy, engine) for timed walks (0: 40 s, or 8 s with ``quick``)."""
    max_outputs: int = 0
    """Gold outputs used (0: all, or 24 with ``quick``)."""
    extra: dict[str, Any] = field(default_factory=dict)

    def resolved(self) -> GrammarBenchConfig:
        self.repeats = self.repeats or (3 if self.quick else 5)
        self.budget_s = self.budget_s or (8.0 if self.quick else 40.0)
        self.max_outputs = self.max_outputs or (24 if self.quick else 0)
        return self


# --- inputs ------------------------------------------------------------------------------------------


def load_tools(path: str | None) -> list[ToolSchema]:
    """Tools from an OpenAI-style JSON list or a ``.pym`` folder; default the SHELLper bundle."""
    from harness.bench.engine import load_tools as _load

    return _load(path)


def _call(obj: Any, where: str) -> ToolCall:
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
        raise ValueError(f"{where}: a call needs a name: {str(obj)[:120]}")
    args = obj.get("arguments", {})
    if isinstance(args, str):
        args = json.loads(args)
    if not isinstance(args, dict):
        raise ValueError(f"{where}: arguments must be an object")
    return ToolCall.create(obj["name"], args)


def _calls_of_line(obj: Any, where: str) -> list[list[ToolCall]]:
    """A CALLS.jsonl line: ``{"calls": [...]}``, one ``{"name", "arguments"}``, or a suite case."""
    if isinstance(obj, dict) and "calls" in obj:
        return [[_call(c, where) for c in obj["calls"]]]
    if isinstance(obj, dict) and "expected" in obj:
        return [[_call(c, where)] for c in [obj["expected"], *obj.get("expected_alternatives", [])]]
    if isinstance(obj, dict) and "ground_truth" in obj:
        return [[_call(c, where)] for turn in obj["ground_truth"] for c in turn]
    return [[_call(obj, where)]]


def load_gold(path: str | None) -> tuple[list[GoldCalls], str]:
    """Gold answers from a CALLS.jsonl file or a suite folder (default ``suites/shellper``), without
    duplicates; and where they came from."""
    src = Path(path) if path else DEFAULT_SUITE
    if not src.exists():
        raise FileNotFoundError(f"no gold calls at {src}: pass --calls (a .jsonl of calls or a suite folder)")
    lines: list[tuple[str, Any]] = []
    if src.is_dir():
        from harness.eval.suite import load_suite

        suite = load_suite(src)
        for case in suite.cases:
            lines.append((case.id, json.loads(case.model_dump_json())))
    else:
        for n, raw in enumerate(src.read_text(encoding="utf-8").splitlines(), 1):
            if raw.strip():
                obj = json.loads(raw)
                lines.append((str(obj.get("id", f"line{n}")) if isinstance(obj, dict) else f"line{n}", obj))
    seen: set[str] = set()
    gold: list[GoldCalls] = []
    for oid, obj in lines:
        for k, calls in enumerate(_calls_of_line(obj, f"{src.name}:{oid}")):
            key = json.dumps([[c.name, c.arguments] for c in calls], sort_keys=True)
            if calls and key not in seen:
                seen.add(key)
                gold.append(GoldCalls(oid if k == 0 else f"{oid}#{k}", tuple(calls)))
    if not gold:
        raise ValueError(f"no gold calls in {src}")
    return gold, str(src)


# --- one family x strategy ---------------------------------------------------------------------------


def render_gold(
    family: str, constraint: DecodingConstraint, gold: Sequence[GoldCalls]
) -> tuple[list[Any], list[dict[str, str]]]:
    """Each gold answer as the family's model would write it under the strategy; answers the format
    cannot hold (e.g. a FunctionGemma string containing ``<escape>``) are listed, not measured."""
    from harness.agents.families import get_adapter
    from harness.bench.measure import GoldText

    adapter = get_adapter(family)
    texts, errors = [], []
    for g in gold:
        try:
            texts.append(GoldText(g.output_id, adapter.render_output(list(g.calls), constraint)))
        except (ConstraintError, ValueError) as exc:
            errors.append({"output_id": g.output_id, "error": str(exc)})
    return texts, errors


def measure_cell(
    family: str,
    strategy: str,
    tools: Sequence[ToolSchema],
    gold: Sequence[GoldCalls],
    cfg: GrammarBenchConfig,
    *,
    parallel: bool,
    with_apply: bool = True,
) -> list[dict[str, Any]]:
    """The figures of one family x strategy, one row per engine."""
    from harness.agents.families import get_adapter
    from harness.bench.measure import measure_xgrammar

    constraint = DecodingConstraint(strategy=strategy, allow_parallel_calls=parallel)  # type: ignore[arg-type]
    t0 = time.perf_counter()
    payload = get_adapter(family).build_payload(list(tools), constraint)
    build_ms = (time.perf_counter() - t0) * 1000
    artifact = payload.artifact
    if artifact is None:
        raise ConstraintError(f"{family}/{strategy} built no artifact")
    texts, render_errors = render_gold(family, constraint, gold)
    common = {
        "family": family,
        "strategy": strategy,
        "tools": len(tools),
        "parallel": parallel,
        "artifact_kind": artifact.kind,
        "artifact_chars": len(artifact.value),
        "build_ms": round(build_ms, 3),
        "render_errors": render_errors,
    }
    rows = []
    for engine in cfg.engines:
        if engine == "xgrammar":
            fig = measure_xgrammar(
                family, artifact, texts, repeats=cfg.repeats, budget_s=cfg.budget_s, with_apply=with_apply
            )
        else:
            from harness.bench.llguidance import measure_llguidance

            fig = measure_llguidance(family, artifact, texts, repeats=cfg.repeats, budget_s=cfg.budget_s)
        rows.append({**common, **fig})
    return rows


# --- the whole bench -----------------------------------------------------------------------------------


def _versions() -> dict[str, str | None]:
    import importlib.metadata as md

    out: dict[str, str | None] = {"python": platform.python_version()}
    for dist in ("harness", "xgrammar", "llguidance", "transformers", "torch", "numpy"):
        try:
            out[dist] = md.version(dist)
        except md.PackageNotFoundError:
            out[dist] = None
    return out


def default_out_dir() -> Path:
    return Path("results") / "bench" / f"grammar-{datetime.now(UTC).strftime('%Y%m%d-%H%M%S')}"


def check_engines(engines: Sequence[str]) -> list[str]:
    """The engines that can run here (llguidance dropped with a message when not installed)."""
    out = []
    for e in engines:
        if e not in GRAMMAR_ENGINES:
            raise ValueError(f"unknown engine {e!r}: expected {', '.join(GRAMMAR_ENGINES)}")
        if e == "llguidance":
            from harness.bench.llguidance import available

            if available() is not None:
                continue
        out.append(e)
    return out


def run_grammar_bench(cfg: GrammarBenchConfig, log: Log = print) -> dict[str, Any]:
    """Run the bench, write its files into the output folder; returns everything written to bench.json
    (``summary`` is the final JSON line)."""
    from harness.bench.output import summarize, write_outputs
    from harness.grammar import get_tokenizer

    cfg.resolved()
    started = datetime.now(UTC)
    t_start = time.perf_counter()
    engines = check_engines(cfg.engines)
    skipped = [e for e in cfg.engines if e not in engines]
    if skipped:
        log(f"skipping {', '.join(skipped)}: not installed (pip install 'harness[guidance]')")
    cfg.engines = tuple(engines)
    tools = load_tools(cfg.tools_path)
    gold, gold_src = load_gold(cfg.calls_path)
    if cfg.max_outputs:
        gold = gold[: cfg.max_outputs]
    parallel = any(len(g.calls) > 1 for g in gold)
    out_dir = Path(cfg.out_dir) if cfg.out_dir else default_out_dir()
    log(f"{len(tools)} tools, {len(gold)} gold outputs from {gold_src}; engines {', '.join(engines)}; out {out_dir}")

    setup: dict[str, float] = {}
    for family in cfg.families:
        t0 = time.perf_counter()
        get_tokenizer(family).info  # noqa: B018 (build xgrammar's tokenizer view now, not inside a timing)
        if "llguidance" in engines:
            from harness.bench.llguidance import get_llg_tokenizer

            get_llg_tokenizer(family)
        setup[family] = round(time.perf_counter() - t0, 2)
        log(f"  {family}: tokenizers ready in {setup[family]} s")

    main: list[dict[str, Any]] = []
    for family in cfg.families:
        for strategy in cfg.strategies:
            rows = measure_cell(family, strategy, tools, gold, cfg, parallel=parallel)
            for r in rows:
                log(
                    f"  {family:14s} {strategy:14s} {r['engine']:10s} "
                    + (
                        f"compile {r['compile_ms_cold']} ms, mask p50 {r['mask_us_p50']} us p99 {r['mask_us_p99']} us, "
                        f"gold {r['gold_accepted']}/{r['gold_total']}"
                        if r.get("expressible")
                        else str(r.get("note"))
                    )
                )
            main.extend(rows)

    growth: dict[str, Any] = {}
    if cfg.growth:
        from harness.bench.growth import run_growth

        growth = run_growth(cfg, tools, gold, log)

    bench: dict[str, Any] = {
        "bench": "grammar",
        "config": {k: v for k, v in asdict(cfg).items() if k != "extra"},
        "inputs": {"tools": len(tools), "tool_names": [t.name for t in tools], "gold_outputs": len(gold),
                   "gold_source": gold_src, "parallel": parallel},
        "goals": GOALS,
        "machine": {"platform": platform.platform(), "cpus": _cpu_count()},
        "versions": _versions(),
        "setup_s": setup,
        "started_at": started.isoformat(timespec="seconds"),
        "main": main,
        **growth,
    }
    bench["duration_s"] = round(time.perf_counter() - t_start, 1)
    bench["summary"] = summarize(bench, out_dir)
    write_outputs(bench, out_dir)
    return bench


def _cpu_count() -> int | None:
    import os

    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count()


__all__ = [
    "GOALS",
    "GRAMMAR_ENGINES",
    "GoldCalls",
    "GrammarBenchConfig",
    "load_gold",
    "load_tools",
    "measure_cell",
    "render_gold",
    "run_grammar_bench",
]
