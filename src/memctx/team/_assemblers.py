"""Prompt assemblers: one agent's context laid out the way that kind of agent reads it.

Each assembler turns an :class:`AgentContext` into an :class:`AssembledPrompt`
whose ``prompt`` is at most ``ctx.max_bytes`` bytes of UTF-8. When the whole
context does not fit, the oldest context messages are left out first, as many
as needed; the current message, the team task and the instructions are never
cut, and if they alone do not fit, :class:`~memctx.PromptTooLargeError` says
how many bytes they need.

- ``claude-code``: XML sections (``<team_task>``, ``<conversation_history>`` of
  ``<message from=".." to="..">``, ``<current_message>``), escaped so that no
  message can close a section or pose as another speaker. The system
  instruction and the instruction file go to ``system_flag``, the text for
  Claude Code's ``--append-system-prompt``; they are not in the prompt.
- ``openai-codex``: Markdown: ``# Instructions``, ``# Team task``,
  ``# Conversation so far`` with one ``## from → to`` section per message, and
  ``# Current message``. Codex's command line has no system-prompt flag, so the
  instructions open the prompt.
- ``google-gemini``: labelled blocks (``SYSTEM INSTRUCTIONS``, ``TEAM TASK``,
  ``CONVERSATION HISTORY``, ``CURRENT MESSAGE``) separated by ``---`` lines,
  each message under ``[from → to]``; the instructions open the prompt.
- anything else: plain text (``Team task:``, ``Conversation so far:`` with
  a ``from (to to):`` line per message, ``Current message:``), instructions first.

In the three text layouts attribution is unforgeable as in the XML one: every
line of a message, of the team task and of the current message is quoted
(``> ``), so no text can start a line that reads as a heading or a speaker;
and the names in a speaker line are one line each, with ``→`` written ``->``,
so a name cannot hold a second speaker line or arrow. Only memctx writes the
lines that are not quoted.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from typing import Final, Protocol

from memctx._exceptions import PromptTooLargeError
from memctx.team._values import AgentContext, AssembledPrompt, PromptMessage
from memctx.xml import render_element

__all__ = [
    "ClaudeContextAssembler",
    "CodexContextAssembler",
    "ContextAssembler",
    "GeminiContextAssembler",
    "PlainTextAssembler",
    "utf8_size",
]

logger = logging.getLogger("memctx.team")

Layout = Callable[[Sequence[PromptMessage]], str]


class ContextAssembler(Protocol):
    """Turns one agent's context into the prompt to send it."""

    def assemble(self, ctx: AgentContext) -> AssembledPrompt:
        """Return the prompt (at most ``ctx.max_bytes`` bytes of UTF-8) and the system flag."""
        ...


def utf8_size(text: str) -> int:
    """Bytes of ``text`` in UTF-8 (a lone surrogate counts 3, as U+FFFD would)."""
    return len(text.encode("utf-8", errors="surrogatepass"))


def fit(layout: Layout, messages: Sequence[PromptMessage], max_bytes: int) -> str:
    """``layout`` of the longest tail of ``messages`` that fits ``max_bytes``."""
    prompt = layout(messages)
    if utf8_size(prompt) <= max_bytes:
        return prompt
    bare = layout(())
    if utf8_size(bare) > max_bytes:
        raise PromptTooLargeError(utf8_size(bare), max_bytes)
    # Leaving out an older message never makes the prompt longer: search the
    # fewest to leave out.
    low, high = 1, len(messages)
    while low < high:
        middle = (low + high) // 2
        if utf8_size(layout(messages[middle:])) <= max_bytes:
            high = middle
        else:
            low = middle + 1
    logger.debug("[TeamConversation] Dropped %d oldest context message(s) to fit max_bytes", low)
    return layout(messages[low:])


def quote(text: str) -> str:
    """``text`` with every line quoted (``> ``; an empty line is ``>``)."""
    return "\n".join(f"> {line}" if line else ">" for line in _LINES.split(text))


def speaker(name: str) -> str:
    """A name for a speaker line: one line, no arrow."""
    return " ".join(_LINES.split(name)).replace("→", "->")


_LINES: Final = re.compile("\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
"""What :meth:`str.splitlines` splits on: a line break to a reader of any kind."""


def _instructions(ctx: AgentContext) -> list[str]:
    return [text for text in (ctx.system_instruction, ctx.instruction_file_text) if text]


def _sections(*parts: str | None) -> str:
    return "\n\n".join(part for part in parts if part is not None)


class ClaudeContextAssembler:
    """XML sections; the instructions go to ``--append-system-prompt``."""

    def assemble(self, ctx: AgentContext) -> AssembledPrompt:
        def layout(messages: Sequence[PromptMessage]) -> str:
            history = None
            if messages:
                elements = "\n".join(
                    render_element("message", [("from", m.from_), ("to", m.to)], m.content)
                    for m in messages
                )
                history = f"<conversation_history>\n{elements}\n</conversation_history>"
            task = render_element("team_task", [], ctx.team_task) if ctx.team_task else None
            current = render_element("current_message", [], ctx.current_message)
            return _sections(task, history, current) + "\n"

        flag = "\n\n".join(_instructions(ctx)) or None
        return AssembledPrompt(fit(layout, ctx.context_messages, ctx.max_bytes), flag)


class CodexContextAssembler:
    """Markdown sections, the instructions first."""

    def assemble(self, ctx: AgentContext) -> AssembledPrompt:
        instructions = _instructions(ctx)

        def layout(messages: Sequence[PromptMessage]) -> str:
            history = None
            if messages:
                history = "# Conversation so far\n\n" + "\n\n".join(
                    f"## {speaker(m.from_)} → {speaker(m.to)}\n\n{quote(m.content)}"
                    for m in messages
                )
            return (
                _sections(
                    "# Instructions\n\n" + "\n\n".join(instructions) if instructions else None,
                    f"# Team task\n\n{quote(ctx.team_task)}" if ctx.team_task else None,
                    history,
                    f"# Current message\n\n{quote(ctx.current_message)}",
                )
                + "\n"
            )

        return AssembledPrompt(fit(layout, ctx.context_messages, ctx.max_bytes))


_RULE: Final = "\n\n---\n"


class GeminiContextAssembler:
    """Labelled blocks separated by rules, the instructions first."""

    def assemble(self, ctx: AgentContext) -> AssembledPrompt:
        instructions = _instructions(ctx)

        def layout(messages: Sequence[PromptMessage]) -> str:
            blocks = []
            if instructions:
                blocks.append("SYSTEM INSTRUCTIONS\n" + "\n\n".join(instructions))
            if ctx.team_task:
                blocks.append(f"TEAM TASK\n{quote(ctx.team_task)}")
            if messages:
                blocks.append(
                    "CONVERSATION HISTORY\n"
                    + "\n\n".join(
                        f"[{speaker(m.from_)} → {speaker(m.to)}]\n{quote(m.content)}"
                        for m in messages
                    )
                )
            blocks.append(f"CURRENT MESSAGE\n{quote(ctx.current_message)}")
            return _RULE.join(blocks) + "\n"

        return AssembledPrompt(fit(layout, ctx.context_messages, ctx.max_bytes))


class PlainTextAssembler:
    """Plain text, for agent types no other assembler knows; the instructions first."""

    def assemble(self, ctx: AgentContext) -> AssembledPrompt:
        def layout(messages: Sequence[PromptMessage]) -> str:
            history = None
            if messages:
                history = "Conversation so far:\n" + "\n".join(
                    f"{speaker(m.from_)} (to {speaker(m.to)}):\n{quote(m.content)}"
                    for m in messages
                )
            return (
                _sections(
                    f"System instruction:\n{ctx.system_instruction}"
                    if ctx.system_instruction
                    else None,
                    f"Instructions file:\n{ctx.instruction_file_text}"
                    if ctx.instruction_file_text
                    else None,
                    f"Team task:\n{quote(ctx.team_task)}" if ctx.team_task else None,
                    history,
                    f"Current message:\n{quote(ctx.current_message)}",
                )
                + "\n"
            )

        return AssembledPrompt(fit(layout, ctx.context_messages, ctx.max_bytes))


ASSEMBLERS: Final[dict[str, ContextAssembler]] = {
    "claude-code": ClaudeContextAssembler(),
    "openai-codex": CodexContextAssembler(),
    "google-gemini": GeminiContextAssembler(),
}
"""The assembler of each full agent type; others get a :class:`PlainTextAssembler`."""
