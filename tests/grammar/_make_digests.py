"""Digests of every grammar text the harness builds, recorded before the grammar builder moved into
``harness.grammar`` (issue 38, item 3) so that a test proves the move changed no byte.

What is digested, for both families x every strategy (``none``, ``ebnf``, ``structural_tag``,
``json_schema``, ``required``, ``strict``) x three constraint settings (one call; parallel calls with a
text answer; objects left open): the whole request payload a family builds (the artifact's kind, text
and refused tools, the extra body, stop, ``tool_choice``, ``strict``, ``parallel_tool_calls``, what
vLLM builds), or the ``ConstraintError`` it raises; FunctionGemma's portable EBNF; the prompt each
family renders with the tools declared. Over three tool sources:

- ``shellper``: the shipped tools (``bundles/shellper/tools``, which ``bundles/bfcl`` reads too; the
  ``bfcl-one-call`` bundle takes each case's tools), as one set and each tool alone;
- ``bfcl``: BFCL's single-turn function documents (converted as BFCL converts them), distinct by name,
  in sets of ``CHUNK``; the first ``QUICK_CHUNKS`` sets are digested apart for the fast test;
- ``pydantic``: schemas written by pydantic's ``model_json_schema()`` (Literal, Enum, Optional,
  nested models with ``$defs``, recursive models, constrained numbers and strings, unions, dicts), as
  one set.

Run ``python tests/grammar/_make_digests.py`` to rewrite ``grammar_digests.json`` (only ever on code
whose grammars are meant to change: the file is the proof that a refactoring did not change them).
"""

from __future__ import annotations

import enum
import hashlib
import json
import sys
from collections.abc import Callable, Iterable, Sequence
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any, Literal, Optional

from pydantic import BaseModel, Field, conint, constr

from harness.agents import ConstraintError, DecodingConstraint, Message, ToolSchema
from harness.grammar.families import FAMILIES, get_adapter
from harness.vocabulary import STRATEGIES

ROOT = Path(__file__).resolve().parents[2]
DIGESTS_FILE = Path(__file__).with_name("grammar_digests.json")
CHUNK = 25
"""BFCL tools per tool set."""
QUICK_CHUNKS = 2
"""BFCL tool sets the fast test rebuilds (every set is in the recording)."""
SETTINGS: dict[str, dict[str, bool]] = {
    "one": {},
    "parallel-text": {"allow_parallel_calls": True, "allow_text_answer": True},
    "open": {"close_objects": False},
}
MESSAGES = (
    Message(role="system", content="You help."),
    Message(role="user", content="Do the thing."),
)


# --- what is built ----------------------------------------------------------------------------------


def _payload_text(family: str, tools: Sequence[ToolSchema], constraint: DecodingConstraint) -> str:
    try:
        payload = get_adapter(family).build_payload(tools, constraint)
    except ConstraintError as exc:
        return f"ConstraintError: {exc}"
    artifact = payload.artifact
    return json.dumps({
        "artifact": None if artifact is None else [artifact.kind, artifact.value, [list(r) for r in artifact.refused]],
        "extra_body": payload.extra_body, "stop": list(payload.stop), "tool_choice": payload.tool_choice,
        "strict_tools": payload.strict_tools, "parallel_tool_calls": payload.parallel_tool_calls,
        "server_built": payload.server_built,
    }, ensure_ascii=False, sort_keys=True)


def _portable(tools: Sequence[ToolSchema], parallel: bool, text_answer: bool, close_objects: bool) -> str:
    from harness.grammar.families.function_gemma import FORMAT
    from harness.grammar.formats import build_ebnf

    try:
        return build_ebnf(FORMAT, tools, parallel=parallel, portable=True, text_answer=text_answer,
                          close_objects=close_objects)
    except ConstraintError as exc:
        return f"ConstraintError: {exc}"


def _prompt(family: str, tools: Sequence[ToolSchema]) -> str:
    adapter = get_adapter(family)
    return adapter.render_prompt(adapter.format_messages(MESSAGES), tools) + json.dumps(
        adapter.format_tools(tools), ensure_ascii=False)


def texts(tools: Sequence[ToolSchema]) -> Iterable[tuple[str, str]]:
    """``(family|strategy, text)`` of everything built for one tool set (each strategy under every
    setting of ``SETTINGS``, in order)."""
    for family in FAMILIES:
        yield f"{family}|prompt", _prompt(family, tools)
        for setting, fields in SETTINGS.items():
            for strategy in STRATEGIES:
                constraint = DecodingConstraint(strategy=strategy, **fields)
                yield f"{family}|{strategy}", f"{setting}\n{_payload_text(family, tools, constraint)}"
            if family == "function_gemma":
                yield f"{family}|ebnf-portable", f"{setting}\n" + _portable(
                    tools, fields.get("allow_parallel_calls", False), fields.get("allow_text_answer", False),
                    fields.get("close_objects", True))


def digest_sets(named: Iterable[tuple[str, Sequence[ToolSchema]]]) -> dict[str, str]:
    """``set|family|strategy`` -> sha256 over the texts of every tool set given under ``set``
    (concatenated in order, each ended by a NUL)."""
    hashes: dict[str, Any] = {}
    for set_name, tools in named:
        for key, text in texts(tools):
            hashes.setdefault(f"{set_name}|{key}", hashlib.sha256()).update(text.encode() + b"\0")
    return {key: h.hexdigest() for key, h in hashes.items()}


# --- the tool sources -------------------------------------------------------------------------------


def shellper_tools() -> list[ToolSchema]:
    from harness.bundles import load_tools

    _, tools = load_tools(ROOT / "bundles" / "shellper")
    return [t.schema for t in tools]


def bfcl_chunks() -> list[list[ToolSchema]]:
    from harness.bfcl.data import distinct_tools

    tools = [ToolSchema.from_openai(t) for t in distinct_tools()]
    return [tools[i:i + CHUNK] for i in range(0, len(tools), CHUNK)]


class Colour(enum.StrEnum):
    red = "red"
    green = "green"


class Size(enum.IntEnum):
    small = 1
    large = 3


class Address(BaseModel):
    street: str
    city: str
    zip_code: Optional[str] = None  # noqa: UP045 - pydantic's anyOf-with-null spelling, as users write it


class Person(BaseModel):
    name: str
    age: int = Field(ge=0, le=150)
    colour: Colour = Colour.red
    home: Address
    others: list[Address] = []
    nickname: Optional[str] = None  # noqa: UP045


class TreeNode(BaseModel):
    label: str
    children: list[TreeNode] = []


class Settings(BaseModel):
    name: str
    extra: dict[str, int] = {}
    tags: dict[str, Any] = {}


class Order(BaseModel):
    kind: Literal["buy", "sell"]
    count: conint(gt=0, le=1000, multiple_of=5)  # type: ignore[valid-type]
    size: Size = Size.small
    code: constr(pattern=r"^[A-Z]{3}-[0-9]{2,4}$")  # type: ignore[valid-type]
    note: constr(min_length=2, max_length=8) = "ok"  # type: ignore[valid-type]
    price: Annotated[float, Field(gt=0.5, le=99.25)]
    amount: Decimal | None = None
    when: date | None = None
    ids: Annotated[list[int], Field(min_length=1, max_length=4)] = [1]
    pair: tuple[str, int] | None = None
    ship_to: Address | Person | None = None
    flag: bool = False


class Filter(BaseModel):
    field: Literal["name", "age", "city"]
    value: str | int | float | bool | None
    children: list[Filter] = []
    labels: Annotated[dict[str, str], Field(max_length=3)] = {}


class Step(BaseModel):
    """Refused by the EBNF builder (a fractional ``multipleOf``): the refusal's text is digested too."""

    ratio: float = Field(default=0.0, multiple_of=0.25)


PYDANTIC: dict[str, type[BaseModel]] = {
    "person": Person, "tree": TreeNode, "settings": Settings, "order": Order, "filter": Filter, "address": Address,
    "step": Step,
}


def pydantic_tools() -> list[ToolSchema]:
    return [ToolSchema(name=name, description=f"Take a {name}.", parameters=model.model_json_schema())
            for name, model in PYDANTIC.items()]


# --- the digests ------------------------------------------------------------------------------------


def quick_sets() -> list[tuple[str, Sequence[ToolSchema]]]:
    """What the fast test rebuilds: the shipped tools (as a set and each alone), the pydantic set and
    BFCL's first sets."""
    shellper, models = shellper_tools(), pydantic_tools()
    return [
        ("shellper", shellper), *((f"shellper:{t.name}", [t]) for t in shellper),
        ("pydantic", models),
        *(("bfcl-quick", chunk) for chunk in bfcl_chunks()[:QUICK_CHUNKS]),
    ]


def all_sets() -> list[tuple[str, Sequence[ToolSchema]]]:
    return [*quick_sets(), *(("bfcl-all", chunk) for chunk in bfcl_chunks())]


def main(argv: Sequence[str] = (), out: Callable[[str], object] = print) -> int:
    digests = digest_sets(all_sets())
    DIGESTS_FILE.write_text(json.dumps(dict(sorted(digests.items())), indent=0) + "\n", encoding="utf-8")
    out(f"{len(digests)} digests written to {DIGESTS_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
