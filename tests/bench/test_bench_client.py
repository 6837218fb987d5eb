"""``harness bench client``: real ``harness serve --engine oracle`` replicas, the real runner and client."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.bench.client import ClientPoint, summarize
from harness.cli.main import app

pytestmark = pytest.mark.slow  # two servers and six small runs: ~40 s

ROOT = Path(__file__).resolve().parents[2]


def test_every_point_runs_every_sample_across_replicas(tmp_path: Path) -> None:
    out = tmp_path / "client"
    result = CliRunner().invoke(app, ["bench", "client", "--suite", str(ROOT / "suites" / "smoke"),
                                      "--replicas", "1,2", "--concurrency", "1,4", "--limit", "3",
                                      "--out", str(out)])
    assert result.exit_code == 0, result.output
    figures = json.loads(result.output.strip().splitlines()[-1])
    assert figures == json.loads((out / "client.json").read_text())
    assert (out / "client.png").stat().st_size > 10_000
    points = figures["points"]
    assert [(p["replicas"], p["concurrency"]) for p in points] == [(1, 1), (1, 4), (2, 1), (2, 4)]
    assert all(p["samples"] == 3 and p["errors"] == 0 and p["samples_per_s"] > 0 for p in points)
    assert figures["errors"] == 0
    assert set(figures["goals"]) == {"harness_ms_per_sample_at_top_concurrency", "two_replicas_speedup"}


def point(replicas: int, concurrency: int, per_s: float, harness_ms: float) -> ClientPoint:
    return ClientPoint(replicas, concurrency, 10, 0, 1.0, per_s, harness_ms, harness_ms, 1.0)


@pytest.mark.parametrize(
    ("points", "speedup", "harness_ms"),
    [
        ([point(1, 1, 10, 1), point(1, 64, 20, 3), point(2, 1, 12, 1), point(2, 64, 38, 1.5)], 1.9, 3),
        ([point(1, 8, 10, 1), point(2, 8, 5, 1)], 0.5, 1),
    ],
)
def test_goal_figures(points: list[ClientPoint], speedup: float, harness_ms: float) -> None:
    goals = summarize(points).dump()["goals"]
    assert goals["two_replicas_speedup"]["measured"] == speedup
    assert goals["two_replicas_speedup"]["met"] == (speedup >= 1.8)
    assert goals["harness_ms_per_sample_at_top_concurrency"]["measured"] == harness_ms
