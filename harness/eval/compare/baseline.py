"""``harness compare BASE NEW --update-baseline``: the kept baseline replaced by the candidate, all
at once, and only when nothing regressed (the CLI checks that first).

A baseline is a folder with the files the gate reads (``BASELINE_FILES``: run.json, summary.json,
scores.parquet, and errors.json when there is one): not the samples, which are large and which the
gate reads from the candidate only. The candidate's files are copied into a new folder beside the
baseline and flushed to disk, then the two folders are exchanged in one step (Linux's
``renameat2(RENAME_EXCHANGE)``, so a reader sees the old baseline or the new one, never a mix and
never half a file), then the old folder is removed. Where the exchange is not available (another
system, a file system without it) the old folder is renamed aside and the new one into its place
(a moment without a baseline, but still never a mixed or half-written one), and renamed back if the
second step fails.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import tempfile
from pathlib import Path

from harness.eval.store import ERRORS_FILE, RUN_FILE, SCORES_FILE, SUMMARY_FILE

BASELINE_FILES = (RUN_FILE, SUMMARY_FILE, SCORES_FILE, ERRORS_FILE)
REQUIRED = (RUN_FILE, SUMMARY_FILE, SCORES_FILE)
_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


class BaselineError(Exception):
    """The baseline cannot be updated; says which file or folder and why."""


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def exchange(a: Path, b: Path) -> bool:
    """Swap two paths in one step (Linux ``renameat2``); False where that is not available."""
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    errno = ctypes.get_errno()
    if errno in (22, 38, 95):  # EINVAL, ENOSYS, EOPNOTSUPP: not on this system or file system
        return False
    raise OSError(errno, os.strerror(errno), str(a))


def _swap(new: Path, baseline: Path) -> Path:
    """``new`` in ``baseline``'s place; returns where the old baseline is now."""
    if exchange(new, baseline):
        return new
    aside = baseline.with_name(f".{baseline.name}.old-{os.getpid()}")
    os.rename(baseline, aside)
    try:
        os.rename(new, baseline)
    except OSError:
        os.rename(aside, baseline)
        raise
    return aside


def update_baseline(baseline: Path, candidate: Path) -> list[Path]:
    """Replace the files of ``baseline`` with ``candidate``'s (module doc); the files it now holds."""
    baseline, candidate = Path(baseline), Path(candidate)
    missing = [name for name in REQUIRED if not (candidate / name).is_file()]
    if missing:
        raise BaselineError(f"{candidate}: cannot become the baseline: it has no {', '.join(missing)}")
    if not baseline.is_dir():
        raise BaselineError(f"{baseline}: not a directory (the baseline to replace)")
    new = Path(tempfile.mkdtemp(prefix=f".{baseline.name}.new-", dir=baseline.parent))
    try:
        for name in BASELINE_FILES:
            if (candidate / name).is_file():
                shutil.copyfile(candidate / name, new / name)
                _fsync(new / name)
        os.chmod(new, baseline.stat().st_mode & 0o7777)
        _fsync(new)
        old = _swap(new, baseline)
    except OSError as exc:
        shutil.rmtree(new, ignore_errors=True)
        raise BaselineError(f"{baseline}: cannot replace it: {exc.strerror or exc}") from None
    shutil.rmtree(old, ignore_errors=True)
    with contextlib.suppress(OSError):
        _fsync(baseline.parent)
    return sorted(baseline.iterdir())


__all__ = ["BASELINE_FILES", "BaselineError", "exchange", "update_baseline"]
