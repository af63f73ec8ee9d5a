"""Plain text for reading and logs, with headers no content can imitate."""

from __future__ import annotations

from memctx.adapters._conversation import Source, _messages


def to_text(source: Source) -> str:
    """Each message under a ``=== role ===`` header line.

    The header's fence is ``===`` unless a content line starts with three or
    more ``=``; then every header uses one ``=`` more than the longest such
    run, so no content line can read as a header (the first line shows the
    fence). Content is written exactly; an empty build gives ``""``.
    """
    messages = _messages(source)
    longest = 2
    for message in messages:
        for line in message.content.splitlines():
            run = len(line) - len(line.lstrip("="))
            longest = max(longest, run)
    fence = "=" * (longest + 1)
    return "\n".join(f"{fence} {m.role} {fence}\n{m.content}" for m in messages)
