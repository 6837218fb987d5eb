"""The documentation's reference pages, generated from the code: the CLI from the click commands typer
builds, the file formats from their pydantic models (fields, types, defaults and the docstrings written
under each field). The site build writes them (``build.py``, run by mkdocs-gen-files) and the tests
read them, so the reference cannot drift from the code: a command, flag or field the code has is on
the page, and one it lost is gone from it.

Kept out of the ``harness`` package: only the docs build and the tests use it.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
import types
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum
from functools import cache
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined


@dataclass(frozen=True)
class ModelPage:
    """One generated page about files: its path, title, introduction, and the models it documents."""

    path: str
    title: str
    intro: str
    models: tuple[tuple[str, str], ...]
    """(``module:Class``, what the model is) in the order shown; nested models follow their parent."""


MODEL_PAGES: tuple[ModelPage, ...] = (
    ModelPage(
        "reference/bundle-yaml.md", "bundle.yaml",
        "A bundle is a folder holding `bundle.yaml` and its tools. `harness init DIR` writes one that runs on "
        "the oracle at once; `harness validate SUITE` checks a suite, its bundle and every tool. Unknown keys "
        "are refused, one line per mistake, with a did-you-mean for a misspelt key. See also the "
        "[bundle guide](../bundle.md).",
        (("harness.agents:BundleConfig", "the whole file"),),
    ),
    ModelPage(
        "reference/suites.md", "Suites: suite.yaml and cases.jsonl",
        "A suite is a folder holding `suite.yaml` and `cases.jsonl` (one case per line; the suite's `kind` "
        "says which case type each line is). Every model forbids unknown fields; problems are reported as "
        "`<file>:<line>: <field path>: <message>`.",
        (
            ("harness.eval.data:SuiteSpec", "suite.yaml"),
            ("harness.eval.data:NextCallCase", "a line of cases.jsonl in a `next_call` suite"),
            ("harness.eval.data:EpisodeCase", "a line of cases.jsonl in an `episode` suite"),
            ("harness.eval.data:SingleTurnCase", "a line of cases.jsonl in a `single_turn` suite"),
        ),
    ),
    ModelPage(
        "reference/results.md", "Results files",
        "A run writes `results/<suite>-<engine>-<UTC time>/` (or `--out`). Every file has a typed record "
        "(`harness.eval.store`); unknown fields are errors, and files written by earlier versions still "
        "load. A *step* is one model call (with the tool calls it made), a *turn* one user input of an "
        "episode. The [results guide](../guides/results.md) says how to read them.",
        (
            ("harness.eval.store:RunRecord", "`run.json`"),
            ("harness.eval.store:SampleRecord", "one line of `samples.jsonl`"),
            ("harness.eval.store:ScoreRow", "one row of `scores.parquet`"),
            ("harness.eval.store:SummaryRow", "one row of `summary.json`"),
            ("harness.eval.store:ErrorCount", "one row of `errors.json`"),
            ("harness.eval.store:CaseDetail", "a case's line of `details.jsonl`"),
            ("harness.eval.store:SampleDiff", "a failed sample's line of `details.jsonl`"),
                    ),
    ),
)


def pages() -> dict[str, str]:
    """Every generated page: path under docs/ -> Markdown."""
    out = {"reference/cli.md": cli_page()}
    for page in MODEL_PAGES:
        out[page.path] = model_page(page)
    return out


# -- the CLI ------------------------------------------------------------------------------------------


def root_command() -> Any:
    import typer

    from harness.cli.main import app

    return typer.main.get_command(app)


def walk(command: Any, path: tuple[str, ...] = ("harness",)) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every command under ``command`` (groups first, then their commands, by name), with its path."""
    yield path, command
    if hasattr(command, "commands"):  # a group (typer ships its own click: no isinstance)
        for name in sorted(command.commands):
            sub = command.commands[name]
            if not sub.hidden:
                yield from walk(sub, (*path, name))


def _option_row(param: Any, ctx: Any) -> str:
    """One option as ``--help`` shows it: its flags with their value's name, and its help with the
    default and choices as the command states them."""
    record = param.get_help_record(ctx)
    flags, help_text = record if record else (", ".join(param.opts), "")
    # Python-Markdown's tables leave a | inside a code span alone, so the flags stay as --help spells them.
    return f"| `{flags}` | {_cell(' '.join(help_text.split()))} |"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def cli_page() -> str:
    lines = [
        "# Command line",
        "",
        "Generated from the commands themselves (`harness COMMAND --help` prints the same). Every command "
        "reports a problem as one line, `harness COMMAND: error: MESSAGE`, and exits with the codes in "
        "[errors and exit codes](errors.md).",
        "",
    ]
    root = root_command()
    ctx = root.context_class(root, info_name="harness")
    for path, command in walk(root):
        name = " ".join(path)
        lines += [f"## `{name}`", ""]
        sub_ctx = command.context_class(command, info_name=path[-1], parent=ctx)
        pieces = command.collect_usage_pieces(sub_ctx)
        lines += ["```text", f"{name} {' '.join(pieces)}".rstrip(), "```", ""]
        if command.help:
            lines += [inspect.cleandoc(command.help).replace("\b\n", ""), ""]
        arguments = [p for p in command.params if p.param_type_name == "argument"]
        options = [p for p in command.params if p.param_type_name == "option" and not p.hidden]
        if arguments:
            lines += ["| argument | required | what it is |", "| --- | --- | --- |"]
            lines += [f"| `{p.metavar or p.name.upper()}` | {'yes' if p.required else 'no'} | "
                      f"{_cell(' '.join((getattr(p, 'help', None) or '').split()))} |" for p in arguments]
            lines.append("")
        if options:
            lines += ["| option | what it does |", "| --- | --- |"]
            lines += [_option_row(p, sub_ctx) for p in options]
            lines.append("")
        if hasattr(command, "commands"):
            subs = [n for n in sorted(command.commands) if not command.commands[n].hidden]
            lines += ["Commands: " + ", ".join(f"`{name} {n}`" for n in subs) + ".", ""]
        if command.epilog:
            lines += ["```text", inspect.cleandoc(command.epilog).replace("\b\n", "").strip(), "```", ""]
    return "\n".join(lines)


# -- file formats -------------------------------------------------------------------------------------


def load(ref: str) -> type[BaseModel]:
    import importlib

    module, name = ref.split(":")
    model = getattr(importlib.import_module(module), name)
    assert isinstance(model, type) and issubclass(model, BaseModel), ref
    return model


@cache
def _attribute_docstrings(cls: type) -> dict[str, str]:
    """The docstring written under each annotated attribute of ``cls`` (as pydantic's
    ``use_attribute_docstrings`` reads them), without its bases'."""
    try:
        source = textwrap.dedent(inspect.getsource(cls))
    except (OSError, TypeError):
        return {}
    body = ast.parse(source).body[0]
    assert isinstance(body, ast.ClassDef)
    docs: dict[str, str] = {}
    for node, after in zip(body.body, [*body.body[1:], None], strict=True):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and isinstance(after, ast.Expr):
            value = after.value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                docs[node.target.id] = inspect.cleandoc(value.value)
    return docs


def field_doc(model: type[BaseModel], name: str) -> str:
    """A field's description: its ``Field(description=...)``, else the docstring under it in the class
    that declares it (bases included)."""
    info = model.model_fields[name]
    if info.description:
        return info.description
    for cls in model.__mro__:
        doc = _attribute_docstrings(cls).get(name) if cls.__module__ != "builtins" else None
        if doc:
            return doc
    return ""


def _nested(annotation: Any) -> Iterator[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation
        return
    for arg in typing.get_args(annotation):
        yield from _nested(arg)


def type_text(annotation: Any) -> str:
    """A type as a reader of the file sees it: `str`, `list[StepRecord]`, `none | ebnf | ...`."""
    if annotation is type(None):
        return "null"
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return " \\| ".join(str(m.value) for m in annotation)
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return " \\| ".join(str(a) for a in typing.get_args(annotation))
    if origin in (typing.Union, types.UnionType):
        return " \\| ".join(type_text(a) for a in typing.get_args(annotation))
    if origin is typing.Annotated:
        return type_text(typing.get_args(annotation)[0])
    if origin is not None:
        args = ", ".join(type_text(a) for a in typing.get_args(annotation))
        name = getattr(origin, "__name__", str(origin))
        return f"{name}[{args}]" if args else name
    if isinstance(annotation, type):
        if issubclass(annotation, BaseModel):
            return f"[{annotation.__name__}](#{annotation.__name__.lower()})"
        return annotation.__name__
    return str(annotation).replace("typing.", "")


def _default_text(model: type[BaseModel], name: str) -> str:
    info = model.model_fields[name]
    if info.is_required():
        return "required"
    if info.default_factory is not None:
        try:
            value = info.default_factory()  # type: ignore[call-arg]
        except TypeError:
            return "computed"
    else:
        value = info.default
    if value is PydanticUndefined:
        return "required"
    if isinstance(value, Enum):
        value = value.value
    if isinstance(value, list) and value and isinstance(value[0], Enum):
        value = [v.value for v in value]
    text = repr(value) if not isinstance(value, BaseModel) else "(defaults)"
    return f"`{text}`" if len(text) <= 60 else "(long)"


def model_section(model: type[BaseModel], what: str) -> list[str]:
    lines = [f"## {model.__name__}", ""]
    if what:
        lines += [f"*{what}*", ""]
    if model.__doc__ and model.__doc__ is not BaseModel.__doc__:
        lines += [inspect.cleandoc(model.__doc__), ""]
    lines += ["| field | type | default | meaning |", "| --- | --- | --- | --- |"]
    for name, info in model.model_fields.items():
        key = info.alias or name
        doc = " ".join(field_doc(model, name).split())
        lines.append(f"| `{key}` | {type_text(info.annotation)} | {_default_text(model, name)} | {_cell(doc)} |")
    lines.append("")
    return lines


def models_of(root: type[BaseModel]) -> list[type[BaseModel]]:
    """``root`` and every model its fields hold, depth first, each once."""
    seen: list[type[BaseModel]] = []

    def visit(model: type[BaseModel]) -> None:
        if model in seen:
            return
        seen.append(model)
        for info in model.model_fields.values():
            for nested in _nested(info.annotation):
                visit(nested)

    visit(root)
    return seen


def model_page(page: ModelPage) -> str:
    lines = [f"# {page.title}", "", "Generated from the pydantic models that read and write these files.", "",
             page.intro, ""]
    shown: set[type[BaseModel]] = set()
    for ref, what in page.models:
        for model in models_of(load(ref)):
            if model in shown:
                continue
            shown.add(model)
            lines += model_section(model, what if model is load(ref) else "")
    return "\n".join(lines)
