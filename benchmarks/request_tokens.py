"""What the XML costs: memctx's request against the same run in OpenAI's own chat format.

``uv run python -m benchmarks.request_tokens`` takes each bundled run
(``examples/trajectories/``, three mini-swe-agent runs) in its own OpenAI form
-- its ``system``/``user``/``assistant``/``tool`` messages with only the keys
OpenAI defines (``role``, ``content``, ``tool_calls``, ``tool_call_id``,
``name``); the non-OpenAI ``exit`` message is left out -- imports that same
list with :func:`memctx.importers.load_openai_transcript`, builds it whole
with default options and counts ``result.to_openai()`` (native tool calls, the
default). Both requests are counted the same way, the way a
``provider="openai"`` build counts (:mod:`memctx.adapters`): OpenAI's cookbook
rule (3 tokens a message, 3 for the reply priming) applied to every string a
message holds (content; each call's id, type, name and arguments; a ``tool``
message's call id), with gpt-4o's o200k_base.

Printed per run: the own form's tokens, then for each attribute mode
(``"seed"``: every attribute of the reference XML, the default; ``"lean"``)
memctx's tokens and the ratio, with native tool calls and with ``tools="text"``
(all XML). A last check: a ``provider="openai"`` build's ``token_count`` (tool
calls counted by the API-calibrated rule: no call ids) is within the counted
native request, which also counts every id.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from memctx import create_builder, create_tokenizer
from memctx.importers import load_openai_transcript
from memctx.typing import Tokenizer

RUNS: Final = sorted((Path(__file__).parent.parent / "examples" / "trajectories").glob("*.json"))
OPENAI_ROLES: Final = ("system", "user", "assistant", "tool")
OPENAI_KEYS: Final = ("role", "content", "tool_calls", "tool_call_id", "name")
MODES: Final = ("seed", "lean")


def own_form(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The run's messages as OpenAI's chat format has them: its roles and keys only."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if message["role"] not in OPENAI_ROLES:
            continue
        kept = {k: message[k] for k in OPENAI_KEYS if message.get(k) is not None}
        if "tool_calls" in kept:
            kept["tool_calls"] = [
                {
                    "id": call["id"],
                    "type": call["type"],
                    "function": {
                        "name": call["function"]["name"],
                        "arguments": call["function"]["arguments"],
                    },
                }
                for call in kept["tool_calls"]
            ]
        out.append(kept)
    return out


def request_tokens(request: Sequence[Mapping[str, Any]], tokenizer: Tokenizer) -> int:
    """A chat-completions request's tokens: the cookbook's rule on every string it holds."""
    priming = tokenizer.count_messages([])
    total = priming
    for message in request:
        total += tokenizer.count_messages([{"role": message["role"], "content": ""}]) - priming
        content = message.get("content")
        if isinstance(content, str):
            total += tokenizer.count(content)
        total += tokenizer.count(message.get("tool_call_id", ""))
        for call in message.get("tool_calls") or ():
            function = call["function"]
            for text in (call["id"], call["type"], function["name"], function["arguments"]):
                total += tokenizer.count(text)
    return total


def measure() -> list[dict[str, Any]]:
    """One row per run: the own form's tokens, and memctx's per attribute mode and tools."""
    tokenizer = create_tokenizer("gpt-4o")
    rows = []
    for path in RUNS:
        messages = own_form(json.loads(path.read_text(encoding="utf-8"))["messages"])
        state, _ = load_openai_transcript(messages)
        row: dict[str, Any] = {
            "run": path.name.removesuffix(".traj.json").split("__", 1)[-1],
            "own": request_tokens(messages, tokenizer),
        }
        for mode in MODES:
            builder = create_builder(attributes=mode)  # type: ignore[arg-type]
            result = builder.build(state, tokenizer=tokenizer)
            row[mode] = request_tokens(result.to_openai(), tokenizer)
            row[f"{mode} text"] = request_tokens(result.to_openai(tools="text"), tokenizer)
            counted = builder.build(state, tokenizer=tokenizer, provider="openai")
            row[f"{mode} counted"] = counted.token_count <= request_tokens(
                counted.to_openai(), tokenizer
            )
        rows.append(row)
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    """The rows as a Markdown table."""
    lines = [
        "| run | own OpenAI form | seed (default) | ratio | lean | ratio "
        "| text, seed | ratio | text, lean | ratio |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for row in rows:
        cells = [row["run"], f"{row['own']:,}"]
        for key in ("seed", "lean", "seed text", "lean text"):
            cells += [f"{row[key]:,}", f"{row[key] / row['own']:.3f}×"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args(argv)
    rows = measure()
    print(json.dumps(rows, indent=2) if args.json else table(rows))
    exact = all(row[f"{mode} counted"] for row in rows for mode in MODES)
    print(f"\nprovider='openai' token_count <= the counted native request: {exact}")
    return 0 if exact else 1


if __name__ == "__main__":
    raise SystemExit(main())
