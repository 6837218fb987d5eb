"""Case selection (``--sample-id``, ``--tag``, ``--sample N --seed S``, ``--shard I/N``) and ``harness
merge``: which samples a run takes, and shards joined into exactly the run they are the shares of."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.cli.main import app
from harness.eval.data import load_suite
from harness.eval.run import CaseSelection
from harness.eval.store import read_run, read_summary
from harness.eval.store.records import Selection, Shard

ROOT = Path(__file__).resolve().parents[2]
SHELLPER = load_suite(ROOT / "suites" / "shellper")
IDS = [c.id for c in SHELLPER.cases]
runner = CliRunner()

SELECTIONS = [  # (selection, limit, the case ids it takes)
    (Selection(ids=("mira-look-00", "ben-clients-03")), None, ["mira-look-00", "ben-clients-03"]),
    (Selection(ids=("mira-look-*",)), None, [i for i in IDS if i.startswith("mira-look-")]),
    (Selection(ids=("mira-look-00/qwen/ebnf/1",)), None, ["mira-look-00"]),
    (Selection(tags=("tool_error",)), None, [c.id for c in SHELLPER.cases if "tool_error" in c.tags]),
    (Selection(ids=("mira-*",), tags=("tool_error",)), None,
     [c.id for c in SHELLPER.cases if c.id.startswith("mira-") and "tool_error" in c.tags]),
    (None, 3, IDS[:3]),
    (Selection(shard=Shard(index=2, count=3)), 7, IDS[:7][1::3]),
]


@pytest.mark.parametrize(("selection", "limit", "expected"), SELECTIONS)
def test_a_selection_takes_its_cases_in_the_suites_order(selection: Selection | None, limit: int | None,
                                                          expected: list[str]) -> None:
    taken = [c.id for c in CaseSelection(limit=limit, selection=selection).select(SHELLPER.cases)]
    assert taken == expected and expected


def test_a_sample_id_naming_whole_samples_keeps_only_theirs() -> None:
    chosen = CaseSelection(selection=Selection(ids=("mira-look-00/qwen/ebnf/1", "ben-*")))
    assert chosen.wants("mira-look-00/qwen/ebnf/1", "mira-look-00")
    assert not chosen.wants("mira-look-00/qwen/json_schema/1", "mira-look-00")
    assert chosen.wants("ben-clients-03/qwen/json_schema/1", "ben-clients-03")  # a case pattern keeps every sample
    assert CaseSelection(selection=Selection(ids=("ben-*",))).wants("anything/x/y/1", "anything")


def test_a_seeded_subset_is_drawn_across_conversations_and_again_the_same() -> None:
    def draw(seed: int) -> list[str]:
        return [c.id for c in CaseSelection(selection=Selection(sample=12, seed=seed)).select(SHELLPER.cases)]

    first = draw(7)
    assert first == draw(7) and first != draw(8) and len(first) == 12
    assert first == [i for i in IDS if i in first]  # in the suite's order
    conversations = {SHELLPER.cases[IDS.index(i)].conversation for i in first}  # type: ignore[union-attr]
    assert len(conversations) > 3  # not the first N points of one user's conversation
    assert CaseSelection(selection=Selection(sample=10_000, seed=1)).select(SHELLPER.cases) == SHELLPER.cases


@pytest.mark.parametrize("count", [1, 2, 3, 7])
def test_shards_partition_exactly_the_unsharded_selection(count: int) -> None:
    base = Selection(sample=40, seed=3, tags=())
    whole = [c.id for c in CaseSelection(limit=30, selection=base).select(SHELLPER.cases)]
    shares = [[c.id for c in CaseSelection(limit=30, selection=base.model_copy(
        update={"shard": Shard(index=i, count=count)})).select(SHELLPER.cases)] for i in range(1, count + 1)]
    assert sorted(i for share in shares for i in share) == sorted(whole)  # nothing lost, nothing twice
    assert max(map(len, shares)) - min(map(len, shares)) <= 1


BAD_SELECTIONS = [
    (["--shard", "0/2"], "--shard '0/2': expected I/N"),
    (["--shard", "3/2"], "--shard '3/2'"),
    (["--shard", "x"], "--shard 'x'"),
    (["--tag", "no-such-tag"], "the case selection takes none of the 6 cases of 'smoke' (--tag no-such-tag)"),
    (["--sample-id", "nobody-*"], "(--sample-id nobody-*)"),
    (["--sample", "0"], "--sample"),
    (["--retry-errors"], "--retry-errors runs again the errored samples of a saved run: give --resume"),
]


@pytest.mark.parametrize(("args", "named"), BAD_SELECTIONS)
def test_a_bad_selection_exits_2_naming_it(args: list[str], named: str, tmp_path: Path) -> None:
    result = runner.invoke(app, ["run", "smoke", "--engine", "oracle", "--out", str(tmp_path / "r"), *args])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert named in result.stderr
    assert not (tmp_path / "r" / "samples.jsonl").exists()


def _run(out: Path, *args: str) -> None:
    result = runner.invoke(app, ["run", "smoke", "--engine", "oracle", "--max-tokens", "16", "--out", str(out), *args])
    assert result.exit_code == 0, result.output


def _rates(run_dir: Path) -> dict[tuple[str, str, str], tuple[float | None, int | None, float | None, float | None]]:
    rates = ("validity", "exact_match", "state_match", "grammar_rejection", "truncated")
    return {(r.family, r.strategy, r.metric): (r.value, r.n, r.ci_low, r.ci_high)
            for r in read_summary(run_dir) if r.metric in rates}


def _lines(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "samples.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path]]:
    """The smoke suite on the oracle with a token bound that cuts some answers (failures to count), whole
    and in 3 shards."""
    root = tmp_path_factory.mktemp("shards")
    _run(root / "whole", "--sample-id", "*")
    parts = [root / f"s{i}" for i in range(1, 4)]
    for i, part in enumerate(parts, start=1):
        _run(part, "--sample-id", "*", "--shard", f"{i}/3")
    return root / "whole", parts


def test_merged_shards_equal_the_unsharded_run(shards: tuple[Path, list[Path]], tmp_path: Path) -> None:
    whole, parts = shards
    result = runner.invoke(app, ["merge", *map(str, reversed(parts)), "--out", str(tmp_path / "merged")])
    assert result.exit_code == 0, result.output
    merged = tmp_path / "merged"
    assert _rates(merged) == _rates(whole) and any(v[0] not in (0.0, 1.0) for v in _rates(whole).values())
    def answers(run_dir: Path) -> list[tuple]:
        return [(s["sample_id"], s["status"], s["error_kind"], [(t["output"], t["tool_calls"], t["prompt_id"])
                                                                for t in s["steps"]]) for s in _lines(run_dir)]

    got, strip = answers(merged), answers(whole)
    assert got == strip  # every sample once, in the unsharded run's order, with the same answers
    record = read_run(merged)
    assert record.merged_from == [p.name for p in parts] and record.options.selection == Selection(ids=("*",))
    assert len(record.engine_details["shards"]) == 3  # type: ignore[index]
    assert json.loads((merged / "errors.json").read_text()) == json.loads((whole / "errors.json").read_text())


def _copy(parts: list[Path], tmp_path: Path) -> list[Path]:
    copies = [tmp_path / p.name for p in parts]
    for part, copy in zip(parts, copies, strict=True):
        shutil.copytree(part, copy)
    return copies


def _drop_last_sample(part: Path) -> None:
    lines = (part / "samples.jsonl").read_text().splitlines(keepends=True)
    (part / "samples.jsonl").write_text("".join(lines[:-1]))


def _other_setup(part: Path) -> None:
    record = json.loads((part / "run.json").read_text())
    record["options"]["strategies"] = ["ebnf"]
    (part / "run.json").write_text(json.dumps(record))


def _other_suite(part: Path) -> None:
    record = json.loads((part / "run.json").read_text())
    record["inputs"]["suite_digest"] = "0" * 64
    (part / "run.json").write_text(json.dumps(record))


def _sampled(parts: list[Path], seeds: tuple[int, ...]) -> None:
    """The shards as if sampled at temperature 1 with these run seeds (a greedy run's seed is unused)."""
    for part, seed in zip(parts, seeds, strict=True):
        record = json.loads((part / "run.json").read_text())
        record["options"].update(temperature=1.0, seed=seed)
        (part / "run.json").write_text(json.dumps(record))


REFUSALS = [  # (what to do to the copied shards, the shards given, the problem named)
    (lambda parts: None, [0, 1], "shard 3/3 missing"),
    (lambda parts: None, [0, 1, 1, 2], "given twice"),
    (lambda parts: _drop_last_sample(parts[1]), [0, 1, 2], "finish it first"),
    (lambda parts: _other_setup(parts[2]), [0, 1, 2], "not a shard of the same run: strategies"),
    (lambda parts: _other_suite(parts[2]), [0, 1, 2], "changed since the run"),
    (lambda parts: _sampled(parts, (7, 7, 8)), [0, 1, 2], "not a shard of the same run: seed 8"),
    (lambda parts: None, [0], "two or more shard directories"),
]


@pytest.mark.parametrize(("damage", "given", "named"), REFUSALS)
def test_merge_refuses_what_is_not_one_run_naming_why(shards: tuple[Path, list[Path]], tmp_path: Path, damage, given,
                                                      named: str) -> None:
    parts = _copy(shards[1], tmp_path)
    damage(parts)
    out = tmp_path / "merged"
    result = runner.invoke(app, ["merge", *(str(parts[i]) for i in given), "--out", str(out)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert named in result.stderr
    assert not out.exists()  # nothing written before every check passed


def test_shards_of_two_splits_are_refused_before_anything_is_written(shards: tuple[Path, list[Path]],
                                                                   tmp_path: Path) -> None:
    """Shard 1/2 (complete for its share) with shard 2/3 of the same run: once a KeyError, after
    ``M/inputs/`` was written."""
    half = tmp_path / "half"
    _run(half, "--sample-id", "*", "--shard", "1/2")
    out = tmp_path / "merged"
    result = runner.invoke(app, ["merge", str(half), str(shards[1][1]), "--out", str(out)])
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    assert "shard 2/3 is a share of another split" in result.stderr
    assert not out.exists()


@pytest.mark.parametrize("out", ["/proc/harness-merge", "{file}/merged"])
def test_merge_into_a_folder_that_cannot_be_written_exits_2(shards: tuple[Path, list[Path]], tmp_path: Path,
                                                            out: str) -> None:
    (tmp_path / "file").write_text("")
    result = runner.invoke(app, ["merge", *map(str, shards[1]), "--out", out.format(file=tmp_path / "file")])
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    assert "--out" in result.stderr


def test_a_run_that_is_no_shard_is_refused(shards: tuple[Path, list[Path]], tmp_path: Path) -> None:
    whole, parts = shards
    result = runner.invoke(app, ["merge", str(whole), str(parts[0]), "--out", str(tmp_path / "m")])
    assert result.exit_code == 2 and "not a shard" in result.stderr


def test_a_run_records_its_selection_and_resume_keeps_it(tmp_path: Path) -> None:
    out = tmp_path / "r"
    base = ["run", "shellper", "--engine", "oracle", "--family", "qwen", "--strategy", "ebnf", "--out", str(out)]
    result = runner.invoke(app, [*base, "--tag", "tool_error", "--sample", "2", "--seed", "5"])
    assert result.exit_code == 0, result.output
    assert read_run(out).options.selection == Selection(tags=("tool_error",), sample=2, seed=5)
    assert len(_lines(out)) == 2
    result = runner.invoke(app, [*base, "--resume", "--tag", "other"])
    assert result.exit_code == 2 and "selection" in result.stderr  # another selection is another run
    result = runner.invoke(app, [*base, "--resume"])
    assert result.exit_code == 0 and "2 resumed" in result.output
