"""Bounded walks over the JSON-like values that cross the sandbox's boundary.

Each walk is iterative (a 100k-deep value is no RecursionError here) and stops as soon as it knows the
answer, so a huge value costs no more than its limit: these run on every call, on the host.
"""

from __future__ import annotations

from typing import Any

_CONTAINERS = (list, tuple, dict)


def nesting_depth_over(value: Any, limit: int) -> bool:
    """Whether ``value`` nests lists, tuples and dicts more than ``limit`` deep (``[[1]]`` is 2 deep).
    Level by level: a 100k-deep value costs ``limit`` levels, a wide one its width."""
    level = [value] if isinstance(value, _CONTAINERS) else []
    depth = 0
    while level:
        depth += 1
        if depth > limit:
            return True
        below = []
        for node in level:
            for child in node.values() if isinstance(node, dict) else node:
                if isinstance(child, _CONTAINERS):
                    below.append(child)
        level = below
    return False


def size_over(value: Any, limit: int) -> bool:
    """Whether ``value`` takes more than ``limit`` bytes, counted as the sandbox would hold it at the
    least: 8 bytes per item and entry, and the length of strings and bytes. Stops at the limit."""
    total = 0
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, str | bytes | bytearray):
            total += len(node)
        elif isinstance(node, dict):
            total += 16 * len(node)
            if total <= limit:  # a container's own size is counted before its items are visited
                stack.extend(node.keys())
                stack.extend(node.values())
        elif isinstance(node, list | tuple | set | frozenset):
            total += 8 * len(node)
            if total <= limit:
                stack.extend(node)
        else:
            total += 8
        if total > limit:
            return True
    return False


def lone_surrogate(value: Any, where: str = "") -> str | None:
    """Where ``value`` holds a string that is not valid text (a lone UTF-16 surrogate such as
    ``"\\ud800"``, which JSON can carry but no sandbox string can hold): ``"name[2].key"``, or None."""
    stack: list[tuple[Any, str]] = [(value, where)]
    while stack:
        node, path = stack.pop()
        if isinstance(node, str):
            if not valid_text(node):
                return path or "value"
        elif isinstance(node, dict):
            for key, child in node.items():
                name = key if not isinstance(key, str) or valid_text(key) else ascii(key)
                if name is not key:
                    return f"{path}.{name}" if path else name
                stack.append((child, f"{path}.{name}" if path else str(name)))
        elif isinstance(node, list | tuple):
            stack.extend((child, f"{path}[{i}]") for i, child in enumerate(node))
    return None


def valid_text(text: str) -> bool:
    """Whether ``text`` can be encoded (no lone surrogate): what a sandbox string can hold."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


__all__ = ["lone_surrogate", "nesting_depth_over", "size_over", "valid_text"]
