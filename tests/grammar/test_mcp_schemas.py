"""MCP tool schemas in every harness lane, with the real xgrammar and the families' real tokenizers:
each valid instance (``jsonschema`` says so) that the json_schema lane accepts, ebnf and structural_tag
accept too, in both families.

The schemas are shaped as the MCP protocol's own JSON schema is written (draft-07): the SDK's models
(``mcp_types``, pydantic) rewritten the way the protocol's ``schema.json`` spells them -- definitions
under ``definitions``, the tool's parameters a root ``$ref`` into them, an optional field just left out
of ``required`` (no ``anyOf`` with null), a union of scalar types as a type list (``RequestId``:
``["string", "integer"]``), a content block as an ``anyOf`` over ``$ref``'d objects. The real servers'
own schemas (the filesystem server's draft-07, ``number`` for counts; mcp-server-git's pydantic models)
are in ``tests/tools/mcp_source``, run on the servers.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import jsonschema
import pytest

from harness.agents import ConstraintError, DecodingConstraint, ToolCall, ToolSchema
from harness.grammar.families import FAMILIES, get_adapter

mcp_types = pytest.importorskip("mcp_types")
pytest.importorskip("xgrammar")

STRATEGIES = ("ebnf", "structural_tag", "json_schema")
"""The harness's strategies: with a family, each is a lane."""


def protocol_shaped(schema: Any) -> Any:
    """A pydantic schema as MCP's schema.json writes the same type (see the module doc)."""
    if isinstance(schema, list):
        return [protocol_shaped(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: protocol_shaped(v) for k, v in schema.items() if k not in ("default", "title")}
    if "$ref" in out:
        out["$ref"] = out["$ref"].replace("#/$defs/", "#/definitions/")
    branches = out.get("anyOf")
    if isinstance(branches, list):
        kept = [b for b in branches if b != {"type": "null"}]
        if all(set(b) == {"type"} and isinstance(b["type"], str) for b in kept) and len(kept) > 1:
            out.pop("anyOf")
            out["type"] = [b["type"] for b in kept]  # RequestId, ProgressToken: a type list
        elif len(kept) == 1:
            out.pop("anyOf")
            out.update(kept[0])
        else:
            out["anyOf"] = kept
    return out


def rooted(model: Any) -> dict[str, Any]:
    """The model's schema as a root ``$ref`` into ``definitions`` (draft-07)."""
    schema = protocol_shaped(model.model_json_schema(by_alias=True))
    definitions = schema.pop("$defs", {})
    definitions[model.__name__] = schema
    return {"$schema": "http://json-schema.org/draft-07/schema#", "$ref": f"#/definitions/{model.__name__}",
            "definitions": definitions}


def content_block() -> dict[str, Any]:
    """MCP's ``ContentBlock`` as the tool's parameters: a root ``$ref`` to an ``anyOf`` of ``$ref``'d objects."""
    definitions = rooted(mcp_types.CallToolResult)["definitions"]
    names = ("TextContent", "ImageContent", "AudioContent", "ResourceLink", "EmbeddedResource")
    definitions["ContentBlock"] = {"anyOf": [{"$ref": f"#/definitions/{n}"} for n in names]}
    return {"$schema": "http://json-schema.org/draft-07/schema#", "$ref": "#/definitions/ContentBlock",
            "definitions": definitions}


TEXT = {"type": "text", "text": "line one\nline \"two\" \u00e9"}
IMAGE = {"type": "image", "data": "aGk=", "mimeType": "image/png"}
LINK = {"type": "resource_link", "uri": "file:///tmp/a.txt", "name": "a.txt", "size": 3}
EMBEDDED = {"type": "resource", "resource": {"uri": "file:///tmp/a.txt", "text": "x", "mimeType": "text/plain"}}

# (what, the tool's parameters (built when first used), valid instances)
TABLE: list[tuple[str, Any, list[dict[str, Any]]]] = [
    ("ContentBlock: root $ref to an anyOf of $ref'd objects", content_block,
     [TEXT, IMAGE, LINK, EMBEDDED, {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
      {**TEXT, "annotations": {"audience": ["user", "assistant"], "priority": 0.5}}]),
    ("CallToolResult", lambda: rooted(mcp_types.CallToolResult),
     [{"content": []}, {"content": [TEXT, IMAGE], "isError": False}, {"content": [LINK, EMBEDDED], "isError": True},
      {"content": [TEXT], "structuredContent": {"rows": [1, "two", None, {"k": True}]}}]),
    ("InitializeRequestParams", lambda: rooted(mcp_types.InitializeRequestParams),
     [{"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "harness", "version": "1"}},
      {"protocolVersion": "2025-11-25", "capabilities": {"roots": {"listChanged": True}, "sampling": {}},
       "clientInfo": {"name": "h", "version": "0.1", "title": "H"}},
      {"protocolVersion": "x", "capabilities": {"experimental": {"a": {"b": 1}}}, "clientInfo": {"name": "", "version": ""}}]),
    ("ProgressNotificationParams: a type list", lambda: rooted(mcp_types.ProgressNotificationParams),
     [{"progressToken": 7, "progress": 0.5}, {"progressToken": "abc", "progress": 1, "total": 2},
      {"progressToken": -3, "progress": 10, "message": "half"}]),
    ("CancelledNotificationParams: RequestId", lambda: rooted(mcp_types.CancelledNotificationParams),
     [{"requestId": 12}, {"requestId": "r-1", "reason": "user"}, {}]),
    ("SamplingMessage", lambda: rooted(mcp_types.SamplingMessage),
     [{"role": "user", "content": TEXT}, {"role": "assistant", "content": IMAGE},
      {"role": "user", "content": [TEXT, IMAGE]}]),
    ("PromptMessage", lambda: rooted(mcp_types.PromptMessage),
     [{"role": "assistant", "content": LINK}, {"role": "user", "content": EMBEDDED}]),
    ("CompleteRequestParams: anyOf of two references", lambda: rooted(mcp_types.CompleteRequestParams),
     [{"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "a", "value": "b"}},
      {"ref": {"type": "ref/resource", "uri": "file:///{x}"}, "argument": {"name": "x", "value": ""},
       "context": {"arguments": {"y": "1"}}}]),
    ("CreateMessageRequestParams", lambda: rooted(mcp_types.CreateMessageRequestParams),
     [{"messages": [{"role": "user", "content": TEXT}], "maxTokens": 100},
      {"messages": [], "maxTokens": 1, "modelPreferences": {"hints": [{"name": "small"}], "speedPriority": 1},
       "stopSequences": ["\n"], "temperature": 0.2, "includeContext": "none"}]),
    ("Resource", lambda: rooted(mcp_types.Resource),
     [{"uri": "file:///a", "name": "a"}, {"uri": "file:///a", "name": "a", "size": 3, "mimeType": "text/plain",
                                           "annotations": {"priority": 1, "lastModified": "2026-01-01"}}]),
    ("Tool", lambda: rooted(mcp_types.Tool),
     [{"name": "t", "inputSchema": {"type": "object"}},
      {"name": "t", "description": "d", "inputSchema": {"type": "object", "properties": {"x": {"type": "string"}}},
       "annotations": {"readOnlyHint": True}},
      {"name": "t", "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}, "title": "T"}]),
    ("ElicitRequestFormParams", lambda: rooted(mcp_types.ElicitRequestFormParams),
     [{"message": "name?", "requestedSchema": {"type": "object", "properties": {"n": {"type": "string"}}}},
      {"message": "age?", "mode": "form", "requestedSchema": {"type": "object", "properties": {
          "age": {"type": "integer", "minimum": 0}}, "required": ["age"]}}]),
    ("a root anyOf of objects, no $ref", lambda: {"anyOf": [
        {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
        {"type": "object", "properties": {"paths": {"type": "array", "items": {"type": "string"}}}, "required": ["paths"]}]},
     [{"path": "a"}, {"paths": ["a", "b"]}, {"paths": []}, {"path": ""}]),
    ("a root allOf of one $ref", lambda: {"allOf": [{"$ref": "#/definitions/A"}], "definitions": {
        "A": {"type": "object", "properties": {"id": {"type": ["string", "integer"]}}, "required": ["id"]}}},
     [{"id": 1}, {"id": "one"}, {"id": -40}]),
]
"""42 valid instances over 14 schemas (the issue's held-out count: ebnf and structural_tag rejected 5 of
42 where json_schema rejected none)."""


ROOT = "Root: format uri with minLength 1"
"""Outside the 42: MCP's ``Root`` (the SDK's ``AnyUrl``), which json_schema refuses (below)."""


@functools.cache
def schema_of(what: str) -> Any:
    if what == ROOT:
        return rooted(mcp_types.Root)
    return next(build for name, build, _ in TABLE if name == what)()


@functools.cache
def walker(family: str, strategy: str, what: str) -> Any:
    from harness.fuzz.walker import GrammarWalker
    from harness.grammar.compile import compile_artifact
    from harness.grammar.tokenizers import get_tokenizer

    tool = ToolSchema(name="t", description=what, parameters=schema_of(what))
    artifact = get_adapter(family).build_payload([tool], DecodingConstraint(strategy=strategy)).artifact
    assert artifact is not None and artifact.refused == ()
    return GrammarWalker(compile_artifact(artifact, family).compiled, get_tokenizer(family))


def accepts(family: str, strategy: str, what: str, instance: dict[str, Any]) -> bool:
    text = get_adapter(family).render_output([ToolCall.create("t", instance)], DecodingConstraint(strategy=strategy))
    return bool(walker(family, strategy, what).accepts_text(text).accepted)


def test_the_table_holds_42_valid_instances() -> None:
    assert sum(len(instances) for _, _, instances in TABLE) == 42
    for what, _, instances in TABLE:
        check = jsonschema.Draft7Validator(schema_of(what))
        for instance in instances:
            assert check.is_valid(instance), (what, instance, next(check.iter_errors(instance)).message)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("what", [what for what, _, _ in TABLE])
def test_every_lane_accepts_what_json_schema_accepts(family: str, what: str) -> None:
    missed = []
    for instance in next(instances for name, _, instances in TABLE if name == what):
        taken = {strategy: accepts(family, strategy, what, instance) for strategy in STRATEGIES}
        if taken["json_schema"] and not all(taken.values()):
            missed.append((json.dumps(instance), [strategy for strategy, ok in taken.items() if not ok]))
    assert missed == []


def test_a_root_union_still_rejects_what_no_branch_allows() -> None:
    """The union at the top is the branches' language, not any object: a text block's fields under an
    image's tag, a block of no kind, and a text block without its text are rejected in the ebnf and
    structural_tag lanes of both families."""
    what = TABLE[0][0]
    check = jsonschema.Draft7Validator(schema_of(what))
    for bad in ({"type": "image", "text": "hi"}, {"type": "video", "data": "x"}, {"type": "text"}):
        assert not check.is_valid(bad)
        for family in FAMILIES:
            for strategy in ("ebnf", "structural_tag"):
                assert not accepts(family, strategy, what, bad), (family, strategy, bad)


ROOT_URIS = ({"uri": "file:///home/u/project"}, {"uri": "https://example.org/a/b?x=1#f", "name": "p"},
             {"uri": "urn:isbn:0451450523"})


def test_root_uri_a_format_with_a_length_builds_in_ebnf_and_structural_tag() -> None:
    """MCP's ``Root.uri`` is ``format: uri`` with ``minLength: 1`` (the SDK's ``AnyUrl``). ebnf and
    structural_tag build the format and the length as one intersection: they take the valid roots and
    reject an empty or scheme-less URI. json_schema refuses the tool by vLLM's own reason: vLLM with
    the xgrammar backend answers 400 to lengths beside a format (docs/schemas.md)."""
    check = jsonschema.Draft7Validator(schema_of(ROOT), format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)
    for family in FAMILIES:
        for strategy in ("ebnf", "structural_tag"):
            for good in ROOT_URIS:
                assert check.is_valid(good) and accepts(family, strategy, ROOT, good), (family, strategy, good)
            for bad in ({"uri": ""}, {"uri": "no scheme"}):
                assert not check.is_valid(bad) and not accepts(family, strategy, ROOT, bad), (family, strategy, bad)
        tool = ToolSchema(name="t", description=ROOT, parameters=schema_of(ROOT))
        with pytest.raises(ConstraintError, match=r"Root\.uri: minLength/maxLength beside a format: vLLM"):
            get_adapter(family).build_payload([tool], DecodingConstraint(strategy="json_schema"))
