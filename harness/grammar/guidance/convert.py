"""llguidance (vLLM's ``guidance`` backend) on the harness's constraint artifacts: each artifact turned
into an llguidance grammar, as far as it can be expressed exactly (else ``NotExpressible`` with the
reason):

- ``json``: the schema itself with ``whitespace_flexible=False``, as vLLM's guidance backend compiles it
  on a server with ``disable_any_whitespace``: compact JSON, the language xgrammar compiles with
  ``separators=(",", ":")``.
- ``grammar``: the family's EBNF converted to Lark (``lark``).
- ``structural_tag``: ``triggered_tags`` (what the families build; free text first when a plain answer
  is allowed), or a ``grammar`` format (a plain answer alone); each tag
  ``begin`` + content + ``end``; content a JSON schema (``%json`` with the same bounded whitespace) or
  an EBNF grammar (converted); free text between tags (parallel calls) excludes the triggers and the
  ``excludes`` strings.

llguidance treats every added token as special (never text): FunctionGemma's control tokens and
Qwen's ``<tool_call>`` are referenced by id. Where the grammar expects text (inside a string), a
control token is therefore refused by llguidance and accepted by xgrammar (the gold encoding writes
a control token's text as that token), as are Gemma's HTML-tag added tokens (``SPECIAL_IN_TEXT``).
Tokenizer: ``llguidance.hf.from_tokenizer`` on the grammar core's ``FamilyTokenizer.hf`` (~3-7 s; one
per family and process).
"""

from __future__ import annotations

import json
import threading
from typing import Any

from harness.agents import ConstraintArtifact
from harness.grammar.guidance.lark import NotExpressible, ebnf_to_lark, lark_literal, lark_regex_text
from harness.vocabulary import ErrorKind

SPECIAL_IN_TEXT = ErrorKind.llguidance_special_in_text
"""A gold output refused at a token that llguidance treats as special and xgrammar as text, where the
grammar expects text (inside a string argument): control tokens (xgrammar gives them their text) and,
for Gemma, 71 HTML-tag added tokens (``<table>``, ``</b>``, ...) that are ordinary text to the model.
An engine difference (vLLM's guidance backend refuses them too), not a conversion error."""
_LOCK = threading.Lock()
_TOKENIZERS: dict[str, Any] = {}


def available() -> str | None:
    """None when llguidance imports, else why not."""
    try:
        import llguidance
        import llguidance.hf  # noqa: F401
    except ImportError as exc:
        return f"llguidance is not installed ({exc}): pip install 'harness[guidance]'"
    return None


def version() -> str | None:
    try:
        import llguidance

        return str(llguidance.__version__)
    except (ImportError, AttributeError):
        return None


def get_llg_tokenizer(family: str) -> Any:
    """llguidance's tokenizer for ``family`` (built once per process)."""
    with _LOCK:
        lt = _TOKENIZERS.get(family)
        if lt is None:
            import llguidance.hf

            from harness.grammar.tokenizers import get_tokenizer

            tok = get_tokenizer(family)
            hf: Any = tok.hf  # a transformers fast tokenizer (llguidance reads its Rust backend)
            lt = llguidance.hf.from_tokenizer(hf, n_vocab=tok.vocab_size, eos_token=list(tok.eos_ids))
            _TOKENIZERS[family] = lt
        return lt


def special_texts(family: str, lt: Any) -> dict[str, int]:
    """Control-token texts the grammars write that llguidance treats as special tokens."""
    from harness.grammar.tokenizers import get_tokenizer

    return {text: tid for text, tid in get_tokenizer(family).control_tokens.items() if lt.is_special_token(tid)}


def _ws_options(max_ws: int | None) -> dict[str, Any]:
    if max_ws is None:
        return {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}
    return {"whitespace_pattern": f"[\\x20\\x0A\\x0D\\x09]{{0,{int(max_ws)}}}"}


def _with_options(schema: Any, max_ws: int | None) -> dict[str, Any]:
    if not isinstance(schema, dict):
        raise NotExpressible("the JSON schema is not an object")
    if "x-guidance" in schema:
        raise NotExpressible("the schema already carries x-guidance options")
    return {"x-guidance": _ws_options(max_ws), **schema}


def _pieces(text: str, specials: dict[str, int]) -> str:
    """``text`` as a Lark sequence: literals, special tokens by id."""
    out: list[str] = []
    rest = text
    while rest:
        hits = [(rest.find(s), s) for s in specials if s in rest]
        if not hits:
            out.append(lark_literal(rest))
            break
        pos, s = min(hits, key=lambda h: (h[0], -len(h[1])))
        if pos:
            out.append(lark_literal(rest[:pos]))
        out.append(f"<[{specials[s]}]>")
        rest = rest[pos + len(s) :]
    return " ".join(out) or '""'


def _structural_tag(value: str, specials: dict[str, int]) -> tuple[str, list[str]]:
    tag = json.loads(value)
    fmt = tag.get("format") if isinstance(tag, dict) else None
    if isinstance(fmt, dict) and fmt.get("type") == "grammar" and isinstance(fmt.get("grammar"), str):
        lark = ebnf_to_lark(fmt["grammar"], specials)  # a plain answer alone (no tool offered)
        return lark.text, list(lark.notes)
    if not isinstance(fmt, dict) or fmt.get("type") != "triggered_tags":
        raise NotExpressible("only triggered_tags and grammar structural tags are converted")
    unknown = set(fmt) - {"type", "triggers", "tags", "at_least_one", "stop_after_first", "excludes"}
    if unknown:
        raise NotExpressible(f"triggered_tags with {sorted(unknown)} is not converted")
    notes: list[str] = []
    lines: list[str] = ["%llguidance {}", ""]
    tag_rules = []
    for i, t in enumerate(fmt["tags"]):
        if not any(t["begin"].startswith(trig) for trig in fmt["triggers"]):
            raise NotExpressible(f"tag {i} does not begin with a trigger")
        content = t.get("content") or {}
        kind = content.get("type")
        if kind == "json_schema":
            schema = _with_options(content["json_schema"], content.get("max_whitespace_cnt"))
            body = "%json " + json.dumps(schema, ensure_ascii=False)
        elif kind == "grammar":
            lark = ebnf_to_lark(content["grammar"], specials, prefix=f"tag{i}_")
            lines.append(lark.text)
            body = lark.start
            notes.extend(n for n in lark.notes if n not in notes)
        elif kind == "const_string":
            body = _pieces(content["value"], specials)
        else:
            raise NotExpressible(f"structural-tag content {kind!r} is not converted")
        tag_rules.append(f"tag_{i}")
        lines.append(f"tag_{i}: {_pieces(t['begin'], specials)} {body} {_pieces(t['end'], specials)}")
    one = " | ".join(tag_rules)
    # at_least_one: the answer starts with a tag; without it, free text (no trigger, no excluded
    # string) comes first and a tag may follow. stop_after_first: the answer ends after one tag.
    first = bool(fmt.get("at_least_one"))
    if fmt.get("stop_after_first"):
        start = "call" if first else "FREE_TEXT? call?"
    else:
        start = "call (FREE_TEXT? call)* FREE_TEXT?" if first else "FREE_TEXT? (call FREE_TEXT?)*"
    lines.insert(2, f"start: {start}\ncall: {one}")
    if "FREE_TEXT" in start:
        banned = [*fmt["triggers"], *fmt.get("excludes", [])]
        alt = "|".join(lark_regex_text(b) for b in banned)
        lines.append(f"FREE_TEXT: /(?s:.+)/ & ~/(?s:.*)({alt})(?s:.*)/")
    return "\n".join(lines) + "\n", notes


def lark_text(artifact: ConstraintArtifact, family: str) -> tuple[str, list[str]]:
    """A ``grammar`` or ``structural_tag`` artifact as Lark text (control tokens by id) and notes on
    the conversion. Raises ``NotExpressible``."""
    specials = special_texts(family, get_llg_tokenizer(family))
    if artifact.kind == "grammar":
        lark = ebnf_to_lark(artifact.value, specials)
        return lark.text, list(lark.notes)
    if artifact.kind == "structural_tag":
        return _structural_tag(artifact.value, specials)
    raise NotExpressible(f"artifact kind {artifact.kind!r} is not a grammar")


def to_llguidance(artifact: ConstraintArtifact, family: str) -> tuple[str, list[str]]:
    """The llguidance grammar (serialized, for ``LLMatcher``) of ``artifact`` and notes on the
    conversion. Raises ``NotExpressible``."""
    from llguidance import LLMatcher

    if artifact.kind == "json":
        # As vLLM's guidance backend compiles a JSON schema on a server with disable_any_whitespace.
        grammar = LLMatcher.grammar_from_json_schema(artifact.value, defaults={"whitespace_flexible": False})
        return grammar, ["whitespace_flexible=False, as vLLM's guidance backend with disable_any_whitespace"]
    text, notes = lark_text(artifact, family)
    return LLMatcher.grammar_from_lark(text), notes


def vllm_guidance_field(artifact: ConstraintArtifact, family: str) -> tuple[str, str]:
    """The ``structured_outputs`` field and value that make vLLM's guidance backend compile the grammar
    ``to_llguidance`` compiles: a JSON schema as it is; an EBNF grammar or a structural tag as Lark text
    in ``grammar`` (which that backend reads as Lark). Sent as built, both fail there: its GBNF reader
    knows neither xgrammar's ``TagDispatch`` nor its lookaheads, and spells a control token such as
    ``<start_function_call>`` as text the model's special token never matches; its ``structural_tag``
    field reads only vLLM's legacy form. Raises ``NotExpressible``."""
    if artifact.kind == "json":
        return "json", artifact.value
    return "grammar", lark_text(artifact, family)[0]


__all__ = ["SPECIAL_IN_TEXT", "NotExpressible", "available", "get_llg_tokenizer", "lark_text", "special_texts",
           "to_llguidance", "version", "vllm_guidance_field"]
