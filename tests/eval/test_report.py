"""``harness report`` on synthetic run directories (written here through the typed records)."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from runs import run_record, write_run_dir
from typer.testing import CliRunner

from harness.cli.main import app
from harness.eval.report import write_report
from harness.eval.store import (
    SampleRecord,
    ScoreRow,
    StepRecord,
    StepStats,
    SuiteRef,
    SummaryRow,
    ToolResultRecord,
)

FAMILIES = ("function_gemma", "qwen")
STRATEGIES = ("none", "ebnf", "structural_tag", "json_schema")
CASES = 6
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _wilson_stub(p: float) -> tuple[float, float]:
    return max(0.0, p - 0.2), min(1.0, p + 0.1)


def make_synthetic_run(root: Path, run_id: str, *, slow: float = 1.0, with_samples: bool = True,
                       engine: str = "local") -> Path:
    """A made-up results directory: 2 families x 4 strategies x 6 cases, with known failures:
    qwen/json_schema case 0 fails validity+exact_match with ``parse:no_call``; function_gemma/ebnf case 1
    ended with ``model:timeout``. No ttft, no state_match for function_gemma; 20 tokens per call."""
    run = run_record(
        run_id, suite=SuiteRef(name="synthetic", version="1", kind="next_call", path="suites/synthetic"),
        model=None, concurrency=2, engine=engine, engine_note=f"{engine}: a made-up engine for the report's tests",
    )
    samples: list[SampleRecord] = []
    scores: list[ScoreRow] = []
    for f in FAMILIES:
        for si, s in enumerate(STRATEGIES):
            for c in range(CASES):
                sid = f"c{c}/{f}/{s}/0"
                timeout = (f, s, c) == ("function_gemma", "ebnf", 1)
                no_call = (f, s, c) == ("qwen", "json_schema", 0)
                mask = [] if s == "none" else [(5.0 + si + (t % 7)) * slow for t in range(20)]
                step = StepRecord(
                    output=None if timeout else "<call>", tool_calls=(), parse_errors=(),
                    tool_results=(ToolResultRecord(name="ls", output="", is_error=False, error_kind=None,
                                                   duration_us=150.0 + c),),
                    latency_ms=(10.0 + 2 * si + c * 0.5) * slow, ttft_ms=None, usage=None,
                    stats=StepStats(compile_ms=20.0 if s != "none" else None, compile_cached=False,
                                    mask_us=tuple(mask), accept_us=(1.0,) * len(mask),
                                    generated_tokens=20, grammar_error=None),
                )
                samples.append(SampleRecord(
                    sample_id=sid, case_id=f"c{c}", family=f, strategy=s, epoch=0, kind="next_call",
                    status="error" if timeout else "ok", error_kind="model:timeout" if timeout else None,
                    error=None, steps=(step,), duration_ms=12.0, harness_ms=0.5,
                ))
                metrics = ["validity", "exact_match", "grammar_rejection"]
                if f == "qwen":
                    metrics.append("state_match")
                for m in metrics:
                    fail = (timeout and m != "grammar_rejection") or (no_call and m in ("validity", "exact_match"))
                    kind = "model:timeout" if timeout else "parse:no_call"
                    scores.append(ScoreRow(
                        sample_id=sid, case_id=f"c{c}", family=f, strategy=s, epoch=0, metric=m,  # type: ignore[arg-type]
                        value=0.0 if fail or m == "grammar_rejection" else 1.0, error_kind=kind if fail else None,
                    ))
    summary = []
    for f in FAMILIES:
        for s in STRATEGIES:
            for m in ("validity", "exact_match", "state_match", "grammar_rejection"):
                vals = [r.value or 0.0 for r in scores if (r.family, r.strategy, r.metric) == (f, s, m)]
                if not vals:
                    continue
                p = sum(vals) / len(vals)
                lo, hi = _wilson_stub(p)
                summary.append(SummaryRow(family=f, strategy=s, metric=m, value=p, n=len(vals), ci_low=lo, ci_high=hi))
            summary.append(SummaryRow(family=f, strategy=s, metric="latency_ms_p50", value=11.0 * slow, n=CASES))
            if s != "none":
                for m, v in (("compile_ms", 20.0), ("mask_us_p50", 8.0 * slow), ("mask_us_p99", 12.0 * slow)):
                    summary.append(SummaryRow(family=f, strategy=s, metric=m, value=v, n=120))
    if not with_samples:
        samples, scores = [], []
    return write_run_dir(root / run_id, run, summary, samples=samples, scores=scores)


def _table_rows(md: str, header_start: str) -> list[list[str]]:
    """The cells of the first markdown table whose header starts with ``header_start``."""
    lines = md.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header_start))
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    return rows


def _assert_png(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC, f"{path} is not a PNG"
    width, height = struct.unpack(">II", data[16:24])  # the IHDR chunk
    assert width > 200 and height > 200
    assert len(data) > 5000
    return width, height


@pytest.fixture
def run_a(tmp_path: Path) -> Path:
    return make_synthetic_run(tmp_path, "synthetic-a")


def test_report_has_header_metrics_table_and_blanks(run_a: Path) -> None:
    md = write_report([run_a], run_a).read_text()
    assert "## Run synthetic-a (local)" in md
    assert "- what it is: local: a made-up engine for the report's tests" in md  # the note, as run.json says it
    rows = _table_rows(md, "| family | strategy | n | validity")
    header, body = rows[0], rows[2:]
    assert [(r[0], r[1]) for r in body] == [(f, s) for f in FAMILIES for s in STRATEGIES]  # canonical order
    lane = {(r[0], r[1]): dict(zip(header, r, strict=True)) for r in body}
    qj = lane[("qwen", "json_schema")]
    assert qj["n"] == "6"
    assert qj["validity"].startswith("0.833 [")  # 5 of 6, with its interval
    assert qj["state_match"].startswith("1.000")
    assert qj["mask p50 (µs)"] == "8.00"
    # Not measured stays blank, never 0: no state_match for function_gemma, no mask time for `none`;
    # a metric no row has is no column at all (no ttft).
    assert "ttft p50 (ms)" not in header
    assert lane[("function_gemma", "ebnf")]["state_match"] == ""
    assert lane[("qwen", "none")]["mask p50 (µs)"] == ""
    assert lane[("qwen", "none")]["latency p50 (ms/call)"] == "11.0"


def test_report_names_the_best_strategy(run_a: Path) -> None:
    md = write_report([run_a], run_a).read_text()
    section = md.split("## Which strategy", 1)[1].split("\n## ", 1)[0]
    # qwen: state_match 1.0 everywhere, so the cheapest (none) wins and the others are ties;
    # function_gemma has no state_match: exact_match, where ebnf lost a sample to a timeout.
    assert "synthetic-a (local): qwen: best is none (state_match 1.00 [0.80, 1.00], n=6" in section
    assert "not distinguishable at this n from ebnf, structural_tag, json_schema" in section
    assert "synthetic-a (local): function_gemma: best is none (exact_match 1.00" in section


def test_the_oracle_names_no_strategy_by_accuracy(tmp_path: Path) -> None:
    run = make_synthetic_run(tmp_path, "gold", engine="oracle")
    md = write_report([run], run).read_text()
    assert "qwen: the oracle measures grammars, not a model, so accuracy names no strategy" in md
    assert "best is" not in md


def test_report_error_breakdown_groups_by_kind(run_a: Path) -> None:
    md = write_report([run_a], run_a).read_text()
    rows = _table_rows(md, "| error kind |")
    by_kind = {(r[0], r[1], r[2]): r for r in rows[2:]}
    no_call = by_kind[("parse:no_call", "qwen", "json_schema")]
    assert no_call[3:5] == ["1", "6"]  # one failing sample of six
    assert no_call[5] == "exact_match, validity"
    timeout = by_kind[("model:timeout", "function_gemma", "ebnf")]
    assert timeout[3] == "1"  # one sample, though it failed several metrics
    assert len(by_kind) == 2
    assert "Failing samples by checker: model 1, parse 1" in md


FIGURE_NAMES = ("accuracy", "tradeoff", "per_token", "latency", "mask", "overhead")


@pytest.mark.slow  # draws and reads back every plot
def test_report_writes_readable_pngs(run_a: Path) -> None:
    md = write_report([run_a], run_a).read_text()
    for name in FIGURE_NAMES:
        png = run_a / "plots" / f"{name}.png"
        _assert_png(png)
        assert f"](plots/{name}.png)" in md
    assert "### Grammar rejections (oracle)\n\nNot drawn: only the oracle engine measures" not in md  # it has rows
    import matplotlib.image as mpimg

    img = mpimg.imread(run_a / "plots" / "accuracy.png")
    assert img.ndim == 3 and img.std() > 0.01  # something is drawn on it


def test_report_overhead_per_token_against_none(run_a: Path) -> None:
    md = write_report([run_a], run_a).read_text()
    rows = _table_rows(md, "| run | engine | family | strategy | Δ ms/token vs none")
    got = {(r[2], r[3]): r for r in rows[2:]}
    assert ("qwen", "none") not in got
    # latency = 10 + 2*strategy_index + 0.5*case over 20 tokens: json_schema's median is 0.3 ms/token above none's.
    assert got[("qwen", "json_schema")][4].startswith("0.30 [")
    assert got[("qwen", "ebnf")][4].startswith("0.10 [")
    # grammar work per token: 20 masks of 6 + t % 7 us (177 us) and 20 accepts of 1 us, over 20 tokens; none's is 0
    assert got[("qwen", "ebnf")][5].startswith("9.85 [")


@pytest.mark.slow  # two runs, every plot
def test_two_runs_side_by_side(tmp_path: Path, run_a: Path) -> None:
    run_b = make_synthetic_run(tmp_path, "synthetic-b", slow=2.0, engine="oracle")
    out = tmp_path / "both"
    md = write_report([run_a, run_b], out).read_text()
    assert "## Run synthetic-a (local)" in md and "## Run synthetic-b (oracle)" in md
    rows = _table_rows(md, "| family | strategy | metric | synthetic-a (local) | synthetic-b (oracle) |")
    lat = {(r[0], r[1], r[2]): r[3:] for r in rows[2:]}
    assert len(lat) == len(rows) - 2  # each (family, strategy, metric) once
    assert lat[("qwen", "ebnf", "latency_ms_p50")] == ["11.0", "22.0"]
    assert ("qwen", "none", "mask_us_p50") not in lat  # measured by neither run: no row
    overhead_runs = {(r[0], r[1]) for r in _table_rows(md, "| run | engine |")[2:]}
    assert overhead_runs == {("synthetic-a", "local"), ("synthetic-b", "oracle")}
    for name in FIGURE_NAMES:
        _assert_png(out / "plots" / f"{name}.png")
    assert (out / "report.html").is_file()
    assert not (run_a / "report.md").exists()  # --out is honoured


def test_report_needs_only_run_and_summary(tmp_path: Path) -> None:
    run = make_synthetic_run(tmp_path, "bare", with_samples=False)
    md = write_report([run], run).read_text()
    assert "### Latency per model call\n\nNot drawn: samples.jsonl records no latencies." in md
    assert "no per-sample data (scores.parquet, samples.jsonl, errors.json)" in md
    _assert_png(run / "plots" / "accuracy.png")
    assert not (run / "plots" / "latency.png").exists()
    assert (run / "report.html").is_file()


def test_cli_report_default_out_and_unreadable(tmp_path: Path, run_a: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["report", str(run_a)])
    assert result.exit_code == 0, result.output
    assert (run_a / "report.md").is_file() and (run_a / "report.html").is_file()
    (run_a / "summary.json").write_text("{not json")
    result = runner.invoke(app, ["report", str(run_a)])
    assert result.exit_code == 2
    assert result.stderr.startswith("harness report: error: ") and "summary.json" in result.stderr


def _page_parts(html: str) -> tuple[list[tuple[str, str]], str]:
    """(attribute, value) of every src/href of the page, and the text of its JSON data element."""
    from html.parser import HTMLParser

    class Parts(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.links: list[tuple[str, str]] = []
            self.data, self._in_data = "", False

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            self.links += [(k, v or "") for k, v in attrs if k in ("src", "href")]
            self._in_data = tag == "script" and ("id", "report-data") in attrs

        def handle_data(self, data: str) -> None:
            if self._in_data:
                self.data += data

        def handle_endtag(self, tag: str) -> None:
            self._in_data = False

    parser = Parts()
    parser.feed(html)
    return parser.links, parser.data


HOSTILE = "</script><script>alert(1)</script> & <b>"


def test_the_page_fetches_nothing_and_its_data_cannot_end_its_script(tmp_path: Path) -> None:
    """The page links only within itself and to the files written beside it (plots/, report-data/), and
    a model's output that tries to close the page's script stays text, in the chunk that holds it."""
    import json

    from harness.eval.report.data import families, load_runs, strategies
    from harness.eval.report.details import build_chunks
    from harness.eval.report.html import page_data
    from harness.eval.store import load_samples, sample_line

    run = make_synthetic_run(tmp_path, "hostile")
    samples = list(load_samples(run / "samples.jsonl").samples.values())
    step = samples[0].steps[0].model_copy(update={"output": HOSTILE})
    samples[0] = samples[0].model_copy(update={"steps": (step,)})
    (run / "samples.jsonl").write_text("".join(sample_line(s) for s in samples))
    page = write_report([run], run).parent / "report.html"
    html = page.read_text()
    links, data = _page_parts(html)
    assert links and all(v.startswith(("#", "plots/", "report-data/")) for _, v in links), links
    assert all((page.parent / v).is_file() for _, v in links if not v.startswith("#"))
    assert "<link" not in html and "://" not in "".join(v for _, v in links)
    assert HOSTILE not in html  # escaped inside the JSON: the page's script element ends where it should
    runs = load_runs([run])
    chunk_of, chunks = build_chunks(runs)
    assert json.loads(data) == json.loads(
        page_data(runs, families(runs), strategies(runs), chunk_of, len(chunks)).model_dump_json())
    shown = json.loads(data)["samples"]
    assert [s["id"] for s in shown] == [s.sample_id for s in samples]
    by_id = {s["id"]: s for s in shown}
    assert by_id["c0/qwen/json_schema/0"]["passed"] is False and "parse:no_call" in by_id["c0/qwen/json_schema/0"]["kinds"]
    assert by_id["c1/qwen/json_schema/0"]["passed"] is True
    chunk = (page.parent / "report-data" / f"chunk-{by_id[samples[0].sample_id]['chunk']:04d}.js").read_text()
    prefix = f"reportChunk({by_id[samples[0].sample_id]['chunk']}, "
    assert chunk.startswith(prefix) and chunk.endswith(");\n")
    detail = json.loads(chunk[len(prefix):-3])["samples"][f"0/{samples[0].sample_id}"]  # run 0
    assert detail["steps"][0]["output"] == HOSTILE  # the chunk is JSON: the output is a string in it


def test_cells_where_vllms_grammar_differs_are_listed(tmp_path: Path) -> None:
    from harness.eval.store import load_samples, sample_line

    run = make_synthetic_run(tmp_path, "target", engine="oracle")
    samples = list(load_samples(run / "samples.jsonl").samples.values())
    changed = []
    for s in samples:
        stats = s.steps[0].stats
        assert stats is not None
        differs = (s.family, s.strategy) == ("qwen", "ebnf")
        stats = stats.model_copy(update={"target_steps": 20, "target_mask_diff_steps": 3 if differs else 0,
                                         "target_only_tokens": ("<pad>", "<unused0>") if differs else ()})
        changed.append(s.model_copy(update={"steps": (s.steps[0].model_copy(update={"stats": stats}),)}))
    (run / "samples.jsonl").write_text("".join(sample_line(s) for s in changed))
    md = write_report([run], run).read_text()
    rows = _table_rows(md, "| family | strategy | compared steps | differing |")
    assert rows[2:] == [["qwen", "ebnf", "120", "18", "'&lt;pad&gt;' '&lt;unused0&gt;'"]]  # 6 samples x 20 steps, 3 differing each; as text, not tags


# What a hostile run's files may hold, and where report.md quotes it (issue 22, item 9). Before: 7
# `<script>` lines of such a run reached report.md as they were.
MARKUP = "<script>alert(1)</script> ![t](http://evil.example/t.png) [x](javascript:alert(1)) `c` | *e* &amp;"
QUOTED: list[tuple[str, str]] = [
    ("model id", "model"),
    ("engine note", "engine_note"),
    ("error kind", "error_kind"),
]


@pytest.mark.parametrize(("label", "where"), QUOTED, ids=[q[0] for q in QUOTED])
def test_report_md_quotes_what_a_run_holds_as_text(tmp_path: Path, label: str, where: str) -> None:
    import json
    import re

    from harness.eval.store import load_samples, sample_line

    run = make_synthetic_run(tmp_path, "hostile")
    if where == "error_kind":
        samples = list(load_samples(run / "samples.jsonl").samples.values())
        samples = [s.model_copy(update={"status": "error", "error_kind": f"model:{MARKUP}"}) for s in samples]
        (run / "samples.jsonl").write_text("".join(sample_line(s) for s in samples))
    else:
        record = json.loads((run / "run.json").read_text())
        record[where] = MARKUP
        (run / "run.json").write_text(json.dumps(record))
    md = write_report([run], tmp_path / "report").read_text()
    assert "<" not in md, [line for line in md.splitlines() if "<" in line]
    assert re.search(r"(?<!\\)\]\(", md.replace("](plots/", "")) is None  # no link or image of its own
    assert "&lt;script&gt;alert(1)&lt;/script&gt; ![t\\](http://evil.example/t.png)" in md  # shown, as text
    assert "&amp;amp;" in md


def test_repeats_are_reported_with_the_case_as_the_unit(tmp_path: Path) -> None:
    from runs import score_rows, write_scored_run

    # 4 cases x 3 epochs: one stable pass, two flaky (2 of 3, 1 of 3), one stable fail.
    scores = score_rows({"a": [1, 1, 1], "b": [1, 1, 0], "c": [0, 1, 0], "d": [0, 0, 0]})
    run = write_scored_run(tmp_path / "rep", scores, engine="local")
    md = write_report([run], tmp_path / "out").read_text()
    assert "### Repeats: pass@k, pass^k and flaky cases" in md
    # pass@2 per case: 1, 1, 2/3, 0 -> 0.667; pass^2: 1, 1/3, 0, 0 -> 0.333; n 12 samples of 4 cases.
    assert "| function_gemma | ebnf | exact_match | 2 | 0.667 [" in md and "| 0.333 [" in md
    assert "| function_gemma | ebnf | exact_match | 4 | 3 | 1 | 2 | 1 |" in md
    assert "12 (4 cases)" in md
    html = (tmp_path / "out" / "report.html").read_text()
    assert "pass^k [95% CI]" in html and "stable fail" in html
