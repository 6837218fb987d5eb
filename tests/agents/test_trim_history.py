"""trim_history: pinned messages kept, tool calls never separated from their results."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from harness.agents import Message, ToolCall, trim_history


def call_group(n: int, tag: str) -> list[Message]:
    calls = tuple(ToolCall(id=f"{tag}_{i}", name="t", arguments={}) for i in range(n))
    return [Message("assistant", None, tool_calls=calls)] + [
        Message("tool", "r", tool_call_id=c.id, name="t") for c in calls
    ]


def test_no_limit_or_short_history_unchanged() -> None:
    msgs = [Message("user", "a"), Message("assistant", "b")]
    assert trim_history(msgs, None) == tuple(msgs)
    assert trim_history(msgs, 2) == tuple(msgs)


def test_keeps_system_and_first_user_and_whole_recent_groups() -> None:
    sys_, first = Message("system", "s"), Message("user", "u1")
    old = call_group(2, "old")
    mid = [Message("assistant", "text"), Message("user", "u2")]
    new = call_group(2, "new")
    msgs = [sys_, first, *old, *mid, *new]
    # limit 6: pinned 2 + new group 3 = 5; "u2" fits (6); "text" does not
    assert trim_history(msgs, 6) == (sys_, first, mid[1], *new)
    # limit 4: the new group (3) does not fit beside the pinned 2, yet the latest group is always kept whole
    assert trim_history(msgs, 4) == (sys_, first, *new)


def test_a_group_that_does_not_fit_is_dropped_whole() -> None:
    msgs = [Message("user", "u1"), *call_group(3, "a"), Message("user", "u2")]
    assert trim_history(msgs, 4) == (msgs[0], msgs[-1])


_group = st.one_of(
    st.integers(1, 3).map(lambda n: ("calls", n)),
    st.sampled_from([("user", 0), ("assistant", 0), ("system", 0)]),
)


@settings(max_examples=4 * settings().max_examples, deadline=None)
@given(groups=st.lists(_group, max_size=12), limit=st.integers(1, 12))
def test_trim_invariants(groups: list[tuple[str, int]], limit: int) -> None:
    msgs: list[Message] = [Message("system", "s"), Message("user", "first")]
    for i, (kind, n) in enumerate(groups):
        msgs.extend(call_group(n, f"g{i}") if kind == "calls" else [Message(kind, f"m{i}")])  # type: ignore[arg-type]
    out = trim_history(msgs, limit)
    # order preserved, a subsequence of the input
    idx = [msgs.index(m) for m in out]
    assert idx == sorted(idx)
    # system messages and the first user message always kept
    assert all(m in out for m in msgs if m.role == "system")
    assert msgs[1] in out
    # every kept tool result has its call kept, and every kept call has all its results
    kept_calls = {c.id for m in out for c in m.tool_calls}
    kept_results = {m.tool_call_id for m in out if m.role == "tool"}
    assert kept_results == kept_calls
    # within the limit, unless what is left beside the pinned messages is at most the latest group
    if len(out) > limit:
        rest = [m for m in out[2:] if m.role != "system"]
        assert len(rest) <= 1 or (rest[0].tool_calls and all(m.role == "tool" for m in rest[1:])), rest
    # the last message is always kept
    assert msgs[-1] in out
