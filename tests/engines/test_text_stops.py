"""Stop sequences and streaming deltas of the embedded engine's source (real Gemma tokenizer, no model)."""

from __future__ import annotations

import pytest

from harness.engines.local.source import TextStops


def _feed(tok, text: str, stop=()):
    chunks: list[str] = []
    stops = TextStops(tok, stop, chunks.append)
    for token in tok.encode(text):
        stops.add(token)
        streamed = "".join(chunks)
        assert stops.text.startswith(streamed)
        for s in stops._stops:  # no stop sequence ever reaches the stream, not even its start
            assert s not in streamed
    final = stops.finish()
    assert "".join(chunks) == final
    return stops, final, chunks


def test_without_stops_everything_streams(fg_tokenizer):
    text = "call:ls{a:true} and more text"
    stops, final, chunks = _feed(fg_tokenizer, text)
    assert final == text and stops.stopped_by is None
    assert len(chunks) > 3


@pytest.mark.parametrize("stop", ["<start_function_response>", "more", "d mo"])
def test_text_is_cut_before_the_first_stop(fg_tokenizer, stop):
    text = "<start_function_call>call:ls{}<end_function_call><start_function_response>and more text"
    stops, final, _ = _feed(fg_tokenizer, text, (stop, "never-there"))
    assert final == text[: text.index(stop)]
    assert stops.stopped_by == stop


def test_tokens_after_a_stop_are_ignored(fg_tokenizer):
    stops = TextStops(fg_tokenizer, ("STOP",))
    for token in fg_tokenizer.encode("abc STOP def"):
        stops.add(token)
    assert stops.text == "abc " and stops.stopped_by == "STOP"


@pytest.mark.parametrize(("rest", "final"), [("d>", "x "), ("joy it", "x <enjoy it")])
def test_a_stop_prefix_is_held_back_until_it_is_decided(fg_tokenizer, rest, final):
    chunks: list[str] = []
    stops = TextStops(fg_tokenizer, ("<end>",), chunks.append)
    for token in fg_tokenizer.encode("x <en"):
        stops.add(token)
    assert "".join(chunks) == "x "  # "<en" could still become "<end>"
    for token in fg_tokenizer.encode(rest):
        stops.add(token)
    assert stops.finish() == final and "".join(chunks) == final


def test_incomplete_utf8_is_not_streamed(fg_tokenizer):
    text = "ok 🙂 done"
    _, final, chunks = _feed(fg_tokenizer, text)
    assert final == text
    assert all("\ufffd" not in c for c in chunks)
