"""Native prompts: FunctionGemma's developer-turn declarations and inline function responses; Qwen3's
<tools> system prompt, <tool_response> turns and non-thinking generation prompt."""

from __future__ import annotations

from typing import Any

import pytest

from harness.agents import Message, ToolCall, ToolResult, ToolSchema
from harness.grammar.families import get_adapter

CD = ToolSchema(
    name="cd",
    description="Change directory.",
    parameters={
        "type": "object",
        "properties": {"folder": {"type": "string", "description": "Target."}},
        "required": ["folder"],
    },
)
WC = ToolSchema(
    name="wc",
    description="Count.",
    parameters={
        "type": "object",
        "properties": {
            "mode": {"type": "string", "enum": ["l", "w"], "description": "What."},
            "file_name": {"type": "string", "description": "File."},
        },
        "required": ["file_name"],
    },
)
PWD = ToolSchema(name="pwd", description="Where am I.")
NESTED = ToolSchema(
    name="put",
    description="Nested.",
    parameters={
        "type": "object",
        "properties": {
            "tags": {"type": "array", "items": {"type": "string"}, "description": "Tags."},
            "opts": {
                "type": "object",
                "properties": {"z": {"type": "integer"}, "a": {"type": "boolean"}},
                "required": ["z"],
            },
        },
    },
)

FG_DECL_CD = (
    "<start_function_declaration>declaration:cd{description:<escape>Change directory.<escape>,"
    "parameters:{properties:{folder:{description:<escape>Target.<escape>,type:<escape>STRING<escape>} },"
    "required:[<escape>folder<escape>],type:<escape>OBJECT<escape>} }<end_function_declaration>"
)
FG_DECL_WC = (
    "<start_function_declaration>declaration:wc{description:<escape>Count.<escape>,"
    "parameters:{properties:{file_name:{description:<escape>File.<escape>,type:<escape>STRING<escape>},"
    "mode:{description:<escape>What.<escape>,enum:[<escape>l<escape>,<escape>w<escape>],"
    "type:<escape>STRING<escape>} },required:[<escape>file_name<escape>],type:<escape>OBJECT<escape>} }"
    "<end_function_declaration>"
)
ACTIVATION = "You are a model that can do function calling with the following functions"

CALL = ToolCall(id="c1", name="wc", arguments={"mode": "l", "file_name": "a b.txt"})
RESULT = Message.tool(ToolResult(call_id="c1", name="wc", output={"lines": 3, "file": "a b.txt"}))

# (messages, tools, expected FunctionGemma prompt)
FG_PROMPTS: list[tuple[list[Message], list[ToolSchema], str]] = [
    (
        [Message("user", "Go to docs")],
        [CD, WC],
        f"<bos><start_of_turn>developer\n{ACTIVATION}{FG_DECL_CD}{FG_DECL_WC}<end_of_turn>\n"
        "<start_of_turn>user\nGo to docs<end_of_turn>\n<start_of_turn>model\n",
    ),
    (
        [Message("system", "  You help with files.  "), Message("user", " hi ")],
        [CD],
        f"<bos><start_of_turn>developer\nYou help with files.\n{ACTIVATION}{FG_DECL_CD}<end_of_turn>\n"
        "<start_of_turn>user\nhi<end_of_turn>\n<start_of_turn>model\n",
    ),
    (
        [Message("developer", f"{ACTIVATION}. Be brief."), Message("user", "where?")],
        [PWD],
        f"<bos><start_of_turn>developer\n{ACTIVATION}. Be brief.<start_function_declaration>declaration:pwd"
        "{description:<escape>Where am I.<escape>,parameters:{type:<escape>OBJECT<escape>} }"
        "<end_function_declaration><end_of_turn>\n<start_of_turn>user\nwhere?<end_of_turn>\n<start_of_turn>model\n",
    ),
    (
        [Message("user", "count"), Message("assistant", None, (CALL,)), RESULT],
        [WC],
        f"<bos><start_of_turn>developer\n{ACTIVATION}{FG_DECL_WC}<end_of_turn>\n<start_of_turn>user\ncount<end_of_turn>\n"
        "<start_of_turn>model\n<start_function_call>call:wc{file_name:<escape>a b.txt<escape>,mode:<escape>l<escape>}"
        "<end_function_call><start_function_response>response:wc{file:<escape>a b.txt<escape>,lines:3}"
        "<end_function_response>",
    ),
    (
        [
            Message("user", "count"),
            Message("assistant", None, (CALL,)),
            RESULT,
            Message("assistant", "3."),
            Message("user", "ok"),
        ],
        [WC],
        f"<bos><start_of_turn>developer\n{ACTIVATION}{FG_DECL_WC}<end_of_turn>\n<start_of_turn>user\ncount<end_of_turn>\n"
        "<start_of_turn>model\n<start_function_call>call:wc{file_name:<escape>a b.txt<escape>,mode:<escape>l<escape>}"
        "<end_function_call><start_function_response>response:wc{file:<escape>a b.txt<escape>,lines:3}"
        "<end_function_response>3.<end_of_turn>\n<start_of_turn>user\nok<end_of_turn>\n<start_of_turn>model\n",
    ),
    (
        [Message("user", "count"), Message("assistant", None, (CALL,)), Message("user", "and again")],
        [WC],
        f"<bos><start_of_turn>developer\n{ACTIVATION}{FG_DECL_WC}<end_of_turn>\n<start_of_turn>user\ncount<end_of_turn>\n"
        "<start_of_turn>model\n<start_function_call>call:wc{file_name:<escape>a b.txt<escape>,mode:<escape>l<escape>}"
        "<end_function_call><start_function_response><start_of_turn>user\nand again<end_of_turn>\n<start_of_turn>model\n",
    ),
    (
        [
            Message("user", "x"),
            Message("assistant", None, (ToolCall("c2", "cd", {"folder": "d"}),)),
            Message("tool", "plain text result", tool_call_id="c2"),
        ],
        [CD],
        f"<bos><start_of_turn>developer\n{ACTIVATION}{FG_DECL_CD}<end_of_turn>\n<start_of_turn>user\nx<end_of_turn>\n"
        "<start_of_turn>model\n<start_function_call>call:cd{folder:<escape>d<escape>}<end_function_call>"
        "<start_function_response>response:cd{value:<escape>plain text result<escape>}<end_function_response>",
    ),
]

QWEN_HEAD = (
    "<|im_start|>system\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
)
QWEN_TAIL = (
    "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
    '<tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n'
    "</tool_call><|im_end|>\n"
)
QWEN_CD = (
    '{"type": "function", "function": {"name": "cd", "description": "Change directory.", "parameters": '
    '{"type": "object", "properties": {"folder": {"type": "string", "description": "Target."}}, "required": ["folder"]}}}'
)
QWEN_WC = (
    '{"type": "function", "function": {"name": "wc", "description": "Count.", "parameters": {"type": "object", '
    '"properties": {"file_name": {"type": "string", "description": "File."}, "mode": {"type": "string", '
    '"enum": ["l", "w"], "description": "What."}}, "required": ["file_name"]}}}'
)
GEN = "<|im_start|>assistant\n<think>\n\n</think>\n\n"

QWEN_PROMPTS: list[tuple[list[Message], list[ToolSchema], str]] = [
    (
        [Message("user", "Go to docs")],
        [CD, WC],
        f"{QWEN_HEAD}{QWEN_CD}\n{QWEN_WC}{QWEN_TAIL}<|im_start|>user\nGo to docs<|im_end|>\n{GEN}",
    ),
    (
        [Message("system", "You help."), Message("user", "hi")],
        [CD],
        QWEN_HEAD.replace("system\n", "system\nYou help.\n\n")
        + f"{QWEN_CD}{QWEN_TAIL}<|im_start|>user\nhi<|im_end|>\n{GEN}",
    ),
    (
        [Message("system", "You help."), Message("user", "hi")],
        [],
        f"<|im_start|>system\nYou help.<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n{GEN}",
    ),
    (
        [Message("user", "count"), Message("assistant", None, (CALL,)), RESULT, RESULT],
        [WC],
        f"{QWEN_HEAD}{QWEN_WC}{QWEN_TAIL}<|im_start|>user\ncount<|im_end|>\n<|im_start|>assistant\n"
        '<tool_call>\n{"name": "wc", "arguments": {"mode": "l", "file_name": "a b.txt"}}\n</tool_call><|im_end|>\n'
        '<|im_start|>user\n<tool_response>\n{"file": "a b.txt", "lines": 3}\n</tool_response>\n<tool_response>\n'
        '{"file": "a b.txt", "lines": 3}\n</tool_response><|im_end|>\n' + GEN,
    ),
    (
        [Message("user", "count"), Message("assistant", "Counting.", (CALL, CALL))],
        [WC],
        f"{QWEN_HEAD}{QWEN_WC}{QWEN_TAIL}<|im_start|>user\ncount<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
        'Counting.\n<tool_call>\n{"name": "wc", "arguments": {"mode": "l", "file_name": "a b.txt"}}\n</tool_call>\n'
        '<tool_call>\n{"name": "wc", "arguments": {"mode": "l", "file_name": "a b.txt"}}\n</tool_call><|im_end|>\n'
        + GEN,
    ),
]


@pytest.mark.parametrize("case", FG_PROMPTS, ids=range(len(FG_PROMPTS)))
def test_function_gemma_prompt(case: Any) -> None:
    messages, tools, expected = case
    assert get_adapter("function_gemma").render_prompt(messages, tools) == expected


@pytest.mark.parametrize("case", QWEN_PROMPTS, ids=range(len(QWEN_PROMPTS)))
def test_qwen_prompt(case: Any) -> None:
    messages, tools, expected = case
    assert get_adapter("qwen").render_prompt(messages, tools) == expected


def test_function_gemma_nested_declaration() -> None:
    text = get_adapter("function_gemma").render_prompt([Message("user", "x")], [NESTED])
    assert (
        "declaration:put{description:<escape>Nested.<escape>,parameters:{properties:{opts:{properties:{"
        "a:{type:<escape>BOOLEAN<escape>},z:{type:<escape>INTEGER<escape>}},required:[<escape>z<escape>],"
        "type:<escape>OBJECT<escape>},tags:{description:<escape>Tags.<escape>,items:{type:<escape>STRING<escape>},"
        "type:<escape>ARRAY<escape>} },type:<escape>OBJECT<escape>} }"
    ) in text


def test_function_gemma_format_messages_adds_the_activation_sentence_once() -> None:
    adapter = get_adapter("function_gemma")
    once = adapter.format_messages([Message("user", "hi")])
    assert once[0] == Message("developer", ACTIVATION)
    assert adapter.format_messages(once) == once
    sys = adapter.format_messages([Message("system", "Be brief."), Message("user", "hi")])
    assert sys[0].content == f"Be brief.\n{ACTIVATION}" and sys[0].role == "system"


def test_qwen_declares_properties_in_canonical_order() -> None:
    tools = get_adapter("qwen").format_tools([WC])
    assert list(tools[0]["function"]["parameters"]["properties"]) == ["file_name", "mode"]
    assert WC.parameters["properties"].keys() == {"mode", "file_name"}  # the schema itself is untouched
    assert list(WC.parameters["properties"]) == ["mode", "file_name"]


def test_function_gemma_prompt_encodes_one_bos_and_single_control_tokens(fg_tokenizer: Any) -> None:
    text = get_adapter("function_gemma").render_prompt(
        [Message("user", "count"), Message("assistant", None, (CALL,)), RESULT], [WC, CD]
    )
    ids = fg_tokenizer.encode_prompt(text)
    assert ids[0] == 2 and ids.count(2) == 1
    for token, count in (
        ("<start_function_declaration>", 2),
        ("<start_of_turn>", 3),
        ("<start_function_call>", 1),
        ("<start_function_response>", 1),
        ("<end_function_response>", 1),
    ):
        assert ids.count(fg_tokenizer.token_id(token)) == count, token
    assert fg_tokenizer.decode(ids) == text


def test_qwen_prompt_encodes_turn_and_think_tokens(qwen_tokenizer: Any) -> None:
    text = get_adapter("qwen").render_prompt(
        [Message("user", "count"), Message("assistant", None, (CALL,)), RESULT], [WC]
    )
    ids = qwen_tokenizer.encode_prompt(text)
    assert ids.count(qwen_tokenizer.token_id("<|im_start|>")) == 5
    assert ids.count(qwen_tokenizer.token_id("<tool_call>")) == 3  # twice in the system prompt, once the call
    tail = qwen_tokenizer.decode(ids[-6:])
    assert tail.endswith("<think>\n\n</think>\n\n")
    assert qwen_tokenizer.token_id("</think>") in ids[-4:]
    assert qwen_tokenizer.decode(ids) == text
