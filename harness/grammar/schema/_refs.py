"""``$ref`` in tool schemas: resolving pointers from the tool's parameters, refusing cycles that
produce no value, and making parameters embeddable in a larger schema.

Pydantic writes a nested model as ``{"$ref": "#/$defs/Address"}`` with the definitions at the
parameters' root. A pointer is read from that root (JSON Pointer, ``~0``/``~1`` escapes); only
pointers inside the document (``#...``) are followed, a remote one is refused.

``embeddable`` serves the json_schema strategy, whose schema nests each tool's parameters inside the
call schema (``{"name": ..., "arguments": <parameters>}``): a root-relative pointer no longer resolves
there, so every target is hoisted into ``$defs`` under a name of the tool's own and the pointers are
rewritten to it. The compile branch's schema shapes only need ``embeddable``'s result.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import unquote

from harness.agents import ConstraintError


def resolve(root: Any, pointer: Any, where: str = "parameters") -> Any:
    """The schema ``pointer`` (``#/$defs/X``, ``#``) names inside ``root``; ConstraintError otherwise."""
    if not isinstance(pointer, str) or not pointer.startswith("#"):
        raise ConstraintError(f"{where}: $ref {pointer!r} (only pointers inside the tool's schema are followed)")
    node = root
    path = unquote(pointer[1:])
    if path and not path.startswith("/"):
        raise ConstraintError(f"{where}: $ref {pointer!r} (an anchor, not a JSON pointer)")
    for part in path.split("/")[1:] if path else ():
        key = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and key in node:
            node = node[key]
        elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            raise ConstraintError(f"{where}: $ref {pointer!r} points at nothing")
    return node


def top_branches(root: Any, where: str = "parameters") -> list[Any]:
    """The object schemas a tool's arguments may match: ``root`` itself, or what its ``$ref`` chain
    names, and where that is a union without ``properties`` of its own (MCP's protocol schema: a root
    ``$ref`` to an ``anyOf`` of ``$ref``'d objects; a one-element ``allOf``), each branch's, flattened
    in order. The members of each are the arguments' alternatives; beside a ``properties`` a union
    stays what it was (the listed properties are the arguments)."""
    out: list[Any] = []

    def walk(schema: Any, seen: frozenset[str]) -> None:
        while isinstance(schema, Mapping) and isinstance(schema.get("$ref"), str) and schema["$ref"] not in seen:
            seen = seen | {schema["$ref"]}  # a model at the top (pydantic's recursive models): its definition
            schema = resolve(root, schema["$ref"], where)
        if isinstance(schema, Mapping) and "properties" not in schema:
            for key in ("anyOf", "oneOf"):
                if isinstance(schema.get(key), list) and schema[key]:
                    for branch in schema[key]:
                        walk(branch, seen)
                    return
            if isinstance(schema.get("allOf"), list) and len(schema["allOf"]) == 1:
                walk(schema["allOf"][0], seen)
                return
        out.append(schema)

    walk(root, frozenset())
    return out


def _children(schema: Mapping[str, Any]) -> list[tuple[Any, bool]]:
    """Sub-schemas that a value of ``schema`` must hold (True) or may hold (False)."""
    out: list[tuple[Any, bool]] = []
    required = set(schema.get("required") or ())
    for key, sub in (schema.get("properties") or {}).items() if isinstance(schema.get("properties"), Mapping) else ():
        out.append((sub, key in required))
    min_items = schema.get("minItems") or 0
    for i, sub in enumerate(schema.get("prefixItems") or ()):
        out.append((sub, i < min_items))
    if isinstance(schema.get("items"), Mapping):
        out.append((schema["items"], min_items > len(schema.get("prefixItems") or ())))
    for key in ("allOf",):
        out += [(sub, True) for sub in schema.get(key) or ()]
    return out


def _produces(schema: Any, root: Any, done: set[str]) -> bool:
    """Whether some finite value matches ``schema`` when only the pointers in ``done`` are known to."""
    if not isinstance(schema, Mapping):
        return True
    if "$ref" in schema and schema["$ref"] not in done:
        return False
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list) and not any(_produces(s, root, done) for s in schema[key]):
            return False
    return all(_produces(sub, root, done) for sub, must in _children(schema) if must)


def pointers(schema: Any) -> list[str]:
    """Every ``$ref`` value in ``schema`` (in definitions too), first seen first."""
    seen: dict[str, None] = {}

    def walk(node: Any) -> None:
        if isinstance(node, Mapping):
            if isinstance(node.get("$ref"), str):
                seen.setdefault(node["$ref"], None)
            for key, val in node.items():
                if key not in ("enum", "const", "default", "examples"):
                    walk(val)
        elif isinstance(node, list):
            for val in node:
                walk(val)

    walk(schema)
    return list(seen)


def check_refs(schema: Any, where: str = "parameters") -> str | None:
    """None when every pointer of ``schema`` resolves and produces a value; else which does not (a
    cycle with no base case, such as a node that requires a child node)."""
    if not isinstance(schema, Mapping):
        return None
    refs = pointers(schema)
    targets = {}
    for ref in refs:
        try:
            targets[ref] = resolve(schema, ref, where)
        except ConstraintError as exc:
            return str(exc)
    done: set[str] = set()
    changed = True
    while changed:
        changed = False
        for ref, target in targets.items():
            if ref not in done and _produces(target, schema, done):
                done.add(ref)
                changed = True
    for ref in refs:
        if ref not in done:
            return f"{where}: $ref {ref!r} (a $ref cycle with no base case: no finite value matches it)"
    return None


def embeddable(schema: Any, prefix: str, prepare: Callable[[Any], Any] = lambda s: s) -> tuple[Any, dict[str, Any]]:
    """``schema`` without its definitions, every pointer rewritten to ``#/$defs/<prefix>N``, and those
    definitions (each target passed through ``prepare``, e.g. ``strict_schema``) to hoist."""
    if not isinstance(schema, Mapping):
        return schema, {}
    refs = pointers(schema)
    if not refs:
        return prepare(schema), {}
    names = {ref: f"{prefix}{i}" for i, ref in enumerate(refs)}

    def rewrite(node: Any) -> Any:
        if isinstance(node, Mapping):
            return {k: (v if k in ("enum", "const", "default", "examples") else
                        f"#/$defs/{names[v]}" if k == "$ref" and v in names else rewrite(v))
                    for k, v in node.items() if k not in ("$defs", "definitions")}
        if isinstance(node, list):
            return [rewrite(v) for v in node]
        return node

    defs = {names[ref]: prepare(rewrite(resolve(schema, ref))) for ref in refs}
    return prepare(rewrite(schema)), defs


__all__ = ["check_refs", "embeddable", "pointers", "resolve", "top_branches"]
