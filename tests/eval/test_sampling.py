"""Sampling settings of a run (issue 23, item 1): ``--temperature``, ``--top-p``, ``--seed`` and a suite's
defaults reach every request, each sample with a seed derived from the run's seed, its case and its
epoch; run.json records them and the setup identity (the seed left out: two seeds of one setup are an
A/A pair); nucleus sampling is vLLM's (after the grammar's mask)."""

from __future__ import annotations

import shutil
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from pydantic import ValidationError

from harness.agents.client import CompletionRequest, CompletionResponse, LLMClient
from harness.engines.registry import open_engine
from harness.engines.shapes import EngineContext, RunEngine, SampleContext
from harness.eval.run import RunOptions, RunPlace, run_suite
from harness.eval.run.resolved import sample_seed
from harness.eval.store import load_samples, read_run
from harness.grammar.mask import pick_token

SMOKE = Path(__file__).resolve().parents[2] / "suites" / "smoke"


def test_sample_seeds_are_stable_and_distinct() -> None:
    # A seed given today reproduces the run in later versions: the derivation is a contract.
    assert sample_seed(1, "mira-look-00", 1) == sample_seed(1, "mira-look-00", 1)
    seeds = {sample_seed(run, case, epoch) for run in (1, 2) for case in ("a", "b") for epoch in (1, 2, 3)}
    assert len(seeds) == 12 and all(0 <= s < 2**31 for s in seeds)


@dataclass
class RecordingOracle:
    """TEST DOUBLE around the real oracle: keeps every request's sample, temperature, top_p and seed."""

    inner: RunEngine
    seen: list[tuple[str, float, float, int | None]] = field(default_factory=list)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def client_for(self, context: SampleContext) -> LLMClient:
        inner, seen = self.inner.client_for(context), self.seen

        class Client:
            async def chat_completion(self, request: CompletionRequest) -> CompletionResponse:
                seen.append((context.sample_id, request.temperature, request.top_p, request.seed))
                return await inner.chat_completion(request)

            async def aclose(self) -> None:
                await inner.aclose()

        return Client()


async def _recorded_run(out: Path, suite: Path = SMOKE, **options: Any) -> RecordingOracle:
    engines: list[RecordingOracle] = []

    def opener(options: RunOptions, context: EngineContext) -> tuple[Any, list[str] | None]:
        engine, families = open_engine(options, context)
        engines.append(RecordingOracle(engine))
        return engines[-1], families

    spec = suite, RunOptions(engine="oracle", strategies=["ebnf", "json_schema"], limit=2, **options), RunPlace(out=out)
    await run_suite(*spec, open_engine=opener)
    return engines[0]


async def test_every_request_carries_the_samples_seed(tmp_path: Path) -> None:
    engine = await _recorded_run(tmp_path / "r", temperature=0.8, top_p=0.9, seed=11, epochs=2)
    assert {(t, p) for _, t, p, _ in engine.seen} == {(0.8, 0.9)}
    by_sample = {sample: seed for sample, _, _, seed in engine.seen}
    for sample, seed in by_sample.items():
        case, _, _, epoch = sample.split("/")
        assert seed == sample_seed(11, case, int(epoch))  # one seed per case and epoch, whatever the lane
    run = read_run(tmp_path / "r")
    assert (run.options.temperature, run.options.top_p, run.options.seed) == (0.8, 0.9, 11)
    saved = load_samples(tmp_path / "r" / "samples.jsonl").samples
    assert {s.sample_id: s.seed for s in saved.values()} == by_sample


async def test_a_greedy_run_sends_no_seed_and_records_a_random_one(tmp_path: Path) -> None:
    engine = await _recorded_run(tmp_path / "g")
    assert {(t, p, s) for _, t, p, s in engine.seen} == {(0.0, 1.0, None)}
    run = read_run(tmp_path / "g")
    assert run.options.temperature == 0.0 and run.options.seed is not None  # recorded: --seed with it reproduces a sampled rerun
    assert all(s.seed is None for s in load_samples(tmp_path / "g" / "samples.jsonl").samples.values())


def _suite_with(tmp_path: Path, **defaults: Any) -> Path:
    suite = tmp_path / "suite"
    shutil.copytree(SMOKE, suite)
    spec = yaml.safe_load((suite / "suite.yaml").read_text())
    spec["bundle"] = str(SMOKE / spec["bundle"])
    (suite / "suite.yaml").write_text(yaml.safe_dump({**spec, **defaults}))
    return suite


@pytest.mark.parametrize(
    ("flags", "recorded"),
    [({}, (0.7, 0.95, 5)), ({"temperature": 0.2, "seed": 9}, (0.2, 0.95, 9)), ({"top_p": 1.0}, (0.7, 1.0, 5))],
)
async def test_a_suite_sets_defaults_and_flags_override_them(
    tmp_path: Path, flags: dict[str, Any], recorded: tuple[float, float, int]
) -> None:
    suite = _suite_with(tmp_path, temperature=0.7, top_p=0.95, seed=5)
    await _recorded_run(tmp_path / "r", suite=suite, **flags)
    run = read_run(tmp_path / "r")
    assert (run.options.temperature, run.options.top_p, run.options.seed) == recorded


async def test_setup_identity_leaves_the_seed_out(tmp_path: Path) -> None:
    for name, options in (("a", {"seed": 1}), ("b", {"seed": 2}), ("c", {"seed": 1, "max_tokens": 12})):
        await _recorded_run(tmp_path / name, temperature=1.0, **options)
    a, b, c = (read_run(tmp_path / n).setup for n in "abc")
    assert a is not None and b is not None and c is not None
    assert a.digest == b.digest != c.digest
    assert (a.engine, a.temperature, a.max_tokens, c.max_tokens) == ("oracle", 1.0, a.max_tokens, 12)
    assert a.suite == "smoke v1" and a.grammar_library


@pytest.mark.parametrize(
    ("options", "message"),
    [({"temperature": 2.5}, "--temperature must be within 0..2"), ({"top_p": 0.0}, "--top-p must be above 0"),
     ({"seed": -1}, "--seed must be within")],
)
def test_bad_sampling_options_are_refused(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        RunOptions(engine="oracle", **options)


# -- nucleus sampling -------------------------------------------------------------------------------

PROBS = np.log(np.array([0.5, 0.3, 0.15, 0.05]))
# (top_p, the tokens that may be drawn): the smallest set of most likely tokens reaching top_p, the one
# that crosses it included (as vLLM keeps it).
NUCLEI = [(1.0, {0, 1, 2, 3}), (0.5, {0}), (0.6, {0, 1}), (0.8, {0, 1}), (0.81, {0, 1, 2}), (1e-9, {0})]


@pytest.mark.parametrize(("top_p", "allowed"), NUCLEI)
def test_top_p_draws_from_the_nucleus_in_proportion(top_p: float, allowed: set[int]) -> None:
    rng = np.random.default_rng(0)
    draws = Counter(pick_token(PROBS, None, 1.0, rng, top_p) for _ in range(4000))
    assert set(draws) == allowed
    if allowed == {0, 1}:  # renormalised: 0.5 / 0.8 and 0.3 / 0.8
        assert abs(draws[0] / 4000 - 0.625) < 0.03


def test_top_p_applies_to_the_allowed_tokens_only() -> None:
    # ids map the masked scores back to token ids: the nucleus is taken among the allowed tokens.
    ids = np.array([7, 9])
    scores = np.log(np.array([0.2, 0.05]))  # what the grammar leaves of a larger vocabulary
    rng = np.random.default_rng(1)
    assert {pick_token(scores, ids, 1.0, rng, 0.5) for _ in range(200)} == {7}


def test_the_lazy_mask_is_used_only_where_it_samples_the_same_distribution() -> None:
    from harness.grammar.decode import _Decoder
    from harness.grammar.tokenizers import get_tokenizer

    tok = get_tokenizer("function_gemma")
    lazy = {(t, p): _Decoder(None, tok, "lazy", (), t, None, None, p).lazy for t in (0.0, 1.0) for p in (1.0, 0.9)}
    assert lazy == {(0.0, 1.0): True, (0.0, 0.9): True, (1.0, 1.0): True, (1.0, 0.9): False}
