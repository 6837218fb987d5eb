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

It loses nothing: it refuses a baseline folder holding anything a baseline does not (a run folder's
samples, inputs, logs, a user's notes), the candidate itself, and a baseline and a candidate inside one
another; a baseline that is a symbolic link is updated at its target; a candidate whose files do not
read as their records is refused before anything is written; and it deletes no file it did not write.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import tempfile
from collections.abc import Callable
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


def _refuse_folder(baseline: Path, candidate: Path) -> None:
    """BaselineError unless ``baseline`` is a folder that is a baseline, apart from ``candidate``."""
    if not baseline.is_dir():
        raise BaselineError(f"{baseline}: not a directory (the baseline to replace)")
    if os.path.samefile(baseline, candidate):
        raise BaselineError(f"{baseline}: the baseline and the candidate are the same folder: nothing to update")
    real_base, real_cand = baseline.resolve(), candidate.resolve()
    if real_base in real_cand.parents:
        raise BaselineError(f"{candidate}: the candidate is inside the baseline ({baseline}): replacing the "
                            "baseline would delete it")
    if real_cand in real_base.parents:
        raise BaselineError(f"{baseline}: the baseline is inside the candidate ({candidate})")
    foreign = sorted(p.name + ("/" if p.is_dir() else "") for p in baseline.iterdir() if p.name not in BASELINE_FILES)
    if foreign:
        shown = ", ".join(foreign[:6]) + (f" and {len(foreign) - 6} more" if len(foreign) > 6 else "")
        raise BaselineError(
            f"{baseline}: not a kept baseline: it holds {shown}, which a baseline does not ({', '.join(BASELINE_FILES)}); "
            "--update-baseline replaces only a kept baseline, never a run folder. Make one: "
            f"mkdir BASE && cp {baseline}/{{{','.join(REQUIRED)}}} BASE/")
    for name in BASELINE_FILES:
        if (baseline / name).exists() and not (baseline / name).is_file():
            raise BaselineError(f"{baseline / name}: not a regular file")


def _check_candidate(candidate: Path) -> None:
    """BaselineError unless every file the baseline would take from ``candidate`` reads as its record."""
    from harness.eval.store import RunDirError, read_errors, read_run, read_scores, read_summary

    missing = [name for name in REQUIRED if not (candidate / name).is_file()]
    if missing:
        raise BaselineError(f"{candidate}: cannot become the baseline: it has no {', '.join(missing)}")
    try:
        read_run(candidate), read_summary(candidate), read_scores(candidate), read_errors(candidate)
    except RunDirError as exc:
        raise BaselineError(f"cannot become the baseline: {exc}") from None


def _remove_old(old: Path) -> Path | None:
    """Remove the old baseline's own files and then its folder; the folder when something else appeared
    in it meanwhile (kept: this never deletes a file it did not write)."""
    for name in BASELINE_FILES:
        with contextlib.suppress(FileNotFoundError):
            (old / name).unlink()
    try:
        old.rmdir()
    except OSError:
        return old
    return None


def check_baseline_update(baseline: Path, candidate: Path) -> None:
    """BaselineError unless ``candidate`` may replace ``baseline`` (module doc): checked before the gate
    compares anything, and again when it replaces."""
    _refuse_folder(Path(baseline), Path(candidate))
    _check_candidate(Path(candidate))


def update_baseline(baseline: Path, candidate: Path, note: Callable[[str], None] = lambda _m: None) -> list[Path]:
    """Replace the files of ``baseline`` with ``candidate``'s (module doc); the files it now holds.
    A baseline that is a symbolic link is updated at its target (the link stays). ``note`` hears of
    an old baseline folder kept because something else appeared in it meanwhile."""
    baseline, candidate = Path(baseline), Path(candidate)
    check_baseline_update(baseline, candidate)
    target = baseline.resolve()  # through a link: its target is replaced, the link keeps pointing there
    try:
        new = Path(tempfile.mkdtemp(prefix=f".{target.name}.new-", dir=target.parent))
    except OSError as exc:
        raise BaselineError(f"{baseline}: cannot write beside it in {target.parent} (the new baseline is built "
                            f"there, then swapped in): {exc.strerror or exc}") from None
    try:
        for name in BASELINE_FILES:
            if (candidate / name).is_file():
                shutil.copyfile(candidate / name, new / name)
                _fsync(new / name)
        os.chmod(new, target.stat().st_mode & 0o7777)
        _fsync(new)
        old = _swap(new, target)
    except OSError as exc:
        shutil.rmtree(new, ignore_errors=True)  # the folder this call made, holding only its copies
        raise BaselineError(f"{baseline}: cannot replace it: {exc.strerror or exc}") from None
    left = _remove_old(old)
    if left is not None:
        note(f"{baseline}: the old baseline's folder {left} was kept: something other than baseline files "
             "appeared in it while it was replaced")
    with contextlib.suppress(OSError):
        _fsync(target.parent)
    return sorted(target.iterdir())


__all__ = ["BASELINE_FILES", "BaselineError", "check_baseline_update", "exchange", "update_baseline"]
