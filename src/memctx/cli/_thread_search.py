"""``memctx thread search``: find chunks of a thread's whole history by their words."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Final

import click

from memctx.cli._options import CHUNK_TYPES, choice, format_option
from memctx.cli._support import echo_json
from memctx.cli._thread_common import db_option, open_store

if TYPE_CHECKING:
    from memctx.store._search import SearchHit

EXCERPT_CHARS: Final = 100
"""Characters of a hit's text shown on its line."""

_SPACE: Final = re.compile(r"\s+")


def excerpt(text: str, query: str, width: int = EXCERPT_CHARS) -> str:
    """One line of ``text`` (white space collapsed) from a little before the first query word."""
    flat = _SPACE.sub(" ", text).strip()
    lowered = flat.lower()
    found = [lowered.find(w) for w in re.findall(r"[^\W_]+", query.lower())]
    first = min((at for at in found if at >= 0), default=0)
    start = max(0, first - width // 4)
    piece = flat[start : start + width]
    return ("…" if start else "") + piece + ("…" if start + width < len(flat) else "")


def _hit_json(hit: SearchHit, query: str) -> dict[str, Any]:
    from memctx.statefile import chunk_to_dict

    return {
        "position": hit.position,
        "score": hit.score,
        "excerpt": excerpt(hit.chunk.text, query),
        "chunk": chunk_to_dict(hit.chunk),
    }


@click.command("search")
@click.argument("thread_id")
@click.argument("query")
@click.option(
    "--limit", type=click.IntRange(min=1), default=5, show_default=True, help="Hits at most."
)
@click.option(
    "--type",
    "types",
    type=choice(CHUNK_TYPES),
    multiple=True,
    help="Only chunks of this type (repeatable).",
)
@click.option(
    "--visible/--hidden",
    default=None,
    help="Only chunks the current view shows / hides [default: both].",
)
@format_option(
    "text",
    "json",
    help="text: position, score, type, id and an excerpt, tab-separated, one hit a line; "
    "json: [{position, score, excerpt, chunk}].",
)
@db_option
def search(
    thread_id: str,
    query: str,
    limit: int,
    types: tuple[str, ...],
    visible: bool | None,
    output_format: str,
) -> None:
    """Search THREAD_ID's whole history (compacted and hidden chunks too) for QUERY's words.

    Best first: chunks holding QUERY as a phrase, then those holding all its
    words, then some, each by relevance (BM25). QUERY is plain words:
    quotes and operators are searched as text.
    """
    with open_store() as store:
        hits = store.search(thread_id, query, limit=limit, types=types or None, visible=visible)
    if output_format == "json":
        echo_json([_hit_json(hit, query) for hit in hits])
        return
    for hit in hits:
        chunk = hit.chunk
        line = excerpt(chunk.text, query)
        click.echo(f"{hit.position}\t{hit.score:.3f}\t{chunk.type.value}\t{chunk.id}\t{line}")
