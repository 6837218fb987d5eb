"""``harness merge``: shard run directories (``harness run ... --shard I/N``) joined into one run, scored
as the run without ``--shard`` would have been: nothing lost, nothing counted twice.

Refused (``MergeError``, exit 2, naming the directory and the difference) unless the shards are the N
shares of one setup: the same options (``harness.run_options.differences``, the comparison ``--resume`` makes,
with ``--shard`` left out of the selection), the same models, the same suite and bundle (their digests in
run.json), every index 1..N once, and each shard complete (every sample its share holds saved, none
more). The merged directory holds the copies of the suite and bundle, every sample in the order the
unsharded run writes them, every prompt once, and a run.json naming the shards (``merged_from``);
each shard's servers and timings are in ``engine_details.shards``.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.eval.data import Suite
from harness.eval.run.resolved import CaseSelection
from harness.eval.store import (
    PROMPTS_FILE,
    RUN_FILE,
    SAMPLES_FILE,
    RunRecord,
    SampleRecord,
    SummaryRow,
    load_samples,
    make_sample_id,
    read_prompts,
    read_run,
    sample_line,
    setup_differences,
    setup_fields,
    write_run,
)
from harness.run_options import COMPARED, RunOptions, differences


class MergeError(ValueError):
    """Shards that cannot be joined into one run; the message names the directory and why."""


@dataclass(frozen=True)
class _Shard:
    path: Path
    run: RunRecord
    suite: Suite
    samples: dict[str, SampleRecord]


def expected_ids(run: RunRecord, suite: Suite, selection: CaseSelection) -> list[str]:
    """The sample ids a run of ``run``'s matrix with ``selection`` writes, in the order it writes them."""
    cases, options = selection.select(suite.cases), run.options
    ids = [(make_sample_id(case.id, family, strategy, epoch), case.id)
           for family in options.families or () for strategy in options.strategies or () for case in cases
           for epoch in range(1, (options.epochs or 1) + 1)]
    return [sample_id for sample_id, case_id in ids if selection.wants(sample_id, case_id)]


def _load(path: Path) -> _Shard:
    from harness.eval.score import run_suite_of

    run = read_run(path)
    if run.options.selection is None or run.options.selection.shard is None:
        raise MergeError(f"{path}: not a shard: its run.json records no --shard")
    if run.inputs is None:
        raise MergeError(f"{path}: its run.json records no copies of its suite and bundle (a run written before "
                         "runs kept them): it cannot be checked against the other shards")
    samples = load_samples(path / SAMPLES_FILE)
    return _Shard(path, run, run_suite_of(path, run), samples.samples)


def _unsharded(options: RunOptions) -> RunOptions:
    """``options`` as the run without ``--shard`` records them (a greedy run draws a seed it never uses)."""
    selection = options.selection.model_copy(update={"shard": None}) if options.selection else None
    return options.model_copy(update={"selection": selection, "seed": options.seed if options.temperature else None})


def _same_run(first: _Shard, other: _Shard) -> None:
    """The differences between two shards' setups, every one named (MergeError)."""
    a, b = first.run, other.run
    found = differences(_unsharded(b.options), _unsharded(a.options), COMPARED, skip_absent=False,
                        against=f"in {first.path}")
    for name, mine, theirs in (("suite", (a.suite.name, a.inputs and a.inputs.suite_digest),
                                (b.suite.name, b.inputs and b.inputs.suite_digest)),
                               ("bundle", a.inputs and a.inputs.bundle_digest, b.inputs and b.inputs.bundle_digest),
                               ("models", a.models or a.model, b.models or b.model)):
        if mine != theirs:
            found.append(f"{name} {theirs!r} (in {first.path}: {mine!r})")
    if a.setup is not None and b.setup is not None:  # the servers' versions and arguments, weights, template
        found += [f"setup.{d}" for d in setup_differences(setup_fields(a.setup), setup_fields(b.setup))]
    if found:
        raise MergeError(f"{other.path}: not a shard of the same run: {'; '.join(found)}")


def check_shards(shards: Sequence[_Shard]) -> list[str]:
    """Every check of the module doc; returns the merged run's sample ids in the unsharded run's order."""
    first = shards[0]
    for shard in shards[1:]:
        _same_run(first, shard)
    count = first.run.options.selection.shard.count  # type: ignore[union-attr]
    seen: dict[int, Path] = {}
    for shard in shards:
        shard_of = shard.run.options.selection.shard  # type: ignore[union-attr]
        index = shard_of.index  # type: ignore[union-attr]
        if shard_of.count != count:  # type: ignore[union-attr]
            raise MergeError(f"{shard.path}: shard {shard_of} is a share of another split than {first.path} (shard "
                             f"{first.run.options.selection.shard}): a merge joins the {count} shares of one "  # type: ignore[union-attr]
                             f"--shard I/{count} split")
        if index in seen:
            raise MergeError(f"{shard.path}: shard {index}/{count} is given twice (also {seen[index]})")
        seen[index] = shard.path
    missing = sorted(set(range(1, count + 1)) - set(seen))
    if missing:
        raise MergeError(f"shard{'s' if len(missing) > 1 else ''} {', '.join(f'{i}/{count}' for i in missing)} "
                         f"missing: a merge joins all {count} shares of a run")
    for shard in shards:
        wanted = expected_ids(shard.run, shard.suite, CaseSelection(shard.run.options.limit, shard.run.options.selection))
        lacking = [i for i in wanted if i not in shard.samples]
        extra = sorted(set(shard.samples) - set(wanted))
        if lacking:
            raise MergeError(f"{shard.path}: {len(lacking)} of its {len(wanted)} samples are not saved (first: "
                             f"{lacking[0]}): finish it first (harness run ... --out {shard.path} --resume)")
        if extra:
            raise MergeError(f"{shard.path}: samples.jsonl holds {len(extra)} samples outside its share (first: "
                             f"{extra[0]})")
    unsharded = first.run.options.selection.model_copy(update={"shard": None})  # type: ignore[union-attr]
    return expected_ids(first.run, first.suite, CaseSelection(first.run.options.limit, unsharded))


def _record(shards: Sequence[_Shard], out: Path) -> RunRecord:
    first = shards[0].run
    selection = first.options.selection.model_copy(update={"shard": None})  # type: ignore[union-attr]
    empty = not (selection.ids or selection.tags or selection.sample)
    machines = {s.run.machine for s in shards}
    details = [{"run_id": s.run.run_id, "shard": str(s.run.options.selection.shard),  # type: ignore[union-attr]
                "engine_details": s.run.engine_details, "machine": s.run.machine and s.run.machine.model_dump(),
                "timing": s.run.timing and s.run.timing.model_dump(), "base_url": s.run.base_url} for s in shards]
    return first.model_copy(update={
        "run_id": out.name, "options": first.options.model_copy(update={"selection": None if empty else selection}),
        "merged_from": [s.run.run_id for s in shards],
        "engine_details": {"shards": details}, "machine": first.machine if len(machines) == 1 else None,
        "base_url": ", ".join(dict.fromkeys(s.run.base_url for s in shards if s.run.base_url)) or None,
        "started_at": min(s.run.started_at for s in shards), "resumed_at": [],
        "finished_at": max((s.run.finished_at or "") for s in shards) or None, "timing": None,
    })


def _write(out: Path, first: Path, samples: str, prompts: str, record: RunRecord) -> None:
    """The merged directory's files; MergeError naming --out when it cannot be written (a folder this
    call created is removed again, so a failed merge leaves nothing behind)."""
    created = not out.exists()
    try:
        out.mkdir(parents=True, exist_ok=True)
        shutil.copytree(first / "inputs", out / "inputs", dirs_exist_ok=True)
        (out / SAMPLES_FILE).write_text(samples, encoding="utf-8")
        (out / PROMPTS_FILE).write_text(prompts, encoding="utf-8")
        write_run(out, record)
    except OSError as exc:
        if created:
            shutil.rmtree(out, ignore_errors=True)
        raise MergeError(f"--out {out}: cannot write the merged run there: {exc.strerror or exc}") from None


async def merge_runs(paths: Sequence[Path], out: Path) -> list[SummaryRow]:
    """Join the shard directories ``paths`` into ``out`` (see the module doc) and score it; returns its
    summary rows. MergeError or RunDirError naming the problem; nothing is written before every check
    passed."""
    from harness.bundles import bundle_source
    from harness.eval.score import run_suite_of, score_samples

    if len(paths) < 2:
        raise MergeError("harness merge joins two or more shard directories")
    shards = sorted((_load(Path(p)) for p in paths), key=lambda s: s.run.options.selection.shard.index)  # type: ignore[union-attr]
    order = check_shards(shards)
    if (out / RUN_FILE).exists() or (out / SAMPLES_FILE).exists():
        raise MergeError(f"--out {out}: already holds a run; merge into a new directory")
    by_id = {sid: record for shard in shards for sid, record in shard.samples.items()}
    lacking = [sid for sid in order if sid not in by_id]
    if lacking:
        raise MergeError(f"the shards do not hold {len(lacking)} of the run's {len(order)} samples (first: {lacking[0]})")
    prompts = {pid: p for shard in shards for pid, p in read_prompts(shard.path).items()}
    record = _record(shards, out)
    _write(out, shards[0].path, "".join(sample_line(by_id[sid]) for sid in order),
           "".join(p.model_dump_json() + "\n" for p in prompts.values()), record)
    _, source = bundle_source(shards[0].suite.bundle_dir)
    return await score_samples(out, record, run_suite_of(out, record), source)


__all__ = ["MergeError", "check_shards", "expected_ids", "merge_runs"]
