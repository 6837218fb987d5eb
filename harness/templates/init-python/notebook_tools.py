"""The tools of __NAME__: a notebook of titled notes (written by `harness init --python`).

Each public method is a tool; its signature and docstring are the schema the model sees. One instance
is the state of one episode: `_load_scenario` gives it the case's `initial_config`, and the case's
`expected_state` names the public attributes it must end with.
"""

from __future__ import annotations

from typing import Any


class Notebook:
    """Titled notes."""

    def __init__(self) -> None:
        self.notes: dict[str, str] = {}

    def _load_scenario(self, config: dict[str, Any], long_context: bool = False) -> None:
        self.notes = dict(config.get("notes", {}))

    def add_note(self, title: str, text: str) -> dict[str, Any]:
        """Add a note, or replace the note of that title.

        Args:
            title: The note's title.
            text: What the note says.
        """
        self.notes[title] = text
        return {"saved": title, "notes": len(self.notes)}

    def read_note(self, title: str) -> dict[str, Any]:
        """The text of one note.

        Args:
            title: The note's title.
        """
        if title not in self.notes:
            return {"error": f"no note titled {title!r}"}
        return {"title": title, "text": self.notes[title]}

    def list_titles(self) -> list[str]:
        """The titles of every note, sorted."""
        return sorted(self.notes)
