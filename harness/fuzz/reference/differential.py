"""The token-level differential of one cell: xgrammar's mask against llguidance's, prefix by prefix.

For each instance the cell checked (up to ``VALID_INSTANCES`` valid calls and ``INVALID_INSTANCES`` of
their mutants, rendered as the family writes them), both engines walk the instance's tokens; at every
prefix both fill their masks and the tokens allowed by one and masked by the other are the
disagreements (the stop tokens count as one: "may end here"). Each is classified (``records``):

- a difference in how the engines treat added tokens: ``special_tokens`` (all counted, no walk);
- up to ``PER_PREFIX`` others per prefix (the instance's own next token first; the rest drawn with the
  cell's seed: ``sampled`` says when some were left), each continued under the engine that allows it.
  First along the instance: when the token spells the instance's own text from there (its own next
  token, or another tokenization of the same text), the rest of the text follows it; on a valid
  instance that the allowing engine takes to the end, the other engine over-constrains. Else (and on
  invalid instances) ``COMPLETIONS`` seeded completions of at most ``COMPLETION_TOKENS`` tokens: one
  the tool's validator accepts makes the masking engine over-constraining; completions that all end
  invalid or dead make the allowing engine under-constraining; completions that never end are
  ``unresolved``.

The keyword of a disagreement is the one the validator names for an invalid completion, else that of
the argument the prefix stands in (the deepest argument whose text starts at or before it: its
schema's most specific keyword, ``harness.fuzz.defects.label_of``), ``structure`` before the first
argument. The walk stops when the cell's budget is spent (``timed_out``).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from harness.agents import ToolCall
from harness.fuzz.defects import label_of, subschema_at
from harness.fuzz.mutants import _get, _paths, escaping_mutant, judge
from harness.fuzz.reference.engines import Engine, LlguidanceEngine, Picker, XgrammarEngine, bit, set_bits
from harness.fuzz.reference.records import (
    OVER,
    SPECIAL,
    UNDER,
    UNRESOLVED,
    DisagreementExample,
    ReferenceCell,
)

VALID_INSTANCES = 8
INVALID_INSTANCES = 8
PER_PREFIX = 2
COMPLETIONS = 1
COMPLETION_TOKENS = 64
MARK = "Zq9MARKq9Z"
STRUCTURE = "structure"


@dataclass
class Instance:
    """One text walked, and where its arguments start."""

    text: str
    valid: bool
    value: Any = None
    starts: list[tuple[int, str]] = field(default_factory=list)
    """(offset where an argument's text starts, its keyword), by offset."""


@dataclass
class Walk:
    """The state of one cell's differential."""

    grammar: Any
    case: Any
    xg: XgrammarEngine
    llg: LlguidanceEngine
    picker: Picker
    special: np.ndarray
    """Packed mask of the tokens llguidance treats as special."""
    rng: np.random.Generator
    report: ReferenceCell
    markers: tuple[str, ...] = ()
    """The texts of the control tokens llguidance knows as special tokens only."""

    @property
    def tok(self) -> Any:
        return self.grammar.walker.tok


def reference_engine(grammar: Any, name: str) -> LlguidanceEngine | str:
    """The reference engine on ``grammar``'s constraint, or why it cannot read it (kept on the grammar)."""
    if grammar.reference is not None:
        return grammar.reference  # type: ignore[no-any-return]
    from harness.grammar.guidance import NotExpressible, get_llg_tokenizer, to_llguidance

    engine: LlguidanceEngine | str
    try:
        text, notes = to_llguidance(grammar.artifact, grammar.family)
        engine = LlguidanceEngine(get_llg_tokenizer(grammar.family), text, grammar.walker.tok.vocab_size)
        engine.notes = "; ".join(notes)
        if engine.error is not None:
            engine = f"{name} refuses the converted grammar: {engine.error[:300]}"
    except NotExpressible as exc:
        engine = f"{name} cannot read this constraint: {exc}"
    grammar.reference = engine
    return engine


def compare_cell(grammar: Any, case: Any, name: str, *, seed: int, budget_s: float) -> ReferenceCell:
    """The differential of one cell (see the module's text), in ``budget_s`` seconds once the reference
    engine is built (its tokenizer, once per family and process, takes 5-60 s)."""
    if grammar.walker is None or grammar.artifact is None:
        return ReferenceCell(engine=name, comparable=False, note="no grammar was built")
    engine = reference_engine(grammar, name)
    if isinstance(engine, str):
        return ReferenceCell(engine=name, comparable=False, note=engine)
    started = time.monotonic()
    deadline = started + budget_s
    tok = grammar.walker.tok
    walk = Walk(grammar, case, XgrammarEngine(grammar.walker.matcher, tok.vocab_size), engine,
                Picker(tok, grammar.walker.stop_ids), _special_words(engine, grammar.family, tok.vocab_size),
                np.random.default_rng(seed), ReferenceCell(engine=name, comparable=True, note=engine.notes or None),
                tuple(text for text, tid in tok.control_tokens.items() if engine.tokenizer.is_special_token(tid)))
    for instance in instances(grammar, case):
        if time.monotonic() > deadline:
            walk.report.timed_out = True
            break
        walk.report.instances += 1
        walk_instance(walk, instance, deadline)
    walk.report.seconds = round(time.monotonic() - started, 3)
    return walk.report


_SPECIAL: dict[str, np.ndarray] = {}


def _special_words(engine: LlguidanceEngine, family: str, vocab_size: int) -> np.ndarray:
    """The packed mask of the tokens llguidance treats as special (once per family and process)."""
    from harness.fuzz.walker import _words_of

    if family not in _SPECIAL:
        special = [t for t in range(vocab_size) if engine.tokenizer.is_special_token(t)]
        _SPECIAL[family] = _words_of(special, len(engine.words))
    return _SPECIAL[family]


def instances(grammar: Any, case: Any) -> list[Instance]:
    """The valid calls, then the invalid ones (value mutants, a broken escape), as texts."""
    from harness.fuzz.cell import render

    out: list[Instance] = []
    for value in case.values[:VALID_INSTANCES]:
        text = render(grammar, [ToolCall.create(case.tool.name, value)])
        if text:
            out.append(Instance(text, True, value, starts(grammar, case, value, text)))
    invalid: list[Instance] = []
    for mutants, seed in zip(case.mutants, case.seeds, strict=False):
        for mutant in mutants:
            text = render(grammar, [mutant.call]) if mutant.call is not None else None
            if text and mutant.call is not None:
                arguments = mutant.call.arguments if mutant.call.name == case.tool.name else None
                invalid.append(Instance(text, False, arguments, starts(grammar, case, arguments, text)))
        if out and (broken := escaping_mutant(grammar.family, grammar.strategy, out[0].text, seed)) is not None:
            invalid.append(Instance(str(broken.text), False, None, [(0, "escaping")]))
        if len(invalid) >= INVALID_INSTANCES:
            break
    return out + invalid[:INVALID_INSTANCES]


def starts(grammar: Any, case: Any, value: Any, text: str) -> list[tuple[int, str]]:
    """Where each argument's text starts in ``text`` (rendered with that argument replaced by a marker:
    the two texts agree up to it), with the keyword of its schema."""
    from harness.fuzz.cell import render
    from harness.fuzz.mutants import _replace
    from harness.grammar.families import strict_schema

    if not isinstance(value, dict):
        return []
    schema = strict_schema(case.tool.parameters)
    out = []
    for path in _paths(value):
        if not path or isinstance(_get(value, path), dict | list):
            continue
        marked = render(grammar, [ToolCall.create(case.tool.name, _replace(value, path, MARK))])
        sub = subschema_at(schema, path)
        if marked:
            out.append((_common_prefix(text, marked), label_of(sub) if sub else "type"))
    return sorted(out)


def _common_prefix(a: str, b: str) -> int:
    """How many leading characters ``a`` and ``b`` share."""
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


def keyword_at(instance: Instance, offset: int) -> str:
    found = STRUCTURE
    for start, keyword in instance.starts:
        if start > offset:
            break
        found = keyword
    return found


def _can_stop(engine: Engine, stop_ids: Sequence[int]) -> bool:
    return any(bit(engine.words, s) for s in stop_ids)


def walk_instance(walk: Walk, instance: Instance, deadline: float) -> None:
    """Both engines along ``instance``'s tokens, every prefix's masks compared."""
    from harness.fuzz.walker import encode

    ids = encode(walk.tok, instance.text)
    stops = walk.picker.stop_ids
    if not (walk.xg.restore([]) and walk.llg.restore([])):
        return
    for i in range(len(ids) + 1):
        if time.monotonic() > deadline:
            walk.report.timed_out = True
            return
        walk.xg.fill()
        walk.llg.fill()
        walk.report.prefixes += 1
        ends = (_can_stop(walk.xg, stops), _can_stop(walk.llg, stops))
        diff = (walk.xg.words ^ walk.llg.words).view(np.uint32)
        for s in stops:  # "may end here" is compared once, below
            diff[s >> 5] &= ~np.uint32(1 << (s & 31))
        tokens = [int(t) for t in set_bits(diff) if t < walk.tok.vocab_size]
        if ends[0] != ends[1]:
            tokens.append(stops[0])
        if tokens:
            allowed = {t: (walk.xg if bit(walk.xg.words, t) or (t == stops[0] and ends[0]) else walk.llg) for t in tokens}
            _classify_prefix(walk, instance, ids, i, allowed)
            if not (walk.xg.restore(ids[:i]) and walk.llg.restore(ids[:i])):
                return
        if i == len(ids) or not (walk.xg.consume(ids[i]) and walk.llg.consume(ids[i])):
            return


def _classify_prefix(walk: Walk, instance: Instance, ids: Sequence[int], i: int, allowed: Mapping[int, Engine]) -> None:
    report = walk.report
    report.disagreeing_tokens += len(allowed)
    offset = len(walk.tok.decode(list(ids[:i])))
    keyword = keyword_at(instance, offset)
    special = [t for t, e in allowed.items() if t not in walk.picker.stop_ids and _special_difference(walk, e, t, ids[:i])]
    if special:  # all counted, one example kept
        report.add(_example(walk, SPECIAL, keyword, allowed[special[0]], special[0], ids[:i]), count=len(special))
    rest = [t for t in allowed if t not in special]
    own = ids[i] if i < len(ids) and ids[i] in rest else None
    others = [t for t in rest if t != own]
    chosen = ([own] if own is not None else []) + [int(t) for t in walk.rng.permutation(others)[: PER_PREFIX - (own is not None)]]
    report.sampled = report.sampled or len(chosen) < len(rest)
    for t in chosen:
        report.add(classify(walk, instance, ids, i, t, allowed[t], keyword))


def _special_difference(walk: Walk, engine: Engine, token: int, prefix: Sequence[int]) -> bool:
    """Whether the engines disagree on ``token`` because they treat added tokens differently: one
    llguidance treats as special (never text) that xgrammar lets through as text; one the harness
    blanks in xgrammar's vocabulary (Gemma's ``[multimodal]``...) that llguidance lets through; or the
    first piece of a control marker spelt in pieces (``<`` of ``<tool_call>``), which xgrammar allows
    and llguidance cannot (it knows the marker as its special token only)."""
    if engine is walk.llg:
        return token in walk.tok.special_ids
    if bit(walk.special, token):
        return True
    before = walk.tok.decode(list(prefix))
    piece = walk.tok.decode([*prefix, token])[len(before):]
    return bool(piece) and any(m.startswith(piece) and m != piece for m in walk.markers)


def classify(walk: Walk, instance: Instance, ids: Sequence[int], i: int, token: int, engine: Engine,
             keyword: str) -> DisagreementExample:
    """What one disagreeing token is (see the module's text)."""
    other = walk.llg if engine is walk.xg else walk.xg
    prefix = list(ids[:i])
    if token == walk.picker.stop_ids[0]:
        return _judged(walk, [prefix], engine, other, token, prefix, keyword)
    texts: list[list[int]] = []
    along = _along_instance(walk, instance, ids, i, token)
    if along is not None and engine.restore(along):  # the engine takes the rest of the instance
        engine.fill()
        if _can_stop(engine, walk.picker.stop_ids):
            if instance.valid:
                return _example(walk, f"{OVER}:{other.name}", keyword, engine, token, prefix, along,
                                "valid (the instance, from this token on)")
            texts.append(along)
    for _ in range(COMPLETIONS):
        if not (engine.restore(prefix) and engine.consume(token)):
            return _example(walk, f"{UNDER}:{engine.name}", "mask", engine, token, prefix, None,
                            "the engine refused a token its own mask allowed")
        done = walk.picker.complete(engine, walk.rng, COMPLETION_TOKENS, ids)
        if done.dead:
            texts.append([])
        elif done.ended:
            texts.append([*prefix, token, *done.ids])
    return _judged(walk, texts, engine, other, token, prefix, keyword)


def _along_instance(walk: Walk, instance: Instance, ids: Sequence[int], i: int, token: int) -> list[int] | None:
    """The instance's tokens with ``token`` at ``i``, when it spells the instance's own text from there
    (another tokenization of it): the rest of the text re-encoded after it. None when it does not."""
    from harness.fuzz.walker import encode

    if i < len(ids) and token == ids[i]:
        return list(ids)
    with_token = walk.tok.decode([*ids[:i], token])
    if len(with_token) <= len(walk.tok.decode(list(ids[:i]))) or not instance.text.startswith(with_token):
        return None
    return [*ids[:i], token, *encode(walk.tok, instance.text[len(with_token):])]


def _judged(walk: Walk, texts: list[list[int]], engine: Engine, other: Engine, token: int, prefix: list[int],
            keyword: str) -> DisagreementExample:
    """Over-constraining by ``other`` when a completion is valid; under-constraining by ``engine`` when
    all ended invalid or dead; unresolved when none ended."""
    g = walk.grammar
    last: tuple[list[int] | None, str] = (None, "")
    keyword_seen = keyword
    for ids in texts:
        if not ids:
            last = (None, "dead end: no token allowed and no stop")
            keyword_seen = "dead_end"
            continue
        verdict = judge(g.adapter, walk.tok.decode(ids), g.tools, g.checks, parallel=g.constraint.allow_parallel_calls)
        if verdict.valid:
            return _example(walk, f"{OVER}:{other.name}", keyword, engine, token, prefix, ids, "valid")
        last = (ids, f"{verdict.keyword}: {verdict.reason}"[:200])
        keyword_seen = verdict.keyword or keyword
    if not texts:
        return _example(walk, UNRESOLVED, keyword, engine, token, prefix, None, "no completion ended")
    named = keyword_seen if keyword_seen and not keyword_seen.startswith("parse:") else keyword
    return _example(walk, f"{UNDER}:{engine.name}", named, engine, token, prefix, last[0], last[1])


def _example(walk: Walk, cls: str, keyword: str, engine: Engine, token: int, prefix: Sequence[int],
             completion: Sequence[int] | None = None, verdict: str = "") -> DisagreementExample:
    tok = walk.tok
    shown = "<stop>" if token in walk.picker.stop_ids else tok.token_text(token)
    return DisagreementExample(
        cls=cls, keyword=keyword, allowed_by=engine.name, token=shown, token_id=token,
        prefix=tok.decode(list(prefix))[-120:], verdict=verdict,
        completion=None if completion is None else tok.decode(list(completion))[-200:],
    )


__all__ = ["compare_cell", "instances", "keyword_at", "reference_engine", "starts", "walk_instance"]
