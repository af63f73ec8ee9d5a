"""What the build inspector reads of a build result and of a builder, as Protocols.

:class:`~memctx.ContextBuildResult` and :class:`~memctx.ContextBuilder` fit them;
naming them here keeps the inspector out of an import cycle with the result,
whose :meth:`~memctx.ContextBuildResult.to_html` calls it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from memctx._chunk import Chunk, ContextMessage
from memctx.typing import Tokenizer


class ExclusionView(Protocol):
    """Why one chunk was left out (``reason`` is an ``ExclusionReason``, a str)."""

    @property
    def reason(self) -> str: ...

    @property
    def tokens(self) -> int | None: ...


class BuildReport(Protocol):
    """The parts of a :class:`~memctx.ContextBuildResult` a report shows."""

    @property
    def messages(self) -> Sequence[ContextMessage]: ...
    @property
    def token_count(self) -> int: ...
    @property
    def token_count_exact(self) -> bool: ...
    @property
    def tokenizer_name(self) -> str: ...
    @property
    def strategy(self) -> str: ...
    @property
    def max_tokens(self) -> int | None: ...
    @property
    def reserve_tokens(self) -> int: ...
    @property
    def included_chunk_ids(self) -> Sequence[str]: ...
    @property
    def excluded_chunk_ids(self) -> Sequence[str]: ...
    @property
    def exclusions(self) -> Mapping[str, ExclusionView]: ...
    @property
    def chunk_tokens(self) -> Mapping[str, int]: ...
    @property
    def replaced_characters(self) -> Mapping[str, int]: ...


class ChunkXml(Protocol):
    """What renders a chunk as it is sent (a :class:`~memctx.ContextBuilder`)."""

    @property
    def tokenizer(self) -> Tokenizer: ...

    def render(self, chunk: Chunk) -> tuple[str, str]:
        """``(role, xml)`` of ``chunk``."""
        ...
