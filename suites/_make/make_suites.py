"""Generate the project's own suites from the compact specs next to this file.

    python suites/_make/make_suites.py          # (re)write suites/shellper, suites/fs-episodes, suites/smoke
    python suites/_make/make_suites.py --check  # exit 1 if the committed files differ from the specs

Deterministic: the same specs give byte-identical files. Every call is run through the bundle's own
Gorilla file-system tools (``harness.sandbox.gorilla.GorillaSession``: the ``.pym`` tools on a
``FileSystemState``, as a run executes them) from the conversation's start: a call that fails there is
an authoring error unless the spec marks it with ``!`` (those points are tagged ``tool_error``).
Calls equal by the tools' defaults (``tail(lines=10)`` and ``tail()``, ``find(path='.', name=x)``
and ``find(name=x)``...: ``harness.sandbox.gorilla.TOOL_DEFAULTS``) are added as
``expected_alternatives``. Not part of the harness package.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from itertools import product
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SUITES = HERE.parent
sys.path.insert(0, str(HERE))

from episode_specs import EPISODES  # noqa: E402
from shellper_specs import CONVERSATIONS, SMOKE_POINTS  # noqa: E402
from trees import tree  # noqa: E402

from harness.agents.tools import Tool  # noqa: E402
from harness.bfcl import parse_python_call  # noqa: E402
from harness.eval.data import (  # noqa: E402
    CallSpec,
    ChatMessage,
    EpisodeCase,
    NextCallCase,
    SuiteSpec,
    write_suite,
)
from harness.sandbox import FileSystemState, discover_tools  # noqa: E402
from harness.vocabulary import STRATEGIES  # noqa: E402
from harness.sandbox.gorilla import FS_TOOL_NAMES, TOOL_DEFAULTS, GorillaSession, builtin_fs_schemas  # noqa: E402

BUNDLE = "../../bundles/shellper"
TOOLS_DIR = SUITES.parent / "bundles" / "shellper" / "tools"
ORIGIN = "Written for this project (suites/_make); no text taken from any dataset."
LICENCE = "Apache-2.0, as the project"

class SpecError(Exception):
    pass


def parse(text: str) -> tuple[CallSpec, bool]:
    """A spec call -> (call, expected to fail)."""
    fails = text.startswith("!")
    return parse_python_call(text.removeprefix("!")), fails


def session(tools: list[Tool], fs: dict[str, Any]) -> GorillaSession:
    """The bundle's tools on a fresh state of the BFCL-shaped tree ``fs`` (left untouched)."""
    return GorillaSession(tools, FileSystemState.from_nodes(fs))


def run_checked(fs: GorillaSession, call: CallSpec, fails: bool, where: str) -> None:
    result = fs.call(call.name, call.arguments)
    if result.is_error:  # the tool refused the call itself (bad arguments...): never meant
        raise SpecError(f"{where}: {call.name}({call.arguments}) is refused by the tool: {fs.failed(result)}")
    error = fs.failed(result)
    if fails and error is None:
        raise SpecError(f"{where}: {call.name} was marked to fail but succeeded: {result.output}")
    if not fails and error is not None:
        raise SpecError(f"{where}: {call.name}({call.arguments}) fails on the tree: {error}")


def alternatives(call: CallSpec) -> list[CallSpec]:
    """Other spellings of ``call`` that the tool's defaults make equal to it."""
    defaults = TOOL_DEFAULTS.get(call.name, {})
    free = [p for p in defaults if p not in call.arguments or call.arguments[p] == defaults[p]]
    out: list[CallSpec] = []
    for present in product([False, True], repeat=len(free)):
        args = {k: v for k, v in call.arguments.items() if k not in free}
        args.update({p: defaults[p] for p, keep in zip(free, present, strict=True) if keep})
        alt = CallSpec(name=call.name, arguments=args)
        if alt.arguments != call.arguments and alt not in out:
            out.append(alt)
    return out


def shellper_cases(tools: list[Tool]) -> tuple[list[NextCallCase], int]:
    cases: list[NextCallCase] = []
    seen_ids: set[str] = set()
    for conv_id, tree_key, turns in CONVERSATIONS:
        if conv_id in seen_ids:
            raise SpecError(f"duplicate conversation id {conv_id}")
        seen_ids.add(conv_id)
        fs = tree(tree_key)
        sim = session(tools, fs)
        history: list[ChatMessage] = []
        k = 0
        for text, calls in turns:
            history.append(ChatMessage(role="user", content=text))
            for raw in [calls] if isinstance(calls, str) else calls:
                call, fails = parse(raw)
                cid = f"{conv_id}-{k:02d}"
                run_checked(sim, call, fails, cid)
                cases.append(NextCallCase(
                    id=cid, conversation=conv_id, messages=list(history), initial_fs=fs,  # type: ignore[arg-type]
                    expected=call, expected_alternatives=alternatives(call),
                    tags=["tool_error"] if fails else [],
                ))
                history.append(ChatMessage(role="assistant", tool_calls=[call]))
                k += 1
        sim.close()
    return cases, len(CONVERSATIONS)


def episode_cases(tools: list[Tool]) -> list[EpisodeCase]:
    cases: list[EpisodeCase] = []
    for ep_id, tree_key, turns in EPISODES:
        fs = tree(tree_key)
        sim = session(tools, fs)
        ground: list[list[CallSpec]] = []
        for t, (_, calls) in enumerate(turns):
            ground.append([])
            for raw in calls:
                call, fails = parse(raw)
                run_checked(sim, call, fails, f"{ep_id} turn {t}")
                ground[-1].append(call)
        sim.close()
        cases.append(EpisodeCase(
            id=ep_id, initial_fs=fs,  # type: ignore[arg-type]
            turns=[[ChatMessage(role="user", content=text)] for text, _ in turns], ground_truth=ground,
        ))
    return cases


def check_coverage(points: list[NextCallCase], conversations: int, episodes: list[EpisodeCase]) -> None:
    schemas = builtin_fs_schemas()
    used = {c.expected.name for c in points}
    missing = sorted(set(FS_TOOL_NAMES) - used)
    problems = []
    if conversations < 40 or len(points) < 200 or missing:
        problems.append(f"shellper: {conversations} conversations, {len(points)} points, missing tools {missing}")
    if len(episodes) < 20 or any(not 2 <= len(e.turns) <= 4 for e in episodes):
        problems.append(f"fs-episodes: {len(episodes)} episodes, turns per episode must be 2-4")
    every: list[NextCallCase | EpisodeCase] = [*points, *episodes]
    for case in every:
        for call in case.gold_calls():
            s = schemas[call.name]
            props = s.parameters["properties"]
            if set(call.arguments) - set(props) or set(s.required) - set(call.arguments):
                problems.append(f"{case.id}: {call.name} arguments {sorted(call.arguments)}")
    if problems:
        raise SpecError("; ".join(problems))


SHELLPER_MAX_TOKENS = 80
"""The bound the harness derives from shellper's gold (1.5 x its longest answer, 45 Qwen tokens, rounded up
to 16), written down so a run of one family needs no other family's tokenizer to derive it (a Gemma-only
run built Qwen's tokenizer, about a minute from an empty cache, only for this number).
tests/eval/test_suites.py checks that derivation still gives it. The strategies include vLLM's own."""


def build(root: Path) -> dict[str, str]:
    """Write the three suites under ``root``; returns a one-line description per suite."""
    tools: list[Tool] = list(discover_tools(TOOLS_DIR))
    points, conversations = shellper_cases(tools)
    episodes = episode_cases(tools)
    check_coverage(points, conversations, episodes)
    by_id = {c.id: c for c in points}
    smoke = [by_id[i] for i in SMOKE_POINTS]
    tools = len({c.expected.name for c in points})
    write_suite(root / "shellper", SuiteSpec(
        name="shellper", version="1", kind="next_call", bundle=BUNDLE,
        description=(f"{conversations} file-system conversations expanded to {len(points)} next-call points "
                     f"(every prefix), {tools} tools, each with an initial file system so points can run."),
        source=ORIGIN, licence=LICENCE, strategies=list(STRATEGIES), max_tokens=SHELLPER_MAX_TOKENS), points)
    write_suite(root / "fs-episodes", SuiteSpec(
        name="fs-episodes", version="1", kind="episode", bundle=BUNDLE,
        description=f"{len(episodes)} multi-turn file-system episodes (2-4 user turns) with ground truth per turn.",
        source=ORIGIN, licence=LICENCE), episodes)
    write_suite(root / "smoke", SuiteSpec(
        name="smoke", version="1", kind="next_call", bundle=BUNDLE,
        description=f"{len(smoke)} next-call points taken from suites/shellper, for quick runs and CI.",
        source=ORIGIN, licence=LICENCE), smoke)
    return {
        "shellper": f"{conversations} conversations, {len(points)} points, {tools} tools",
        "fs-episodes": f"{len(episodes)} episodes, {sum(len(e.turns) for e in episodes)} turns",
        "smoke": f"{len(smoke)} points",
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare with the files on disk, write nothing")
    ap.add_argument("--out", type=Path, default=SUITES, help="directory to write the suites into")
    args = ap.parse_args()
    if not args.check:
        for name, desc in build(args.out).items():
            print(f"{args.out / name}: {desc}")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        build(Path(tmp))
        stale = [
            f"{name}/{f}" for name in ("shellper", "fs-episodes", "smoke") for f in ("suite.yaml", "cases.jsonl")
            if not (args.out / name / f).is_file()
            or (args.out / name / f).read_bytes() != (Path(tmp) / name / f).read_bytes()
        ]
    for s in stale:
        print(f"stale: {args.out / s} (run python suites/_make/make_suites.py)")
    return 1 if stale else 0


if __name__ == "__main__":
    raise SystemExit(main())
