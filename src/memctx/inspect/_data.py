"""What the build inspector shows, as plain JSON: every chunk, the units, messages, totals.

Only public attributes of the result and the state are read, and a chunk's
rendering (see :mod:`memctx.inspect._types`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

from memctx._chunk import Chunk, ChunkType
from memctx._exceptions import InspectError, RendererError
from memctx._render.media import is_opaque
from memctx._render.prefix import shared_prefix_tokens
from memctx._state import MemoryState
from memctx.inspect._types import ChunkXml
from memctx.typing import Tokenizer

if TYPE_CHECKING:
    from memctx._result import ContextBuildResult

INCLUDED: Final = "included"
_TAG = re.compile(r"<([^\s/>!?]+)")
_CALLS: Final = frozenset({"tool_call", "skill_call"})
_RESULTS: Final = frozenset({"tool_result", "skill_result"})


def unit_key(chunk: Chunk) -> tuple[str, str] | None:
    """The unit a chunk belongs to: a call and its results (same ``call_id``), or a
    ``spawn_subagent`` and its ``subagent_result``s (same ``subagent_id``)."""
    meta = chunk.metadata
    if chunk.type is ChunkType.WORKFLOW and chunk.action in _CALLS and meta.call_id:
        return ("call", meta.call_id)
    if chunk.type is ChunkType.ENVIRONMENT and chunk.action in _RESULTS and meta.call_id:
        return ("call", meta.call_id)
    delegation = chunk.action in ("spawn_subagent", "subagent_result")
    if chunk.type is ChunkType.DELEGATION and delegation and meta.subagent_id:
        return ("subagent", meta.subagent_id)
    return None


def check_matches(result: ContextBuildResult, state: MemoryState, what: str = "result") -> None:
    """Raise :class:`InspectError` unless ``result`` reports on exactly ``state``'s chunks."""
    reported = set(result.included_chunk_ids) | set(result.excluded_chunk_ids)
    ids = [chunk.id for chunk in state]
    if len(reported) == len(ids) and reported.issuperset(ids):
        return
    unknown = sorted(reported.difference(ids))[:3]
    missing = [i for i in ids if i not in reported][:3]
    detail = f"ids not in the state: {unknown}" if unknown else f"state ids not reported: {missing}"
    raise InspectError(f"the {what} was not built from this state ({detail})")


def escape_text(text: str) -> str:
    """XML text escaping as the page's script repeats it (``escapeText`` in report.js)."""
    return (
        text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\r", "&#13;")
    )


def xml_fields(xml: str, content: str) -> dict[str, str]:
    """The XML as ``xml``, or, when it holds the escaped content, as the parts around it.

    The page rebuilds ``xml_head + escape_text(content) + xml_tail``, which is
    exactly ``xml`` by construction, so a report does not carry every content twice.
    """
    escaped = escape_text(content)
    at = xml.rfind(escaped) if escaped else -1
    if at < 0:
        return {"xml": xml}
    return {"xml_head": xml[:at], "xml_tail": xml[at + len(escaped) :]}


def row_xml(row: dict[str, Any]) -> str:
    """A row's XML, whichever way it is stored (see :func:`xml_fields`)."""
    if "xml" in row:
        found: str = row["xml"]
        return found
    return str(row["xml_head"]) + escape_text(row["content"]) + str(row["xml_tail"])


def _render(builder: ChunkXml, chunk: Chunk) -> tuple[str, str]:
    try:
        role, xml = builder.render(chunk)
    except RendererError as exc:
        return "", f"(this chunk could not be rendered: {exc})"
    return role, xml


def chunk_rows(
    result: ContextBuildResult, state: MemoryState, builder: ChunkXml
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """One row per chunk in state order, and the units (``members`` are row positions)."""
    message_of = {cid: n for n, m in enumerate(result.messages) for cid in m.chunk_ids}
    included = set(result.included_chunk_ids)
    exclusions = result.exclusions
    unit_of: dict[tuple[str, str], int] = {}
    units: list[dict[str, Any]] = []
    rows = []
    for position, chunk in enumerate(state):
        role, xml = _render(builder, chunk)
        match = _TAG.match(xml)
        tokens = result.chunk_tokens.get(chunk.id)
        if chunk.id in included:
            status = INCLUDED
        else:
            exclusion = exclusions[chunk.id]
            status = str(exclusion.reason)
            tokens = exclusion.tokens if exclusion.tokens is not None else tokens
        content = xml if is_opaque(chunk) else chunk.text  # never a page of base64
        key = unit_key(chunk)
        unit = None
        if key is not None:
            unit = unit_of.setdefault(key, len(units))
            if unit == len(units):
                units.append({"kind": key[0], "key": key[1], "members": []})
            units[unit]["members"].append(position)
        rows.append(
            {
                "id": chunk.id,
                "type": chunk.type.value,
                "tag": match.group(1) if match else "",
                "role": role,
                "tokens": tokens,
                "status": status,
                "message": message_of.get(chunk.id),
                "unit": unit,
                "pinned": chunk.pinned,
                "replaced": result.replaced_characters.get(chunk.id, 0),
                "priority": chunk.priority,
                "created_at": chunk.created_at.isoformat(),
                "metadata": chunk.metadata.to_dict(),
                "content": content,
                **xml_fields(xml, content),
            }
        )
    return rows, units


def totals(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Chunks and tokens per type and per status (``included`` or the reason left out).

    Tokens of a left-out chunk count only when the build measured them;
    ``unmeasured`` says how many were not.
    """
    by_type: dict[str, dict[str, int]] = {}
    by_status: dict[str, dict[str, int]] = {}
    for row in rows:
        kind = by_type.setdefault(
            row["type"], {"chunks": 0, "included": 0, "excluded": 0, "tokens": 0}
        )
        kind["chunks"] += 1
        kind["included" if row["status"] == INCLUDED else "excluded"] += 1
        if row["status"] == INCLUDED:
            kind["tokens"] += row["tokens"] or 0
        status = by_status.setdefault(row["status"], {"chunks": 0, "tokens": 0, "unmeasured": 0})
        status["chunks"] += 1
        if row["tokens"] is None:
            status["unmeasured"] += 1
        else:
            status["tokens"] += row["tokens"]
    ordered = dict(sorted(by_status.items(), key=lambda item: (item[0] != INCLUDED, item[0])))
    return {"by_type": dict(sorted(by_type.items())), "by_status": ordered}


def messages(result: ContextBuildResult, rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each message: its role, the row positions of its chunks, its length in characters."""
    position = {row["id"]: n for n, row in enumerate(rows)}
    return [
        {
            "role": m.role,
            "chunks": [position[cid] for cid in m.chunk_ids if cid in position],
            "chars": len(m.content),
        }
        for m in result.messages
    ]


def comparison(
    result: ContextBuildResult,
    rows: list[dict[str, Any]],
    previous: ContextBuildResult,
    previous_state: MemoryState | None,
    tokenizer: Tokenizer,
    label: str,
) -> dict[str, Any]:
    """What entered and left since ``previous``, and the leading tokens both requests share.

    Marks each row's ``change`` (``entered``, ``left`` or ``None``); chunks that
    left and are not in this state are listed with what ``previous_state`` knows.
    """
    now, before = set(result.included_chunk_ids), set(previous.included_chunk_ids)
    position = {row["id"]: n for n, row in enumerate(rows)}
    for row in rows:
        row["change"] = (
            "entered"
            if row["id"] in now and row["id"] not in before
            else "left"
            if row["id"] in before and row["id"] not in now
            else None
        )
    older = {c.id: c for c in previous_state} if previous_state is not None else {}
    gone = []
    for cid in previous.included_chunk_ids:
        if cid not in position:
            chunk = older.get(cid)
            gone.append(
                {
                    "id": cid,
                    "type": chunk.type.value if chunk else "",
                    "tokens": previous.chunk_tokens.get(cid),
                }
            )
    return {
        "label": label,
        "entered": [n for n, row in enumerate(rows) if row["change"] == "entered"],
        "left": [n for n, row in enumerate(rows) if row["change"] == "left"],
        "left_elsewhere": gone,
        "shared_prefix_tokens": shared_prefix_tokens(previous.messages, result.messages, tokenizer),
        "token_count": result.token_count,
        "previous_token_count": previous.token_count,
        "previous_max_tokens": previous.max_tokens,
        "previous_included": len(previous.included_chunk_ids),
    }


def report_data(
    result: ContextBuildResult,
    state: MemoryState,
    builder: ChunkXml,
    *,
    title: str,
    previous: ContextBuildResult | None = None,
    previous_label: str = "the previous build",
    tokenizer: Tokenizer | None = None,
) -> dict[str, Any]:
    """Everything the page shows, as JSON-ready values."""
    check_matches(result, state)
    if previous is not None:
        check_matches(previous, previous.state, "previous result")
    rows, units = chunk_rows(result, state, builder)
    data: dict[str, Any] = {
        "title": title,
        "thread_id": state.thread_id,
        "build": {
            "token_count": result.token_count,
            "token_count_exact": result.token_count_exact,
            "tokenizer": result.tokenizer_name,
            "strategy": result.strategy,
            "max_tokens": result.max_tokens,
            "reserve_tokens": result.reserve_tokens,
            "included": len(result.included_chunk_ids),
            "excluded": len(result.excluded_chunk_ids),
        },
        "chunks": rows,
        "units": units,
        "messages": messages(result, rows),
        "totals": totals(rows),
        "compare": None,
    }
    if previous is not None:
        counter = tokenizer if tokenizer is not None else getattr(builder, "tokenizer", None)
        if counter is None:
            raise InspectError(
                f"to count the shared prefix, pass tokenizer= (the builds counted with "
                f"{result.tokenizer_name!r}) or the builder that built them"
            )
        for other in (result, previous):
            if other.tokenizer_name != counter.name:
                raise InspectError(
                    f"the builds counted with {other.tokenizer_name!r}; pass that tokenizer "
                    f"(not {counter.name!r}) to count the shared prefix"
                )
        data["compare"] = comparison(
            result, rows, previous, previous.state, counter, previous_label
        )
    return data
