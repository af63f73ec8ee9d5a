"""What a build returns: the messages and a full report of what went where."""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from memctx._build.turns import AddedTurns, TurnOptions
from memctx._chunk import Chunk, ContextMessage
from memctx._exceptions import BuildOptionError
from memctx._json import ReadOnlyDict
from memctx._state import MemoryState

if TYPE_CHECKING:
    from memctx.compress import CompressionReport
    from memctx.inspect._types import ChunkXml


class ReportDict(ReadOnlyDict):
    """A result's mapping: no result's report can be altered through another's."""

    __slots__ = ()
    changed = "a build result never changes; copy it with dict(...) to edit it"


def read_only(mapping: Mapping[str, Any]) -> ReportDict:
    """``mapping`` as a :class:`ReportDict` (itself when it is one)."""
    return mapping if type(mapping) is ReportDict else ReportDict(mapping)


class ExclusionReason(enum.StrEnum):
    """Why a chunk was left out of a build."""

    NOT_SELECTED = "include_only_chunk_ids"
    """``include_only_chunk_ids`` was given and did not name the chunk."""
    SYSTEM_EXCLUDED = "include_system"
    """``include_system=False`` and the chunk is a SYSTEM chunk."""
    ENVIRONMENT_EXCLUDED = "include_environment"
    """``include_environment=False`` and the chunk is an ENVIRONMENT chunk."""
    TYPE_EXCLUDED = "exclude_types"
    """The chunk's type is in ``exclude_types``."""
    OVER_BUDGET = "over_budget"
    """The chunk (or the unit it belongs to) did not fit in the token budget."""


@attrs.frozen
class Exclusion:
    """One left-out chunk: why, and its token count when the build measured it."""

    chunk_id: str
    reason: ExclusionReason
    tokens: int | None = None


ExclusionSource = Callable[[], tuple[tuple[str, ...], Mapping[str, "Exclusion"]]]


@attrs.frozen
class ContextBuildResult:
    """The messages to send and the report of the build that made them.

    ``token_count`` is the count of exactly these messages with the chat
    format's overhead (per message and the reply priming); it equals
    ``tokenizer.count_messages(result.messages)``. ``included_chunk_ids`` and
    ``excluded_chunk_ids`` are in state order and together are every chunk of
    the state. ``exclusions`` says why each left-out chunk was left out (and
    its tokens when the build measured it); ``chunk_tokens`` gives the tokens
    of each included chunk (its XML and the newline after it) and of the
    left-out chunks the build measured. ``replaced_characters`` counts, per
    chunk, the characters XML forbids that were replaced by U+FFFD.

    The left-out side of the report is worked out when first asked for, so a
    build of a long history does not pay for reporting on all of it.
    """

    messages: tuple[ContextMessage, ...]
    token_count: int
    token_count_exact: bool
    included_chunk_ids: tuple[str, ...]
    chunk_tokens: Mapping[str, int] = attrs.field(converter=read_only)
    replaced_characters: Mapping[str, int] = attrs.field(converter=read_only)
    tokenizer_name: str
    strategy: str
    max_tokens: int | None
    reserve_tokens: int
    recounted: bool = False
    """True when the count came from a fresh ``count_messages`` of the messages
    (the estimator, a custom tokenizer, or a renderer whose output could not
    be counted piece by piece) rather than from the sum of cached counts."""
    included_chunks: tuple[Chunk, ...] = attrs.field(default=(), repr=False)
    """The included chunks themselves, in state order (``included_chunk_ids``' chunks)."""
    compression: CompressionReport | None = None
    """What ``compressors`` / ``compress_to_fit`` changed before the budget (None without them);
    the ids above are those of the compressed state."""
    provider: str | None = None
    """The ``provider`` the build was told (``None``: none)."""
    tools_counted: str = "text"
    """Which request ``token_count`` counts: ``"text"`` (the messages as built, plus the
    cost of their images and documents) or ``"native"`` (the native ``to_openai()``
    request of a build with ``provider="openai"``)."""
    turn_options: TurnOptions | None = None
    """The added turns the build counted in ``token_count`` (``provider="anthropic"`` or
    ``"gemini"``); ``to_anthropic()`` and ``to_gemini()`` send exactly these. ``None``:
    none were counted."""
    _exclusions_source: ExclusionSource | None = attrs.field(
        default=None, repr=False, eq=False, alias="exclusions_source"
    )
    _prefix_source: Callable[[], int] | None = attrs.field(
        default=None, repr=False, eq=False, alias="prefix_source"
    )
    _shared_messages_source: Callable[[], int] | None = attrs.field(
        default=None, repr=False, eq=False, alias="shared_messages_source"
    )
    _lazy: dict[str, Any] = attrs.field(factory=dict, init=False, repr=False, eq=False)

    def _exclusions(self) -> tuple[tuple[str, ...], Mapping[str, Exclusion]]:
        found = self._lazy.get("exclusions")
        if found is None:
            ids, exclusions = self._exclusions_source() if self._exclusions_source else ((), {})
            found = ids, read_only(exclusions)
            self._lazy["exclusions"] = found
        return found

    @property
    def prefix_tokens_shared(self) -> int:
        """Tokens at the start of this request that the previous build of the same history
        with the same options sent too (what a provider's prompt cache can reuse); 0 when
        there was none. Worked out on first read, from the two builds' messages."""
        found = self._lazy.get("prefix")
        if found is None:
            found = self._prefix_source() if self._prefix_source else 0
            self._lazy["prefix"] = found
        return int(found)

    @property
    def prefix_messages_shared(self) -> int:
        """How many leading messages (the system message included) are identical, role and
        content, to the previous build's of the same history with the same options; 0
        when there was none. ``to_anthropic(cache=True)`` places a cache marker by it."""
        found = self._lazy.get("prefix_messages")
        if found is None:
            source = self._shared_messages_source
            found = source() if source else 0
            self._lazy["prefix_messages"] = found
        return int(found)

    @property
    def added_turns(self) -> AddedTurns:
        """The user turns the Anthropic and Gemini adapters add to these messages and
        ``token_count`` counts (``AddedTurns()`` when the build counted none)."""
        if self.turn_options is None:
            return AddedTurns()
        return self.turn_options.added(m.role for m in self.messages)

    @property
    def excluded_chunk_ids(self) -> tuple[str, ...]:
        """Ids of the left-out chunks, in state order."""
        return self._exclusions()[0]

    @property
    def exclusions(self) -> Mapping[str, Exclusion]:
        """For each left-out chunk id, why it was left out."""
        return self._exclusions()[1]

    def excluded_for(self, reason: ExclusionReason | str) -> tuple[str, ...]:
        """The ids left out for ``reason``, in state order."""
        try:
            wanted = ExclusionReason(reason)
        except ValueError:
            known = ", ".join(r.value for r in ExclusionReason)
            raise BuildOptionError("reason", f"unknown {reason!r}; one of {known}") from None
        return tuple(i for i in self.excluded_chunk_ids if self.exclusions[i].reason is wanted)

    def to_openai(self, **options: Any) -> list[dict[str, Any]]:
        """Chat-completions messages (native tool calls, images and PDFs unless
        ``tools="text"``); see :func:`memctx.adapters.to_openai` for ``options``."""
        from memctx.adapters import to_openai

        return to_openai(self, **options)

    def to_responses(self, **options: Any) -> list[dict[str, Any]]:
        """Responses API ``input`` items (messages, ``function_call``, ``function_call_output``,
        ``reasoning``); see :func:`memctx.adapters.to_responses` for ``options``."""
        from memctx.adapters import to_responses

        return to_responses(self, **options)

    def to_anthropic(self, **options: Any) -> dict[str, Any]:
        """Messages API arguments (native tool use, thinking, images and documents unless
        ``tools="text"``); see :func:`memctx.adapters.to_anthropic` for ``options``."""
        from memctx.adapters import to_anthropic

        return to_anthropic(self, **options)

    def to_gemini(self, **options: Any) -> dict[str, Any]:
        """``generate_content`` arguments (native function calls and media unless
        ``tools="text"``); see :func:`memctx.adapters.to_gemini`."""
        from memctx.adapters import to_gemini

        return to_gemini(self, **options)

    def to_langchain(self, **options: Any) -> list[Any]:
        """LangChain messages (native tool calls and media unless ``tools="text"``); see
        :func:`memctx.adapters.to_langchain` (``memctx[langchain]``)."""
        from memctx.adapters import to_langchain

        return to_langchain(self, **options)

    def to_text(self) -> str:
        """A plain-text form: each message under a ``=== role ===`` header (see ``to_text``)."""
        from memctx.adapters import to_text

        return to_text(self)

    def to_html(self, state: MemoryState, builder: ChunkXml, **options: Any) -> str:
        """The build report as one self-contained HTML page.

        ``state`` is the :class:`~memctx.MemoryState` this result was built
        from, ``builder`` the :class:`~memctx.ContextBuilder` that built it.
        Keywords: ``previous`` (an earlier build of the same history, to show
        what entered and left and the shared prefix), ``previous_state``,
        ``previous_label``, ``tokenizer`` (counts the shared prefix) and
        ``title``; see :func:`memctx.inspect._report.report_html`.
        """
        from memctx.inspect._report import report_html

        return report_html(self, state, builder, **options)

    def summary(self) -> str:
        """A short, readable report for logs."""
        budget = "unlimited" if self.max_tokens is None else str(self.max_tokens)
        if self.reserve_tokens:
            budget += f" (reserve {self.reserve_tokens})"
        exactness = "exact" if self.token_count_exact else "estimated"
        lines = [
            f"{len(self.messages)} messages, {self.token_count} tokens ({exactness}, "
            f"{self.tokenizer_name}), budget {budget}, strategy {self.strategy}",
            f"included {len(self.included_chunk_ids)} chunks, "
            f"excluded {len(self.excluded_chunk_ids)}",
        ]
        counts: dict[ExclusionReason, int] = {}
        for exclusion in self.exclusions.values():
            counts[exclusion.reason] = counts.get(exclusion.reason, 0) + 1
        for reason in ExclusionReason:
            if reason in counts:
                lines.append(f"  {counts[reason]} left out: {reason.value}")
        replaced = sum(self.replaced_characters.values())
        if replaced:
            lines.append(
                f"  {replaced} XML-forbidden characters replaced by U+FFFD in "
                f"{len(self.replaced_characters)} chunks"
            )
        if self.compression is not None and self.compression.changed:
            lines.append("  compressed first: " + self.compression.summary().splitlines()[0])
        return "\n".join(lines)
