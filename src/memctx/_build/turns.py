"""The turns a provider adapter must add to a conversation, as a pure function.

Anthropic's Messages API wants the conversation to open with a user turn and,
unless the final assistant turn is meant as a prefill, to end with one;
Gemini's ``generateContent`` is given the same shape. When the built messages
open or end with an assistant turn, the adapter adds a short user turn there.
A build told the target (``provider="anthropic"``) keeps room for these
turns in its budget and counts the ones it adds in ``token_count``, with the
texts and ``prefill`` it was given (:class:`TurnOptions`); the result keeps
those options and its adapters send exactly those turns. OpenAI's chat
completions need none.

This module imports nothing but the role and message types, so the build core can use it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final, Literal, TypeAlias

import attrs

from memctx._chunk import ContextMessage, Role
from memctx._exceptions import AdapterError
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


@attrs.frozen
class TurnOptions:
    """The added-turn settings a build counted: the two texts and whether a final
    assistant turn is kept as a prefill (then no closing turn is added, and the
    prefill's trailing white space is not sent)."""

    opening_turn: str = OPENING_TURN
    closing_turn: str = CLOSING_TURN
    prefill: bool = False

    def added(self, roles: Iterable[Role]) -> AddedTurns:
        """The turns added to messages of these ``roles`` (Anthropic's and Gemini's rules)."""
        return added_turns(
            roles,
            "anthropic",
            prefill=self.prefill,
            opening_turn=self.opening_turn,
            closing_turn=self.closing_turn,
        )


def is_turn_text(value: object) -> bool:
    """Whether ``value`` can be an added turn's text: a string that is not blank."""
    return isinstance(value, str) and bool(value.strip())


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
        raise AdapterError(f"unknown provider {provider!r}; choose one of {', '.join(PROVIDERS)}")
    if not isinstance(prefill, bool):
        raise AdapterError(f"prefill must be True or False, got {prefill!r}")
    for name, text in (("opening_turn", opening_turn), ("closing_turn", closing_turn)):
        if not is_turn_text(text):
            raise AdapterError(f"{name} must be a non-blank string, got {text!r}")
    body = [role for role in roles if role != "system"]
    if provider == "openai" or not body:
        return AddedTurns()
    opening = opening_turn if body[0] == "assistant" else None
    closing = closing_turn if body[-1] == "assistant" and not prefill else None
    return AddedTurns(opening, closing)


def reserved_turns(turns: TurnOptions | None) -> tuple[str, ...]:
    """The texts a build with these added-turn options keeps room for (``None``: none)."""
    if turns is None:
        return ()
    return (turns.opening_turn,) if turns.prefill else (turns.opening_turn, turns.closing_turn)


def turn_tokens(tokenizer: Tokenizer, text: str) -> int:
    """Tokens of one added user turn holding ``text``, per-message overhead included."""
    with_turn = tokenizer.count_messages([{"role": "user", "content": text}])
    return with_turn - tokenizer.count_messages([])


def reserved_turn_tokens(turns: TurnOptions | None, tokenizer: Tokenizer) -> int:
    """Tokens a build keeps free for the turns its adapter may add."""
    return sum(turn_tokens(tokenizer, text) for text in reserved_turns(turns))


def added_turn_tokens(
    messages: Sequence[ContextMessage], turns: TurnOptions | None, tokenizer: Tokenizer
) -> int:
    """How the adapter's request differs in tokens from ``messages``: the turns it adds,
    and (``prefill``) the trailing white space it removes from a final assistant turn."""
    if turns is None:
        return 0
    added = turns.added(m.role for m in messages)
    tokens = sum(turn_tokens(tokenizer, text) for text in added.texts)
    last = messages[-1] if messages else None
    if turns.prefill and last is not None and last.role == "assistant":
        stripped = last.content.rstrip()
        if stripped != last.content:
            sent = tokenizer.count_messages([{"role": "assistant", "content": stripped}])
            built = tokenizer.count_messages([{"role": "assistant", "content": last.content}])
            tokens += sent - built
    return tokens
