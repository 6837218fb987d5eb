"""A run directory's copies of its suite and bundle, so it is read the same from any folder, later.

``harness run`` copies the suite (suite.yaml and its cases file) and the bundle (bundle.yaml and its
``.pym`` tools) into ``RUN_DIR/inputs/`` before its first sample and records a digest of each in
run.json. ``harness score``, ``report`` and ``merge`` read those copies, never the paths the run was
started from: a run moved to another machine, or a repository whose suite changed since, gives the
same scores. A copy whose digest no longer matches (edited by hand, half-written) is refused, naming it.
A digest covers what a suite or bundle holds, not where it lies (settings, cases, tools), so a copy
and its original digest the same.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.eval.data.suite import Suite, SuiteError, load_suite
from harness.files import InputFileError, read_bytes

INPUTS_DIR = "inputs"
SUITE_COPY = f"{INPUTS_DIR}/suite"
BUNDLE_COPY = f"{INPUTS_DIR}/bundle"


class SnapshotError(ValueError):
    """A suite or bundle that cannot be copied, or a copy that is missing or no longer what was run;
    ``path`` names the file or folder, ``reason`` what is wrong with it."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path, self.reason = path, reason


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Where a run directory keeps its copies (relative to it) and the digests of what they hold."""

    suite: str
    suite_digest: str
    bundle: str
    bundle_digest: str


def _digest(parts: Iterable[tuple[str, bytes]]) -> str:
    digest = hashlib.sha256()
    for name, data in parts:
        digest.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
    return digest.hexdigest()


def suite_digest(suite: Suite) -> str:
    """sha256 of what a suite holds, wherever it lies: suite.yaml's settings (not where its bundle and
    cases file are) and the cases file's bytes."""
    spec = json.dumps(suite.spec.model_dump(mode="json", exclude={"bundle", "cases"}), sort_keys=True)
    return _digest([("suite.yaml", spec.encode()), ("cases", suite.cases_path.read_bytes())])


def _is_run_dir(folder: Path) -> bool:
    """A run directory (finished, or being written: its inputs copied, run.json not yet)."""
    return (folder / "run.json").is_file() or (folder / BUNDLE_COPY / "bundle.yaml").is_file()


def _bundle_modules(bundle_dir: Path) -> list[Path]:
    """The ``.py`` files under a Python bundle's folder: not hidden ones, not ``__pycache__``, and nothing
    under a run directory (``--out`` inside the bundle's folder must not make the bundle hold its runs'
    copies of it: each run would copy every earlier one, and its own digest would change under it)."""
    found: list[Path] = []
    for root, dirs, names in os.walk(bundle_dir):
        here = Path(root)
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__pycache__")) and not _is_run_dir(here / d))
        found.extend(here / n for n in names if n.endswith(".py") and not n.startswith(".") and (here / n).is_file())
    return sorted(found)


def _bundle_parts(bundle_dir: Path) -> tuple[Any, Path, list[Path]]:
    from harness.agents import BundleError, load_bundle_config

    try:
        config = load_bundle_config(bundle_dir)
    except BundleError as exc:
        raise SnapshotError(bundle_dir, str(exc)) from None
    if config.python is not None:  # the classes' modules beside bundle.yaml, and the tools JSON
        files = _bundle_modules(bundle_dir)
        listed = config.python.tools_json
        if listed is not None and _within(listed) and (bundle_dir / listed).is_file():
            files.append(bundle_dir / listed)
        return config, bundle_dir, files
    tools = bundle_dir / config.tools_dir
    return config, tools, sorted(tools.glob("*.pym"))


def bundle_digest(bundle_dir: Path) -> str:
    """sha256 of what a bundle holds: bundle.yaml's settings (not where its tools are) and each tool."""
    config, _, tools = _bundle_parts(bundle_dir)
    settings = json.dumps(config.model_dump(mode="json", exclude={"tools_dir"}), sort_keys=True)
    names = [t.relative_to(bundle_dir).as_posix() if config.python else t.name for t in tools]
    return _digest([("bundle.yaml", settings.encode()), *((n, read_bytes(t)) for n, t in zip(names, tools, strict=True))])


def digests(suite: Suite) -> tuple[str, str]:
    """The digests of ``suite`` and of its bundle (the same for a run directory's copies of them)."""
    return suite_digest(suite), bundle_digest(suite.bundle_dir)


def _within(relative: str) -> bool:
    """A relative path that stays below the folder it is relative to."""
    parts = Path(relative).parts
    return bool(parts) and not Path(relative).is_absolute() and ".." not in parts


def _rewritten(yaml_file: Path, key: str, value: str, target: Path) -> None:
    """``yaml_file`` copied to ``target`` with ``key`` set to ``value`` (comments are not kept)."""
    import yaml

    data = yaml.safe_load(yaml_file.read_text(encoding="utf-8"))
    data[key] = value
    target.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")


def _copy_suite(suite: Suite, target: Path) -> None:
    target.mkdir(parents=True)
    cases = suite.spec.cases if _within(suite.spec.cases) else "cases.jsonl"
    (target / cases).parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(suite.cases_path, target / cases)
    if cases == suite.spec.cases:
        shutil.copyfile(suite.path / "suite.yaml", target / "suite.yaml")
    else:
        _rewritten(suite.path / "suite.yaml", "cases", cases, target / "suite.yaml")


def _copy_bundle(bundle_dir: Path, target: Path) -> None:
    config, _, tools = _bundle_parts(bundle_dir)
    if config.python is not None:  # bundle.yaml with its modules and tools JSON, where they lie
        for file in [bundle_dir / "bundle.yaml", *tools]:
            (target / file.relative_to(bundle_dir)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(file, target / file.relative_to(bundle_dir))
        return
    folder = config.tools_dir if _within(config.tools_dir) else "tools"
    (target / folder).mkdir(parents=True)
    for tool in tools:
        shutil.copyfile(tool, target / folder / tool.name)
    if folder == config.tools_dir:
        shutil.copyfile(bundle_dir / "bundle.yaml", target / "bundle.yaml")
    else:
        _rewritten(bundle_dir / "bundle.yaml", "tools_dir", folder, target / "bundle.yaml")


def copy_inputs(suite: Suite, run_dir: Path) -> Snapshot:
    """Copy the suite and its bundle into ``run_dir/inputs`` (replacing an older copy) and digest them.
    A cases file or tools folder outside its suite or bundle is copied in, and the copy's suite.yaml or
    bundle.yaml says where."""
    inputs = run_dir / INPUTS_DIR
    shutil.rmtree(inputs, ignore_errors=True)
    try:
        _copy_suite(suite, run_dir / SUITE_COPY)
        _copy_bundle(suite.bundle_dir, run_dir / BUNDLE_COPY)
        found = digests(suite)
    except OSError as exc:
        raise SnapshotError(inputs, f"cannot copy the run's suite and bundle: {exc.strerror or exc}") from None
    except InputFileError as exc:  # a module that is over the input bound
        raise SnapshotError(inputs, f"cannot copy the run's suite and bundle: {exc}") from None
    return Snapshot(SUITE_COPY, found[0], BUNDLE_COPY, found[1])


def load_inputs(run_dir: Path, snapshot: Snapshot) -> Suite:
    """The suite a run directory keeps, with its bundle's copy; SnapshotError when a copy is missing or its
    digest is not the recorded one (the directory was half-written, or edited since)."""
    suite_dir, bundle_dir = run_dir / snapshot.suite, run_dir / snapshot.bundle
    for folder, what in ((suite_dir, "suite"), (bundle_dir, "bundle")):
        if not folder.is_dir():
            raise SnapshotError(folder, f"missing: run.json records a copy of the run's {what} here (a run "
                                        "directory copied in part, or killed while it was written?)")
    try:
        suite = load_suite(suite_dir, bundle_dir=bundle_dir)
        found = digests(suite)
    except (SuiteError, OSError, InputFileError) as exc:
        raise SnapshotError(suite_dir, f"the run's copy of its suite does not load: {exc}") from None
    for folder, what, recorded, digest in ((suite_dir, "suite", snapshot.suite_digest, found[0]),
                                           (bundle_dir, "bundle", snapshot.bundle_digest, found[1])):
        if digest != recorded:
            raise SnapshotError(folder, f"the copy of the run's {what} changed since the run (digest "
                                        f"{digest[:12]}, run.json records {recorded[:12]})")
    return suite


__all__ = [
    "BUNDLE_COPY",
    "INPUTS_DIR",
    "SUITE_COPY",
    "Snapshot",
    "SnapshotError",
    "bundle_digest",
    "copy_inputs",
    "digests",
    "load_inputs",
    "suite_digest",
]
