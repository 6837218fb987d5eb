"""One problem per mistake in a file read into a pydantic model, with a did-you-mean for a misspelt key.

pydantic reports a misspelt required key twice: the key it does not know (``extra_forbidden``) and
the key it misses (``missing``). Users made one mistake, so ``friendly_errors`` reports one:
``modle: unknown key: did you mean 'model'?``, dropping the missing ``model`` it explains. An unknown
key with no close match lists the keys allowed there. Every file the harness reads through a model
(bundle.yaml, suite.yaml, cases, run records, run configs) reports its problems through here.

Imports only pydantic: every layer can use it.
"""

from __future__ import annotations

import difflib
import types
import typing
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ValidationError

Loc = tuple[int | str, ...]


def did_you_mean(word: str, choices: Sequence[str]) -> str | None:
    """The one of ``choices`` closest to ``word`` when it is close enough to be a typo, else None."""
    names = [str(c) for c in choices]  # plain text, also for the members of a StrEnum
    matches = difflib.get_close_matches(word, names, n=1, cutoff=0.6)
    if not matches:
        return {c.lower(): c for c in names}.get(word.lower())
    return matches[0]


def _models_in(annotation: Any) -> list[Any]:
    """The annotations inside ``annotation`` a location can step into (union members, list items...)."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _models_in(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return [m for arg in typing.get_args(annotation) for m in _models_in(arg)]
    return [annotation]


def _step(annotation: Any, part: int | str) -> Any | None:
    """The annotation one location part below ``annotation`` (a field, an item, a value), or None."""
    for candidate in _models_in(annotation):
        origin = typing.get_origin(candidate)
        args = typing.get_args(candidate)
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            if isinstance(part, str) and part in candidate.model_fields:
                return candidate.model_fields[part].annotation
        elif origin in (list, tuple, set, frozenset, Sequence) and isinstance(part, int) and args:
            return args[0]
        elif origin is dict and len(args) == 2:
            return args[1]
    return None


def fields_at(model: Any, loc: Loc) -> list[str]:
    """The keys ``model`` (a pydantic model, or an annotation holding models: ``list[Row]``) allows at
    ``loc`` (the mapping holding the key ``loc`` would name), or []."""
    annotation: Any = model
    for part in loc:
        annotation = _step(annotation, part)
        if annotation is None:
            return []
    names: list[str] = []
    for candidate in _models_in(annotation):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            names.extend(n for n in candidate.model_fields if n not in names)
    return names


def friendly_errors(exc: ValidationError, model: Any = None) -> list[tuple[Loc, str]]:
    """``(location, message)`` per mistake (see the module doc). Messages lose pydantic's ``Value error, ``."""
    errors = exc.errors(include_url=False)
    explained: set[Loc] = set()
    out: list[tuple[Loc, str]] = []
    for error in errors:
        loc: Loc = tuple(error["loc"])
        if error["type"] != "extra_forbidden" or not loc or not isinstance(loc[-1], str):
            continue
        parent, key = loc[:-1], loc[-1]
        known = fields_at(model, parent) if model is not None else []
        guess = did_you_mean(key, known) if known else None
        if guess is not None:
            out.append((loc, f"unknown key: did you mean {guess!r}?"))
            explained.add((*parent, guess))
        elif known:
            out.append((loc, f"unknown key: expected one of {', '.join(known)}"))
        else:
            out.append((loc, "unknown key"))
    kept: list[tuple[Loc, str]] = []
    for error in errors:
        loc = tuple(error["loc"])
        if error["type"] == "extra_forbidden" and loc and isinstance(loc[-1], str):
            kept.append(out.pop(0))
        elif not (error["type"] == "missing" and loc in explained):
            kept.append((loc, str(error["msg"]).removeprefix("Value error, ")))
    return kept


__all__ = ["Loc", "did_you_mean", "fields_at", "friendly_errors"]
