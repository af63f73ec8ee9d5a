"""Content modes on the three bundled agent runs: tokens and messages sent verbatim.

``uv run python -m benchmarks.content_modes`` builds each run whole (no
budget, gpt-4o's o200k_base) three ways -- entity escaping, CDATA, and raw
text (the content pasted between the tags unescaped: forgeable, shown only
as the floor) -- and prints, per run and mode, the exact token count, the
entity references in the messages, and how many messages reach the model
verbatim (every chunk's content appears in its message exactly as written).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from memctx import Chunk, ContextBuildResult, MemoryState, Role, create_builder, create_tokenizer
from memctx.importers import load_openai_transcript
from memctx.xml import parse_element, sanitize

RUNS = sorted((Path(__file__).parent.parent / "examples" / "trajectories").glob("*.json"))
ENTITY = re.compile(r"&(?:lt|gt|amp|quot|apos|#\d+|#x[0-9a-fA-F]+);")


class RawRenderer:
    """The default rendering with the content pasted back unescaped (not safe: a floor)."""

    def __init__(self) -> None:
        self._inner = create_builder()

    def can_render(self, chunk: Chunk) -> bool:
        return True

    def get_role(self, chunk: Chunk) -> Role:
        return self._inner.render(chunk)[0]

    def render(self, chunk: Chunk) -> str:
        xml = self._inner.render(chunk)[1]
        tag, _, content = parse_element(xml)
        return xml.split("\n", 1)[0] + "\n" + content + f"\n</{tag}>"


def verbatim_messages(state: MemoryState, result: ContextBuildResult) -> int:
    by_id = {chunk.id: chunk for chunk in state}
    return sum(
        all(sanitize(by_id[i].text) in m.content for i in m.chunk_ids) for m in result.messages
    )


def main() -> None:
    tokenizer = create_tokenizer("gpt-4o")
    builders = {
        "escape": create_builder(content="escape"),
        "cdata": create_builder(content="cdata"),
        "raw": create_builder(renderers=[RawRenderer()]),
    }
    rows = []
    for path in RUNS:
        state, _ = load_openai_transcript(json.loads(path.read_text(encoding="utf-8")))
        for mode, builder in builders.items():
            result = builder.build(state, tokenizer=tokenizer)
            entities = sum(len(ENTITY.findall(m.content)) for m in result.messages)
            rows.append(
                (
                    path.name.split(".")[0],
                    mode,
                    result.token_count,
                    entities,
                    verbatim_messages(state, result),
                    len(result.messages),
                )
            )
    print(f"{'run':<28} {'mode':<7} {'tokens':>7} {'entities':>8} {'verbatim':>9}")
    for run, mode, tokens, entities, verbatim, total in rows:
        print(f"{run:<28} {mode:<7} {tokens:>7} {entities:>8} {verbatim:>5}/{total:<3}")


if __name__ == "__main__":
    main()
