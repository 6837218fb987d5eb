"""Every schema bound is a named outcome (issue 42, item 10): a Python bundle whose ``tools_json`` offers a
hostile tool beside a plain one, through ``harness validate`` and ``harness run --engine oracle`` over the
six strategies and both families. Never exit 3 or a signal; a bundle the harness cannot read is exit 1
(validate's verdict) / 2 (run) naming the field; a tool a strategy cannot build is ``constraint:refused``
for the samples that call it, naming it, while the plain tool's samples still run (under the harness's
own strategies: vLLM's ``required``/``strict`` send every tool in one request, which vLLM refuses whole).

``validate`` checks the bundle and the calls, not the grammars (compiling every strategy's grammar is
the run's cost, under its bound): a tool it passes may still be refused by a lane of the run, and the
run says so per sample. Cases written the way a user writes them: a table, one row per schema."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from in_one_process import run_in_one_process

STRATEGIES = "none,ebnf,structural_tag,json_schema,required,strict"
OWN_LANES = ("ebnf", "structural_tag", "json_schema")
"""The harness's grammar strategies: a tool they refuse is left out, and only its callers are refused."""


def _deep(levels: int) -> tuple[dict[str, Any], Any]:
    schema: dict[str, Any] = {"type": "integer"}
    value: Any = 1
    for _ in range(levels):
        schema, value = {"type": "object", "properties": {"a": schema}, "required": ["a"]}, {"a": value}
    return schema, value


def _props(n: int) -> tuple[dict[str, Any], Any]:
    names = [f"p{i}" for i in range(n)]
    return ({"type": "object", "properties": {p: {"type": "integer"} for p in names}, "required": names},
            {p: i for i, p in enumerate(names)})


CYCLE = {"type": "object", "$defs": {"A": {"$ref": "#/$defs/A"}}, "properties": {"x": {"$ref": "#/$defs/A"}},
         "required": ["x"]}
HUGE_ENUM = {"type": "object", "properties": {"v": {"type": "string", "enum": [f"value-{i:06d}" for i in range(100_000)]}},
             "required": ["v"]}

WHOLE_LANE = ("whole lane",)
"""A grammar past the build's bound (``--sample-timeout`` 10 s: the build gets 8 s of it): the lane's build
is refused for every tool, naming the bound (no build per tool to say which)."""

# (id, the hostile tool's parameters, the gold arguments of a case calling it (None: no such case),
#  validate's exit, run's exit, what both say, the lanes that refuse the hostile tool's case)
TABLE: list[Any] = [
    pytest.param(True, None, 1, 2, "function.parameters must be a JSON schema object, got bool", (),
                 id="parameters-true"),
    pytest.param(False, None, 0, 0, "", (), id="parameters-false"),
    pytest.param(_deep(130)[0], None, 1, 2, "nested deeper than 128 levels", (), id="nested-130"),
    pytest.param({"type": "object", "properties": {"s": {"type": "string", "maxLength": 10**30}}, "required": ["s"]},
                 {"s": "x"}, 0, 0, "", (*OWN_LANES, "qwen/strict", "function_gemma/required"), id="maxLength-1e30"),
    pytest.param(CYCLE, {"x": 1}, 1, 2, "refer to each other without end", (), id="defs-cycle-called"),
    pytest.param(CYCLE, None, 0, 0, "", (), id="defs-cycle-offered"),
    pytest.param(*_props(1000), 0, 0, "", (), id="props-1000", marks=pytest.mark.slow),
    pytest.param(HUGE_ENUM, {"v": "value-000007"}, 0, 0, "", WHOLE_LANE, id="enum-100000", marks=pytest.mark.slow),
]


def _bundle(tmp: Path, parameters: Any, gold: Any) -> Path:
    """``harness init --python``'s notebook with a tools JSON: list_titles and the hostile tool."""
    folder = tmp / "nb"
    subprocess.run([sys.executable, "-m", "harness.cli.main", "init", str(folder), "--python"], check=True,
                   capture_output=True)
    tools = [{"name": "list_titles", "description": "The titles.", "parameters": {"type": "object", "properties": {}}},
             {"name": "hostile", "description": "A hostile schema.", "parameters": parameters}]
    (folder / "tools.json").write_text(json.dumps({"Notebook": tools}))
    yaml = (folder / "bundle.yaml").read_text().replace(
        "python: notebook_tools:Notebook",
        "python:\n  classes: {Notebook: notebook_tools:Notebook}\n  tools_json: tools.json")
    (folder / "bundle.yaml").write_text(yaml)
    with (folder / "notebook_tools.py").open("a") as f:
        f.write("\n    def hostile(self, **arguments):\n        return 'ok'\n")
    turn = {"involved_classes": ["Notebook"], "initial_config": {"Notebook": {"notes": {}}},
            "expected_state": {"Notebook": {"notes": {}}}}
    cases = [{"id": "titles", "turns": [[{"role": "user", "content": "Which notes?"}]],
              "ground_truth": [[{"name": "list_titles", "arguments": {}}]], **turn}]
    if gold is not None:
        cases.append({"id": "hostile", "turns": [[{"role": "user", "content": "Call it."}]],
                      "ground_truth": [[{"name": "hostile", "arguments": gold}]], **turn})
    (folder / "suite" / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    return folder


@pytest.mark.parametrize(("parameters", "gold", "validate_code", "run_code", "named", "refused"), TABLE)
def test_a_hostile_schema_is_a_named_outcome_in_validate_and_run(
    tmp_path: Path, parameters: Any, gold: Any, validate_code: int, run_code: int, named: str,
    refused: tuple[str, ...],
) -> None:
    folder = _bundle(tmp_path, parameters, gold)
    run = ["run", str(folder / "suite"), "--engine", "oracle", "--strategy", STRATEGIES, "--family",
           "qwen,function_gemma", "--out", str(tmp_path / "out"), "--sample-timeout", "10" if refused == WHOLE_LANE else "60"]
    jobs = [{"key": "validate", "args": ["validate", str(folder / "suite")], "cwd": str(tmp_path)},
            {"key": "run", "args": run, "cwd": str(tmp_path)}]
    said = run_in_one_process(jobs, tmp_path, hang_s=600)
    for key, code in (("validate", validate_code), ("run", run_code)):
        exit_code, output = said[key]
        assert "Traceback" not in output and exit_code == code, f"{key}: exit {exit_code}:\n{output[-3000:]}"
        assert named in output, f"{key}: {named!r} not in:\n{output[-3000:]}"
    if run_code != 0:
        return
    samples = [json.loads(line) for line in (tmp_path / "out" / "samples.jsonl").read_text().splitlines()]
    assert len(samples) == 2 * 6 * (1 if gold is None else 2)
    for sample in samples:
        lane, case = f"{sample['family']}/{sample['strategy']}", sample["sample_id"].split("/")[0]
        kind = sample.get("error_kind")
        assert kind is None or not kind.startswith("harness:"), (lane, case, sample.get("error"))
        assert not (sample.get("error") or "").startswith(f"{kind}:"), sample["error"]  # the kind said once
        lane_refuses = sample["strategy"] in refused or lane in refused
        if refused == WHOLE_LANE and sample["strategy"] in OWN_LANES:
            assert kind is None or (kind == "constraint:refused" and "did not compile within" in sample["error"]), (
                lane, case, sample.get("error"))  # the build's bound ends it before the sample's clock
        elif case == "hostile" and lane_refuses:
            assert kind == "constraint:refused" and "'hostile'" in sample["error"], (lane, sample.get("error"))
        elif sample["strategy"] in (*OWN_LANES, "none"):  # the plain tool's case runs; the hostile one is left out
            assert kind is None, (lane, case, sample.get("error"))
