"""One agent's context: the window before the current message, stripped and de-duplicated."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from memctx.team._markers import strip_markers
from memctx.team._values import AgentContext, PromptMessage, TeamMessage, format_addressees

__all__ = ["agent_context", "deduplicate"]

logger = logging.getLogger("memctx.team")

Entry = tuple[PromptMessage, str]
"""A context message and the id of the message it came from."""


def deduplicate(entries: Sequence[Entry], current: TeamMessage) -> list[Entry]:
    """Leave out the last context message when it repeats the current one.

    Only when the current message is an AI's (an agent's answer handed to the
    next agent): the last context entry is left out if it has the current
    message's id, or failing that the same speaker name and the same text
    once markers are stripped. A human's message is never de-duplicated.
    """
    if current.speaker.type != "ai" or not entries:
        return list(entries)
    last, last_id = entries[-1]
    if last_id == current.id or (
        last.from_ == current.speaker.role_name and last.content == strip_markers(current.content)
    ):
        logger.debug("[TeamConversation] Deduplicated context for AI→AI")
        return list(entries[:-1])
    return list(entries)


def agent_context(
    messages: Sequence[TeamMessage],
    *,
    window_size: int,
    team_task: str | None,
    system_instruction: str | None,
    instruction_file_text: str | None,
    max_bytes: int,
) -> AgentContext:
    """The context of an agent about to answer the latest of ``messages``.

    The latest message is the current one; the context is the
    ``window_size`` messages before it (none when it is 0), each with its
    speaker's name, its addressees formatted and its markers stripped, then
    de-duplicated (see :func:`deduplicate`). No messages: an empty context
    (no context messages, an empty current message).
    """
    if not messages:
        return AgentContext((), "", team_task, system_instruction, instruction_file_text, max_bytes)
    latest = messages[-1]
    before = messages[:-1]
    window = before[max(len(before) - window_size, 0) :] if window_size > 0 else ()
    entries = [
        (
            PromptMessage(
                m.speaker.role_name, format_addressees(m.addressees), strip_markers(m.content)
            ),
            m.id,
        )
        for m in window
    ]
    kept = deduplicate(entries, latest)
    return AgentContext(
        tuple(message for message, _ in kept),
        strip_markers(latest.content),
        team_task,
        system_instruction,
        instruction_file_text,
        max_bytes,
    )
