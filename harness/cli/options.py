"""Options shared by the commands, spelt one way everywhere, with their choices listed in ``--help``.

Families and strategies are ``harness.vocabulary``'s (a module that imports nothing, so ``harness
--help`` stays light). The engine, preset and mask-policy lists are literals so that ``harness --help``
imports no registry (they pull the kernel and asyncio); ``tests/test_cli_conventions.py`` checks each
one equals its registry, in the same (canonical) order. Lists of names are comma-separated
(``--strategy ebnf,json_schema``) and parsed by :func:`names_parser`, which names the option and the
choices when a name is unknown.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated

import typer

from harness import vocabulary
from harness.vocabulary import Family, Strategy

FAMILIES: tuple[str, ...] = vocabulary.FAMILIES
"""``harness.vocabulary.FAMILIES``."""
STRATEGIES: tuple[str, ...] = vocabulary.STRATEGIES
"""``harness.vocabulary.STRATEGIES``, in the canonical order every table and plot uses."""
CONSTRAINED: tuple[str, ...] = vocabulary.CONSTRAINED_STRATEGIES
"""``harness.vocabulary.CONSTRAINED_STRATEGIES``."""


class Engine(StrEnum):
    """``harness.engines.registry.ENGINE_NAMES``."""

    oracle = "oracle"
    local = "local"
    openai = "openai"
    vllm = "vllm"


class ServedEngine(StrEnum):
    """``harness.engines.registry.SERVED_ENGINE_NAMES``: what ``harness serve`` can serve."""

    oracle = "oracle"
    local = "local"


if TYPE_CHECKING:
    ConstrainedStrategy = Strategy
else:  # typer lists an enum's members as the choices: the constrained ones, derived from the vocabulary
    ConstrainedStrategy = StrEnum("ConstrainedStrategy", [(s.name, s.value) for s in vocabulary.CONSTRAINED_STRATEGIES])
"""One strategy that builds a grammar (``CONSTRAINED``): a choice list of its own for typer."""


class Target(StrEnum):
    """Whose grammar compiler the oracle replays gold through (``--target``):
    ``harness.engines.registry.TARGET_NAMES``, the engines whose ``EngineInfo`` has a ``grammar_target``."""

    vllm = "vllm"


class Reference(StrEnum):
    """The second grammar engine ``harness fuzz --reference`` compares masks with."""

    llguidance = "llguidance"


GrammarBackendOpt = Annotated[
    vocabulary.GrammarBackend | None,
    typer.Option(
        "--grammar-backend",
        help="The grammar library that runs the constraints, as vLLM's two structured-outputs backends: "
        "xgrammar, or guidance (llguidance). oracle and harness serve: in process; --engine vllm: the server's "
        "--structured-outputs-config.backend.",
    ),
]


class MaskPolicy(StrEnum):
    """``harness.grammar.decode.MaskPolicy``: when the embedded engine fills the token mask."""

    lazy = "lazy"
    always = "always"


class LimitsPreset(StrEnum):
    """The sandbox's limits presets (``harness.sandbox.Limits``)."""

    strict = "strict"
    default = "default"
    permissive = "permissive"


GRAMMAR_ENGINES: tuple[str, ...] = ("xgrammar", "llguidance")
"""``harness.bench.grammar.GRAMMAR_ENGINES``: grammar engines ``bench grammar`` compares."""


class Names(tuple[str, ...]):
    """Names given to a comma-separated option, checked against its choices, in the order given."""


def names_parser(choices: tuple[str, ...]) -> Callable[[str], Names]:
    """A typer ``parser`` for a comma-separated list of ``choices`` (BadParameter names the unknown one)."""

    def parse(value: str) -> Names:
        items = tuple(dict.fromkeys(v.strip() for v in value.split(",") if v.strip()))
        if not items:
            raise typer.BadParameter(f"no names in {value!r}: expected one or more of {', '.join(choices)}")
        for item in items:
            if item not in choices:
                raise typer.BadParameter(f"unknown {item!r}: expected one or more of {', '.join(choices)}")
        return Names(items)

    return parse


def _names_option(flag: str, choices: tuple[str, ...], default: str) -> typer.models.OptionInfo:
    return typer.Option(
        flag, parser=names_parser(choices), metavar="|".join(choices) + "[,...]",
        help=f"One or more, comma-separated (default: {default}).",
    )


Families = Annotated[Names | None, _names_option("--family", FAMILIES, "the suite's")]
"""``--family``: model families of a run."""
Strategies = Annotated[Names | None, _names_option("--strategy", STRATEGIES, "the suite's")]
"""``--strategy``: constraint strategies of a run."""
BenchFamilies = Annotated[Names | None, _names_option("--family", FAMILIES, "all")]
"""``--family`` of a benchmark."""
BenchStrategies = Annotated[Names | None, _names_option("--strategy", CONSTRAINED, "every constrained strategy")]
"""``--strategy`` of a benchmark (constrained strategies only)."""
GrammarEngines = Annotated[Names | None, _names_option("--grammar-engine", GRAMMAR_ENGINES, "both")]
"""``--grammar-engine``: the grammar engines ``bench grammar`` compares (not a model engine)."""


def example(*lines: str) -> str:
    """An ``Example:`` paragraph for a command's help, kept verbatim (click's ``\\b``)."""
    return "\b\nExample:\n" + "\n".join(f"  {line}" for line in lines)


__all__ = [
    "CONSTRAINED",
    "FAMILIES",
    "GRAMMAR_ENGINES",
    "STRATEGIES",
    "BenchFamilies",
    "BenchStrategies",
    "ConstrainedStrategy",
    "Engine",
    "Families",
    "Family",
    "GrammarBackendOpt",
    "GrammarEngines",
    "LimitsPreset",
    "MaskPolicy",
    "Names",
    "ServedEngine",
    "Strategies",
    "Strategy",
    "Target",
    "example",
    "names_parser",
]
