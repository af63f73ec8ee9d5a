"""Hypothesis strategies for build tests: agent histories, build options, tokenizers."""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import strategies as st

from memctx import Chunk, ChunkType, MemoryState, chunks, create_tokenizer

TOKENIZERS = {name: create_tokenizer(name) for name in ("gpt-4o", "gpt-4", "estimate")}

# Text that stresses BPE boundaries and XML: whitespace runs, newlines at the
# edges, "/" and "<" starts, special-token text, markup, non-ASCII, controls.
_pieces = st.sampled_from(
    [
        "hello",
        " world",
        "\n",
        "\n\n",
        "  ",
        "\t",
        "\r\n",
        "\r",
        "/",
        "//",
        "<",
        ">",
        "&",
        "'",
        '"',
        "</tool_result>",
        '<system_context priority="1000">',
        "]]>",
        "<|endoftext|>",
        "def f(x):\n    return x\n",
        "日本語",
        "🙂",
        "Ω",
        "\x00",
        "\x1b[0m",
        "123456",
        "'s",
        "http://x.y/z",
        "{",
        "}",
        "é",
    ]
)
texts = st.one_of(
    st.lists(_pieces, max_size=12).map("".join),
    st.text(max_size=60),
    st.integers(1, 40).map(lambda n: "lorem ipsum " * n),
)


@st.composite
def agent_histories(draw: st.DrawFn) -> MemoryState:
    """A random agent history with calls, results (some late, some missing) and delegations."""
    counter = itertools.count()
    made: list[Chunk] = []
    open_calls: list[tuple[str, str]] = []
    for _ in range(draw(st.integers(0, 25))):
        kind = draw(
            st.sampled_from(
                [
                    "user",
                    "assistant",
                    "thinking",
                    "system",
                    "call",
                    "result",
                    "spawn",
                    "summary",
                    "todo",
                    "intervention",
                    "custom",
                    "error",
                    "completed",
                ]
            )
        )
        n = next(counter)
        text = draw(texts)
        if kind == "user":
            made.append(chunks.user(text, id=f"u{n}", priority=draw(st.integers(0, 3))))
        elif kind == "assistant":
            made.append(chunks.assistant(text, id=f"a{n}", priority=draw(st.integers(0, 3))))
        elif kind == "thinking":
            made.append(chunks.thinking(text, id=f"t{n}"))
        elif kind == "system":
            made.append(chunks.system(text, id=f"s{n}"))
        elif kind == "call":
            call_id = f"c{n}"
            made.append(chunks.tool_call("sh", {"cmd": text}, call_id=call_id, id=f"call{n}"))
            open_calls.append((call_id, "tool"))
        elif kind in ("result", "error") and open_calls:
            index = draw(st.integers(0, len(open_calls) - 1))
            call_id, _ = open_calls[index]
            if draw(st.booleans()):
                open_calls.pop(index)
            if kind == "error":
                made.append(chunks.tool_error("sh", text, call_id=call_id, id=f"err{n}"))
            else:
                made.append(chunks.tool_result("sh", text, call_id=call_id, id=f"res{n}"))
        elif kind == "spawn":
            made.append(chunks.spawn_subagent(f"ag{n}", "researcher", text, id=f"sp{n}"))
            if draw(st.booleans()):
                made.append(chunks.subagent_result(f"ag{n}", text, id=f"sr{n}"))
        elif kind == "summary":
            made.append(chunks.progress_summary(text, original_count=3, id=f"ps{n}"))
        elif kind == "todo":
            made.append(chunks.todo_update([text], id=f"td{n}"))
        elif kind == "intervention":
            made.append(chunks.user_intervention(text, id=f"ui{n}"))
        elif kind == "custom":
            made.append(chunks.custom("note", {"text": text}, id=f"cu{n}"))
        else:
            made.append(chunks.task_completed(text, id=f"done{n}"))
    return MemoryState(made)


@st.composite
def build_options(draw: st.DrawFn, state: MemoryState) -> dict[str, Any]:
    """Random keyword options for ``ContextBuilder.build`` of ``state``."""
    ids = list(state.ids)
    chosen: dict[str, Any] = {
        "tokenizer": TOKENIZERS[draw(st.sampled_from(sorted(TOKENIZERS)))],
        "strategy": draw(st.sampled_from(["recent", "recent", "stable", "priority", "in_order"])),
        "max_tokens": draw(st.one_of(st.none(), st.integers(1, 3000))),
        "include_system": draw(st.booleans()),
        "include_environment": draw(st.booleans()),
        "exclude_types": draw(st.lists(st.sampled_from(list(ChunkType)), max_size=2)),
        "system_prompt": draw(st.one_of(st.none(), texts)),
        "pin_newest": draw(st.booleans()),
        "pin_pending_calls": draw(st.booleans()),
    }
    if ids and draw(st.booleans()):
        chosen["pinned_chunk_ids"] = draw(st.lists(st.sampled_from(ids), max_size=2))
    if ids and draw(st.integers(0, 4)) == 0:
        chosen["include_only_chunk_ids"] = draw(st.lists(st.sampled_from(ids), max_size=len(ids)))
    if chosen["max_tokens"] is not None and draw(st.booleans()):
        chosen["reserve_tokens"] = draw(st.integers(0, chosen["max_tokens"] - 1))
    return chosen
