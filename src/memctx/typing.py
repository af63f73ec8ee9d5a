"""The extension points of memctx: the Protocols a plugin or a custom part implements.

- :class:`ChunkRenderer`: renders the chunks it claims as one XML element each.
- :class:`Tokenizer`: counts the tokens of a text and of a list of chat messages.
- :class:`Compressor`: makes a state smaller (:mod:`memctx.compress`).
- :class:`Summarizer`: writes the text of a compaction summary (:mod:`memctx.compaction`).

Each is a :class:`typing.Protocol`: implement the members, no base class needed.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from memctx._chunk import Chunk, ContextMessage, Role
from memctx._state import MemoryState

__all__ = ["ChunkRenderer", "Compressor", "Summarizer", "Tokenizer"]


@runtime_checkable
class ChunkRenderer(Protocol):
    """Renders the chunks it claims as one XML element each.

    Renderers must be deterministic: a builder caches ``render`` and
    ``get_role`` per chunk and renderer chain, since chunks never change.
    Build the XML with :func:`memctx.xml.render_element` to get escaping and
    the forbidden-character policy for free.

    A renderer may also define ``cache_key`` (any hashable value, a string
    for a stable one) naming its class *and its configuration*: builders and
    the store share cached renderings and token counts only between
    renderers with equal keys. Without it, the key is the class name and the
    instance's attributes (see :func:`memctx.renderer_cache_key`).

    And it may define ``render_prefix(chunk, chars) -> str``: a prefix of
    ``render(chunk)`` that covers at least the first ``chars`` characters of
    the content (see :func:`memctx.xml.render_element_prefix`). A build then
    measures a chunk of more than 65,536 characters against the room left by
    rendering only that prefix, so a huge chunk that cannot fit costs what
    the budget needs. The built-in renderers define it.
    """

    def can_render(self, chunk: Chunk) -> bool:
        """Return whether this renderer claims ``chunk``."""
        ...

    def get_role(self, chunk: Chunk) -> Role:
        """Return the chat role of the message ``chunk`` belongs in."""
        ...

    def render(self, chunk: Chunk) -> str:
        """Return ``chunk`` as XML text."""
        ...


@runtime_checkable
class Tokenizer(Protocol):
    """Counts tokens of text and of chat message lists.

    ``name``
        Says what counts (shown in reports).
    ``exact``
        True only when the counts are the model's real encoding.
    ``cache_key``
        Tokenizers that count alike share cached counts under equal keys.
    ``counts_add_up``
        True when the counts of two pieces add up to the count of the whole
        wherever the second piece starts right after a newline with a
        character that is neither whitespace nor ``/`` (true of tiktoken's
        encodings). A build then sums cached per-chunk counts, and counts a
        long chunk in pieces only as far as the budget needs; otherwise it
        recounts the messages it returns and trims them to the budget.
    ``count_messages``
        Takes :class:`~memctx.ContextMessage` objects or dicts with ``role``,
        ``content`` and optionally ``name``.

    ``cache_key`` and ``counts_add_up`` are optional at run time: a build
    treats a tokenizer without them as keyed by itself, with counts that do
    not add up. So are ``count_many(texts) -> list[int]`` (the counts of
    several texts, in order) and ``batch_min_chars`` (an int: the fewest
    characters a batch needs to be counted faster by ``count_many`` than one
    by one): with both, a cold build counts the chunks it will need in
    batches (:class:`~memctx.TiktokenTokenizer` does, on threads).
    """

    @property
    def name(self) -> str: ...

    @property
    def exact(self) -> bool: ...

    @property
    def cache_key(self) -> Hashable: ...

    @property
    def counts_add_up(self) -> bool: ...

    def count(self, text: str) -> int: ...

    def count_messages(self, messages: Iterable[ContextMessage | Mapping[str, Any]]) -> int: ...


@runtime_checkable
class Compressor(Protocol):
    """Makes a state smaller: ``compressor(state) -> state``.

    It may keep a chunk, drop it, or put a new chunk (a fresh id, with
    ``metadata.derived_from`` naming the chunk it stands for) in its place.
    :func:`memctx.compress.compress` checks every result: a compressor that
    splits a unit, touches a pinned chunk or a call still waiting for its
    result, reorders chunks or invents unnamed ones raises
    :class:`~memctx.CompressionError`.
    """

    def __call__(self, state: MemoryState, /) -> MemoryState: ...


@runtime_checkable
class Summarizer(Protocol):
    """Writes the text of a compaction summary: ``summarizer(chunks, previous) -> str``.

    ``chunks`` are the chunks the summary covers, oldest first, without the
    previous summary; ``previous`` is the text of the summary an earlier
    compaction made (``None`` on the first), to be folded into the new one.
    """

    def __call__(self, chunks: Sequence[Chunk], previous: str | None, /) -> str: ...
