"""The SHELLper bundle end to end with its real parts: the bundle file, the FunctionGemma adapter, the
18 sandboxed .pym tools on a Gorilla file-system workspace. Only the model is a test double
(ScriptedClient), answering with the exact text the adapter renders for the gold calls."""

from __future__ import annotations

from pathlib import Path

from harness.agents import KernelEndEvent, RecordingObserver, ToolCall
from harness.agents.testing import ScriptedClient
from harness.bundles import load_agent
from harness.sandbox import FileSystemState, Workspace

SHELLPER = Path(__file__).resolve().parents[2] / "bundles" / "shellper"


def test_shellper_bundle_discovers_its_18_tools() -> None:
    agent = load_agent(SHELLPER, client=ScriptedClient([]))
    names = {t.schema.name for t in agent.tools}
    assert len(agent.tools) == 18
    assert {"cat", "cd", "cp", "diff", "du", "echo", "find", "grep", "ls"} <= names
    assert {"mkdir", "mv", "pwd", "rm", "rmdir", "sort", "tail", "touch", "wc"} <= names
    assert agent.adapter.family == "function_gemma"
    assert agent.model_id == "google/functiongemma-270m-it"
    assert agent.constraint.strategy == "ebnf"
    assert agent.config.kernel.max_steps == 8


async def test_shellper_agent_runs_real_tools_on_a_workspace() -> None:
    state = FileSystemState.from_nodes(
        {
            "root": {
                "home": {
                    "type": "directory",
                    "contents": {"notes.txt": {"type": "file", "content": "a\nb\n"}},
                }
            }
        }
    )
    probe = load_agent(SHELLPER, client=ScriptedClient([]))
    constraint = probe.constraint
    turn1 = probe.adapter.render_output([ToolCall.create("mkdir", {"dir_name": "drafts"})], constraint)
    turn2 = probe.adapter.render_output([ToolCall.create("ls", {})], constraint)
    client = ScriptedClient(
        [ScriptedClient.reply(turn1), ScriptedClient.reply(turn2), ScriptedClient.reply("Done.")]
    )
    rec = RecordingObserver()
    agent = load_agent(SHELLPER, client=client, observers=[rec])
    result = await agent.run("make a drafts folder, then list", workspace=Workspace.filesystem(state))
    assert result.termination_reason == "no_tool_calls"
    assert [s.tool_calls[0].name for s in result.steps[:2]] == ["mkdir", "ls"]
    assert all(not s.parse_errors for s in result.steps[:2])
    # a plain-text answer is not a call: the FunctionGemma parser counts it as parse:no_call
    assert [e.kind for e in result.steps[2].parse_errors] == ["parse:no_call"]
    outputs = [r for s in result.steps for r in s.tool_results]
    assert not any(r.is_error for r in outputs), outputs
    assert "drafts" in outputs[1].content() and "notes.txt" in outputs[1].content()
    assert "drafts" in str(state.to_nodes())  # the mutation reached the workspace
    assert client.requests[0].model == "google/functiongemma-270m-it"
    assert "structured_outputs" in client.requests[0].extra_body
    end = rec.events[-1]
    assert isinstance(end, KernelEndEvent) and end.termination_reason == "no_tool_calls"
