"""The tokens of a native chat-completions request, as a build with ``provider="openai"`` counts.

OpenAI publishes how a message of text is counted (its cookbook's
``num_tokens_from_messages``: 3 tokens a message, its encoded values, 1 more
for a ``name``, 3 for the reply priming) and how an image is
(:mod:`memctx._render.media`); its cookbook's ``num_tokens_for_tools`` counts
the tool *definitions* (the ``tools`` parameter), not the calls and results
in the messages, whose layout is not published. So:

- a message of text, and a user message of text and image parts: counted by
  the published rules (each text part's tokens, each image's tile cost);
- an assistant message's ``tool_calls`` and a ``tool`` message: by the rule
  community counters calibrated against the API's ``prompt_tokens`` for the
  legacy ``function_call`` (hmarr/openai-chat-tokens): a call costs its name,
  its arguments and 3; a ``tool`` message 2 fewer than a text message; the
  call ids are not counted (the model is not shown them). On the one
  API-measured ``tool_calls`` request we found (forestwanglin/openai-java#5,
  gpt-4: 35 prompt tokens) this gives 35; not published, so inexact;
- a PDF ``file`` part: the per-page estimate of :mod:`memctx._render.media`.

The count is exact (``token_count_exact``) only when the request holds none
of the approximated parts, and the tokenizer is exact.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from memctx._chunk import Chunk, ContextMessage
from memctx._render.media import media_tokens
from memctx.adapters._conversation import native_conversation
from memctx.adapters._openai import media_part, openai_turn, user_parts
from memctx.adapters._parts import Media
from memctx.typing import Tokenizer


def openai_request_tokens(
    messages: Sequence[ContextMessage], chunks: Sequence[Chunk], tokenizer: Tokenizer
) -> tuple[int, bool]:
    """``(tokens, exact)`` of the native ``to_openai()`` request of built ``messages``."""
    if not any(m.role != "system" for m in messages):
        return tokenizer.count_messages(messages), True
    talk = native_conversation(messages, chunks)
    priming = tokenizer.count_messages([])
    total = priming
    exact = True
    if talk.system:
        total += tokenizer.count_messages([{"role": "system", "content": talk.system}]) - priming
    for turn in talk.turns:
        media = [p for p in user_parts(turn) if isinstance(p, Media) and media_part(p) is not None]
        for message in openai_turn(turn):
            tokens, plain = _message_tokens(message, media, tokenizer, priming)
            total += tokens
            exact = exact and plain
    return total, exact


def _message_tokens(
    message: Mapping[str, Any], media: list[Media], tokenizer: Tokenizer, priming: int
) -> tuple[int, bool]:
    role, content = message["role"], message.get("content")
    if isinstance(content, str) and role != "tool" and "tool_calls" not in message:
        return tokenizer.count_messages([{"role": role, "content": content}]) - priming, True
    tokens = tokenizer.count_messages([{"role": role, "content": ""}]) - priming
    exact = role != "tool" and "tool_calls" not in message
    if isinstance(content, str):
        tokens += tokenizer.count(content)
    elif isinstance(content, list):
        for block in content:
            if block["type"] == "text":
                tokens += tokenizer.count(block["text"])
                continue
            part = media.pop(0)
            tokens += media_tokens(part.chunk.action, part.chunk.metadata, "openai")
            exact = exact and part.is_image
    if "name" in message:
        tokens += tokenizer.count(message["name"]) + 1
    if role == "tool":
        tokens -= 2
    for call in message.get("tool_calls") or ():
        function = call["function"]
        tokens += tokenizer.count(function["name"]) + tokenizer.count(function["arguments"]) + 3
    return tokens, exact
