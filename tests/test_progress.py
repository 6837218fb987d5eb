"""``harness run``'s progress: validity and failures by kind as samples finish, time left, and the
sample that runs long."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from harness.cli import progress as progress_module
from harness.cli.progress import PlainProgress, RunState, duration


@dataclass(frozen=True)
class Key:
    sample_id: str
    family: str = "function_gemma"
    strategy: str = "ebnf"


DURATIONS = [(0.4, "0s"), (42, "42s"), (185, "3m05s"), (3720, "1h02m")]


@pytest.mark.parametrize(("seconds", "text"), DURATIONS)
def test_durations_read_as_people_say_them(seconds: float, text: str) -> None:
    assert duration(seconds) == text


# failures of the finished samples (None: a valid answer) -> (validity, failures) as shown
STATES = [
    ([], "valid -", "no failures"),
    ([None, None, "length:max_tokens"], "valid 2/3 (67%)", "length:max_tokens 1"),
    (["parse:no_call", "length:max_tokens", "length:max_tokens", "model:timeout", "validity:schema"],
     "valid 0/5 (0%)", "length:max_tokens 2, parse:no_call 1, model:timeout 1 (+1 more kinds)"),
]


@pytest.mark.parametrize(("failures", "validity", "shown"), STATES)
def test_validity_and_failures_by_kind(failures: list[str | None], validity: str, shown: str) -> None:
    state = RunState(total=10, done=0)
    for i, failure in enumerate(failures):
        state.started(Key(f"s{i}"))
        state.finished(Key(f"s{i}"), failure)
    assert (state.validity(), state.failures()) == (validity, shown)
    assert state.running == {}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_plain_lines_say_the_lane_the_time_left_and_a_slow_sample(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    clock = Clock()
    monkeypatch.setattr(progress_module.time, "monotonic", clock)
    bar = PlainProgress(total=4, done=1, every_s=5.0)  # one sample saved by an earlier run
    bar.started(Key("a", strategy="json_schema"))
    clock.now += 20.0
    bar.tick()  # nothing finished for 20 s: which sample runs, and for how long
    clock.now += 10.0
    bar.finished(Key("a"), None)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith("1/4 samples · running a for 20s (a model call: prompt prefill and generation) · ETA -")
    # 30 s for the one sample this run made, 2 to go: a minute left
    assert lines[1].endswith("2/4 samples · lane function_gemma/json_schema · valid 1/1 (100%) · no failures · ETA 1m00s")
