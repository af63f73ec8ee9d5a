"""The inputs every adapter is checked on: the bundled example, the three real runs,
edge cases, and a few hundred seeded random states, each with build options."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs

from memctx import Chunk, ChunkType, MemoryState, chunks, load_state
from memctx.importers import load_openai_transcript

ROOT = Path(__file__).parent.parent
EXAMPLE = ROOT / "examples" / "coding_agent.json"
TRAJECTORIES = sorted((ROOT / "examples" / "trajectories").glob("*.json"))
RANDOM_STATES = 300


@attrs.frozen
class Case:
    name: str
    state: MemoryState
    options: dict[str, Any] = attrs.field(factory=dict)
    content: str = "cdata"


def _with_and_without_prompt(name: str, state: MemoryState, **options: Any) -> Iterator[Case]:
    yield Case(name, state, dict(options))
    yield Case(f"{name}+prompt", state, {**options, "system_prompt": "You are a careful agent."})


def example_cases() -> Iterator[Case]:
    state = load_state(EXAMPLE)
    for budget in (None, 400, 800, 2_000):
        yield from _with_and_without_prompt(f"example-{budget}", state, max_tokens=budget)


def trajectory_cases() -> Iterator[Case]:
    for path in TRAJECTORIES:
        state, _ = load_openai_transcript(json.loads(path.read_text(encoding="utf-8")))
        for budget in (None, 2_000, 8_000, 32_000):
            name = f"{path.name.split('.')[0]}-{budget}"
            yield from _with_and_without_prompt(name, state, max_tokens=budget)


def edge_cases() -> Iterator[Case]:
    call = chunks.tool_call("sh", {"cmd": "ls"}, call_id="c1", id="call")
    result = chunks.tool_result("sh", "a b", call_id="c1", id="res")
    yield from _with_and_without_prompt("empty", MemoryState([]))
    yield from _with_and_without_prompt("system-only", MemoryState([chunks.system("Be brief.")]))
    everything = MemoryState([chunks.user("hi", id="u"), chunks.assistant("yo", id="a")])
    yield Case("all-filtered", everything, {"exclude_types": [ChunkType.AGENT]})
    yield Case("whitespace-prompt", everything, {"system_prompt": " \n\t"})
    opens = MemoryState([chunks.assistant("I begin.", id="a"), chunks.user("ok", id="u")])
    yield from _with_and_without_prompt("opens-on-assistant", opens)
    yield from _with_and_without_prompt("opens-on-call", MemoryState([call, result]))
    long_history = MemoryState(
        [chunks.user("task " * 50, id="task")]
        + [chunks.assistant(f"step {i} " * 20, id=f"a{i}") for i in range(10)]
        + [chunks.user("last", id="last")]
    )
    yield Case("newest-only-tiny-budget", long_history, {"max_tokens": 30})
    ends = MemoryState([chunks.user("go", id="u"), chunks.assistant("done\n\n", id="a")])
    yield from _with_and_without_prompt("newest-is-assistant", ends)
    pending = MemoryState([chunks.user("go", id="u"), call])
    yield from _with_and_without_prompt("pending-call-last", pending)
    twice = MemoryState(
        [chunks.user("go", id="u"), call, result, chunks.tool_result("sh", "more", call_id="c1")]
    )
    yield Case("call-with-two-results", twice)
    weird = MemoryState(
        [
            chunks.user("go", id="u"),
            chunks.tool_call("read file/ü", {"p": "\ud800<"}, call_id="call 1/" + "x" * 80),
            chunks.tool_error("read file/ü", "no\x00", call_id="call 1/" + "x" * 80),
            chunks.tool_call("1tool", ["not", "an", "object"], call_id="c2"),
            chunks.tool_result("1tool", "ok", call_id="c2"),
        ]
    )
    yield Case("invalid-ids-and-names", weird)
    late = MemoryState(
        [
            chunks.user("go", id="u"),
            call,
            chunks.user("meanwhile", id="u2"),
            chunks.assistant("waiting", id="a2"),
            result,
        ]
    )
    yield Case("result-arrives-late", late)


_PIECES = (
    "code",
    "if a < b && c > d:",
    "]]>",
    "<![CDATA[",
    "</tool_result>",
    '<system_context priority="1000">',
    "\r\n",
    "\r",
    "\n",
    " ",
    "\t",
    "\x00",
    "\ud800",
    "=== assistant ===",
    "日本語",
    "&amp;",
    '"quoted"',
    "word " * 30,
)
KINDS = (
    "user",
    "assistant",
    "clarification",
    "system",
    "call",
    "skill",
    "result",
    "error",
    "skill_result",
    "spawn",
    "subresult",
    "message",
    "parent",
    "summary",
    "todo",
    "thinking",
    "intervention",
    "completed",
    "abandoned",
    "terminated",
    "custom",
)
_NAMES = ("sh", "read_file", "read file", "ns.tool", "1tool", "é")


def _text(rng: random.Random) -> str:
    return "".join(rng.choice(_PIECES) for _ in range(rng.randint(0, 5)))


def random_state(rng: random.Random) -> MemoryState:
    made: list[Chunk] = []
    open_calls: list[tuple[str, str, str]] = []
    for n in range(rng.randint(0, 30)):
        kind = rng.choice(KINDS)
        text = _text(rng)
        if kind == "user":
            made.append(chunks.user(text, id=f"u{n}"))
        elif kind == "assistant":
            made.append(chunks.assistant(text, id=f"a{n}"))
        elif kind == "clarification":
            made.append(chunks.clarification(text, id=f"cl{n}"))
        elif kind == "system":
            made.append(chunks.system(text or "rules", id=f"s{n}"))
        elif kind in ("call", "skill"):
            call_id = rng.choice([f"c{n}", f"call {n}/x", "id-" + "y" * 60 + str(n)])
            name = rng.choice(_NAMES)
            arguments: Any = rng.choice([{"cmd": text}, {}, text, [text]])
            maker = chunks.tool_call if kind == "call" else chunks.skill_call
            made.append(maker(name, arguments, call_id=call_id, id=f"call{n}"))
            open_calls.append((call_id, name, kind))
        elif kind in ("result", "error", "skill_result") and open_calls:
            call_id, name, call_kind = rng.choice(open_calls)
            if rng.random() < 0.7:
                open_calls.remove((call_id, name, call_kind))
            if call_kind == "skill" or kind == "skill_result":
                made.append(chunks.skill_result(name, text, call_id=call_id, id=f"r{n}"))
            elif kind == "error":
                made.append(chunks.tool_error(name, text, call_id=call_id, id=f"r{n}"))
            else:
                made.append(chunks.tool_result(name, text, call_id=call_id, id=f"r{n}"))
        elif kind == "spawn":
            made.append(chunks.spawn_subagent(f"ag{n}", "researcher", text, id=f"sp{n}"))
        elif kind == "subresult":
            made.append(chunks.subagent_result(f"ag{n}", text, id=f"sr{n}"))
        elif kind == "message":
            made.append(chunks.message_to_subagent(f"ag{n}", text, id=f"m{n}"))
        elif kind == "parent":
            made.append(chunks.parent_agent_message("boss", text, id=f"p{n}"))
        elif kind == "summary":
            made.append(chunks.progress_summary(text, original_count=3, id=f"ps{n}"))
        elif kind == "todo":
            made.append(chunks.todo_update([text], id=f"td{n}"))
        elif kind == "thinking":
            made.append(chunks.thinking(text, id=f"t{n}"))
        elif kind == "intervention":
            made.append(chunks.user_intervention(text, id=f"ui{n}"))
        elif kind == "completed":
            made.append(chunks.task_completed(text, id=f"done{n}"))
        elif kind == "abandoned":
            made.append(chunks.task_abandoned(text or "stuck", id=f"ab{n}"))
        elif kind == "terminated":
            made.append(chunks.task_terminated("user", text, id=f"te{n}"))
        elif kind == "custom":
            made.append(chunks.custom("note", {"text": text}, id=f"cu{n}"))
    return MemoryState(made)


def random_cases(count: int = RANDOM_STATES, seed: int = 11) -> Iterator[Case]:
    rng = random.Random(seed)
    for n in range(count):
        state = random_state(rng)
        options: dict[str, Any] = {
            "max_tokens": rng.choice([None, rng.randint(20, 400), rng.randint(400, 3000)]),
            "strategy": rng.choice(["recent", "recent", "priority", "in_order"]),
        }
        if rng.random() < 0.5:
            options["system_prompt"] = rng.choice(["Be careful.", "  ", _text(rng) or "x"])
        if rng.random() < 0.2:
            options["exclude_types"] = [rng.choice(list(ChunkType))]
        yield Case(f"random-{n}", state, options, rng.choice(["cdata", "escape"]))


def all_cases() -> list[Case]:
    return [*example_cases(), *trajectory_cases(), *edge_cases(), *random_cases()]


def media_cases(png: bytes, pdf: bytes) -> list[Case]:
    """Reasoning with tool use (Anthropic's signed and redacted thinking, OpenAI's reasoning
    items), images and PDFs (data and URL), alone, mixed and returned by tools (``call_id``),
    under three budgets."""
    task = chunks.user("Look at these and fix the bug.", id="task", pinned=True)
    image = chunks.image(png, id="img")
    linked = chunks.image(url="https://example.com/shot.png", detail="low", id="url-img")
    document = chunks.document(pdf, title="spec.pdf", id="doc")
    linked_doc = chunks.document(url="https://example.com/spec.pdf", id="url-doc")

    def step(n: int, thought: Chunk) -> list[Chunk]:
        return [
            thought,
            chunks.tool_call(
                "read_file", {"path": f"src/m{n}.py"}, call_id=f"call_{n}", id=f"c{n}"
            ),
            chunks.tool_result("read_file", "def f(): ...\n" * 5, call_id=f"call_{n}", id=f"r{n}"),
        ]

    anthropic_run = [task]
    for n in range(4):
        anthropic_run += step(
            n, chunks.thinking(f"Step {n}: read the next file.", f"SIG{n}", id=f"t{n}")
        )
    anthropic_run.insert(2, chunks.redacted_thinking("EmwKAhgBEgy3va3pzix", id="red"))
    openai_run = [task]
    for n in range(4):
        thought = chunks.thinking(f"Plan {n}.", f"gAAAA{n}", reasoning_id=f"rs_{n}", id=f"t{n}")
        openai_run += step(n, thought)
    media = [task, image, linked, document, linked_doc, chunks.assistant("Reading.", id="a")]
    mixed = [*media[:-1], *anthropic_run[1:], chunks.user("And?", id="u2")]
    tool_media = [task]
    shots = [
        chunks.image(png, call_id="call_s0", id="shot0"),
        chunks.image(url="https://example.com/s1.png", call_id="call_s1", id="shot1"),
        chunks.document(pdf, title="report.pdf", call_id="call_s2", id="shot2"),
        chunks.document(url="https://example.com/r.pdf", call_id="call_s3", id="shot3"),
    ]
    for n, shot in enumerate(shots):
        output = "" if n == 1 else f"captured {n}"
        tool_media += [
            chunks.tool_call("capture", {"n": n}, call_id=f"call_s{n}", id=f"sc{n}"),
            chunks.tool_result("capture", output, call_id=f"call_s{n}", id=f"sr{n}"),
            shot,
        ]
    tool_media.append(chunks.assistant("Seen them.", id="seen"))
    states = {
        "anthropic-thinking": anthropic_run,
        "openai-reasoning": openai_run,
        "media": media,
        "mixed": mixed,
        "tool-media": tool_media,
    }
    return [
        Case(f"{name}-{budget}", MemoryState(items), {"max_tokens": budget})
        for name, items in states.items()
        for budget in (None, 3_000, 8_000)
    ]
