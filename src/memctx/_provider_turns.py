"""The turns a provider adapter must add to a conversation, as a pure function.

Anthropic's Messages API wants the conversation to open with a user turn and,
unless the final assistant turn is meant as a prefill, to end with one;
Gemini's ``generateContent`` is given the same shape. When the built messages
open or end with an assistant turn, the adapter adds a short user turn there.
A build told the target (``provider="anthropic"``) keeps room for these
turns in its budget and counts the ones it adds in ``token_count``; OpenAI's
chat completions need none.

This module imports nothing but the role type, so the build core can use it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final, Literal, TypeAlias

import attrs

from memctx._chunk import Role
from memctx.typing import Tokenizer

Provider: TypeAlias = Literal["openai", "anthropic", "gemini"]
PROVIDERS: Final[tuple[str, ...]] = ("openai", "anthropic", "gemini")

OPENING_TURN: Final = "(The conversation so far follows.)"
"""The user turn added before a conversation that opens with an assistant turn."""

CLOSING_TURN: Final = "Continue."
"""The user turn added after a final assistant turn (unless ``prefill=True``)."""


@attrs.frozen
class AddedTurns:
    """The user turns an adapter adds: ``opening`` before the first turn, ``closing`` after
    the last (``None``: not added)."""

    opening: str | None = None
    closing: str | None = None

    @property
    def texts(self) -> tuple[str, ...]:
        """The added turns' texts, in order."""
        return tuple(t for t in (self.opening, self.closing) if t is not None)


def added_turns(
    roles: Iterable[Role],
    provider: Provider,
    *,
    prefill: bool = False,
    opening_turn: str = OPENING_TURN,
    closing_turn: str = CLOSING_TURN,
) -> AddedTurns:
    """Which user turns ``provider``'s adapter adds to messages of these ``roles``.

    System messages do not count (they go to a separate field). OpenAI adds
    nothing; Anthropic and Gemini add ``opening_turn`` before a leading
    assistant turn and ``closing_turn`` after a final one (not with
    ``prefill=True``). Nothing is added to a conversation without turns:
    that request is empty and the adapter refuses it.
    """
    if provider not in PROVIDERS:
        raise ValueError(f"unknown provider {provider!r}; choose one of {', '.join(PROVIDERS)}")
    for name, text in (("opening_turn", opening_turn), ("closing_turn", closing_turn)):
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"{name} must be a non-blank string, got {text!r}")
    body = [role for role in roles if role != "system"]
    if provider == "openai" or not body:
        return AddedTurns()
    opening = opening_turn if body[0] == "assistant" else None
    closing = closing_turn if body[-1] == "assistant" and not prefill else None
    return AddedTurns(opening, closing)


def reserved_turns(provider: Provider | None) -> tuple[str, ...]:
    """The texts a build for ``provider`` keeps room for (the default turns it may add)."""
    if provider is None or provider == "openai":
        return ()
    return (OPENING_TURN, CLOSING_TURN)


def turn_tokens(tokenizer: Tokenizer, text: str) -> int:
    """Tokens of one added user turn holding ``text``, per-message overhead included."""
    with_turn = tokenizer.count_messages([{"role": "user", "content": text}])
    return with_turn - tokenizer.count_messages([])


def reserved_turn_tokens(provider: Provider | None, tokenizer: Tokenizer) -> int:
    """Tokens a build for ``provider`` keeps free for the turns its adapter may add."""
    return sum(turn_tokens(tokenizer, text) for text in reserved_turns(provider))


def added_turn_tokens(
    roles: Iterable[Role], provider: Provider | None, tokenizer: Tokenizer
) -> int:
    """Tokens of the turns ``provider``'s adapter adds to messages of these ``roles``."""
    if provider is None:
        return 0
    turns = added_turns(roles, provider)
    return sum(turn_tokens(tokenizer, text) for text in turns.texts)
