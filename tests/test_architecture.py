"""The shape of ``harness/``, read from its source with ``ast``: no import cycle, the layers import
only downwards, no module over 600 lines.

Every import counts, at module level or inside a function (a lazy import still ties two modules
together); only ``if TYPE_CHECKING:`` blocks are left out (they never run). ``from package import
name`` counts as importing the submodule ``package.name`` when there is one.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "harness"
MAX_LINES = 600

LAYERS: dict[str, int] = {
    "stats": 0,
    "files": 0,
    "agents": 1,
    "grammar": 2,
    "sandbox": 2,
    "engines": 3,
    "bundles": 4,
    "eval": 5,
    "bench": 6,
    "fuzz": 6,
    "cli": 7,
}
"""A package may import its own modules and those of lower layers only (``harness`` itself, the
version, is below all)."""


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES: dict[str, Path] = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(child) for stmt in node.body for child in ast.walk(stmt))
    return skipped


def imports_of(name: str) -> set[str]:
    """The modules of ``harness`` that module ``name`` imports."""
    tree = ast.parse(MODULES[name].read_text(encoding="utf-8"))
    skipped = _type_checking_nodes(tree)
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name in MODULES)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module in MODULES:
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                found.add(sub if sub in MODULES else node.module)
    found.discard(name)
    return found


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


def test_the_kernel_imports_neither_sandbox_nor_engines() -> None:
    kernel = [n for n in MODULES if n.startswith("harness.agents")]
    assert not {d for n in kernel for d in GRAPH[n] if d.startswith(("harness.sandbox", "harness.engines"))}


@pytest.mark.parametrize("name", sorted(MODULES))
def test_no_module_over_600_lines(name: str) -> None:
    lines = len(MODULES[name].read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{MODULES[name]}: {lines} lines"


def design_table() -> dict[str, str]:
    """The README's Design table: package path -> what it holds."""
    text = (PACKAGE.parent / "README.md").read_text(encoding="utf-8")
    section = text.split("## Design", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|") for line in section.splitlines() if line.startswith("| `harness")]
    return {row[1].strip().strip("`"): row[2] for row in rows}


def test_the_readme_design_table_is_the_tree() -> None:
    listed = design_table()
    tree = {
        f"harness/{p.name}" for p in PACKAGE.iterdir()
        if (p.is_dir() and p.name != "__pycache__") or (p.suffix == ".py" and p.name != "__init__.py")
    }
    assert set(listed) == tree
    for package, held in listed.items():  # every module the table names is there
        for name in (n for n in held.split("`")[1::2] if n.endswith(".py")):
            assert (PACKAGE.parent / package / name).exists() or list((PACKAGE.parent / package).rglob(name)), (package, name)
