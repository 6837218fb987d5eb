"""The shared constrained decoding loop, with hand-written grammars and the real tokenizers."""

from __future__ import annotations

import numpy as np
import pytest

from harness.agents.constraint import ConstraintArtifact
from harness.grammar.compile import compile_artifact
from harness.grammar.decode import REJECTED_GOLD, GoldSource, decode
from harness.grammar.walk import walk_text

FG_EBNF = r"""root ::= "<start_function_call>call:" call "<end_function_call>"
call ::= "cat{file_name:<escape>" text "<escape>}" | "tail{file_name:<escape>" text "<escape>,lines:" [0-9]+ "}"
text ::= [^<]*
"""
QWEN_EBNF = r"""root ::= "<tool_call>\n" "{\"name\": \"ls\", \"arguments\": {\"a\": " ("true" | "false") "}}" "\n</tool_call>"
"""
YES_NO = 'root ::= "yes" | "no"'


def compiled(ebnf: str, family: str):
    return compile_artifact(ConstraintArtifact("grammar", ebnf), family).compiled


class LogitsSource:
    """Test double for a model: fixed scores per step, recording the tokens fed back."""

    def __init__(self, steps: list[dict[int, float]], vocab: int, default: float = -5.0) -> None:
        self.steps, self.vocab, self.default, self.fed = steps, vocab, default, []

    def propose(self):
        i = len(self.fed)
        if i >= len(self.steps):
            return None
        logits = np.full(self.vocab, self.default, dtype=np.float32)
        for tid, score in self.steps[i].items():
            logits[tid] = score
        return logits

    def feed(self, token_id: int) -> None:
        self.fed.append(token_id)


def test_gold_accepted_and_terminated(fg_tokenizer):
    text = "<start_function_call>call:tail{file_name:<escape>a}b.txt<escape>,lines:15}<end_function_call>"
    ids = fg_tokenizer.encode(text)
    res = decode(compiled(FG_EBNF, "function_gemma"), GoldSource(ids), fg_tokenizer, max_tokens=100)
    assert res.ok and res.terminated and res.finish_reason == "stop"
    assert res.token_ids == tuple(ids) and res.text == text
    assert res.stop_id in fg_tokenizer.eos_ids
    assert len(res.mask_us) == len(ids) + 1  # every token, plus the check that the grammar may end
    assert len(res.accept_us) == len(ids) + 1
    assert res.generated == len(ids) + 1


def test_gold_rejected_at_the_right_index(fg_tokenizer):
    prefix = "<start_function_call>call:"
    text = prefix + "rm{file_name:<escape>x<escape>}<end_function_call>"
    ids = fg_tokenizer.encode(text)
    res = decode(compiled(FG_EBNF, "function_gemma"), GoldSource(ids), fg_tokenizer, max_tokens=100)
    assert res.error == REJECTED_GOLD and res.finish_reason == "rejected" and not res.terminated
    assert res.rejected_at == len(fg_tokenizer.encode(prefix))
    assert res.rejected_token == ids[res.rejected_at]
    assert res.text == prefix


def test_lazy_policy_on_gold_rejects_at_the_same_index(fg_tokenizer):
    text = "<start_function_call>call:tail{file_name:<escape>x<escape>,lines:1x}<end_function_call>"
    ids = fg_tokenizer.encode(text)
    grammar = compiled(FG_EBNF, "function_gemma")
    always = decode(grammar, GoldSource(ids), fg_tokenizer, max_tokens=100)
    lazy = decode(grammar, GoldSource(ids), fg_tokenizer, max_tokens=100, mask_policy="lazy")
    assert always.rejected_at == lazy.rejected_at is not None
    assert lazy.mask_us == ()


def test_incomplete_gold_is_rejected_at_its_end(qwen_tokenizer):
    text = '<tool_call>\n{"name": "ls", "arguments": {"a": true}}'
    ids = qwen_tokenizer.encode(text)
    res = decode(compiled(QWEN_EBNF, "qwen"), GoldSource(ids), qwen_tokenizer, max_tokens=100)
    assert res.error == REJECTED_GOLD and res.rejected_at == len(ids) and res.rejected_token is None
    walk = walk_text(compiled(QWEN_EBNF, "qwen"), "qwen", text)
    assert not walk.accepted and "incomplete" in (walk.reason or "")


def test_walk_text_reports_token_and_context(qwen_tokenizer):
    grammar = compiled(QWEN_EBNF, "qwen")
    good = '<tool_call>\n{"name": "ls", "arguments": {"a": true}}\n</tool_call>'
    assert walk_text(grammar, qwen_tokenizer, good).accepted
    assert walk_text(grammar, qwen_tokenizer, good).token_ids[0] == 151657  # one <tool_call> token
    bad = walk_text(grammar, qwen_tokenizer, good.replace("true", "yes"))
    assert not bad.accepted
    assert "' yes'" in (bad.reason or "") and '"arguments": {"a":' in (bad.reason or "")
    trailing = walk_text(grammar, qwen_tokenizer, good + "\n")
    assert not trailing.accepted


def test_lazy_picks_an_allowed_token_when_argmax_is_forbidden(qwen_tokenizer):
    tok = qwen_tokenizer
    yes, no, maybe = tok.encode("yes"), tok.encode("no"), tok.encode("maybe")
    assert len(yes) == len(no) == len(maybe) == 1
    eos = tok.eos_ids[0]
    steps = [{maybe[0]: 9.0, no[0]: 5.0, yes[0]: 1.0}, {eos: 3.0, maybe[0]: 8.0}]
    for policy in ("lazy", "always"):
        source = LogitsSource(steps, tok.vocab_size)
        res = decode(compiled(YES_NO, "qwen"), source, tok, max_tokens=10, mask_policy=policy)
        assert res.ok and res.terminated and res.text == "no"
        assert source.fed == [no[0], eos]
        assert res.fallbacks == (2 if policy == "lazy" else 0)
        assert len(res.mask_us) == 2


def test_lazy_takes_the_argmax_without_a_mask_when_allowed(qwen_tokenizer):
    tok = qwen_tokenizer
    yes = tok.encode("yes")[0]
    source = LogitsSource([{yes: 9.0}, {tok.eos_ids[0]: 9.0}], tok.vocab_size)
    res = decode(compiled(YES_NO, "qwen"), source, tok, max_tokens=10, mask_policy="lazy")
    assert res.text == "yes" and res.terminated and res.mask_us == () and res.fallbacks == 0


def test_sampling_stays_inside_the_grammar(qwen_tokenizer):
    tok = qwen_tokenizer
    rng = np.random.default_rng(7)
    maybe = tok.encode("maybe")[0]
    for _ in range(5):
        source = LogitsSource([{maybe: 9.0}, {}], tok.vocab_size, default=0.0)
        res = decode(compiled(YES_NO, "qwen"), source, tok, max_tokens=5, temperature=1.0, rng=rng)
        assert res.terminated and res.text in ("yes", "no")


def test_unconstrained_passes_everything_and_stops_on_eos(fg_tokenizer):
    ids = fg_tokenizer.encode("anything <start_function_call> at all")
    res = decode(None, GoldSource(ids), fg_tokenizer, max_tokens=100)
    assert res.ok and res.terminated and res.token_ids == tuple(ids) and res.mask_us == ()
    steps = [{10_000: 5.0}, {20_000: 5.0}, {106: 5.0}, {30_000: 5.0}]
    source = LogitsSource(steps, fg_tokenizer.vocab_size)
    res = decode(None, source, fg_tokenizer, max_tokens=100)
    assert res.token_ids == (10_000, 20_000) and res.stop_id == 106 and res.terminated
    assert res.ttft_ms is not None and res.generated == 3


def test_max_tokens_ends_with_length(qwen_tokenizer):
    ids = qwen_tokenizer.encode('<tool_call>\n{"name": "ls", "arguments": {"a": true}}\n</tool_call>')
    res = decode(compiled(QWEN_EBNF, "qwen"), GoldSource(ids), qwen_tokenizer, max_tokens=5)
    assert res.finish_reason == "length" and not res.terminated and res.error is None
    assert len(res.token_ids) == 5


def test_control_text_two_spellings(fg_tokenizer):
    """A text literal accepts the single control token and the same text in ordinary pieces;
    xgrammar's Token(48) terminal accepts only the single token."""
    single = fg_tokenizer.encode("<start_function_call>")
    pieces = fg_tokenizer.encode("<") + fg_tokenizer.encode("start_function_call>")
    assert single == [48] and len(pieces) > 1
    assert fg_tokenizer.decode(pieces) == "<start_function_call>"
    text_literal = compiled('root ::= "<start_function_call>"', "function_gemma")
    token_terminal = compiled("root ::= Token(48)", "function_gemma")
    for ids, by_text, by_token in ((single, True, True), (pieces, True, False)):
        res = decode(text_literal, GoldSource(ids), fg_tokenizer, max_tokens=50)
        assert res.terminated is by_text
        res = decode(token_terminal, GoldSource(ids), fg_tokenizer, max_tokens=50)
        assert res.terminated is by_token


def test_gold_id_outside_the_vocabulary_is_rejected(qwen_tokenizer):
    res = decode(compiled(YES_NO, "qwen"), GoldSource([10**7]), qwen_tokenizer, max_tokens=5)
    assert res.error == REJECTED_GOLD and res.rejected_at == 0


def test_unknown_policy(qwen_tokenizer):
    with pytest.raises(ValueError, match="mask policy"):
        decode(None, GoldSource([]), qwen_tokenizer, max_tokens=1, mask_policy="sometimes")  # type: ignore[arg-type]


def test_model_source_stopping_early_is_not_a_gold_rejection(qwen_tokenizer):
    tok = qwen_tokenizer
    source = LogitsSource([{tok.encode("yes")[0]: 9.0}], tok.vocab_size)  # then None: the engine stops
    res = decode(compiled('root ::= "yes" " please"', "qwen"), source, tok, max_tokens=10)
    assert res.error is None and res.finish_reason == "stop" and not res.terminated and res.text == "yes"
