"""``harness bench jump``: jump-forward against the plain decoding loop on a suite, embedded engine.

The suite runs through the real runner once per decoding loop, each run scored as ``harness run``
scores it: ``plain/`` (one model step per token), ``append/`` (forced tokens appended unchecked) and
``verify/`` (forced tokens drafted and checked by the model in one batch); see
``harness.grammar.decode``. In the ``append`` and ``verify`` runs every request is first decoded by
the plain loop on the same prompt (``pairs.jsonl``), so outputs and speed compare on identical
inputs (episodes follow that run's own answers).

Where a pair's tokens differ, the first differing position says why (``cause``):

- ``split``: ``append`` put a forced token there and the plain loop's model wrote the same forced
  text with other tokens (a base model spelling ``<start_function_call>`` in pieces, say);
- ``rounding``: both chose from the same tokens before: the scores differ because tokens were
  evaluated in one batch, which llama.cpp's kernels round differently from one at a time;
- ``end``: one output is a prefix of the other (one stopped, the other went on).

``jump.json`` holds per loop and strategy the scores of the run next to the plain run's, how many
samples' outputs differ from the plain run's, the pair counts by cause (with the most frequent
splits), and tokens/s, model steps per token and the forced fraction on the pairs.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from harness.agents import CompletionRequest, CompletionResponse
from harness.bench.records import BenchRecord
from harness.stats import rounded_percentile
from harness.vocabulary import ACCURACY_METRICS, Family, Strategy

SCORED = ACCURACY_METRICS
MODES = ("off", "append", "verify")
"""The decoding loops run (``harness.grammar.decode.JUMP_MODES``); the first is the reference."""
RUN_DIRS = {"off": "plain", "append": "append", "verify": "verify"}
TOP_SPLITS = 8


@dataclass(frozen=True, slots=True)
class Pair:
    """One request decoded by the plain loop and with jump-forward."""

    strategy: str
    same_tokens: bool
    same_text: bool
    cause: str | None
    """``split``, ``rounding`` or ``end`` (see the module doc); None when the tokens are the same."""
    at: int | None
    """Index of the first differing token."""
    plain_token: str | None
    jump_token: str | None
    tokens: tuple[int, int]
    """Tokens emitted (plain, jump), the stop included."""
    steps: tuple[int, int]
    """Model steps (plain, jump)."""
    forced: int
    tok_s: tuple[float | None, float | None]
    plain_text: str
    jump_text: str


class PairSummary(BenchRecord):
    """The pairs of one strategy: how many differ and why, speed and model steps."""

    requests: int
    """Requests decoded both ways."""
    same_tokens: int
    """Pairs with the same tokens."""
    same_text: int
    """Pairs with the same text."""
    differ: dict[str, int]
    """Cause (``split``, ``rounding``, ``end``) -> pairs."""
    top_splits: dict[str, int]
    """The most frequent splits: ``'plain token' -> 'forced token'`` -> pairs."""
    tok_s_plain_median: float | None
    """Median tokens/s of the plain loop."""
    tok_s_jump_median: float | None
    """Median tokens/s with jump-forward."""
    speedup_median: float | None
    """Median of each pair's tokens/s ratio."""
    steps_per_token_plain: float | None
    """Model steps per token, plain loop."""
    steps_per_token_jump: float | None
    """Model steps per token with jump-forward."""
    forced_fraction: float | None
    """Tokens jump-forward forced, over its tokens."""


class ScoreFigure(BenchRecord):
    """A rate of a run's summary.json."""

    value: float | None
    """The rate."""
    n: int | None
    """Samples it is over."""


class JumpScores(BenchRecord):
    """A jump-forward run's scores next to the plain run's."""

    scores_plain: dict[str, ScoreFigure]
    """Metric -> the plain run's rate."""
    scores: dict[str, ScoreFigure]
    """Metric -> this run's rate."""
    samples_differing: int
    """Samples whose outputs (any step) differ from the plain run's."""


class JumpCell(PairSummary, JumpScores):
    """One loop x strategy of jump.json: the scores, then the pairs' summary."""


class JumpBench(BenchRecord):
    """jump.json (and the JSON line)."""

    bench: str = "jump"
    """Which bench."""
    suite: str
    """The suite folder run."""
    limit: int | None
    """Cases (None: all)."""
    family: str
    """The embedded engine's family."""
    per_mode: dict[str, dict[str, JumpCell]]
    """Loop (``append``, ``verify``) -> strategy -> its figures."""


def first_difference(plain: Sequence[int], jumped: Sequence[int], unchecked: Sequence[int]) -> tuple[int | None, str | None]:
    """Where two decodes' tokens part and why (None, None when they do not); ``unchecked``: the
    positions jump-forward filled without the model's scores (``append``'s forced tokens; ``verify``
    has none: each of its tokens was the model's choice)."""
    for i, (p, j) in enumerate(zip(plain, jumped, strict=False)):
        if p != j:
            return i, "split" if i in set(unchecked) else "rounding"
    if len(plain) == len(jumped):
        return None, None
    return min(len(plain), len(jumped)), "end"


class ShadowClient:
    """The embedded engine as a run's client, answering with the jump-forward ``mode``; unless that is
    ``off``, every request is first decoded by the plain loop and the pair is kept."""

    def __init__(self, engine: Any, mode: str) -> None:
        self.engine, self.mode = engine, mode
        self.pairs: list[Pair] = []
        self._lock = threading.Lock()

    async def chat_completion(self, request: CompletionRequest) -> CompletionResponse:
        return await asyncio.to_thread(self.complete, request)

    def complete(self, request: CompletionRequest) -> CompletionResponse:
        with self._lock:
            self.engine.jump = "off"
            plain = self.engine.complete(request)
            if self.mode == "off":
                return plain  # type: ignore[no-any-return]
            plain_decode = self.engine.last_decode
            self.engine.jump = self.mode
            jumped = self.engine.complete(request)
            self.pairs.append(
                _pair(request, self.engine.tokenizer, plain, plain_decode, jumped, self.engine.last_decode, self.mode)
            )
            return jumped  # type: ignore[no-any-return]

    async def aclose(self) -> None:
        """The engine belongs to the bench (two runs share it)."""


def _pair(
    request: CompletionRequest, tok: Any, plain: CompletionResponse, pd: Any, jumped: CompletionResponse, jd: Any, mode: str
) -> Pair:
    from harness.agents import STRATEGY_OF_ARTIFACT
    from harness.grammar import constraint_from_request

    artifact = constraint_from_request(request.extra_body, request.extra_body.get("response_format"))
    at, cause = first_difference(pd.token_ids, jd.token_ids, jd.forced_at if mode == "append" else ())

    def token(ids: Sequence[int]) -> str | None:
        return tok.token_text(ids[at]) if at is not None and at < len(ids) else None

    return Pair(
        strategy=Strategy.none if artifact is None else STRATEGY_OF_ARTIFACT[artifact.kind],
        same_tokens=cause is None,
        same_text=plain.content == jumped.content,
        cause=cause,
        at=at,
        plain_token=token(pd.token_ids),
        jump_token=token(jd.token_ids),
        tokens=(pd.generated, jd.generated),
        steps=(pd.steps, jd.steps),
        forced=jd.forced,
        tok_s=(plain.stats.tokens_per_s if plain.stats else None, jumped.stats.tokens_per_s if jumped.stats else None),
        plain_text=plain.content or "",
        jump_text=jumped.content or "",
    )


def summarize_pairs(pairs: Sequence[Pair]) -> PairSummary:
    """Counts by cause, the most frequent splits, speed and steps on the pairs of one strategy."""
    causes = Counter(p.cause or "same" for p in pairs)
    splits = Counter(f"{p.plain_token!r} -> {p.jump_token!r}" for p in pairs if p.cause == "split")
    tokens = [sum(p.tokens[k] for p in pairs) for k in (0, 1)]
    steps = [sum(p.steps[k] for p in pairs) for k in (0, 1)]
    ratios = [p.tok_s[1] / p.tok_s[0] for p in pairs if p.tok_s[0] and p.tok_s[1]]
    return PairSummary(
        requests=len(pairs),
        same_tokens=causes["same"],
        same_text=sum(p.same_text for p in pairs),
        differ={k: v for k, v in causes.items() if k != "same"},
        top_splits=dict(splits.most_common(TOP_SPLITS)),
        tok_s_plain_median=rounded_percentile([p.tok_s[0] for p in pairs if p.tok_s[0]], 50),
        tok_s_jump_median=rounded_percentile([p.tok_s[1] for p in pairs if p.tok_s[1]], 50),
        speedup_median=rounded_percentile(ratios, 50),
        steps_per_token_plain=round(steps[0] / tokens[0], 4) if tokens[0] else None,
        steps_per_token_jump=round(steps[1] / tokens[1], 4) if tokens[1] else None,
        forced_fraction=round(sum(p.forced for p in pairs) / tokens[1], 4) if tokens[1] else None,
    )


def _scores(run_dir: Path) -> dict[str, dict[str, ScoreFigure]]:
    """Strategy -> metric -> the run's rate, for the accuracy metrics."""
    from harness.eval.store import read_summary

    out: dict[str, dict[str, ScoreFigure]] = {}
    for row in read_summary(run_dir):
        if row.metric in SCORED:
            out.setdefault(row.strategy, {})[row.metric] = ScoreFigure(value=row.value, n=row.n)
    return out


def _differing_samples(plain_dir: Path, jump_dir: Path) -> dict[str, int]:
    """Per strategy: samples whose model outputs (every step) differ between the two runs."""
    from harness.eval.store import read_samples

    def outputs(run_dir: Path) -> dict[str, tuple[str, tuple[str | None, ...]]]:
        found = read_samples(run_dir)
        records = found.samples.values() if found is not None else ()
        return {r.sample_id: (r.strategy, tuple(s.output for s in r.steps)) for r in records}

    plain, jumped = outputs(plain_dir), outputs(jump_dir)
    counts: Counter[str] = Counter()
    for sid, (strategy, texts) in plain.items():
        counts[strategy] += 0
        if sid in jumped and jumped[sid][1] != texts:
            counts[strategy] += 1
    return dict(counts)


def _opener(setup: Any, family: str) -> Callable[[Any, Any], tuple[Any, list[str] | None]]:
    """The run's engine: ``setup`` for whatever engine the options name."""

    def open_engine(_options: Any, _context: Any) -> tuple[Any, list[str] | None]:
        return setup, [family]

    return open_engine


class _TenthsProgress:
    """A line every tenth of a run (harness.eval.run.Progress)."""

    def __init__(self, name: str, log: Callable[[str], None], total: int, done: int) -> None:
        self.name, self.log, self.total, self.done = name, log, total, done

    def started(self, key: Any) -> None:
        """Nothing to say until a sample ends."""

    def finished(self, record: Any, failure: str | None) -> None:
        self.done += 1
        if self.done == self.total or self.done % max(1, self.total // 10) == 0:
            self.log(f"{self.name}: {self.done}/{self.total} samples")

    def tick(self) -> None:
        """Nothing between samples."""


def _progress(name: str, log: Callable[[str], None]) -> Callable[[int, int], _TenthsProgress]:
    return lambda total, done: _TenthsProgress(name, log, total, done)


def run_jump_bench(
    suite_dir: Path,
    out_dir: Path,
    *,
    strategies: Sequence[str],
    limit: int | None = None,
    log: Callable[[str], None] = print,
) -> JumpBench:
    """Run the suite twice (see the module doc) into ``out_dir``; returns what ``jump.json`` holds."""
    from harness.engines import SharedClient
    from harness.engines.local import LocalEngine
    from harness.eval.run import RunOptions, RunPlace, run_suite

    engine = LocalEngine()
    engine.load()
    clients: dict[str, ShadowClient] = {}
    for mode in MODES:
        client = clients[mode] = ShadowClient(engine, mode)
        what = "jump-forward off" if mode == "off" else f"jump-forward {mode}; each request also decoded without it first"
        setup = SharedClient("local", f"{engine.note}; {what} (harness bench jump)", None, str(engine.model_id), client)
        options = RunOptions(engine="local", families=(Family(engine.family),),
                             strategies=tuple(Strategy(s) for s in strategies), limit=limit)
        log(f"{RUN_DIRS[mode]}: {suite_dir} -> {out_dir / RUN_DIRS[mode]}")
        asyncio.run(run_suite(suite_dir, options, RunPlace(out=out_dir / RUN_DIRS[mode]), _progress(RUN_DIRS[mode], log),
                              log, open_engine=_opener(setup, engine.family)))
    asyncio.run(engine.aclose())
    with (out_dir / "pairs.jsonl").open("w", encoding="utf-8") as fh:
        for mode, client in clients.items():
            for p in client.pairs:
                fh.write(json.dumps({"mode": mode, **asdict(p)}, ensure_ascii=False) + "\n")
    plain_dir = out_dir / RUN_DIRS["off"]
    plain_scores = _scores(plain_dir)
    per: dict[str, dict[str, JumpCell]] = {}
    for mode in MODES[1:]:
        scores, differing = _scores(out_dir / mode), _differing_samples(plain_dir, out_dir / mode)
        per[mode] = {
            s: JumpCell(
                scores_plain=plain_scores.get(s, {}), scores=scores.get(s, {}), samples_differing=differing.get(s, 0),
                **summarize_pairs([p for p in clients[mode].pairs if p.strategy == s]).model_dump(),
            )
            for s in strategies
        }
    result = JumpBench(suite=str(suite_dir), limit=limit, family=engine.family, per_mode=per)
    text = json.dumps(result.dump(), indent=1, ensure_ascii=False)
    (out_dir / "jump.json").write_text(text + "\n", encoding="utf-8")
    return result


__all__ = ["MODES", "JumpBench", "JumpCell", "Pair", "PairSummary", "ShadowClient", "first_difference", "run_jump_bench", "summarize_pairs"]
