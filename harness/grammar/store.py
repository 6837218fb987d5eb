"""Compiled grammars kept on disk across runs: the oracle, the embedded engine and ``harness serve``
compile a tool set once per machine, not once per process.

A file per compiled grammar under ``user_cache_dir("harness")/grammars/`` (``HARNESS_GRAMMAR_CACHE``
names another folder; ``off``, ``0``, ``false`` or ``no``, stripped and in any case, turn the store off).
Its name is a digest of the key: the artifact (kind and text), the family's tokenizer (its build key,
which hashes the source package versions), the grammar library's version and this file's ``FORMAT``.

What a file serves is proved, not assumed from its name: it holds a header (the key digest, the family,
the kind, a digest of the artifact's kind and text, a digest of the tokenizer key, the library version),
a digest binding that header to the payload, and xgrammar's own serialization
(``CompiledGrammar.serialize_json``), which xgrammar checks against the tokenizer when it reads it back.
On a read each header field is compared with the request's and the digest recomputed; a file that is
not JSON, holds another request's header (another grammar copied under this name, a rewritten key),
does not match its digest, or that xgrammar refuses is removed, said in one line on the logger
``harness.grammar.store`` (Python's logging: stderr when nothing is configured), and the grammar
compiled again and written anew. A hit or a miss says nothing.

Nothing is read unbounded or through a link: a file is opened with ``O_NOFOLLOW | O_NONBLOCK`` and
``fstat``-ed (``harness.files.read_open``): a symbolic link (to ``/dev/zero``, to a file elsewhere), a
FIFO, a device, a socket or a directory is never read, touched or written through, and a file over
``entry_bound()`` (``MAX_ENTRY_BYTES``, or the store's bound when smaller: a sparse multi-GiB file) is
not read; each is removed (the link itself, never its target; a directory stays, and the grammar is
then not kept) with the same one-line note, and the grammar compiled again. A hit touches the file it read through its descriptor. The folder's own size
is measured with ``lstat``.

The folder is bounded (``DEFAULT_LIMIT_BYTES``; ``HARNESS_GRAMMAR_CACHE_BYTES``, a whole number of bytes,
sets another bound; another value is warned about once on the same logger and the default kept): when
a write takes it past the bound, the least recently used files go until the rest fit, and temporary
files older than ``STALE_TMP_S`` (a writer that died) go first; temporary files count in the size. A
process scans the folder once and then keeps a running total of what it wrote (rescanning every
``RESCAN_WRITES`` writes, for what other processes wrote): a scan after every write made a run of N
grammars cost O(N^2) stats. Writes go to a new temporary file renamed into place (which replaces a link
rather than writing through it), so a reader never sees half a file and two processes writing the same
grammar leave one whole file.

The digests prove the file is the one a harness wrote for this request (no mix-up, no damage); they are
not a signature: whoever can write the folder can write a consistent file, as they can any of the
user's cache.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import hashlib
import json
import logging
import os
import stat
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.agents import ConstraintArtifact
from harness.files import InputFileError, read_open

DEFAULT_LIMIT_BYTES = 2 * 1024**3
"""2 GiB: a 1,000-tool grammar serializes to tens of MiB; a few hundred single-turn tool sets fit."""
MAX_ENTRY_BYTES = 512 * 1024**2
"""Largest file read back (or the store's bound, when smaller): several times the largest plausible
grammar; a larger file (a sparse file, a file that grew) is removed unread."""
FORMAT = 2
"""This file's own layout (bumped when the header changes; it is part of the file name, so the files of
another layout are never read, only trimmed in time)."""
SUFFIX = ".grammar.json"
TMP_PREFIX = ".tmp-"
STALE_TMP_S = 3600.0
"""Age past which a temporary file is a dead writer's (removed on trim; counted in the size until then)."""
RESCAN_WRITES = 256
"""Writes between two scans of the folder's size in one process."""
OFF = frozenset({"off", "0", "false", "no"})
"""``HARNESS_GRAMMAR_CACHE`` values that turn the store off (stripped, any case)."""
LIMIT_ENV = "HARNESS_GRAMMAR_CACHE_BYTES"

_LOG = logging.getLogger(__name__)
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
_WARNED: set[str] = set()
"""The ``HARNESS_GRAMMAR_CACHE_BYTES`` values warned about in this process (each once)."""


def _hex(*parts: str) -> str:
    return hashlib.blake2b("\0".join(parts).encode("utf-8", "surrogatepass"), digest_size=20).hexdigest()


@dataclass(frozen=True, slots=True)
class StoreKey:
    """What a compiled grammar depends on."""

    family: str
    tokenizer: str
    """The family tokenizer's build key (``harness.grammar.tokenizers.cache_key``)."""
    library: str
    """``xgrammar <version>``."""
    kind: str
    value: str

    def digest(self) -> str:
        return _hex(str(FORMAT), self.library, self.family, self.tokenizer, self.kind, self.value)

    def header(self) -> dict[str, Any]:
        """What a file for this key says of itself, checked field by field when it is read back."""
        return {"format": FORMAT, "key": self.digest(), "family": self.family, "kind": self.kind,
                "artifact": _hex("artifact", self.kind, self.value), "tokenizer": _hex("tokenizer", self.tokenizer),
                "library": self.library}


_FIELDS = (("key", "another entry's key"), ("artifact", "another grammar"), ("kind", "another kind of artifact"),
           ("family", "another family's grammar"), ("tokenizer", "a grammar for another tokenizer"),
           ("library", "a grammar of another grammar library"))
"""The header fields checked against the request, and what a mismatch means."""


def _check(header: dict[str, Any], compiled: str) -> str:
    """The digest binding a file's header to its payload."""
    return _hex(json.dumps(header, sort_keys=True), compiled)


def store_folder() -> Path | None:
    """The store's folder, or None when ``HARNESS_GRAMMAR_CACHE`` is ``off`` (stripped, any case)."""
    named = os.environ.get("HARNESS_GRAMMAR_CACHE", "").strip()
    if named.lower() in OFF:
        return None
    if named:
        return Path(named)
    from harness.grammar.tokenizer_files import cache_root

    return cache_root() / "grammars"


def limit_bytes() -> int:
    """The store's bound: ``HARNESS_GRAMMAR_CACHE_BYTES`` (a whole number of bytes), else
    ``DEFAULT_LIMIT_BYTES``; another value is warned about once (logger ``harness.grammar.store``) and the
    default kept: the store is a speed-up, a bad bound never fails a run."""
    raw = os.environ.get(LIMIT_ENV, "")
    text = raw.strip()
    if not text:
        return DEFAULT_LIMIT_BYTES
    if text.isascii() and text.isdigit():
        return int(text)
    if raw not in _WARNED:
        _WARNED.add(raw)
        _LOG.warning("%s=%r is not a whole number of bytes: the grammar store keeps its default bound of %d "
                     "bytes", LIMIT_ENV, raw, DEFAULT_LIMIT_BYTES)
    return DEFAULT_LIMIT_BYTES


def entry_bound(limit: int | None = None) -> int:
    """The largest file read back: ``MAX_ENTRY_BYTES`` or the store's bound, whichever is smaller."""
    return min(MAX_ENTRY_BYTES, limit_bytes() if limit is None else limit)


@functools.cache
def library_version() -> str:
    """``xgrammar <version>`` (its package metadata) and its serialization version."""
    from importlib import metadata

    import xgrammar as xgr

    return f"xgrammar {metadata.version('xgrammar')} ({xgr.get_serialization_version()})"


def store_key(artifact: ConstraintArtifact, family: str) -> StoreKey:
    from harness.grammar.tokenizers import cache_key

    return StoreKey(family=family, tokenizer=cache_key(family), library=library_version(), kind=artifact.kind,
                    value=artifact.value)


def file_name(key: StoreKey) -> str:
    return f"{key.digest()}{SUFFIX}"


def holds(folder: Path, key: StoreKey) -> bool:
    """Whether the folder has a regular file (not a link) within the read bound for ``key``: checked
    without reading it (``load`` checks the rest)."""
    try:
        st = os.lstat(folder / file_name(key))
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_size <= entry_bound()


def load(folder: Path, key: StoreKey, tokenizer_info: Any, max_bytes: int | None = None) -> Any | None:
    """The compiled grammar kept for ``key``, or None: absent (quietly), or refused (removed, with a
    one-line warning on logger ``harness.grammar.store``): a link or anything but a regular file (never
    followed, read or touched), a file over ``max_bytes`` (default ``entry_bound()``), one whose header
    is not this request's (key, artifact digest, family, tokenizer digest, library), whose payload does
    not match its digest, or that xgrammar refuses. A hit touches the file it read (through its
    descriptor)."""
    path = folder / file_name(key)
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except FileNotFoundError:
        return None
    except OSError as exc:
        _refuse(path, "is a symbolic link" if exc.errno == errno.ELOOP else f"cannot be opened ({exc.strerror or exc})")
        return None
    try:
        try:
            data = read_open(fd, path, entry_bound() if max_bytes is None else max_bytes,
                             "for a grammar store entry (MAX_ENTRY_BYTES or HARNESS_GRAMMAR_CACHE_BYTES)")
        except InputFileError as exc:
            _refuse(path, exc.reason)
            return None
        why, compiled = _verify(data, key, tokenizer_info)
        if compiled is None:
            _refuse(path, why)
            return None
        _touch(fd, path)
        return compiled
    finally:
        os.close(fd)


def _verify(data: bytes, key: StoreKey, tokenizer_info: Any) -> tuple[str, Any]:
    """(why it is refused, None) or ("", the compiled grammar) for a file's bytes."""
    import xgrammar as xgr

    try:
        record = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return "is not JSON", None
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        return "is not a store entry of this layout", None
    expected = key.header()
    for field, what in _FIELDS:
        if record.get(field) != expected[field]:
            return f"holds {what} (its {field} field is not this request's)", None
    compiled = record.get("compiled")
    if not isinstance(compiled, str) or record.get("check") != _check(expected, compiled):
        return "does not match its digest (changed or damaged)", None
    try:
        return "", xgr.CompiledGrammar.deserialize_json(compiled, tokenizer_info)
    except Exception as exc:  # xgrammar raises RuntimeError/ValueError
        first = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
        return f"is refused by xgrammar ({first})", None


def _refuse(path: Path, why: str) -> None:
    """Remove a refused entry (the link itself, never what it points to) and say so in one line."""
    try:
        os.unlink(path)
        done = "removed"
    except FileNotFoundError:
        done = "gone"
    except OSError as exc:
        done = f"not removed ({exc.strerror or exc})"
    _LOG.warning("grammar store: %s %s: %s, the grammar is compiled again", path, why, done)


def _touch(fd: int, path: Path) -> None:
    """Mark a hit as recently used: the file read, through its descriptor (never a link's target)."""
    with contextlib.suppress(OSError, NotImplementedError):
        if os.utime in os.supports_fd:
            os.utime(fd)
        else:
            os.utime(path, follow_symlinks=False)


def save(folder: Path, key: StoreKey, compiled: Any, limit: int) -> bool:
    """Keep ``compiled`` for ``key``; False when the folder cannot be written (the run goes on). The file
    is written to a new temporary file and renamed over the entry (which replaces a link, never writes
    through it)."""
    header = key.header()
    try:
        payload = compiled.serialize_json()
    except (RuntimeError, MemoryError) as exc:  # std::bad_alloc: a grammar whose text grows past memory
        _LOG.warning("grammar store: a grammar of %d bytes in memory was not kept: %s", compiled.memory_size_bytes, exc)
        return False
    if len(payload) > entry_bound(limit):  # never read back (``load``'s bound): not written either
        _LOG.warning("grammar store: a grammar of %d bytes serialized was not kept (entries are read up to %d bytes)",
                     len(payload), entry_bound(limit))
        return False
    record = {**header, "check": _check(header, payload), "compiled": payload}
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=TMP_PREFIX, suffix=SUFFIX)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(record, fh)
                fh.flush()
                size = os.fstat(fh.fileno()).st_size
            os.replace(tmp, folder / file_name(key))
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    except OSError:
        return False
    _Usage.of(folder).wrote(folder, size, limit)
    return True


@dataclass(slots=True)
class _Usage:
    """This process's estimate of a folder's size: scanned on the first write and every
    ``RESCAN_WRITES`` writes, added to in between; the folder is trimmed when the estimate passes the bound."""

    total: int = -1
    writes: int = 0

    @staticmethod
    def of(folder: Path) -> _Usage:
        return _USAGE.setdefault(str(folder), _Usage())

    def wrote(self, folder: Path, size: int, limit: int) -> None:
        self.writes += 1
        if self.total < 0 or self.writes >= RESCAN_WRITES:
            self.total, self.writes = _size(folder), 0
        else:
            self.total += size
        if self.total > limit:
            trim(folder, limit)
            self.total = _size(folder)


_USAGE: dict[str, _Usage] = {}

Listing = list[tuple[float, int, Path]]


def _size(folder: Path) -> int:
    entries, temporary = _entries(folder)
    return sum(size for _, size, _ in (*entries, *temporary))


def _entries(folder: Path) -> tuple[Listing, Listing]:
    """(mtime, size, path) of the entries and of the temporary files, from ``lstat``: a link is never
    followed (it counts as its own few bytes and is trimmed like a file)."""
    entries: Listing = []
    temporary: Listing = []
    try:
        listing = os.scandir(folder)
    except OSError:
        return entries, temporary
    with listing:
        for item in listing:
            if not item.name.endswith(SUFFIX):
                continue
            with contextlib.suppress(OSError):
                st = item.stat(follow_symlinks=False)
                (temporary if item.name.startswith(TMP_PREFIX) else entries).append(
                    (st.st_mtime, st.st_size, Path(item.path)))
    return entries, temporary


def trim(folder: Path, limit: int) -> list[Path]:
    """Delete the temporary files older than ``STALE_TMP_S`` (a writer that died), then the least recently
    used entries until the folder holds at most ``limit`` bytes (temporary files count); the deleted
    paths. A link is removed itself, never its target."""
    entries, temporary = _entries(folder)
    total = sum(size for _, size, _ in (*entries, *temporary))
    stale = time.time() - STALE_TMP_S
    removed = []
    for mtime, size, path in temporary:
        if mtime < stale:
            with contextlib.suppress(OSError):
                os.unlink(path)
                removed.append(path)
                total -= size
    for _, size, path in sorted(entries, key=lambda e: e[0]):
        if total <= limit:
            break
        with contextlib.suppress(OSError):
            os.unlink(path)
            removed.append(path)
        total -= size
    return removed


__all__ = ["DEFAULT_LIMIT_BYTES", "MAX_ENTRY_BYTES", "StoreKey", "entry_bound", "file_name", "holds", "limit_bytes",
           "load", "save", "store_folder", "store_key", "trim"]
