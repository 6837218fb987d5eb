"""Writes cases.jsonl of the mcp-git suite (run: python suites/mcp-git/make_cases.py).

Each case: a repository's files (``initial_fs``) and, where it needs more than one commit of them on
``main``, a ``setup.sh`` the bundle's ``prepare`` runs (moved out of the work tree first); user turns;
the ground-truth calls of each turn in mcp-server-git's tools. The state compared is the work tree and
what git_status, git_branch and git_log say (branches, HEAD, index, log messages; fixed names and
dates in the bundle make the hashes the same in every sample). Written for this project.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FILES = {"README.md": "# Kettle\nBoils water on time.\n", "kettle.py": "def boil(minutes):\n    return minutes * 60\n"}
FIRST = "git add -A\ngit commit -q -m 'first commit'\n"


def tree(setup: str | None = None, **extra: str) -> dict[str, Any]:
    files = {**FILES, **{k.replace("__", "."): v for k, v in extra.items()}}
    if setup is not None:
        files["setup.sh"] = setup
    return {"root": {"kettle": {"type": "directory", "contents": {
        name: {"type": "file", "content": text} for name, text in files.items()}}}}


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": {"repo_path": ".", **arguments}}


def case(id: str, turns: list[str], truth: list[list[dict[str, Any]]], fs: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"id": id, "turns": [[{"role": "user", "content": t}] for t in turns], "ground_truth": truth,
            "initial_fs": fs or tree()}


UNTRACKED = tree(FIRST + "echo 'descale monthly' > notes.txt\n")
STAGED = tree(FIRST + "printf 'def boil(minutes):\\n    return minutes * 60.0\\n' > kettle.py\ngit add kettle.py\n")
MODIFIED = tree(FIRST + "echo 'Safe for tea.' >> README.md\n")
BRANCHED = tree(FIRST + "git branch dev\ngit checkout -q dev\necho 'def whistle():\\n    pass' >> kettle.py\n"
                "git commit -q -am 'whistle'\ngit checkout -q main\n")
HISTORY = tree(FIRST + "".join(f"echo {n} >> log.txt\ngit add log.txt\ngit commit -q -m 'entry {n}'\n" for n in range(1, 5)))

CASES = [
    case("status", ["What is the state of the repository?"], [[call("git_status")]]),
    case("status-untracked", ["Is anything not tracked yet?"], [[call("git_status")]], UNTRACKED),
    case("log-three", ["Show me the last 3 commits."], [[call("git_log", max_count=3)]], HISTORY),
    case("add-notes", ["Stage notes.txt."], [[call("git_add", files=["notes.txt"])]], UNTRACKED),
    case("add-commit", ["Stage notes.txt and commit it with the message 'add notes'."],
         [[call("git_add", files=["notes.txt"]), call("git_commit", message="add notes")]], UNTRACKED),
    case("commit-staged", ["Commit what is staged, message 'seconds as float'."],
         [[call("git_commit", message="seconds as float")]], STAGED),
    case("branch-new", ["Create a branch called feature-timer."], [[call("git_create_branch", branch_name="feature-timer")]]),
    case("branch-from", ["Create a branch hotfix starting from dev."],
         [[call("git_create_branch", branch_name="hotfix", base_branch="dev")]], BRANCHED),
    case("checkout-dev", ["Switch to the dev branch."], [[call("git_checkout", branch_name="dev")]], BRANCHED),
    case("branch-then-checkout", ["Make a branch named docs.", "Now switch to it."],
         [[call("git_create_branch", branch_name="docs")], [call("git_checkout", branch_name="docs")]]),
    case("diff-unstaged", ["What have I changed that is not staged?"], [[call("git_diff_unstaged")]], MODIFIED),
    case("diff-staged", ["Show me the staged changes."], [[call("git_diff_staged")]], STAGED),
    case("diff-dev", ["How does the work tree differ from the dev branch?"], [[call("git_diff", target="dev")]], BRANCHED),
    case("show-head", ["Show me the latest commit."], [[call("git_show", revision="HEAD")]], HISTORY),
    case("reset-staged", ["Unstage everything that is staged."], [[call("git_reset")]], STAGED),
    case("branches", ["List the local branches."], [[call("git_branch", branch_type="local")]], BRANCHED),
    case("status-then-commit", ["What is staged right now?", "Commit it with the message 'float seconds'."],
         [[call("git_status")], [call("git_commit", message="float seconds")]], STAGED),
]


def main() -> None:
    out = Path(__file__).with_name("cases.jsonl")
    out.write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in CASES), encoding="utf-8")


if __name__ == "__main__":
    main()
