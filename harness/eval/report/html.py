"""report.html: the page a reader drills into, written beside report.md.

Nothing is fetched from the network when it is viewed: the style and a small hand-written script from
``harness/templates/report/`` are inline, the figures are the PNGs in ``plots/`` beside it, and the
page's data is JSON in a ``<script type="application/json">`` element (``<``, ``>`` and ``&`` escaped,
so no text of a sample can end it). That data is an index (per sample: its key, verdict, error kinds,
latency, tokens); what a sample shows when it is opened is loaded then from ``report-data/``
(``details``), so the page stays small for thousands of samples. The page renders the report's tables
(``tables.Report``, as report.md does): per run, the engine and its settings, the best strategy per
family, the summary table with intervals, failures by error kind, and the figures; then every sample,
filterable by run, family, strategy, error kind and pass/fail, sortable by each column, each opening
to its prompt and the exact prompt sent, raw output per model call, parsed calls, parse errors, tool
results, timings, gold calls with their tool output and the state diff of a state failure (both from
details.jsonl, as scoring saw them), and the same case under the run's other strategies side by side.
The template is rendered by jinja2 with autoescaping."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from harness import __version__
from harness.eval.report.compile_time import DISAGREEMENT_HEADERS, TTFT_HEADERS, TTFT_NOTE
from harness.eval.report.data import ACCURACY, Run
from harness.eval.report.details import DETAILS_MISSING, build_chunks, chunk_file, tokens_of, write_chunks
from harness.eval.report.figures import Figure
from harness.eval.report.tables import (
    CLASS_HEADERS,
    FAILURE_HEADERS,
    OVERHEAD_HEADERS,
    REPEAT_HEADERS,
    REPEATS_NOTE,
    Report,
)
from harness.eval.store import METRICS, SampleRecord

TEMPLATES = Path(__file__).resolve().parents[2] / "templates" / "report"


class _View(BaseModel):
    model_config = ConfigDict(frozen=True)


class SampleView(_View):
    """One sample in the page's table: its key and verdicts (its transcript is in its chunk)."""

    run: int
    """Index into the page's runs."""
    id: str
    case: str
    family: str
    strategy: str
    epoch: int
    status: str
    passed: bool | None
    """Every applicable accuracy metric is 1 (None: none applies)."""
    kinds: list[str]
    """Every error kind of the sample (its own and its scores')."""
    latency_ms: float | None
    """Sum of its model calls' latencies."""
    tokens: int | None
    """Tokens generated over its model calls."""
    chunk: int
    """The ``report-data`` chunk holding its detail."""


class RunView(_View):
    label: str
    engine: str
    system_prompt: str | None
    """The bundle's system prompt, when the bundle could be read."""
    details_missing: str | None
    """Why its samples show no gold outputs and no state diffs (a run scored before details.jsonl)."""


class PageData(_View):
    """Everything the page's script works on before a sample is opened."""

    runs: list[RunView]
    samples: list[SampleView]
    families: list[str]
    strategies: list[str]
    kinds: list[str]
    """Every error kind present, for the filter."""
    chunks: list[str]
    """The chunk files, relative to the page."""


def _sample_view(index: int, sample: SampleRecord, scores: dict[str, tuple[float | None, str | None]],
                 chunk: int) -> SampleView:
    applicable = [scores[m][0] for m in ACCURACY if m in scores and scores[m][0] is not None]
    kinds = {kind for _, kind in scores.values() if kind}
    if sample.error_kind:
        kinds.add(sample.error_kind)
    latencies = [s.latency_ms for s in sample.steps if s.latency_ms is not None]
    tokens = [t for t in (tokens_of(s) for s in sample.steps) if t is not None]
    return SampleView(
        run=index, id=sample.sample_id, case=sample.case_id, family=sample.family, strategy=sample.strategy,
        epoch=sample.epoch, status=sample.status, kinds=sorted(kinds),
        passed=all(v == 1.0 for v in applicable) if applicable else None,
        latency_ms=round(sum(latencies), 3) if latencies else None, tokens=sum(tokens) if tokens else None,
        chunk=chunk,
    )


def _system_prompt(run: Run) -> str | None:
    """The system prompt bundle.yaml gives (the run directory's copy): the file is read, no tool loaded."""
    from harness.agents import BundleError, load_bundle_config

    if run.suite is None and run.data.run.bundle is None:
        return None
    bundle = run.suite.bundle_dir if run.suite is not None else Path(str(run.data.run.bundle))
    try:
        return load_bundle_config(bundle).system_prompt
    except (BundleError, OSError, ValueError):
        return None


def page_data(runs: Sequence[Run], families: list[str], strategies: list[str], chunk_of: dict[str, int],
              chunks: int) -> PageData:
    """The JSON the page's script filters and sorts (sample details come from the chunks)."""
    samples: list[SampleView] = []
    for index, run in enumerate(runs):
        scores: dict[str, dict[str, tuple[float | None, str | None]]] = {}
        for row in run.data.scores or ():
            if row.metric in METRICS:
                scores.setdefault(row.sample_id, {})[row.metric] = (row.value, row.error_kind)
        samples += [_sample_view(index, s, scores.get(s.sample_id, {}), chunk_of[s.case_id]) for s in run.samples]
    return PageData(
        runs=[RunView(label=r.label, engine=r.engine, system_prompt=_system_prompt(r),
                      details_missing=DETAILS_MISSING if r.details is None and r.samples else None) for r in runs],
        samples=samples, families=families, strategies=strategies,
        kinds=sorted({k for s in samples for k in s.kinds}), chunks=[chunk_file(n) for n in range(chunks)],
    )


def script_json(data: PageData) -> str:
    """The data as JSON that cannot end its ``<script>`` element."""
    return data.model_dump_json().replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _image(figure: Figure, page_dir: Path) -> str | None:
    """The figure's PNG, relative to the page (the plots are files beside it, not inlined: the page stays small)."""
    if figure.path is None:
        return None
    try:
        return figure.path.resolve().relative_to(page_dir.resolve()).as_posix()
    except ValueError:
        return figure.path.resolve().as_uri()


def render(report: Report, page_dir: Path, chunk_of: dict[str, int], chunks: int) -> str:
    """The page's HTML, from the report's tables."""
    import jinja2

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True, undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True)
    return env.get_template("report.html.jinja").render(
        version=__version__, now=report.written_at, runs=report.runs, sections=report.sections,
        verdicts=report.verdicts, side_by_side=report.side_by_side,
        figures=[(f, _image(f, page_dir)) for f in report.figures],
        overhead_headers=OVERHEAD_HEADERS, overhead_rows=report.overhead, ttft_headers=TTFT_HEADERS,
        ttft_rows=report.ttft, ttft_note=TTFT_NOTE, disagreement_headers=DISAGREEMENT_HEADERS,
        disagreement_rows=report.disagreements, failure_headers=FAILURE_HEADERS,
        repeat_headers=REPEAT_HEADERS, class_headers=CLASS_HEADERS, repeats_note=REPEATS_NOTE,
        data=script_json(page_data(report.runs, report.families, report.strategies, chunk_of, chunks)),
        style=(TEMPLATES / "report.css").read_text(encoding="utf-8"),
        script=(TEMPLATES / "report.js").read_text(encoding="utf-8"),
    )


def write_html(path: Path, report: Report) -> Path:
    """report.html, and its samples' details in ``report-data/`` beside it."""
    chunk_of, chunks = build_chunks(report.runs)
    write_chunks(path.parent, chunks)
    path.write_text(render(report, path.parent, chunk_of, len(chunks)), encoding="utf-8")
    return path


__all__ = [
    "PageData",
    "RunView",
    "SampleView",
    "page_data",
    "render",
    "script_json",
    "write_html",
]
