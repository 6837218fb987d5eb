"""``harness bench client``: the runner and its OpenAI client against local oracle replicas.

Starts ``max(replicas)`` ``harness serve --engine oracle`` processes (each request carries its gold
answer, so the servers need no model and answer at grammar speed), then runs the same suite slice with
``--engine openai`` over the first 1, 2, 4... of them at each concurrency. Per point: samples/s, and the
harness's own time per sample (a sample's wall time minus model, tool and setup time: what the runner,
kernel, parser and client cost). Goals: <= 2 ms harness time per sample at concurrency 64 and >= 1.8x
the throughput of one replica with two. The servers, the runner and the client share this machine's
cores, so on a small machine the replicas' gain is bounded by the cores left to them: the figures say
how many cores there were.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.bench.records import BenchRecord, SparseRecord

GOAL_HARNESS_MS_AT_64 = 2.0
GOAL_TWO_REPLICA_SPEEDUP = 1.8
START_TIMEOUT_S = 180.0


@dataclass(frozen=True, slots=True)
class ClientPoint:
    """One (replicas, concurrency) point."""

    replicas: int
    concurrency: int
    samples: int
    errors: int
    wall_s: float
    samples_per_s: float
    harness_ms_p50: float | None
    """A sample's wall time minus model, tool and setup time (includes waiting for the event loop)."""
    harness_ms_p99: float | None
    cpu_ms_per_sample: float
    """The harness process's CPU time over the run (samples and scoring), per sample."""


class ClientGoal(SparseRecord):
    """One goal of the client bench against what was measured."""

    goal: float
    """The goal."""
    measured: float | None
    """The figure (None: not measured, e.g. a single replica)."""
    concurrency: int | None = None
    """The concurrency it was measured at (the harness time per sample)."""
    met: bool
    """The figure meets the goal."""


class ClientSummary(BenchRecord):
    """The goal figures of the client bench."""

    bench: str = "client"
    """Which bench."""
    goals: dict[str, ClientGoal]
    """Harness ms per sample at the top concurrency; the best speedup of 2 replicas over 1."""
    errors: int
    """Sample errors over every point."""
    cpu_ms_per_sample_at_top_concurrency: float | None
    """The harness process's CPU per sample at the top concurrency (the worst replica count)."""


class ClientBench(ClientSummary):
    """client.json and the JSON line: the goal figures, what ran, and every point."""

    suite: str
    """The suite folder run."""
    family: str
    """The family."""
    strategy: str
    """The strategy."""
    limit: int | None
    """Cases per run (None: all)."""
    epochs: int
    """Repetitions of every case."""
    cores: int | None
    """CPUs the harness could use (shared by the replicas and the client)."""
    points: list[ClientPoint]
    """Every (replicas, concurrency) point."""
    out: str
    """The output folder."""


class Replica:
    """One ``harness serve --engine oracle`` child on an ephemeral port; ``url`` is its ``/v1``."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "harness.cli.main", "serve", "--engine", "oracle", "--port", "0"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        self.lines: list[str] = []
        self.url = ""
        self._ready = threading.Event()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)
            if "listening on " in line and not self.url:
                self.url = line.rsplit("listening on ", 1)[1].strip()
                self._ready.set()
        self._ready.set()  # the process ended: wait() returns and url stays empty

    def wait(self, timeout_s: float) -> str:
        self._ready.wait(timeout_s)
        if not self.url:
            raise RuntimeError("harness serve --engine oracle did not start:\n" + "".join(self.lines[-20:]))
        return self.url

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


@contextlib.contextmanager
def replicas_running(n: int) -> Iterator[list[str]]:
    """``n`` oracle servers started together; their base URLs; all stopped on the way out."""
    started = [Replica() for _ in range(n)]
    try:
        yield [r.wait(START_TIMEOUT_S) for r in started]
    finally:
        for r in started:
            r.stop()


def measure_point(
    suite_dir: Path, urls: Sequence[str], concurrency: int, *, family: str, strategy: str, limit: int | None,
    epochs: int, out: Path,
) -> ClientPoint:
    """One run of the suite slice through ``--engine openai`` over ``urls``."""
    from harness.eval.run import RunOptions, RunPlace, run_suite
    from harness.eval.store import read_run
    from harness.stats import rounded_percentile
    from harness.vocabulary import Family, Strategy

    options = RunOptions(engine="openai", base_urls=tuple(urls), model=f"oracle-{family}", families=(Family(family),),
                         strategies=(Strategy(strategy),), limit=limit, epochs=epochs, concurrency=concurrency)
    cpu_started = time.process_time()
    outcome = asyncio.run(run_suite(suite_dir, options, RunPlace(out=out)))
    cpu_s = time.process_time() - cpu_started
    timing = read_run(outcome.run_dir).timing
    wall_s = timing.samples_s if timing is not None else outcome.wall_s  # the samples, not setup or scoring
    samples = outcome.ran
    return ClientPoint(
        replicas=len(urls), concurrency=concurrency, samples=samples, errors=outcome.errors,
        wall_s=round(wall_s, 3), samples_per_s=round(samples / wall_s, 2) if wall_s else 0.0,
        harness_ms_p50=rounded_percentile(outcome.harness_ms, 50),
        harness_ms_p99=rounded_percentile(outcome.harness_ms, 99),
        cpu_ms_per_sample=round(1000 * cpu_s / samples, 3) if samples else 0.0,
    )


def run_client_bench(
    suite_dir: Path, *, replicas: Sequence[int], concurrency: Sequence[int], family: str, strategy: str,
    limit: int | None, epochs: int, out_dir: Path, log: Callable[[str], None] = lambda _m: None,
) -> ClientBench:
    """Every (replicas, concurrency) point; writes client.json and client.png into ``out_dir``."""
    if not replicas or min(replicas) < 1 or not concurrency or min(concurrency) < 1:
        raise ValueError("replicas and concurrency must be positive integers")
    out_dir.mkdir(parents=True, exist_ok=True)
    points: list[ClientPoint] = []
    log(f"starting {max(replicas)} oracle replicas (harness serve --engine oracle)")
    with replicas_running(max(replicas)) as urls, tempfile.TemporaryDirectory() as tmp:
        for i, url in enumerate(urls):  # every replica compiles its grammars once before anything is timed
            measure_point(suite_dir, [url], 4, family=family, strategy=strategy, limit=limit, epochs=1,
                          out=Path(tmp) / f"warm-{i}")
        for r in sorted(set(replicas)):
            for c in sorted(set(concurrency)):
                point = measure_point(suite_dir, urls[:r], c, family=family, strategy=strategy, limit=limit,
                                      epochs=epochs, out=Path(tmp) / f"r{r}-c{c}")
                log(f"replicas {r}, concurrency {c:3d}: {point.samples_per_s:7.1f} samples/s, harness "
                    f"{point.harness_ms_p50} ms/sample p50, client CPU {point.cpu_ms_per_sample} ms/sample "
                    f"({point.samples} samples, {point.errors} errors)")
                points.append(point)
    figures = ClientBench(
        **summarize(points).model_dump(), suite=str(suite_dir), family=family, strategy=strategy, limit=limit,
        epochs=epochs, cores=len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        points=points, out=str(out_dir),
    )
    import json

    (out_dir / "client.json").write_text(json.dumps(figures.dump(), indent=2) + "\n", encoding="utf-8")
    plot_client(points, out_dir / "client.png", cores=figures.cores)
    return figures


def summarize(points: Sequence[ClientPoint]) -> ClientSummary:
    """The goal figures: harness ms/sample at the highest concurrency, best speedup of 2 replicas over 1."""
    top = max(p.concurrency for p in points)
    at_top = [p.harness_ms_p50 for p in points if p.concurrency == top and p.harness_ms_p50 is not None]
    harness_ms = max(at_top) if at_top else None
    by = {(p.replicas, p.concurrency): p.samples_per_s for p in points}
    speedups = [by[(2, c)] / by[(1, c)] for (r, c) in by if r == 2 and by.get((1, c))]
    speedup = round(max(speedups), 2) if speedups else None
    goals = {
        "harness_ms_per_sample_at_top_concurrency": ClientGoal(
            goal=GOAL_HARNESS_MS_AT_64, measured=harness_ms, concurrency=top,
            met=harness_ms is not None and harness_ms <= GOAL_HARNESS_MS_AT_64,
        ),
        "two_replicas_speedup": ClientGoal(
            goal=GOAL_TWO_REPLICA_SPEEDUP, measured=speedup, met=speedup is not None and speedup >= GOAL_TWO_REPLICA_SPEEDUP,
        ),
    }
    cpu_top = [p.cpu_ms_per_sample for p in points if p.concurrency == top]
    return ClientSummary(goals=goals, errors=sum(p.errors for p in points),
                         cpu_ms_per_sample_at_top_concurrency=max(cpu_top) if cpu_top else None)


def plot_client(points: Sequence[ClientPoint], path: Path, *, cores: int | None) -> None:
    """Samples/s and harness ms/sample against concurrency, one line per replica count."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2), constrained_layout=True)
    for r in sorted({p.replicas for p in points}):
        mine = sorted((p for p in points if p.replicas == r), key=lambda p: p.concurrency)
        xs = [p.concurrency for p in mine]
        label = f"{r} replica" + ("s" if r > 1 else "")
        left.plot(xs, [p.samples_per_s for p in mine], marker="o", label=label)
        right.plot(xs, [p.harness_ms_p50 or 0.0 for p in mine], marker="o", label=label)
    for ax in (left, right):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("samples in flight (concurrency)")
        ax.grid(alpha=0.3)
        ax.legend()
    left.set_ylabel("samples per second")
    left.set_title("Throughput against oracle replicas")
    right.set_ylabel("harness time per sample, p50 (ms)")
    right.axhline(GOAL_HARNESS_MS_AT_64, color="grey", linestyle="--", linewidth=1)
    right.set_title("The harness's own cost per sample")
    fig.suptitle(f"harness bench client: --engine openai over harness serve --engine oracle ({cores} cores, "
                 "shared by servers and client)", fontsize=10)
    fig.savefig(path, dpi=110)
    plt.close(fig)


__all__ = ["ClientBench", "ClientGoal", "ClientPoint", "ClientSummary", "Replica", "measure_point", "replicas_running", "run_client_bench", "summarize"]
