"""Writes cases.jsonl of the mcp-filesystem suite (run: python suites/mcp-filesystem/make_cases.py).

Each case: a folder (``initial_fs``), user turns, the ground-truth calls of each turn in the official
filesystem server's tools (paths relative to the folder), and ``expected_state.files``: what some files
hold at the end (null: the file is gone), checked besides the state the ground truth leaves.
Written for this project; no text taken from any dataset.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def d(**contents: Any) -> dict[str, Any]:
    return {"type": "directory", "contents": {k.replace("__", "."): v for k, v in contents.items()}}


def f(text: str) -> dict[str, Any]:
    return {"type": "file", "content": text}


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def user(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


PROJECT = d(README__md=f("# Tide\nA tiny tide-table calculator.\n"),
            tide__py=f("import sys\n\ndef main():\n    print('high water at 06:12')\n"),
            notes=d(todo__txt=f("buy rope\nfix the pump\n"), ideas__md=f("- a web page\n- alerts\n")),
            logs=d(run__log=f("08:00 INFO start\n08:01 WARN slow\n08:02 ERROR timeout\n")))

CASES: list[dict[str, Any]] = [
    {"id": "read-readme", "turns": [user("Show me what README.md says.")],
     "ground_truth": [[call("read_text_file", path="README.md")]]},
    {"id": "head-log", "turns": [user("Print the first 2 lines of logs/run.log.")],
     "ground_truth": [[call("read_text_file", path="logs/run.log", head=2)]]},
    {"id": "write-new", "turns": [user("Create a file hello.txt that says: hi there")],
     "ground_truth": [[call("write_file", path="hello.txt", content="hi there")]],
     "expected_state": {"files": {"hello.txt": "hi there"}}},
    {"id": "overwrite-todo", "turns": [user("Replace the contents of notes/todo.txt with: sell boat")],
     "ground_truth": [[call("write_file", path="notes/todo.txt", content="sell boat")]],
     "expected_state": {"files": {"notes/todo.txt": "sell boat"}}},
    {"id": "edit-todo", "turns": [user("In notes/todo.txt, change 'buy rope' to 'buy chain'.")],
     "ground_truth": [[call("edit_file", path="notes/todo.txt", edits=[{"oldText": "buy rope", "newText": "buy chain"}])]],
     "expected_state": {"files": {"notes/todo.txt": "buy chain\nfix the pump\n"}}},
    {"id": "mkdir-build", "turns": [user("Make a folder called build.")],
     "ground_truth": [[call("create_directory", path="build")]]},
    {"id": "mkdir-nested", "turns": [user("Create the folder archive/2024/march.")],
     "ground_truth": [[call("create_directory", path="archive/2024/march")]]},
    {"id": "list-notes", "turns": [user("What is in the notes folder?")],
     "ground_truth": [[call("list_directory", path="notes")]]},
    {"id": "move-ideas", "turns": [user("Move notes/ideas.md to the top folder as ideas.md.")],
     "ground_truth": [[call("move_file", source="notes/ideas.md", destination="ideas.md")]],
     "expected_state": {"files": {"ideas.md": "- a web page\n- alerts\n", "notes/ideas.md": None}}},
    {"id": "rename-log", "turns": [user("Rename logs/run.log to logs/old.log.")],
     "ground_truth": [[call("move_file", source="logs/run.log", destination="logs/old.log")]],
     "expected_state": {"files": {"logs/run.log": None}}},
    {"id": "search-md", "turns": [user("Find every Markdown file (*.md) in the folder, subfolders included.")],
     "ground_truth": [[call("search_files", path=".", pattern="**/*.md")]]},
    {"id": "tree", "turns": [user("Show me the whole folder as a tree.")],
     "ground_truth": [[call("directory_tree", path=".")]]},
    {"id": "read-two", "turns": [user("Show me README.md and tide.py together.")],
     "ground_truth": [[call("read_multiple_files", paths=["README.md", "tide.py"])]]},
    {"id": "backup-then-edit", "turns": [user("Make a folder backup and write a copy of notes/todo.txt into it, "
                                              "as backup/todo.txt, with the text: buy rope\nfix the pump\n"),
                                         user("Now in notes/todo.txt change 'fix the pump' to 'pump fixed'.")],
     "ground_truth": [[call("create_directory", path="backup"),
                       call("write_file", path="backup/todo.txt", content="buy rope\nfix the pump\n")],
                      [call("edit_file", path="notes/todo.txt",
                            edits=[{"oldText": "fix the pump", "newText": "pump fixed"}])]],
     "expected_state": {"files": {"backup/todo.txt": "buy rope\nfix the pump\n",
                                  "notes/todo.txt": "buy rope\npump fixed\n"}}},
    {"id": "list-then-read", "turns": [user("List the logs folder."), user("Show me the last line of run.log there.")],
     "ground_truth": [[call("list_directory", path="logs")], [call("read_text_file", path="logs/run.log", tail=1)]]},
    {"id": "read-tail", "turns": [user("Show me the last 2 lines of tide.py.")],
     "ground_truth": [[call("read_text_file", path="tide.py", tail=2)]]},
    {"id": "list-top", "turns": [user("What is in the current folder?")],
     "ground_truth": [[call("list_directory", path=".")]]},
    {"id": "tree-notes", "turns": [user("Show the notes folder as a tree.")],
     "ground_truth": [[call("directory_tree", path="notes")]]},
    {"id": "search-logs", "turns": [user("Find all .log files anywhere in the folder.")],
     "ground_truth": [[call("search_files", path=".", pattern="**/*.log")]]},
    {"id": "read-notes", "turns": [user("Read notes/todo.txt and notes/ideas.md at once.")],
     "ground_truth": [[call("read_multiple_files", paths=["notes/todo.txt", "notes/ideas.md"])]]},
    {"id": "edit-two", "turns": [user("In tide.py, change 'high water' to 'low water' and '06:12' to '12:24'.")],
     "ground_truth": [[call("edit_file", path="tide.py", edits=[{"oldText": "high water", "newText": "low water"},
                                                               {"oldText": "06:12", "newText": "12:24"}])]],
     "expected_state": {"files": {"tide.py": "import sys\n\ndef main():\n    print('low water at 12:24')\n"}}},
    {"id": "move-into-notes", "turns": [user("Move README.md into the notes folder.")],
     "ground_truth": [[call("move_file", source="README.md", destination="notes/README.md")]],
     "expected_state": {"files": {"README.md": None, "notes/README.md": "# Tide\nA tiny tide-table calculator.\n"}}},
    {"id": "folder-then-file", "turns": [user("Make a folder docs with a file docs/usage.md that says: run tide.py")],
     "ground_truth": [[call("create_directory", path="docs"), call("write_file", path="docs/usage.md", content="run tide.py")]],
     "expected_state": {"files": {"docs/usage.md": "run tide.py"}}},
    {"id": "archive-log", "turns": [user("Create a folder archive."), user("Move logs/run.log into it.")],
     "ground_truth": [[call("create_directory", path="archive")],
                      [call("move_file", source="logs/run.log", destination="archive/run.log")]],
     "expected_state": {"files": {"archive/run.log": "08:00 INFO start\n08:01 WARN slow\n08:02 ERROR timeout\n",
                                  "logs/run.log": None}}},
    {"id": "sizes", "turns": [user("List the notes folder with file sizes, largest first.")],
     "ground_truth": [[call("list_directory_with_sizes", path="notes", sortBy="size")]]},
]


def main() -> None:
    out = Path(__file__).with_name("cases.jsonl")
    lines = [json.dumps({**case, "initial_fs": {"root": {"project": PROJECT}}}, ensure_ascii=False) for case in CASES]
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
