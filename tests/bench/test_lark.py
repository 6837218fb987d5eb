"""The llguidance side of ``harness bench grammar``: xgrammar EBNF -> Lark conversion, and that the
converted grammars accept and reject the same answers as xgrammar does with the real tokenizers."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.agents.constraint import DecodingConstraint
from harness.agents.types import ToolCall
from harness.grammar.families import FAMILIES, get_adapter
from harness.grammar.guidance.lark import NotExpressible, ebnf_to_lark
from harness.vocabulary import HARNESS_STRATEGIES as CONSTRAINED_STRATEGIES  # the grammars the harness builds

pytest.importorskip("llguidance")

VALID = [
    ToolCall("v1", "pwd", {}),
    ToolCall("v2", "ls", {"a": True}),
    ToolCall("v3", "echo", {"content": 'a } b < c " d\n e ü 日本 [x]', "file_name": "x.txt"}),
    ToolCall("v4", "echo", {"content": ""}),
    ToolCall("v5", "tail", {"file_name": "log.txt", "lines": 15}),
    ToolCall("v6", "wc", {"file_name": "log.txt", "mode": "w"}),
]
INVALID = [
    ToolCall("i1", "format_disk", {}),
    ToolCall("i2", "cat", {"file_name": "a", "force": True}),
    ToolCall("i3", "diff", {"file_name1": "a"}),
    ToolCall("i4", "cd", {"folder": 5}),
    ToolCall("i5", "wc", {"file_name": "a", "mode": "x"}),
]

SHELLPER_TOOLS = Path(__file__).resolve().parents[2] / "bundles" / "shellper" / "tools"


def test_specials_become_token_references_and_the_rest_terminals() -> None:
    ebnf = 'root ::= "<tool_call>\\n{" body "}\\n</tool_call>"\nbody ::= [a-z]+ ("," [a-z]+)*\n'
    lark = ebnf_to_lark(ebnf, {"<tool_call>": 151657, "</tool_call>": 151658})
    assert "start: <[151657]>" in lark.text
    assert lark.text.rstrip().count("<[151658]>") == 1
    assert "BODY: /[a-z]/+" in lark.text  # a non-recursive rule without special tokens is one lexeme
    assert lark.specials == (151657, 151658)


def test_tag_dispatch_lookahead_and_recursion() -> None:
    ebnf = (
        'root ::= "<escape>" body "<escape>" s n\n'
        'body ::= TagDispatch(loop_after_dispatch=false, excludes=("<escape>"))\n'
        's ::= ("\\"" | [^"] s) (= [,}])\n'
        'n ::= "(" n ")" | "x"\n'
    )
    lark = ebnf_to_lark(ebnf, {"<escape>": 52})
    assert "/(?s:.*)/ & ~/(?s:.*)\\x{3C}escape\\x{3E}(?s:.*)/" in lark.text
    assert lark.dropped_lookaheads == 1
    assert 'S: (/[^\\x{22}]/)* ("\\"")' in lark.text  # right recursion -> repetition, a terminal
    assert '\nn: "(" n ")" | "x"' in lark.text  # real recursion stays a rule


@pytest.mark.parametrize(
    "ebnf",
    [
        'root ::= Token(48) "x"\n',
        'root ::= TagDispatch(("<a>", r), loop_after_dispatch=true)\nr ::= "x"\n',
        'root ::= missing\n',
        'other ::= "x"\n',
    ],
)
def test_what_cannot_be_converted_exactly_is_refused(ebnf: str) -> None:
    with pytest.raises(NotExpressible):
        ebnf_to_lark(ebnf, {})


@pytest.mark.slow  # builds llguidance's tokenizers (~8 s)
@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("strategy", CONSTRAINED_STRATEGIES)
def test_llguidance_accepts_and_rejects_what_xgrammar_does(family: str, strategy: str) -> None:
    from harness.bench.grammar.llguidance import measure_llguidance
    from harness.bench.grammar.measure import GoldText
    from harness.bench.inputs import load_tool_schemas
    from harness.grammar import compile_artifact, walk_text

    tools = load_tool_schemas(SHELLPER_TOOLS)
    constraint = DecodingConstraint(strategy=strategy)  # type: ignore[arg-type]
    adapter = get_adapter(family)
    artifact = adapter.build_payload(tools, constraint).artifact
    assert artifact is not None
    compiled = compile_artifact(artifact, family).compiled
    for calls, expected in [(VALID, True), (INVALID, False)]:
        for call in calls:
            text = adapter.render_output([call], constraint)
            assert walk_text(compiled, family, text).accepted is expected, (call, text)
            fig = measure_llguidance(family, artifact, [GoldText(call.id, text)], repeats=1, budget_s=5.0).dump()
            assert fig["expressible"], fig["note"]
            assert (fig["gold_accepted"] == 1) is expected, (call, text, fig["rejections"])


@pytest.mark.slow  # builds llguidance's tokenizers (~8 s)
@pytest.mark.parametrize(
    ("family", "marker"),
    [("function_gemma", "<end_function_call>"), ("function_gemma", "</b>"), ("qwen", "<tool_call>")],
)
def test_a_special_token_inside_a_string_is_text_for_xgrammar_and_refused_by_llguidance(
    family: str, marker: str
) -> None:
    from harness.bench.grammar.llguidance import SPECIAL_IN_TEXT, measure_llguidance
    from harness.bench.grammar.measure import GoldText
    from harness.bench.inputs import load_tool_schemas
    from harness.grammar import compile_artifact, get_tokenizer, walk_text

    tools = load_tool_schemas(SHELLPER_TOOLS)
    constraint = DecodingConstraint(strategy="ebnf")
    adapter = get_adapter(family)
    artifact = adapter.build_payload(tools, constraint).artifact
    assert artifact is not None
    text = adapter.render_output([ToolCall("s", "echo", {"content": f"see {marker} here"})], constraint)
    tok = get_tokenizer(family)
    assert tok.token_id(marker) in tok.encode(text)  # the gold spells the marker as its one token
    assert walk_text(compile_artifact(artifact, family).compiled, family, text).accepted
    fig = measure_llguidance(family, artifact, [GoldText("s", text)], repeats=1, budget_s=5.0).dump()
    assert fig["gold_accepted"] == 0 and fig["gold_rejected_special_in_text"] == 1
    assert fig["rejections"][0]["reason"].startswith(SPECIAL_IN_TEXT)
