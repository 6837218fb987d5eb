"""Reading input files and JSON with one clean error for every bad input.

Every file a user hands the harness (suite.yaml, cases.jsonl, bundle.yaml, tools files, calls files,
imported data, run directories) is read through ``read_text`` and every JSON document or line through
``load_json``. A missing file, a directory where a file belongs, bytes that are not UTF-8, JSON that
does not parse or that nests deeper than ``MAX_JSON_DEPTH`` all raise :class:`InputError`, whose
message names the file (and the line, for JSON lines) and says what is wrong; callers turn it into
their own error type or print it as it is. Nothing here recurses, so a hostile input cannot raise
RecursionError on its way in, and what passes the depth bound is shallow enough for every later step
(pydantic, ``json.dumps``, ``copy.deepcopy``) to walk it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

MAX_JSON_DEPTH = 128
"""Deepest nesting of arrays and objects accepted in an input file (a suite case with a deep file
tree, a JSON schema with nested objects need a few dozen levels; Python's own recursion limit is
1,000, and pydantic, ``json.dumps`` and ``deepcopy`` each spend several frames per level)."""


class InputError(ValueError):
    """An input file that cannot be read as what it should be; the message names it."""

    def __init__(self, where: str | Path, message: str) -> None:
        super().__init__(f"{where}: {message}")
        self.where = str(where)
        self.reason = message


def read_text(path: str | Path) -> str:
    """The UTF-8 text of the file ``path``; InputError when it is missing, a directory, not UTF-8 or
    unreadable."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise InputError(p, "not found") from None
    except IsADirectoryError:
        raise InputError(p, "is a directory, expected a file") from None
    except NotADirectoryError:
        raise InputError(p, "not found (a parent of it is a file, not a directory)") from None
    except OSError as exc:
        raise InputError(p, f"cannot read: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(
            p, f"line {line}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})"
        ) from None


def json_depth(value: Any) -> int:
    """How deep arrays and objects nest in ``value`` (a scalar is 0), without recursion."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        depth += 1
        deepest = max(deepest, depth)
        stack.extend((child, depth) for child in children)
    return deepest


class TooDeep(InputError):
    """JSON or YAML nested deeper than its bound."""


def _too_deep(where: str | Path, max_depth: int, bound: str) -> TooDeep:
    return TooDeep(where, f"nested deeper than {max_depth} levels (the bound {bound}={max_depth})")


def check_depth(value: Any, where: str | Path, max_depth: int = MAX_JSON_DEPTH, bound: str = "MAX_JSON_DEPTH") -> Any:
    """``value`` when it nests at most ``max_depth`` deep; InputError naming the ``bound`` otherwise."""
    if json_depth(value) > max_depth:
        raise _too_deep(where, max_depth, bound)
    return value


def load_json(
    text: str | bytes, where: str | Path, max_depth: int = MAX_JSON_DEPTH, bound: str = "MAX_JSON_DEPTH"
) -> Any:
    """``json.loads(text)``, with InputError (naming ``where``) for text that is not JSON or nests
    deeper than ``max_depth`` (the setting called ``bound``)."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise _too_deep(where, max_depth, bound) from None
    except UnicodeDecodeError as exc:
        raise InputError(where, f"not UTF-8 text: {exc.reason}") from None
    except json.JSONDecodeError as exc:
        raise InputError(where, f"invalid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})") from None
    return check_depth(value, where, max_depth, bound)


def read_json(path: str | Path, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """The JSON document in the file ``path`` (see ``read_text`` and ``load_json``)."""
    return load_json(read_text(path), path, max_depth)


def read_json_lines(path: str | Path, max_depth: int = MAX_JSON_DEPTH) -> list[tuple[int, Any]]:
    """(line number, value) for each non-blank line of a JSON-lines file; the first bad line raises
    InputError naming ``path:line``."""
    out = []
    for lineno, line in enumerate(read_text(path).splitlines(), start=1):
        if line.strip():
            out.append((lineno, load_json(line, f"{path}:{lineno}", max_depth)))
    return out


def load_yaml(text: str, where: str | Path, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """``yaml.safe_load(text)``, with InputError for invalid YAML or nesting deeper than ``max_depth``."""
    try:
        value = yaml.safe_load(text)
    except RecursionError:
        raise _too_deep(where, max_depth, "MAX_JSON_DEPTH") from None
    except yaml.YAMLError as exc:
        raise InputError(where, f"invalid YAML: {' '.join(str(exc).split())}") from None
    return check_depth(value, where, max_depth)


def read_yaml(path: str | Path, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """The YAML document in the file ``path`` (see ``read_text`` and ``load_yaml``)."""
    return load_yaml(read_text(path), path, max_depth)


def check_output_dir(path: str | Path, option: str = "--out") -> None:
    """``path`` is a directory, or can be created as one (no file is in the way); InputError naming
    ``option`` otherwise."""
    p = Path(path)
    for ancestor in (p, *p.parents):
        if ancestor.exists():
            if not ancestor.is_dir():
                where = option if ancestor == p else f"{option} {str(p)!r}: its parent"
                raise InputError(where, f"{str(ancestor)!r} is a file, not a directory")
            return


__all__ = [
    "MAX_JSON_DEPTH",
    "InputError",
    "TooDeep",
    "check_depth",
    "check_output_dir",
    "json_depth",
    "load_json",
    "load_yaml",
    "read_json",
    "read_json_lines",
    "read_text",
    "read_yaml",
]
