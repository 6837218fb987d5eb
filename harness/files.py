"""Reading input files and JSON with one clean error for every bad input.

Every file a user hands the harness (suite.yaml, cases.jsonl, bundle.yaml, tools files, calls files,
``.pym`` tools, imported data, run directories) is read through ``read_text`` (or ``read_bytes``) and
every JSON document or line through ``load_json``. A missing file, a directory, FIFO, device or socket
where a regular file belongs (``/dev/zero``, a named pipe: opened without blocking and refused, never
read), a file over ``MAX_FILE_BYTES``, bytes that are not UTF-8, JSON that does not parse, is over
``MAX_JSON_BYTES`` (one document or line) or nests deeper than ``MAX_JSON_DEPTH``, YAML whose aliases
expand past ``MAX_YAML_NODES`` (a "billion laughs") all raise :class:`InputFileError`, whose message names
the file (and the line, for JSON lines) and says what is wrong; callers turn it into their own error
type or print it as it is. Nothing here recurses, so a hostile input cannot raise RecursionError on its
way in, and what passes the depth bound is shallow enough for every later step (pydantic,
``json.dumps``, ``copy.deepcopy``) to walk it. (Not read through here: the package's own data, the
harness's user cache and the files it wrote itself in this process, and ``/proc``.)
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path
from typing import Any

import yaml

MIB = 1024 * 1024
MAX_FILE_BYTES = 256 * MIB
"""Largest input file read (the largest the project reads, the imported benchmark's data files, are under 4 MB)."""
MAX_JSON_BYTES = 16 * MIB
"""Largest JSON document or JSON line (the longest case line of the shipped and imported data is 24 KB)."""
MAX_YAML_NODES = 100_000
"""Most YAML nodes a document may hold once its aliases are expanded (suite.yaml and bundle.yaml hold
a few hundred): anchors and aliases stay usable, a "billion laughs" of nested aliases is refused at once."""
_READ_CHUNK = MIB

MAX_JSON_DEPTH = 128
"""Deepest nesting of arrays and objects accepted in an input file (a suite case with a deep file
tree, a JSON schema with nested objects need a few dozen levels; Python's own recursion limit is
1,000, and pydantic, ``json.dumps`` and ``deepcopy`` each spend several frames per level)."""


class InputFileError(ValueError):
    """An input file that cannot be read as what it should be; the message names it."""

    def __init__(self, where: str | Path, message: str) -> None:
        super().__init__(f"{where}: {message}")
        self.where = str(where)
        self.reason = message


_KINDS = ((stat.S_ISDIR, "is a directory, expected a file"), (stat.S_ISFIFO, "is a named pipe (FIFO), not a regular file"),
          (stat.S_ISCHR, "is a character device, not a regular file"), (stat.S_ISBLK, "is a block device, not a regular file"),
          (stat.S_ISSOCK, "is a socket, not a regular file"))


def read_bytes(path: str | Path, max_bytes: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of the regular file ``path``, at most ``max_bytes``; InputFileError when it is missing, not
    a regular file (checked on the opened file, so nothing can be swapped in between), over the bound or
    unreadable. A FIFO is opened without blocking and never read."""
    p = Path(path)
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise InputFileError(p, "not found") from None
    except IsADirectoryError:
        raise InputFileError(p, "is a directory, expected a file") from None
    except NotADirectoryError:
        raise InputFileError(p, "not found (a parent of it is a file, not a directory)") from None
    except OSError as exc:
        raise InputFileError(p, f"cannot read: {exc.strerror or exc}") from None
    try:
        return read_open(fd, p, max_bytes)
    finally:
        os.close(fd)


def read_open(fd: int, where: str | Path, max_bytes: int = MAX_FILE_BYTES,
              bound: str = "for an input file (MAX_FILE_BYTES)") -> bytes:
    """The bytes of the file open as ``fd`` (left open), at most ``max_bytes``; InputFileError naming
    ``where`` when it is not a regular file (checked with ``fstat`` on the open file: a FIFO or device is
    never read), is over the bound (``bound`` says which, in the message) or unreadable. ``read_bytes``
    opens and reads through it; a caller that opens its file itself (``O_NOFOLLOW``) does too."""
    try:
        mode, size = (info := os.fstat(fd)).st_mode, info.st_size
        for is_kind, what in _KINDS:
            if is_kind(mode):
                raise InputFileError(where, what)
        if not stat.S_ISREG(mode):
            raise InputFileError(where, "is not a regular file")
        over = f"over the bound of {max_bytes} bytes {bound}"
        if size > max_bytes:
            raise InputFileError(where, f"is {size} bytes: {over}")
        chunks: list[bytes] = []
        total = 0
        while chunk := os.read(fd, min(_READ_CHUNK, max_bytes + 1 - total)):
            chunks.append(chunk)
            total += len(chunk)
            if total > max_bytes:  # it grew while being read
                raise InputFileError(where, f"is more than {max_bytes} bytes: {over}")
        return b"".join(chunks)
    except OSError as exc:
        raise InputFileError(where, f"cannot read: {exc.strerror or exc}") from None


def read_text(path: str | Path, max_bytes: int = MAX_FILE_BYTES) -> str:
    """The UTF-8 text of the regular file ``path`` (see ``read_bytes``); InputFileError when it is not UTF-8."""
    data = read_bytes(path, max_bytes)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputFileError(
            path, f"line {line}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})"
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


class TooDeep(InputFileError):
    """JSON or YAML nested deeper than its bound."""


def _too_deep(where: str | Path, max_depth: int, bound: str) -> TooDeep:
    return TooDeep(where, f"nested deeper than {max_depth} levels (the bound {bound}={max_depth})")


def check_depth(value: Any, where: str | Path, max_depth: int = MAX_JSON_DEPTH, bound: str = "MAX_JSON_DEPTH") -> Any:
    """``value`` when it nests at most ``max_depth`` deep; InputFileError naming the ``bound`` otherwise."""
    if json_depth(value) > max_depth:
        raise _too_deep(where, max_depth, bound)
    return value


def _json_size(text: str | bytes, max_bytes: int) -> int:
    """The size of ``text`` in bytes, computed only when it may be over ``max_bytes``."""
    if isinstance(text, bytes) or len(text) * 4 <= max_bytes:
        return len(text)
    return len(text.encode("utf-8", "surrogatepass"))


def load_json(
    text: str | bytes, where: str | Path, max_depth: int = MAX_JSON_DEPTH, bound: str = "MAX_JSON_DEPTH",
    max_bytes: int = MAX_JSON_BYTES,
) -> Any:
    """``json.loads(text)``, with InputFileError (naming ``where``) for text over ``max_bytes`` (one document
    or line), that is not JSON or that nests deeper than ``max_depth`` (the setting called ``bound``)."""
    size = _json_size(text, max_bytes)
    if size > max_bytes:
        raise InputFileError(where, f"is {size} bytes of JSON: over the bound of {max_bytes} (MAX_JSON_BYTES)")
    try:
        value = json.loads(text)
    except RecursionError:
        raise _too_deep(where, max_depth, bound) from None
    except UnicodeDecodeError as exc:
        raise InputFileError(where, f"not UTF-8 text: {exc.reason}") from None
    except json.JSONDecodeError as exc:
        raise InputFileError(where, f"invalid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})") from None
    return check_depth(value, where, max_depth, bound)


def read_json(path: str | Path, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """The JSON document in the file ``path`` (see ``read_text`` and ``load_json``)."""
    return load_json(read_text(path), path, max_depth)


def read_json_lines(path: str | Path, max_depth: int = MAX_JSON_DEPTH) -> list[tuple[int, Any]]:
    """(line number, value) for each non-blank line of a JSON-lines file; the first bad line raises
    InputFileError naming ``path:line``."""
    out = []
    for lineno, line in enumerate(read_text(path).splitlines(), start=1):
        if line.strip():
            out.append((lineno, load_json(line, f"{path}:{lineno}", max_depth)))
    return out


def _expanded_nodes(root: yaml.Node, where: str | Path, max_nodes: int) -> None:
    """InputFileError when the node graph, its aliases expanded, holds more than ``max_nodes`` nodes or an
    alias inside itself. An alias shares its anchor's node, so sizes are computed once per node (no
    recursion, no expansion)."""
    sizes: dict[int, int] = {}
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    open_nodes: set[int] = set()
    while stack:
        node, done = stack.pop()
        key = id(node)
        children: list[yaml.Node] = []
        if isinstance(node, yaml.SequenceNode):
            children = list(node.value)
        elif isinstance(node, yaml.MappingNode):
            children = [n for pair in node.value for n in pair]
        if done:
            open_nodes.discard(key)
            sizes[key] = min(1 + sum(sizes[id(c)] for c in children), max_nodes + 1)
            if sizes[key] > max_nodes:
                raise InputFileError(where, f"its YAML aliases expand to more than {max_nodes} nodes (the bound "
                                        "MAX_YAML_NODES): refused before it is built")
            continue
        if key in sizes:
            continue
        if key in open_nodes:
            raise InputFileError(where, "a YAML alias refers to a node that contains it")
        open_nodes.add(key)
        stack.append((node, True))
        stack.extend((c, False) for c in children if id(c) not in sizes)


def load_yaml(text: str, where: str | Path, max_depth: int = MAX_JSON_DEPTH, max_nodes: int = MAX_YAML_NODES) -> Any:
    """``yaml.safe_load(text)``, with InputFileError for invalid YAML, aliases that expand past ``max_nodes``
    nodes, or nesting deeper than ``max_depth``."""
    try:
        loader = yaml.SafeLoader(text)
        try:
            node = loader.get_single_node()
            if node is None:
                return None
            _expanded_nodes(node, where, max_nodes)
            value = loader.construct_document(node)
        finally:
            loader.dispose()
    except RecursionError:
        raise _too_deep(where, max_depth, "MAX_JSON_DEPTH") from None
    except yaml.YAMLError as exc:
        raise InputFileError(where, f"invalid YAML: {' '.join(str(exc).split())}") from None
    return check_depth(value, where, max_depth)


def read_yaml(path: str | Path, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """The YAML document in the file ``path`` (see ``read_text`` and ``load_yaml``)."""
    return load_yaml(read_text(path), path, max_depth)


def check_output_dir(path: str | Path, option: str = "--out") -> None:
    """``path`` is a directory, or can be created as one (no file is in the way); InputFileError naming
    ``option`` otherwise."""
    p = Path(path)
    for ancestor in (p, *p.parents):
        if ancestor.exists():
            if not ancestor.is_dir():
                where = option if ancestor == p else f"{option} {str(p)!r}: its parent"
                raise InputFileError(where, f"{str(ancestor)!r} is a file, not a directory")
            return


def check_output_file(path: str | Path, option: str) -> None:
    """``path`` can be written as an output file (before any work starts, so a result is never lost to
    an unwritable path): not a directory, FIFO or device, in a folder that exists and takes a new file
    (one is created there and removed at once: the file is written through a temp file and a rename).
    InputFileError naming ``option`` otherwise."""
    import tempfile

    p = Path(path)
    where = f"{option} {str(p)!r}"
    if p.exists():
        mode = os.stat(p).st_mode
        for is_kind, what in _KINDS:
            if is_kind(mode):
                raise InputFileError(where, what)
    parent = p.parent
    if not parent.is_dir():
        raise InputFileError(where, f"its folder {str(parent)!r} does not exist")
    try:
        fd, probe = tempfile.mkstemp(dir=parent, prefix=f".{p.name[:64]}.", suffix=".probe")
        os.close(fd)
        os.unlink(probe)
        if p.exists():
            os.close(os.open(p, os.O_WRONLY | os.O_APPEND | os.O_NONBLOCK | os.O_CLOEXEC))
    except OSError as exc:
        raise InputFileError(where, f"cannot write there: {exc.strerror or exc}") from None


_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_text(text: str) -> str:
    """``text`` with the characters XML 1.0 cannot hold (control characters, lone surrogates) written as
    ``\\xNN`` escapes: a model's answer may hold any of them, and the JUnit file must still parse."""
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 256 else f"\\u{ord(m.group()):04x}", text)


__all__ = [
    "MAX_FILE_BYTES",
    "MAX_JSON_BYTES",
    "MAX_JSON_DEPTH",
    "MAX_YAML_NODES",
    "InputFileError",
    "TooDeep",
    "check_depth",
    "check_output_dir",
    "check_output_file",
    "json_depth",
    "load_json",
    "load_yaml",
    "read_bytes",
    "read_json",
    "read_json_lines",
    "read_open",
    "read_text",
    "read_yaml",
    "xml_text",
]
