"""Every file the harness reads is a regular file under a size bound, and YAML aliases are bounded
(issue 22, item 4): a FIFO, a device, a file over ``MAX_FILE_BYTES``, a JSON line over
``MAX_JSON_BYTES`` or a "billion laughs" YAML is one error naming the file, exit 2 (1 for validate's
verdict), at once. Before: ``cases: /dev/zero`` grew validate to 22.8 GB; a FIFO and a 1 KB billion
laughs hung validate and run; a 60 MB case line was accepted.

Each command runs in a child process with a timeout that only catches a hang (no speed is asserted): all
of them in one child, one after the other, each in its own folder (``in_one_process``: one interpreter
start and one import of the harness, not 31)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hostile import copy_run, copy_suite, replace_in, write
from in_one_process import run_in_one_process

from harness.files import MAX_FILE_BYTES

HANG_S = 180.0
"""A command still running after this long is taken as hung (each of these answers in seconds)."""

LAUGHS = "\n".join(
    ["a: &a [x, x, x, x, x, x, x, x, x]"]
    + [f"{n}: &{n} [{', '.join([f'*{p}'] * 9)}]" for p, n in zip("abcdefgh", "bcdefghi", strict=True)]
) + "\n"
"""A 1 KB YAML document whose aliases expand to 9^9 (387 million) strings."""


def fifo(path: Path) -> Path:
    if path.exists():
        path.unlink()
    os.mkfifo(path)
    return path


def sparse(path: Path, size: int) -> Path:
    """A file of ``size`` bytes that takes no disk (a hole)."""
    with open(path, "wb") as fh:
        fh.truncate(size)
    return path


def _suite(tmp: Path, change: Callable[[Path], object]) -> Path:
    suite = copy_suite(tmp)
    change(suite)
    return suite


# (label, how the suite is broken, what the error names). Each runs through `validate` and `run`.
SUITES: list[tuple[str, Callable[[Path], object], str]] = [
    ("cases: /dev/zero", lambda s: replace_in(s / "suite.yaml", "cases: cases.jsonl", "cases: /dev/zero"),
     "/dev/zero: is a character device"),
    ("cases.jsonl a FIFO", lambda s: fifo(s / "cases.jsonl"), "cases.jsonl: is a named pipe (FIFO)"),
    ("suite.yaml a FIFO", lambda s: fifo(s / "suite.yaml"), "suite.yaml: is a named pipe (FIFO)"),
    ("suite.yaml a link to /dev/zero", lambda s: ((s / "suite.yaml").unlink(), (s / "suite.yaml").symlink_to("/dev/zero")),
     "suite.yaml: is a character device"),
    ("a 1 KB billion laughs suite.yaml", lambda s: write(s / "suite.yaml", LAUGHS), "suite.yaml: its YAML aliases expand"),
    ("a 60 MB cases line", lambda s: write(s / "cases.jsonl", '{"id": "' + "x" * (60 * 1024 * 1024) + '"}\n'),
     "cases.jsonl:1: is 62914570 bytes of JSON: over the bound"),
    ("cases.jsonl over MAX_FILE_BYTES", lambda s: sparse(s / "cases.jsonl", MAX_FILE_BYTES + 1),
     f"cases.jsonl: is {MAX_FILE_BYTES + 1} bytes: over the bound"),
    ("bundle.yaml a FIFO", lambda s: fifo(s.parent / "bundle" / "bundle.yaml"), "bundle.yaml: is a named pipe"),
    ("a billion laughs bundle.yaml", lambda s: write(s.parent / "bundle" / "bundle.yaml", LAUGHS),
     "bundle.yaml: its YAML aliases expand"),
    ("a tool .pym a FIFO", lambda s: fifo(s.parent / "bundle" / "tools" / "ls.pym"), "ls.pym: is a named pipe"),
    ("a tool .pym that is /dev/zero", lambda s: ((s.parent / "bundle" / "tools" / "ls.pym").unlink(),
                                                  (s.parent / "bundle" / "tools" / "ls.pym").symlink_to("/dev/zero")),
     "ls.pym: is a character device"),
]

COMMANDS: list[tuple[str, list[str], int]] = [
    ("validate", ["validate"], 1),
    ("run", ["run", "--engine", "oracle", "--family", "qwen", "--strategy", "ebnf", "--limit", "1"], 2),
]


def check(done: tuple[int, str], needle: str, codes: tuple[int, ...]) -> None:
    returncode, output = done
    assert "Traceback" not in output, output[-2000:]
    assert returncode in codes, f"exit {returncode}: {output[-2000:]}"
    assert needle in output, f"{needle!r} not in: {output[-2000:]}"


@pytest.mark.parametrize(("command", "args", "code"), COMMANDS, ids=[c[0] for c in COMMANDS])
@pytest.mark.parametrize(("label", "change", "needle"), SUITES, ids=[s[0] for s in SUITES])
def test_an_unbounded_suite_input_is_one_named_error(outcomes: dict[str, tuple[int, str]], label: str,
                                                     change: Callable[[Path], object], needle: str, command: str,
                                                     args: list[str], code: int) -> None:
    check(outcomes[f"{label}-{command}"], needle, (code, 2))


# Other commands' input files (label, the command's arguments under tmp, what the error names).
OTHERS: list[tuple[str, Callable[[Path], list[str]], str]] = [
    ("serve --config a FIFO", lambda t: ["serve", "--engine", "oracle", "--port", "0", "--config", str(fifo(t / "c.yaml"))],
     "c.yaml: is a named pipe"),
    ("serve --config a billion laughs", lambda t: ["serve", "--engine", "oracle", "--port", "0", "--config",
                                                   str(write(t / "c.yaml", LAUGHS))], "c.yaml: its YAML aliases expand"),
    ("grammar check --calls /dev/zero", lambda t: ["grammar", "check", "--family", "qwen", "--strategy", "ebnf",
                                                   "--tools", str(Path("tests/data/shellper_tools.json").resolve()),
                                                   "--calls", "/dev/zero"], "/dev/zero: is a character device"),
    ("grammar show --tools a FIFO", lambda t: ["grammar", "show", "--family", "qwen", "--strategy", "ebnf", "--tools",
                                               str(fifo(t / "tools.json"))], "tools.json: is a named pipe"),
    ("tool run a FIFO .pym", lambda t: ["tool", "run", str(fifo(t / "x.pym")), "--args", "{}"], "x.pym: is a named pipe"),
    ("import shellper from a FIFO", lambda t: ["import", "shellper", str(fifo(t / "data.jsonl")), "--out",
                                               str(t / "imported")], "data.jsonl: is a named pipe"),
    ("score a run whose run.json is a FIFO", lambda t: ["score", str(_run_with(t, "run.json"))], "run.json: is a named pipe"),
    ("score a run whose samples.jsonl is a FIFO", lambda t: ["score", str(_run_with(t, "samples.jsonl"))],
     "samples.jsonl: is a named pipe"),
    ("report a run whose scores.parquet is a FIFO", lambda t: ["report", str(_run_with(t, "scores.parquet")), "--out",
                                                               str(t / "report")], "scores.parquet: is a named pipe"),
]


def _run_with(tmp: Path, name: str) -> Path:
    run = copy_run(tmp)
    fifo(run / name)
    return run


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[int, str]]:
    """Every command of this module, each on its own broken input in its own folder (as each test built
    it before, in its ``tmp_path``), run in one child: ``label-command`` or ``label`` -> (exit code, output)."""
    jobs: list[dict[str, Any]] = []
    for label, change, _ in SUITES:
        for command, args, _ in COMMANDS:
            tmp = tmp_path_factory.mktemp("suite")
            suite = _suite(tmp, change)
            extra = ["--out", str(tmp / "out")] if command == "run" else []
            jobs.append({"key": f"{label}-{command}", "args": [*args, str(suite), *extra], "cwd": str(tmp)})
    for label, build, _ in OTHERS:
        jobs.append({"key": label, "args": build(tmp_path_factory.mktemp("other")), "cwd": str(Path.cwd())})
    return run_in_one_process(jobs, tmp_path_factory.mktemp("child"), HANG_S)


@pytest.mark.parametrize(("label", "build", "needle"), OTHERS, ids=[o[0] for o in OTHERS])
def test_other_commands_refuse_unbounded_input_files(outcomes: dict[str, tuple[int, str]], label: str,
                                                      build: Callable[[Path], list[str]], needle: str) -> None:
    check(outcomes[label], needle, (1, 2))
