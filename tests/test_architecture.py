"""The shape of ``harness/``, read from its source with ``ast``: no import cycle, the layers import only
downwards, and the size limits (no folder over 12 modules, no module over 450 lines, no function over
80 lines), and package faces that hold (see ``FACE_RULE``).

Every import counts: at module level, inside a function (a lazy import still ties two modules
together), under ``if TYPE_CHECKING:`` (a type-only import is a dependency of the design all the same:
the circle sandbox/execute -> script -> typecheck -> execute ran through one), relative ones, and the
names a package's ``__init__`` loads on first use through ``harness.lazy.lazy_exports``. ``from
package import name`` counts as importing the submodule ``package.name`` when there is one.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "harness"
MAX_MODULES = 12
"""Python files in one folder, its ``__init__.py`` included."""
MAX_LINES = 450
MAX_FUNCTION_LINES = 80

LAYERS: dict[str, int] = {
    "vocabulary": 0,
    "lazy": 0,
    "stats": 0,
    "files": 0,
    "packaged": 0,
    "schema_errors": 0,
    "vllm_schemas": 0,
    "benchmarks": 0,
    "run_options": 1,
    "agents": 1,
    "grammar": 2,
    "sandbox": 2,
    "engines": 3,
    "tools": 3,
    "bundles": 4,
    "eval": 5,
    "bench": 6,
    "fuzz": 6,
    "bfcl": 6,
    "cli": 7,
}
"""A package may import its own modules and those of lower layers only (``harness`` itself, the
version, is below all)."""

PENDING: dict[str, int] = {}
"""What is still over a limit, with its measured size (modules in a folder, lines): empty since issue
21 split harness/eval/ and the ``run`` command. An entry may not grow, and one that is back within its
limit must be removed. Nothing else is allowed over a limit."""

EVAL_IMPORTS: dict[str, set[str]] = {
    "data": set(),
    "store": set(),
    "score": {"data", "store"},
    "run": {"data", "store", "score"},
    "report": {"data", "store", "score"},
    "compare": {"store"},
}
"""What each subpackage of ``harness/eval`` may import of the others. A run's data flows data -> run ->
store -> score -> report and compare: suites and the results store need nothing of the rest, scoring
reads suites and samples, a run scores what it ran, and nothing imports run, report or compare."""


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES: dict[str, Path] = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _table_values(node: ast.AST) -> list[str]:
    """The string values of a dict display (``**{...}`` and comprehensions included)."""
    if isinstance(node, ast.Dict):
        return [v for value in node.values for v in _table_values(value)]
    if isinstance(node, ast.DictComp):
        return _table_values(node.value)
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    return []


def _lazy_table(node: ast.AST) -> list[str]:
    """The submodules named by a ``lazy_exports(__name__, {...})`` call (relative to the package)."""
    if not (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "lazy_exports" and len(node.args) == 2):
        return []
    return [value.partition(":")[0] for value in _table_values(node.args[1])]


def imports_in(source: str, name: str, is_package: bool, known: set[str] | dict[str, Path]) -> set[str]:
    """The modules of ``known`` that the module ``name`` (its ``source``) imports, every kind counted."""
    package = name if is_package else name.rpartition(".")[0]
    found: set[str] = set()

    def add(module: str, names: list[str]) -> None:
        for alias in names:
            sub = f"{module}.{alias}"
            found.add(sub if sub in known else module)

    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = alias.name
                while target and target not in known:  # import a.b.c: the deepest module of harness
                    target = target.rpartition(".")[0]
                if target:
                    found.add(target)
        elif isinstance(node, ast.ImportFrom):
            base = package
            for _ in range(node.level - 1):
                base = base.rpartition(".")[0]
            module = (f"{base}.{node.module}" if node.module else base) if node.level else (node.module or "")
            if module in known:
                add(module, [a.name for a in node.names])
        else:
            for target in _lazy_table(node):
                if f"{package}.{target}" in known:
                    found.add(f"{package}.{target}")
                elif "." in target:
                    add(package, [target])  # a nested name: its deepest module of harness
    found.discard(name)
    return found


def imports_of(name: str) -> set[str]:
    """The modules of ``harness`` that module ``name`` imports."""
    path = MODULES[name]
    return imports_in(path.read_text(encoding="utf-8"), name, path.name == "__init__.py", MODULES)


GRAPH: dict[str, set[str]] = {name: imports_of(name) for name in MODULES}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def layer(name: str) -> int:
    top = name.split(".")[1] if "." in name else ""
    return LAYERS.get(top, -1)  # ``harness`` itself: below everything


def test_the_graph_is_read() -> None:
    assert "harness.agents.kernel" in GRAPH["harness.agents.agent"]
    assert "harness.grammar.mask" in GRAPH["harness.grammar.decode"]
    assert "harness.grammar.tokenizers" in GRAPH["harness.grammar"]  # its lazy_exports table


KNOWN = {"p", "p.a", "p.b", "p.c", "p.sub", "p.sub.d"}
# (what module p.a's source says, the modules of KNOWN it imports)
IMPORT_KINDS: list[tuple[str, set[str]]] = [
    ("import p.b", {"p.b"}),
    ("import p.b.nothing as x", {"p.b"}),
    ("from p import b, c", {"p.b", "p.c"}),
    ("from p.b import name", {"p.b"}),
    ("def f():\n    from p.b import name", {"p.b"}),
    ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from p.c import T", {"p.c"}),
    ("from . import b", {"p.b"}),
    ("from .sub import d", {"p.sub.d"}),
    ("from .sub.d import name", {"p.sub.d"}),
    ("class K:\n    def m(self):\n        import p.sub.d", {"p.sub.d"}),
    ("import os\nfrom json import dumps", set()),
]


@pytest.mark.parametrize(("source", "expected"), IMPORT_KINDS)
def test_every_kind_of_import_is_counted(source: str, expected: set[str]) -> None:
    assert imports_in(source, "p.a", False, KNOWN) == expected


def test_a_lazy_table_counts_as_imports_of_the_package() -> None:
    source = '__getattr__, __dir__ = lazy_exports(__name__, {"c": "b", "Y": "sub.d:other", **{n: "sub" for n in "ab"}})'
    assert imports_in(source, "p", True, KNOWN) == {"p.b", "p.sub.d", "p.sub"}  # a name is no import


def test_no_import_cycle() -> None:
    assert cycles(GRAPH) == []


def test_a_cycle_is_found_when_there_is_one() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_every_package_has_a_layer() -> None:
    tops = {n.split(".")[1] for n in MODULES if "." in n}
    assert tops == set(LAYERS)


@pytest.mark.parametrize("name", sorted(MODULES))
def test_imports_go_down_the_layers(name: str) -> None:
    upward = sorted(d for d in GRAPH[name] if layer(d) > layer(name) or (layer(d) == layer(name) and
                    d.split(".")[1] != name.split(".")[1]))
    assert upward == [], f"{name} imports a layer above (or beside) it"


def eval_part(name: str) -> str | None:
    """``run`` for ``harness.eval.run.runner``; None outside eval's subpackages."""
    parts = name.split(".")
    return parts[2] if len(parts) > 2 and parts[1] == "eval" else None


def test_every_eval_subpackage_is_listed() -> None:
    assert {eval_part(n) for n in MODULES} - {None} == set(EVAL_IMPORTS)


@pytest.mark.parametrize("name", sorted(n for n in MODULES if eval_part(n)))
def test_eval_subpackages_import_in_the_order_data_flows(name: str) -> None:
    own = eval_part(name)
    assert own is not None
    others = {part for d in GRAPH[name] if (part := eval_part(d)) not in (None, own)}
    assert others <= EVAL_IMPORTS[own], f"{name} imports harness.eval.{', harness.eval.'.join(sorted(others - EVAL_IMPORTS[own]))}"


def test_the_kernel_imports_neither_sandbox_nor_engines() -> None:
    kernel = [n for n in MODULES if n.startswith("harness.agents")]
    assert not {d for n in kernel for d in GRAPH[n] if d.startswith(("harness.sandbox", "harness.engines"))}


def test_the_kernel_imports_no_family_and_no_grammar_builder() -> None:
    """The kernel gets a family's adapter injected (``Agent.from_bundle(adapter_of=...)``, ``AgentKernel``'s
    adapter): nothing of ``harness.agents`` imports the families or the grammar builder."""
    kernel = [n for n in MODULES if n.startswith("harness.agents")]
    assert not {d for n in kernel for d in GRAPH[n] if d.startswith("harness.grammar")}


GRAMMAR_BUILDER_IMPORTS: dict[str, set[str]] = {
    "schema": set(),
    "formats": {"schema"},
    "families": {"schema", "formats"},
}
"""What each part of the grammar builder may import of the rest of ``harness.grammar``: the keyword rules
(``schema``) nothing, the one builder over a ``CallFormat`` (``formats``) the keyword rules, the families
(their records, prompts and parsers) both. The compiling and decoding modules beside them may use all
three; none of the three imports them (nor ``harness.grammar``'s own face)."""


def grammar_part(name: str) -> str | None:
    """``formats`` for ``harness.grammar.formats._ebnf``, ``compile`` for ``harness.grammar.compile``,
    ``__init__`` for ``harness.grammar``; None outside ``harness.grammar``."""
    parts = name.split(".")
    if len(parts) < 2 or parts[1] != "grammar":
        return None
    return parts[2] if len(parts) > 2 else "__init__"


@pytest.mark.parametrize("name", sorted(n for n in MODULES if grammar_part(n) in GRAMMAR_BUILDER_IMPORTS))
def test_the_grammar_builder_imports_only_below_itself(name: str) -> None:
    own = grammar_part(name)
    assert own is not None
    others = {part for d in GRAPH[name] if (part := grammar_part(d)) not in (None, own)}
    assert others <= GRAMMAR_BUILDER_IMPORTS[own], f"{name} imports harness.grammar.{', '.join(sorted(others))}"


def test_a_grammar_builder_breach_is_found() -> None:
    assert grammar_part("harness.grammar.formats._ebnf") == "formats" and grammar_part("harness.grammar") == "__init__"
    assert grammar_part("harness.agents.kernel") is None


ENGINE_SIDEWAYS_RULE = """
Inside ``harness/engines``, a *part* is a top-level module or subpackage (``registry``, ``vllm/``,
``serve/``). Three kinds of part:

- an *engine*: the part holding one registry line's code (its opener, and its server, availability
  check and grammar target if any): ``oracle/``, ``local/``, ``openai_engine.py``, ``vllm/``. Each
  engine is its own part; no two engines share one;
- ``serve/``, the HTTP server of ``harness serve``;
- a *shared* part: everything else (``registry``, ``shapes``, ``served``, ``tool_choice``, ``dialects/``,
  ``remote/``: what several engines use).

An import runs *sideways* when an engine imports another engine or ``serve``, when ``serve`` imports an
engine, or when a shared part imports an engine or ``serve``. None does: an engine uses another
engine's work only through a shared part (vLLM attached to a server you run goes through
``remote.attach``, as ``openai`` does) or through the registry's import paths (``--target``, the
engines ``harness serve`` runs). The package's face (``harness/engines/__init__.py``) re-exports and
is outside the rule.
"""


def engine_part(name: str) -> str | None:
    """``vllm`` for ``harness.engines.vllm.opener``, ``registry`` for ``harness.engines.registry``,
    ``__init__`` for ``harness.engines``; None outside ``harness.engines``."""
    parts = name.split(".")
    if parts[:2] != ["harness", "engines"]:
        return None
    return parts[2] if len(parts) > 2 else "__init__"


def _engine_parts() -> dict[str, str]:
    """Each registered engine -> the part its registry line's import paths lie in (one part each)."""
    from harness.engines import REGISTRY

    found: dict[str, str] = {}
    for name, info in REGISTRY.items():
        paths = [info.opener, info.server, info.availability, info.grammar_target]
        parts = {engine_part(p.partition(":")[0]) for p in paths if p is not None}
        assert len(parts) == 1, f"engine {name}'s code is spread over {sorted(map(str, parts))}: one part per engine"
        found[name] = parts.pop() or ""
    return found


ENGINE_PARTS = _engine_parts()


def sideways(name: str, imported: set[str], engines: set[str]) -> list[str]:
    """The imports of module ``name`` that run sideways (``ENGINE_SIDEWAYS_RULE``), one line each."""
    own = engine_part(name)
    if own in (None, "__init__"):
        return []
    kinds = {**dict.fromkeys(engines, "engine"), "serve": "serve"}
    found = []
    for target in sorted(imported):
        part = engine_part(target)
        if part not in kinds or part == own:
            continue  # outside engines, the face, a shared part or its own part: never sideways
        found.append(f"{name} ({kinds.get(own or '', 'shared')}) imports {target} ({kinds[part]})")
    return found


def test_each_engine_is_one_part_of_its_own() -> None:
    assert ENGINE_PARTS == {"oracle": "oracle", "local": "local", "openai": "openai_engine", "vllm": "vllm"}
    assert len(set(ENGINE_PARTS.values())) == len(ENGINE_PARTS)
    assert "serve" not in ENGINE_PARTS.values()


@pytest.mark.parametrize("name", sorted(n for n in MODULES if engine_part(n) not in (None, "__init__")))
def test_no_import_in_engines_runs_sideways(name: str) -> None:
    assert sideways(name, GRAPH[name], set(ENGINE_PARTS.values())) == [], ENGINE_SIDEWAYS_RULE


SIDEWAYS_CASES: list[tuple[str, set[str], int]] = [
    ("harness.engines.vllm.opener", {"harness.engines.openai_engine"}, 1),  # an engine into another
    ("harness.engines.vllm.opener", {"harness.engines.remote.attach", "harness.engines.shapes"}, 0),  # shared
    ("harness.engines.vllm.opener", {"harness.engines.vllm.models", "harness.agents"}, 0),  # its own, outside
    ("harness.engines.oracle.engine", {"harness.engines.vllm.backend"}, 1),
    ("harness.engines.oracle.opener", {"harness.engines.serve.server"}, 1),  # an engine into serve
    ("harness.engines.serve.server", {"harness.engines.local.engine"}, 1),  # serve into an engine
    ("harness.engines.serve.server", {"harness.engines.registry", "harness.engines.serve.limits"}, 0),
    ("harness.engines.remote.client", {"harness.engines.serve.limits"}, 1),  # shared into serve
    ("harness.engines.registry", {"harness.engines.oracle"}, 1),  # shared into an engine
    ("harness.engines", {"harness.engines.oracle.engine", "harness.engines.serve.server"}, 0),  # the face
]


@pytest.mark.parametrize(("name", "imported", "breaches"), SIDEWAYS_CASES)
def test_a_sideways_import_is_found(name: str, imported: set[str], breaches: int) -> None:
    assert len(sideways(name, imported, {"oracle", "local", "openai_engine", "vllm"})) == breaches


REPORT_NEVER_IMPORTS = ("harness.bundles", "harness.sandbox", "harness.tools", "harness.engines")
REPORT_MAY_USE_OF_SCORING = {"harness.eval.score.summary", "harness.eval.score.repeats", "harness.eval.score.verdicts"}
"""``harness report`` reads the run directory alone: what scoring executed (the gold calls' outputs, the
state diffs) is in details.jsonl. So the report loads no bundle, runs no tool (no sandbox, no Python
tool worker, no tool source), opens no engine, and of ``harness.eval.score`` uses what summarizes, never
what executes or scores (``scoring``, ``golds``, ``episodes``, ``score_dir``, BFCL's checkers)."""


def homes_in(source: str) -> set[str]:
    """The modules whose code ``source`` (absolute imports) imports: a name taken from a package face
    counts as the module that defines it (``from harness.eval.score import per_token``:
    ``harness.eval.score.summary``)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            homes = _defined_in(node.module) if is_package(node.module, MODULES) else {}
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                found.add(sub if sub in MODULES else homes.get(alias.name, node.module))
    return found


def report_breaches(source: str) -> set[str]:
    return {home for home in homes_in(source) if home.startswith(REPORT_NEVER_IMPORTS)
            or (home.startswith("harness.eval.score.") and home not in REPORT_MAY_USE_OF_SCORING)}


def test_a_report_breach_is_found() -> None:
    assert report_breaches("from harness.eval.score import Scorer, per_token") == {"harness.eval.score.scoring"}
    assert report_breaches("def f():\n    from harness.bundles import load_tools") == {"harness.bundles"}
    assert report_breaches("from harness.tools import PythonClassSource, PymSource") == {
        "harness.tools.python", "harness.tools.pym"}
    assert report_breaches("from harness.eval.store import read_details") == set()


@pytest.mark.parametrize("name", sorted(n for n in MODULES if n.startswith("harness.eval.report")))
def test_the_report_only_reads_the_run_directory(name: str) -> None:
    assert report_breaches(MODULES[name].read_text(encoding="utf-8")) == set(), "the report reads the run directory alone"


# -- package faces ---------------------------------------------------------------------------------------

FACE_RULE = """
A *unit* of ``harness`` is a top-level package (``harness.agents``, ``harness.grammar``, ...) or one of
``harness.eval``'s subpackages (``harness.eval.store``, ...); a top-level module (``harness.files``) is
its own face. A module of ``harness/`` may import:

1. any module of its own unit, except a ``_private`` module (``_calls.py``) of another folder: a private
   module is imported only by the modules of its own folder (its package's ``__init__`` included);
2. from another unit, only a package's ``__init__`` (the unit's face, or a subpackage's face), and from
   it only the names in that face's ``__all__``: never a module behind it (``harness.agents.types``),
   never a name the face does not export (a submodule object such as ``harness.engines.registry``).

Tests (``tests/``) are outside the rule on purpose: a test checks a module from inside, so it may import
any module of the code it tests, private ones included.

Every name in a face's ``__all__`` is used outside the module that defines it (in ``harness/`` or in
``tests/``, a face's own re-export not counted), or is library API: re-exported by ``harness.eval`` (the
library's face) or listed in ``LIBRARY_API``.
"""

LIBRARY_API: dict[str, set[str]] = {
    # the records and types that exported functions return or take, for a library caller to annotate
    "harness.grammar.families": {"FamilyInfo"},
    "harness.bfcl": {"BfclVerdict", "CallSyntaxError", "bfcl_sources"},
    "harness.bench": {"ClientBench", "EngineBench", "JumpBench", "SandboxBench", "ServeBench"},
    "harness.bench.grammar": {"GrammarCheck"},
    "harness.engines.remote": {"BoundedTransport", "ResponseTooLarge"},
    "harness.eval.compare": {"Diff"},
    "harness.eval.data": {"SuiteKind"},
    "harness.eval.store": {"SampleLog"},
    "harness.grammar": {"CompiledConstraint", "WalkResult"},
    "harness.packaged": {"PackagedSuite", "packaged_suite"},
    "harness.sandbox": {"DataProvider", "RecordingResultHandler", "StaticDataProvider", "close_pool"},
    "harness.sandbox.pym": {"CheckedSource"},
    "harness.sandbox.runtime": {"PresetName", "close_pool"},
}
"""Names a face exports for a library caller although nothing in ``harness/`` or ``tests/`` imports them
through it."""


def unit(name: str) -> str:
    """``harness.eval.store`` for ``harness.eval.store.records``, ``harness.agents`` for ``harness.agents.types``."""
    parts = name.split(".")
    return ".".join(parts[:3] if len(parts) > 2 and parts[1] == "eval" else parts[:2])


def is_package(name: str, known: dict[str, Path]) -> bool:
    return name in known and known[name].name == "__init__.py"


def folder(name: str, known: dict[str, Path]) -> str:
    return name if is_package(name, known) else name.rpartition(".")[0]


def face_exports(name: str, known: dict[str, Path]) -> set[str]:
    """The ``__all__`` of the package ``name``."""
    for node in ast.parse(known[name].read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
            return set(ast.literal_eval(node.value))
    return set()


def face_breaches(source: str, name: str, known: dict[str, Path]) -> list[str]:
    """The imports of module ``name`` (its ``source``) that break ``FACE_RULE``, one line each."""
    package = folder(name, known)
    found: list[str] = []

    def check(target: str, imported: str | None) -> None:
        private = target.rpartition(".")[2].startswith("_")
        if private and folder(target, known) != package:
            found.append(f"{target} is private to {folder(target, known)}")
        elif unit(target) == unit(name) or (target.count(".") <= 1 and not is_package(target, known)):
            return
        elif not is_package(target, known):
            found.append(f"{target} is behind the face {folder(target, known)}")
        elif imported is not None and imported not in face_exports(target, known):
            found.append(f"{target} does not export {imported}")

    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = alias.name
                while target and target not in known:
                    target = target.rpartition(".")[0]
                if target:
                    check(target, None)
        elif isinstance(node, ast.ImportFrom):
            base = package
            for _ in range(node.level - 1):
                base = base.rpartition(".")[0]
            module = (f"{base}.{node.module}" if node.module else base) if node.level else (node.module or "")
            if module not in known:
                continue
            for alias in node.names:  # a submodule imported by name is an import of that module
                sub = f"{module}.{alias.name}"
                if sub in known:
                    check(sub, None)
                else:
                    check(module, alias.name)
    return found


@pytest.mark.parametrize("name", sorted(MODULES))
def test_imports_go_through_package_faces(name: str) -> None:
    source = MODULES[name].read_text(encoding="utf-8")
    assert face_breaches(source, name, MODULES) == [], FACE_RULE


FACE_KNOWN = {
    n: Path(f"/{n.replace('.', '/')}/__init__.py" if n in {"harness", "harness.p", "harness.p.sub", "harness.q"} else f"/{n}.py")
    for n in ("harness", "harness.p", "harness.p.a", "harness.p._b", "harness.p.sub", "harness.p.sub._c", "harness.q",
              "harness.q.m", "harness.files")
}
# (the module that imports, its source, what breaks the rule)
FACE_CASES: list[tuple[str, str, list[str]]] = [
    ("harness.q.m", "from harness.p import A", []),
    ("harness.q.m", "from harness.p import Unexported", ["harness.p does not export Unexported"]),
    ("harness.q.m", "from harness.p import a", ["harness.p.a is behind the face harness.p"]),
    ("harness.q.m", "from harness.p.a import A", ["harness.p.a is behind the face harness.p"]),
    ("harness.q.m", "import harness.p.a", ["harness.p.a is behind the face harness.p"]),
    ("harness.q.m", "from harness.p._b import B", ["harness.p._b is private to harness.p"]),
    ("harness.q.m", "from harness.p.sub import C", []),
    ("harness.q.m", "from harness.files import read_text", []),
    ("harness.p.a", "from harness.p._b import B", []),
    ("harness.p.a", "from ._b import B", []),
    ("harness.p.a", "from harness.p.sub._c import C", ["harness.p.sub._c is private to harness.p.sub"]),
    ("harness.p.a", "from harness.p.sub import _c", ["harness.p.sub._c is private to harness.p.sub"]),
    ("harness.p.sub", "from harness.p.sub._c import C", []),
]


@pytest.mark.parametrize(("name", "source", "expected"), FACE_CASES)
def test_a_breach_of_the_faces_is_found(name: str, source: str, expected: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Path, "read_text", lambda self, encoding=None: '__all__ = ["A", "C"]')
    assert face_breaches(source, name, FACE_KNOWN) == expected


def _defined_in(face: str) -> dict[str, str]:
    """Each name the face ``face`` imports or lazily exports -> the module it comes from."""
    tree = ast.parse(MODULES[face].read_text(encoding="utf-8"))
    homes: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            homes.update({a.asname or a.name: node.module for a in node.names})
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "lazy_exports" and len(node.args) == 2:
            table = node.args[1]
            if isinstance(table, ast.Dict):
                homes.update({
                    k.value: f"{face}.{v.value.partition(':')[0]}" for k, v in zip(table.keys, table.values, strict=True)
                    if isinstance(k, ast.Constant) and isinstance(v, ast.Constant)
                })
    return homes


def _texts() -> dict[Path, str]:
    sources = [*PACKAGE.rglob("*.py"), *(PACKAGE.parent / "tests").rglob("*.py")]
    return {p: p.read_text(encoding="utf-8") for p in sources if p.name != "__init__.py"}


def unused_exports() -> list[str]:
    """``face name`` for every exported name used nowhere outside the module that defines it (as a whole
    word: a name is used in a file when one of the file's maximal runs of word characters is the name)."""
    used_in: dict[str, set[Path]] = {}
    for path, text in _texts().items():  # one pass over the files, not one regex search per name per file
        for word in set(re.findall(r"\w+", text)):
            used_in.setdefault(word, set()).add(path)
    library = face_exports("harness.eval", MODULES)
    unused = []
    for face in sorted(n for n in MODULES if is_package(n, MODULES)):
        homes = _defined_in(face)
        for export in sorted(face_exports(face, MODULES) - library - LIBRARY_API.get(face, set())):
            home = MODULES.get(homes.get(export, ""))
            if not used_in.get(export, set()) - {home}:
                unused.append(f"{face} {export}")
    return unused


def test_every_exported_name_is_used() -> None:
    assert unused_exports() == [], "exported but used nowhere: drop it from the face (or delete it), or list it in LIBRARY_API"


def test_library_api_entries_are_exported() -> None:
    for face, names in LIBRARY_API.items():
        assert names <= face_exports(face, MODULES), face


# -- sizes ---------------------------------------------------------------------------------------------


def _relative(path: Path) -> str:
    return path.relative_to(PACKAGE.parent).as_posix()


def measured() -> dict[str, tuple[int, int]]:
    """Every folder, module and function of ``harness/``: ``kind path`` -> (size, limit)."""
    sizes: dict[str, tuple[int, int]] = {}
    for folder in sorted({p.parent for p in MODULES.values()}):
        sizes[f"folder {_relative(folder)}"] = (len(list(folder.glob("*.py"))), MAX_MODULES)
    for path in MODULES.values():
        text = path.read_text(encoding="utf-8")
        sizes[f"module {_relative(path)}"] = (len(text.splitlines()), MAX_LINES)
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno is not None:
                key = f"function {_relative(path)}:{node.name}"
                size = node.end_lineno - node.lineno + 1
                sizes[key] = (max(size, sizes.get(key, (0, 0))[0]), MAX_FUNCTION_LINES)
    return sizes


SIZES = measured()


def test_the_sizes_are_measured() -> None:
    assert SIZES["folder harness/sandbox"][0] >= 6 and SIZES["module harness/vocabulary.py"][0] > 50
    assert SIZES["function harness/lazy.py:lazy_exports"][0] > 10


@pytest.mark.parametrize("what", sorted(SIZES))
def test_within_the_limits(what: str) -> None:
    size, limit = SIZES[what]
    if what in PENDING:
        assert size > limit, f"{what} is within its limit now ({size} <= {limit}): remove it from PENDING"
        assert size <= PENDING[what], f"{what} grew to {size} (PENDING says {PENDING[what]})"
    else:
        assert size <= limit, f"{what}: {size} (at most {limit})"


def test_every_pending_entry_still_exists() -> None:
    assert set(PENDING) <= set(SIZES)


def design_table() -> dict[str, str]:
    """docs/architecture.md's package table: package path -> what it holds."""
    text = (PACKAGE.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## Packages", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|") for line in section.splitlines() if line.startswith("| `harness")]
    return {row[1].strip().strip("`"): row[2] for row in rows}


def test_the_architecture_page_package_table_is_the_tree() -> None:
    listed = design_table()
    tree = {
        f"harness/{p.name}" for p in PACKAGE.iterdir()
        if (p.is_dir() and p.name != "__pycache__") or (p.suffix == ".py" and p.name != "__init__.py")
    }
    assert set(listed) == tree
    for package, held in listed.items():  # every module the table names is there
        for name in (n for n in held.split("`")[1::2] if n.endswith(".py")):
            assert (PACKAGE.parent / package / name).exists() or list((PACKAGE.parent / package).rglob(name)), (package, name)


# -- BFCL in one folder --------------------------------------------------------------------------------

NAMES_BFCL: dict[str, str] = {
    "harness.vocabulary": "the words scores.parquet and summary.json hold: bfcl_match, bfcl_match_bad_entry, bfcl:<error>",
    "harness.benchmarks": "the table's bfcl entry, its seams by import path",
    "harness.agents.bundle": "execution: bfcl in bundle.yaml",
    "harness.eval.data.cases": "bfcl_ground_truth in cases.jsonl; the single-turn cases' benchmark",
    "harness.cli.commands.suites": "harness import bfcl",
}
"""The modules of ``harness/`` outside ``harness/bfcl`` that name BFCL, and why (docs/architecture.md lists
them). A mention is any occurrence of ``bfcl``, case-insensitive: code, strings, comments and docstrings
alike, so the claim is what ``grep -rli bfcl harness`` says."""
MAX_NAMING_BFCL = 6


def names_bfcl(source: str) -> bool:
    return "bfcl" in source.lower()


def test_bfcl_is_named_in_its_folder_and_at_most_six_modules_besides() -> None:
    outside = {name for name, path in MODULES.items()
               if name.partition(".")[2].split(".")[0] != "bfcl" and names_bfcl(path.read_text(encoding="utf-8"))}
    assert outside == set(NAMES_BFCL), "a module outside harness/bfcl names BFCL: ask harness.benchmarks instead"
    assert len(NAMES_BFCL) <= MAX_NAMING_BFCL


def test_a_mention_of_bfcl_counts_in_a_comment_too() -> None:
    assert names_bfcl("x = 1  # as BFCL's checker") and names_bfcl('m = "bfcl_match"') and not names_bfcl("Gorilla")


def test_the_architecture_page_lists_the_modules_naming_bfcl() -> None:
    text = (PACKAGE.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("### BFCL in one folder", 1)[1].split("\n#", 1)[0]
    listed = {line.split("`")[1] for line in section.splitlines() if line.startswith("- `harness/")}
    assert listed == {MODULES[name].relative_to(PACKAGE.parent).as_posix() for name in NAMES_BFCL}
