"""Compiled grammars kept on disk across runs: the oracle, the embedded engine and ``harness serve``
compile a tool set once per machine, not once per process.

A file per compiled grammar under ``user_cache_dir("harness")/grammars/`` (``HARNESS_GRAMMAR_CACHE``
names another folder; ``off`` turns the store off). Its name is a digest of the key: the artifact
(kind and text), the family's tokenizer (its build key, which hashes the source package versions) and
the grammar library's version; the file holds that key again and xgrammar's own serialization
(``CompiledGrammar.serialize_json``), which xgrammar checks against the tokenizer when it reads it
back. A file that does not parse, holds another key, or that xgrammar refuses is deleted and the
grammar compiled again: a cache file is never trusted blindly.

The folder is bounded (``DEFAULT_LIMIT_BYTES``; ``HARNESS_GRAMMAR_CACHE_BYTES`` sets another bound):
after a write, the least recently used files go until the rest fit. A hit touches its file. Writes go
to a temporary file renamed into place, so a reader never sees half a file and two processes writing
the same grammar leave one whole file.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.agents import ConstraintArtifact

DEFAULT_LIMIT_BYTES = 2 * 1024**3
"""2 GiB: a 1,000-tool grammar serializes to tens of MiB; a few hundred BFCL tool sets fit."""
FORMAT = 1
"""This file's own layout (bumped when the header changes)."""
SUFFIX = ".grammar.json"


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
        text = "\0".join((str(FORMAT), self.library, self.family, self.tokenizer, self.kind, self.value))
        return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=20).hexdigest()


def store_folder() -> Path | None:
    """The store's folder, or None when ``HARNESS_GRAMMAR_CACHE=off``."""
    named = os.environ.get("HARNESS_GRAMMAR_CACHE", "")
    if named.lower() in ("off", "0", "false", "no"):
        return None
    if named:
        return Path(named)
    from harness.grammar.tokenizer_files import cache_root

    return cache_root() / "grammars"


def limit_bytes() -> int:
    raw = os.environ.get("HARNESS_GRAMMAR_CACHE_BYTES", "")
    try:
        return int(raw) if raw else DEFAULT_LIMIT_BYTES
    except ValueError:
        return DEFAULT_LIMIT_BYTES


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


def load(folder: Path, key: StoreKey, tokenizer_info: Any) -> Any | None:
    """The compiled grammar kept for ``key``, or None (absent, or a corrupt or foreign file, which is
    deleted)."""
    import xgrammar as xgr

    digest = key.digest()
    path = folder / file_name(key)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    try:
        record = json.loads(text)
        if not isinstance(record, dict) or record.get("key") != digest or record.get("format") != FORMAT:
            raise ValueError("another key or layout")
        compiled = xgr.CompiledGrammar.deserialize_json(record["compiled"], tokenizer_info)
    except Exception:
        with contextlib.suppress(OSError):
            path.unlink()
        return None
    with contextlib.suppress(OSError):
        os.utime(path)
    return compiled


def save(folder: Path, key: StoreKey, compiled: Any, limit: int) -> bool:
    """Keep ``compiled`` for ``key``; False when the folder cannot be written (the run goes on)."""
    digest = key.digest()
    record = {"format": FORMAT, "key": digest, "library": key.library, "family": key.family,
              "kind": key.kind, "compiled": compiled.serialize_json()}
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=SUFFIX)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(record, fh)
            os.replace(tmp, folder / file_name(key))
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    except OSError:
        return False
    trim(folder, limit)
    return True


def trim(folder: Path, limit: int) -> list[Path]:
    """Delete the least recently used files until the folder holds at most ``limit`` bytes; the
    deleted paths."""
    entries = []
    for path in folder.glob(f"*{SUFFIX}"):
        if path.name.startswith(".tmp-"):
            continue
        with contextlib.suppress(OSError):
            st = path.stat()
            entries.append((st.st_mtime, st.st_size, path))
    total = sum(size for _, size, _ in entries)
    removed = []
    for _, size, path in sorted(entries, key=lambda e: e[0]):
        if total <= limit:
            break
        with contextlib.suppress(OSError):
            path.unlink()
            removed.append(path)
        total -= size
    return removed


__all__ = ["DEFAULT_LIMIT_BYTES", "StoreKey", "file_name", "limit_bytes", "load", "save", "store_folder", "store_key", "trim"]
