"""The readable text stored in memctx's snapshot files (see :mod:`memctx.snapshot`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, Literal

from memctx._build.builder import ContextBuilder
from memctx._build.default import default_builder
from memctx._chunk import Chunk, ContextMessage
from memctx._result import ContextBuildResult

__all__ = [
    "SnapshotKind",
    "format_build_result",
    "format_chunk",
    "format_messages",
    "to_snapshot",
    "with_final_newline",
]

_NO_FINAL_NEWLINE: Final = "\\ No newline at end of message\n"


def format_chunk(chunk: Chunk, builder: ContextBuilder | None = None) -> str:
    """Return the ``.xml`` snapshot text of ``chunk``: a role comment, then its XML.

    ``builder`` renders it (its registered renderers apply); by default a builder
    with the installed renderer plugins.
    """
    role, xml = (builder or default_builder()).render(chunk)
    return f"<!-- role: {role} -->\n{with_final_newline(xml)}"


def format_messages(messages: Sequence[ContextMessage]) -> str:
    """Return the ``.txt`` snapshot text of ``messages``.

    Each message is a ``=== role (chunk ids) ===`` header line, its content exactly,
    and a blank line. Content that does not end with a newline is followed by a
    ``\\ No newline at end of message`` marker line, so no difference is hidden.
    """
    if not messages:
        return "(no messages)\n"
    parts = []
    for message in messages:
        ids = f" ({', '.join(message.chunk_ids)})" if message.chunk_ids else ""
        content = message.content
        if not content.endswith("\n"):
            content += "\n" + _NO_FINAL_NEWLINE
        parts.append(f"=== {message.role}{ids} ===\n{content}")
    return "\n".join(parts)


def format_build_result(result: ContextBuildResult) -> str:
    """Return the ``.txt`` snapshot text of a build: its report, then its messages."""
    rows: list[tuple[str, str, str, str]] = []
    for chunk_id in result.included_chunk_ids:
        rows.append(("included", chunk_id, _tokens(result.chunk_tokens.get(chunk_id)), ""))
    for chunk_id, exclusion in result.exclusions.items():
        tokens = _tokens(exclusion.tokens, estimated=exclusion.tokens_estimated)
        rows.append(("excluded", chunk_id, tokens, exclusion.reason.value))
    id_width = max((len(row[1]) for row in rows), default=0)
    token_width = max((len(row[2]) for row in rows), default=0)
    lines = ["=== report ===", result.summary()]
    if rows:
        lines.append("chunks:")
        for status, chunk_id, tokens, reason in rows:
            line = f"  {status}  {chunk_id:<{id_width}}  {tokens:>{token_width}}  {reason}"
            lines.append(line.rstrip())
    return "\n".join(lines) + "\n\n" + format_messages(result.messages)


def _tokens(count: int | None, *, estimated: bool = False) -> str:
    """A count as the report shows it: ``~`` marks an estimate, ``-`` none."""
    if count is None:
        return "-"
    return f"~{count} tokens" if estimated else f"{count} tokens"


def with_final_newline(text: str) -> str:
    return text if text.endswith("\n") else text + "\n"


def _is_message_sequence(value: object) -> bool:
    return (
        isinstance(value, Sequence)
        and not isinstance(value, str | bytes)
        and all(isinstance(item, ContextMessage) for item in value)
    )


SnapshotKind = Literal["xml", "txt"]

_ACCEPTED: Final = (
    "a Chunk, a str of XML, a ContextBuildResult, a ContextMessage or a sequence of ContextMessage"
)


def to_snapshot(value: object, builder: ContextBuilder | None = None) -> tuple[SnapshotKind, str]:
    """Return which kind of file ``value`` is stored in and the text stored.

    Raises :class:`TypeError` for anything but the accepted types.
    """
    if isinstance(value, Chunk):
        return "xml", format_chunk(value, builder)
    if isinstance(value, str):
        return "xml", with_final_newline(value)
    if isinstance(value, ContextBuildResult):
        return "txt", format_build_result(value)
    if isinstance(value, ContextMessage):
        return "txt", format_messages([value])
    if _is_message_sequence(value):
        assert isinstance(value, Sequence)
        return "txt", format_messages(value)
    raise TypeError(f"cannot snapshot {type(value).__name__}: expected {_ACCEPTED}")
