"""The documentation site: it builds with warnings as errors (every link and anchor checked), its
generated reference covers every command, option and file field, and every harness command written in
the README or a page exists with the options it is given."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.docs.pages import ROOT, commands, markdown_files, reference_module, shell_blocks

reference = reference_module()


@pytest.fixture(scope="module")
def generated() -> dict[str, str]:
    return reference.pages()


def check_options(path: tuple[str, ...], command: Any, page: str) -> None:
    for param in command.params:
        if param.param_type_name == "option" and not param.hidden:
            assert any(f"`{opt}" in page for opt in param.opts), (" ".join(path), param.opts)


def test_the_cli_reference_has_every_command_and_option(generated: dict[str, str]) -> None:
    page = generated["reference/cli.md"]
    seen = 0
    for path, command in reference.walk(reference.root_command()):
        name = " ".join(path)
        assert f"## `{name}`" in page, name
        section = page.split(f"## `{name}`", 1)[1].split("\n## ", 1)[0]
        check_options(path, command, section)
        seen += 1
    assert seen > 20  # run, score, report, compare, fuzz, the grammar/bench/vllm/import groups...


def test_the_file_references_have_every_field(generated: dict[str, str]) -> None:
    for page in reference.MODEL_PAGES:
        text = generated[page.path]
        for ref, _ in page.models:
            for model in reference.models_of(reference.load(ref)):
                section = text.split(f"## {model.__name__}\n", 1)[1].split("\n## ", 1)[0]
                for name, info in model.model_fields.items():
                    assert f"| `{info.alias or name}` |" in section, (page.path, model.__name__, name)


def test_a_field_docstring_reaches_the_reference(generated: dict[str, str]) -> None:
    """The text under a field in the code is its meaning on the page (the generator reads docstrings)."""
    from harness.eval.store import RunRecord

    doc = reference.field_doc(RunRecord, "engine_note")
    assert doc and " ".join(doc.split()) in generated["reference/results.md"]


def documented_commands() -> list[tuple[str, list[str]]]:
    found = []
    for path in markdown_files():
        for block in shell_blocks(path.read_text(encoding="utf-8")):
            found += [(str(path.relative_to(ROOT)), words) for words in commands(block)]
    return found


def resolve(words: list[str]) -> tuple[tuple[str, ...], Any, list[str]]:
    """The command a line names (the longest path of group names) and the words after it."""
    command = reference.root_command()
    path = ("harness",)
    rest = words[1:]
    while rest and hasattr(command, "commands") and rest[0] in command.commands:
        command = command.commands[rest[0]]
        path = (*path, rest[0])
        rest = rest[1:]
    return path, command, rest


@pytest.mark.parametrize(("page", "words"), documented_commands(), ids=lambda v: " ".join(v) if isinstance(v, list) else v)
def test_every_documented_command_exists_with_its_options(page: str, words: list[str]) -> None:
    path, command, rest = resolve(words)
    assert not hasattr(command, "commands") or "--help" in rest, f"{page}: {' '.join(words)}: no such command"
    options = {opt: p for p in command.params if p.param_type_name == "option" for opt in (*p.opts, *p.secondary_opts)}
    takes_value = False
    for word in rest:
        if takes_value:  # the value of the option before it, whatever it looks like
            takes_value = False
            continue
        if word.startswith("--") and word != "--help":
            flag = word.split("=", 1)[0]
            assert flag in options, f"{page}: {' '.join(words)}: {' '.join(path)} has no option {flag}"
            takes_value = "=" not in word and not getattr(options[flag], "is_flag", False)


def test_the_documentation_finds_commands() -> None:
    assert len(documented_commands()) > 50


@pytest.mark.slow
def test_the_site_builds_with_warnings_as_errors(tmp_path: Path) -> None:
    """`mkdocs build --strict`: a broken link or anchor, a page missing from the nav, or a generated page
    that fails stops the build."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "DISABLE_MKDOCS_2_WARNING": "true"}
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    for page in ("index.html", "reference/cli/index.html", "tutorials/gate-ci/index.html", "architecture/index.html"):
        assert (tmp_path / "site" / page).is_file(), page
