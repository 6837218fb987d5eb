"""Jump-forward in the decoding loop: what is forced, where the model is asked again, and what a
model source sees (real tokenizers and xgrammar; the model is a test double giving logits)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import numpy as np
import pytest

from harness.agents.constraint import ConstraintArtifact
from harness.grammar.compile import compile_artifact
from harness.grammar.decode import REJECTED_GOLD, GoldTextSource, decode
from harness.grammar.jump import TokenExtensions, forced_prefix

# (vocabulary, prefix, ids of the tokens that strictly extend it)
EXTENSION_CASES: list[tuple[list[bytes], bytes, set[int]]] = [
    ([b"{", b'{"', b"{}", b"}", b"a"], b"{", {1, 2}),
    ([b"{", b'{"', b"{}", b"}", b"a"], b'{"', set()),
    ([b"{", b'{"', b"{}", b"}", b"a"], b"", {0, 1, 2, 3, 4}),
    ([b"", b"ab", b"abc", b"abd", b"ac", b"b"], b"ab", {2, 3}),
    ([b"\xff", b"\xff\xff", b"\xff\x00", b"a"], b"\xff", {1, 2}),
    ([b"x", b"x", b"xy"], b"x", {2}),  # two ids with the same text: neither extends the other
]

FG_CALL = r"""root ::= "<start_function_call>call:" ("cat" | "cd") "{" args "}<end_function_call>"
args ::= "file_name:<escape>" [a-z.]+ "<escape>"
"""
QWEN_CALL = r"""root ::= "<tool_call>\n{\"name\": \"" ("cat" | "cd") "\", \"arguments\": {\"path\": \"" [a-z.]+ "\"}}\n</tool_call>"
"""
JSON_CALL = r"""root ::= "{\"name\":\"" ("cat" | "cd") "\",\"arguments\":{" ("\"file_name\":\"" [a-z.]+ "\"")? "}}"
"""
# (family, grammar, valid answers): the forced tokens must begin every answer's own tokenization.
FORCED_CASES: list[tuple[str, str, list[str]]] = [
    (
        "function_gemma",
        FG_CALL,
        [
            "<start_function_call>call:cat{file_name:<escape>a.txt<escape>}<end_function_call>",
            "<start_function_call>call:cd{file_name:<escape>docs<escape>}<end_function_call>",
        ],
    ),
    (
        "qwen",
        QWEN_CALL,
        [
            '<tool_call>\n{"name": "cat", "arguments": {"path": "a.txt"}}\n</tool_call>',
            '<tool_call>\n{"name": "cd", "arguments": {"path": "x"}}\n</tool_call>',
        ],
    ),
    (
        "function_gemma",
        JSON_CALL,
        ['{"name":"cat","arguments":{}}', '{"name":"cd","arguments":{"file_name":".thumbs"}}'],
    ),
    ("qwen", JSON_CALL, ['{"name":"cat","arguments":{}}', '{"name":"cd","arguments":{"file_name":"ab"}}']),
]


def compiled(ebnf: str, family: str):
    return compile_artifact(ConstraintArtifact("grammar", ebnf), family).compiled


def tokenizer_of(family: str):
    from harness.grammar.tokenizers import get_tokenizer

    return get_tokenizer(family)


class TextModel:
    """Test double for a model: logits from a function of the text so far (so two ways of reaching
    the same text look the same to it); counts its forward passes and records the tokens it was fed.
    It evaluates drafts as a drafting model source does (one pass, scores at every position)."""

    def __init__(self, tok, scores: Callable[[str], dict[int, float]], default: float = -30.0) -> None:
        self.tok, self.scores, self.default = tok, scores, default
        self.fed: list[int] = []
        self.steps = 0

    def _logits(self, ids: list[int]):
        logits = np.full(self.tok.vocab_size, self.default, dtype=np.float32)
        for tid, score in self.scores(self.tok.decode(ids)).items():
            logits[tid] = score
        return logits

    def propose(self):
        self.steps += 1
        return self._logits(self.fed)

    def propose_draft(self, draft):
        self.steps += 1
        return [self._logits(self.fed + list(draft[:i])) for i in range(len(draft) + 1)]

    def feed(self, token_id: int) -> None:
        self.fed.append(token_id)


def greedy_along(tok, answer: str) -> Callable[[str], dict[int, float]]:
    """Scores that make ``answer``'s own tokenization the greedy choice everywhere, and the stop
    after it."""

    def scores(text: str) -> dict[int, float]:
        if text == answer:
            return {tok.eos_ids[0]: 10.0}
        assert answer.startswith(text), f"the decode left the answer: {text!r}"
        return {tok.encode(answer[len(text) :])[0]: 10.0}

    return scores


@pytest.mark.parametrize(("vocab", "prefix", "expected"), EXTENSION_CASES)
def test_extending_tokens(vocab: list[bytes], prefix: bytes, expected: set[int]) -> None:
    assert set(TokenExtensions(vocab).extending(prefix).tolist()) == expected


@pytest.mark.parametrize(("family", "ebnf", "answers"), FORCED_CASES, ids=lambda x: str(x)[:20])
def test_forced_tokens_begin_every_answers_own_tokenization(family: str, ebnf: str, answers: list[str]) -> None:
    import xgrammar as xgr

    tok = tokenizer_of(family)
    matcher = xgr.GrammarMatcher(compiled(ebnf, family))
    from harness.grammar.mask import allocate_bitmask

    forced = forced_prefix(
        matcher, matcher.find_jump_forward_string(), tok, allocate_bitmask(tok.vocab_size), limit=100
    )
    assert forced.ids, "the call's opening is forced"
    for answer in answers:
        assert tok.encode(answer)[: len(forced.ids)] == list(forced.ids)


@pytest.mark.parametrize("jump", ["append", "verify"])
@pytest.mark.parametrize(("family", "ebnf", "answers"), FORCED_CASES, ids=lambda x: str(x)[:20])
def test_greedy_jump_forward_emits_the_plain_loops_tokens_in_fewer_model_steps(
    family: str, ebnf: str, answers: list[str], jump: str
) -> None:
    tok = tokenizer_of(family)
    grammar = compiled(ebnf, family)
    for answer in answers:
        runs = {}
        for mode in ("off", jump):
            model = TextModel(tok, greedy_along(tok, answer))
            res = decode(grammar, model, tok, max_tokens=100, mask_policy="lazy", jump=mode)
            assert res.terminated and res.text == answer
            runs[mode] = (res, model)
        (plain, plain_model), (jumped, jump_model) = runs["off"], runs[jump]
        assert jumped.token_ids == plain.token_ids == tuple(tok.encode(answer))
        assert jump_model.fed == plain_model.fed  # the same tokens reach the model, stop included
        assert jumped.forced > 0 and jumped.forced == plain.generated - jump_model.steps
        assert jumped.steps == jump_model.steps < plain_model.steps
        assert plain.forced == 0 and plain.jump_us == () and plain.drafted == 0


def spelled_in_pieces(tok, answer: str) -> Callable[[str], dict[int, float]]:
    """A model that writes ``answer`` but spells FunctionGemma's control tokens as ordinary text,
    as the Gemma 3 base weights do (they never learned those ids)."""
    pieces = {name: tok.encode("<") + tok.encode(name[1:]) for name in tok.control_tokens}

    def scores(text: str) -> dict[int, float]:
        if text == answer:
            return {tok.eos_ids[0]: 10.0}
        rest = answer[len(text) :]
        name = next((n for n in pieces if rest.startswith(n)), None)
        if name is not None:
            return {pieces[name][0]: 10.0, tok.control_tokens[name]: 9.0}
        return {tok.encode(rest)[0]: 10.0}

    return scores


def test_verify_keeps_the_models_own_split_where_append_forces_the_tokenizers(fg_tokenizer) -> None:
    tok = fg_tokenizer
    answer = FORCED_CASES[0][2][0]
    scores = spelled_in_pieces(tok, answer)
    out = {}
    for mode in ("off", "verify", "append"):
        model = TextModel(tok, scores)
        res = decode(compiled(FG_CALL, "function_gemma"), model, tok, max_tokens=100, mask_policy="lazy", jump=mode)
        assert res.terminated and res.text == answer
        out[mode] = (res, model)
    plain, verify, append = (out[m][0] for m in ("off", "verify", "append"))
    assert verify.token_ids == plain.token_ids != append.token_ids
    assert tok.control_tokens["<start_function_call>"] not in plain.token_ids  # spelled in pieces
    assert tok.control_tokens["<start_function_call>"] in append.token_ids  # the tokenizer's single id
    assert out["verify"][1].steps < out["off"][1].steps and verify.forced > 0
    assert verify.drafted > verify.forced  # the drafted control tokens were refused


@pytest.mark.parametrize("seed", range(5))
def test_verify_samples_exactly_as_the_plain_loop(fg_tokenizer, seed: int) -> None:
    """Verify draws one sample per position, as the plain loop does: with the same seed the same
    output, whatever the model's scores."""
    tok = fg_tokenizer
    answer = FORCED_CASES[0][2][0]
    base = spelled_in_pieces(tok, answer)

    def scores(text: str) -> dict[int, float]:
        out = dict(base(text))
        return {t: v / 4 for t, v in out.items()}  # flat enough that samples often leave the answer

    grammar = compiled(FG_CALL, "function_gemma")
    texts = []
    for mode in ("off", "verify"):
        model = TextModel(tok, lambda text: scores(text) if answer.startswith(text) else {}, default=0.0)
        res = decode(grammar, model, tok, max_tokens=40, temperature=1.0, rng=np.random.default_rng(seed), jump=mode)
        texts.append(res.token_ids)
    assert texts[0] == texts[1]


def test_the_stop_is_forced_where_the_grammar_can_only_end(qwen_tokenizer) -> None:
    tok = qwen_tokenizer
    grammar = compiled('root ::= "yes" | "no"', "qwen")
    model = TextModel(tok, lambda text: {tok.encode("yes")[0]: 5.0})  # never scores the stop
    res = decode(grammar, model, tok, max_tokens=10, mask_policy="lazy", jump="append")
    assert res.terminated and res.text == "yes" and res.stop_id in tok.eos_ids
    assert model.steps == 1 and res.forced == 1 and res.generated == 2


def test_max_tokens_counts_forced_tokens(fg_tokenizer) -> None:
    tok = fg_tokenizer
    answer = FORCED_CASES[0][2][0]
    model = TextModel(tok, greedy_along(tok, answer))
    res = decode(compiled(FG_CALL, "function_gemma"), model, tok, max_tokens=3, jump="append")
    assert res.finish_reason == "length" and res.generated == 3 and len(model.fed) == 3
    assert res.token_ids == tuple(tok.encode(answer)[:3])


def test_sampled_free_tokens_keep_the_models_distribution(fg_tokenizer) -> None:
    """Each free token is sampled from the masked softmax, as without jump-forward: the frequencies of
    a three-way choice after forced text match the model's probabilities (deterministic seed)."""
    tok = fg_tokenizer
    grammar = compiled('root ::= "<start_function_call>call:" ("cat" | "cd" | "ls") "{}<end_function_call>"', "function_gemma")
    names = {name: tok.encode(name)[0] for name in ("cat", "cd", "ls")}
    assert all(len(tok.encode(n)) == 1 for n in names)
    logit = {"cat": 1.0, "cd": 0.0, "ls": -1.0}

    def scores(text: str) -> dict[int, float]:
        return {names[n]: v for n, v in logit.items()} if text.endswith("call:") else {}

    expected = np.exp(list(logit.values()))
    expected /= expected.sum()
    rng = np.random.default_rng(11)
    n = 1500
    seen: Counter[str] = Counter()
    for _ in range(n):
        model = TextModel(tok, scores)
        res = decode(grammar, model, tok, max_tokens=20, temperature=1.0, rng=rng, jump="append")
        assert res.terminated and model.steps == 1  # the name is the only choice the model makes
        seen[res.text.split(":")[1].split("{")[0]] += 1
    observed = np.array([seen[name] for name in logit]) / n
    sigma = np.sqrt(expected * (1 - expected) / n)
    assert np.all(np.abs(observed - expected) < 4 * sigma), (observed, expected)


def test_gold_text_source_replays_a_text_through_jump_forward(qwen_tokenizer) -> None:
    tok = qwen_tokenizer
    answer = FORCED_CASES[1][2][0]
    source = GoldTextSource(tok, answer)
    res = decode(compiled(QWEN_CALL, "qwen"), source, tok, max_tokens=100, mask_policy="lazy", jump="append")
    assert res.terminated and res.text == answer and not source.diverged
    assert list(res.token_ids) == tok.encode(answer) and res.forced > len(res.token_ids) / 2


def test_gold_text_source_says_when_the_grammar_forces_other_text(qwen_tokenizer) -> None:
    tok = qwen_tokenizer
    grammar = compiled(QWEN_CALL, "qwen")
    source = GoldTextSource(tok, '<tool_call>\n{"nom": "cat"}')
    res = decode(grammar, source, tok, max_tokens=100, mask_policy="lazy", jump="append")
    assert source.diverged and not res.terminated
    source = GoldTextSource(tok, '<tool_call>\n{"name": "rm"}')  # a free token the grammar refuses
    res = decode(grammar, source, tok, max_tokens=100, mask_policy="lazy", jump="append")
    assert res.error == REJECTED_GOLD and not source.diverged and res.text.endswith('"name": "')
