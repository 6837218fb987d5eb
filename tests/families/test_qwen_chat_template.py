"""The Qwen3 chat template shipped for vLLM (harness/templates/qwen3.jinja) renders exactly what
``qwen.render_prompt`` renders, for the messages and tools as vLLM hands them to a template."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.agents import Message, ToolCall, ToolResult, ToolSchema
from harness.grammar.families.chat_templates import chat_template_path, render_chat_template
from harness.grammar.families.function_gemma_template import vllm_view
from harness.grammar.families.qwen import format_tools, render_prompt

DATA = Path(__file__).resolve().parent.parent / "data"
SHELLPER = [ToolSchema.from_openai(t) for t in json.loads((DATA / "shellper_tools.json").read_text())]
TOOLS = {t.name: t for t in SHELLPER}


def call(id_: str, name: str, **arguments: Any) -> ToolCall:
    return ToolCall(id_, name, arguments)


def result(id_: str, name: str, output: Any) -> Message:
    return Message.tool(ToolResult(id_, name, output))


def assistant(content: str | None, *calls: ToolCall) -> Message:
    return Message("assistant", content, tuple(calls))


CD = call("c1", "cd", folder="docs")
CP = call("c2", "cp", source="a.txt", destination="b/")
ECHO = call("c3", "echo", content="naïve — 日本語 🙂\nline2\t}", file_name="out.txt")

# id -> (messages, tools)
CASES: dict[str, tuple[list[Message], list[ToolSchema]]] = {
    "plain-user": ([Message("user", "List the files.")], SHELLPER),
    "no-tools": ([Message("user", "hi")], []),
    "no-tools-system": ([Message("system", "Be brief."), Message("user", "hi")], []),
    "system": ([Message("system", "You manage files."), Message("user", "go")], SHELLPER),
    "developer": ([Message("developer", "Dev says."), Message("user", "go")], [TOOLS["pwd"]]),
    "later-system": ([Message("user", "a"), Message("system", "Be terse."), Message("user", "b")], [TOOLS["cd"]]),
    "call-and-result": (
        [Message("user", "go to docs"), assistant(None, CD), result("c1", "cd", {"current_working_directory": "docs"})],
        SHELLPER,
    ),
    "parallel-calls-with-text": (
        [
            Message("user", "copy and echo"),
            assistant("Sure.", CP, ECHO),
            result("c2", "cp", {"result": "ok"}),
            result("c3", "echo", "written"),
            Message("user", "thanks"),
        ],
        SHELLPER,
    ),
    "answer-after-results": (
        [
            Message("user", "cd"),
            assistant(None, CD),
            result("c1", "cd", {"current_working_directory": "docs"}),
            assistant("Done: you are in docs."),
            Message("user", "and now?"),
        ],
        SHELLPER,
    ),
    "reasoning-in-last-turn": (
        [Message("user", "q"), assistant("<think>\nstep 1\n</think>\n\nAnswer.")],
        [TOOLS["pwd"]],
    ),
    "reasoning-in-old-turn": (
        [Message("user", "q"), assistant("<think>\nold\n</think>\n\nA1"), Message("user", "q2")],
        [TOOLS["pwd"]],
    ),
}


def check_same(messages: list[Message], tools: list[ToolSchema]) -> None:
    """Template (fed as vLLM feeds it, tools in the order the harness sends them) == render_prompt."""
    msgs, sent = vllm_view([m.to_openai() for m in messages], format_tools(tools) if tools else None)
    rendered = render_chat_template("qwen", msgs, sent or None, enable_thinking=False)
    assert rendered == render_prompt(messages, tools)


@pytest.mark.parametrize("case_id", sorted(CASES))
def test_template_renders_what_render_prompt_renders(case_id: str) -> None:
    check_same(*CASES[case_id])


def test_enable_thinking_true_leaves_the_think_block_to_the_model() -> None:
    msgs, _ = vllm_view([Message("user", "hi").to_openai()])
    text = render_chat_template("qwen", msgs, None, enable_thinking=True)
    assert text.endswith("<|im_start|>assistant\n")


def test_template_is_installed_with_the_package() -> None:
    path = chat_template_path("qwen")
    assert path.name == "qwen3.jinja" and path.is_file()
    with pytest.raises(ValueError, match="no chat template"):
        chat_template_path("llama")


_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="<"), max_size=30)


@settings(max_examples=2 * settings().max_examples, deadline=None)
@given(
    user=_text,
    content=st.one_of(st.none(), _text),
    folder=_text,
    output=st.one_of(_text, st.dictionaries(st.sampled_from(["a", "b", "ü"]), st.integers(), max_size=3)),
)
def test_template_matches_on_generated_conversations(user: str, content: str | None, folder: str, output: Any) -> None:
    messages = [Message("user", user), assistant(content, call("c1", "cd", folder=folder)), result("c1", "cd", output)]
    check_same(messages, [TOOLS["cd"], TOOLS["cp"]])
