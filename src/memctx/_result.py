"""What a build returns: the messages and a full report of what went where."""

from __future__ import annotations

import enum
import html
from collections.abc import ItemsView, Iterator, Mapping, ValuesView
from typing import TYPE_CHECKING, Any, Final, NoReturn, Protocol

import attrs

from memctx._build.turns import AddedTurns, TurnOptions
from memctx._chunk import Chunk, ChunkType, ContextMessage
from memctx._exceptions import BuildOptionError, ChunkNotFoundError
from memctx._json import ReadOnlyDict, dumps
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
    """One left-out chunk: why, and its tokens.

    ``tokens`` is the count of the chunk's segment (its XML and the newline after
    it) when a build measured it, else an estimate from its content's length
    (``tokens_estimated`` is then true); None only for a row a paged store build
    did not read and never counted.
    """

    chunk_id: str
    reason: ExclusionReason
    tokens: int | None = None
    tokens_estimated: bool = False


ESTIMATE_TAG_CHARS: Final = 120
"""Characters an estimate adds for a chunk's tags and attributes."""


def estimate_tokens(chunk: Chunk) -> int:
    """A chunk's tokens without rendering it: characters of content and tags over four."""
    content = chunk.content
    chars = len(content) if isinstance(content, str) else len(dumps(content))
    return (chars + ESTIMATE_TAG_CHARS + 3) // 4


@attrs.frozen
class LeftOutFilter:
    """The build's filters, as a value: why a chunk that is not sent was left out."""

    only: frozenset[str] | None = None
    """``include_only_chunk_ids`` (None: not given)."""
    excluded_types: frozenset[ChunkType] = frozenset()
    """Types no chunk of which is sent (``exclude_types``, and SYSTEM / ENVIRONMENT when
    ``include_system`` / ``include_environment`` is false)."""
    include_system: bool = True
    include_environment: bool = True

    def reason(self, chunk_id: str, ctype: ChunkType) -> ExclusionReason:
        """Why a chunk that was not sent was left out (the budget, when no filter took it)."""
        if self.only is not None and chunk_id not in self.only:
            return ExclusionReason.NOT_SELECTED
        if ctype not in self.excluded_types:
            return ExclusionReason.OVER_BUDGET
        if ctype is ChunkType.SYSTEM and not self.include_system:
            return ExclusionReason.SYSTEM_EXCLUDED
        if ctype is ChunkType.ENVIRONMENT and not self.include_environment:
            return ExclusionReason.ENVIRONMENT_EXCLUDED
        return ExclusionReason.TYPE_EXCLUDED


class Rows(Protocol):
    """The chunks a build chose from, by position (a state, or a stored thread's index).

    Positions below the build's length never change, so answers about them never do.
    """

    def __len__(self) -> int: ...

    def id_at(self, position: int) -> str: ...

    def type_at(self, position: int) -> ChunkType: ...

    def chunk_at(self, position: int) -> Chunk | None:
        """The chunk, or None when it was not read (a paged store build)."""
        ...

    def position_of(self, chunk_id: str) -> int | None: ...


@attrs.frozen
class StateRows:
    """The rows of a :class:`MemoryState`."""

    state: MemoryState

    def __len__(self) -> int:
        return len(self.state)

    def id_at(self, position: int) -> str:
        return self.state[position].id

    def type_at(self, position: int) -> ChunkType:
        return self.state[position].type

    def chunk_at(self, position: int) -> Chunk | None:
        return self.state[position]

    def position_of(self, chunk_id: str) -> int | None:
        try:
            return self.state.index_of(chunk_id)
        except ChunkNotFoundError:
            return None


@attrs.frozen(eq=False, repr=False)
class Exclusions(Mapping[str, Exclusion]):
    """For each left-out chunk id, why it was left out, in state order.

    A read-only mapping made in constant time whatever the length of the state: it
    holds the rows the build chose from, the positions it sent, its filters and the
    counts it measured, and answers each lookup from them. Two compare equal when
    they map the same ids to the same exclusions.
    """

    rows: Rows
    sent: frozenset[int]
    filter: LeftOutFilter
    measured: Mapping[str, int]
    """Tokens of the left-out chunks the build measured (or knew)."""

    def __len__(self) -> int:
        return len(self.rows) - len(self.sent)

    def __iter__(self) -> Iterator[str]:
        id_at = self.rows.id_at
        return (id_at(p) for p in self._positions())

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, str):
            return False
        position = self.rows.position_of(key)
        return position is not None and position not in self.sent

    def __getitem__(self, chunk_id: str) -> Exclusion:
        position = self.rows.position_of(chunk_id) if isinstance(chunk_id, str) else None
        if position is None or position in self.sent:
            raise KeyError(chunk_id)
        return self._at(position)

    def items(self) -> ItemsView[str, Exclusion]:
        return _ExclusionItems(self)

    def values(self) -> ValuesView[Exclusion]:
        return _ExclusionValues(self)

    def _at(self, position: int) -> Exclusion:
        rows = self.rows
        chunk_id = rows.id_at(position)
        reason = self.filter.reason(chunk_id, rows.type_at(position))
        tokens = self.measured.get(chunk_id)
        if tokens is not None:
            return Exclusion(chunk_id, reason, tokens)
        chunk = rows.chunk_at(position)
        if chunk is None:
            return Exclusion(chunk_id, reason)
        return Exclusion(chunk_id, reason, estimate_tokens(chunk), tokens_estimated=True)

    def _positions(self) -> Iterator[int]:
        sent = self.sent
        return (p for p in range(len(self.rows)) if p not in sent)

    def __repr__(self) -> str:
        return f"<Exclusions: {len(self)} chunks left out>"

    def _refuse(self, *args: object, **kwargs: object) -> NoReturn:
        raise TypeError(ReportDict.changed)

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = _refuse


class _ExclusionItems(ItemsView[str, Exclusion]):
    """``(id, exclusion)`` pairs in state order, read position by position."""

    _mapping: Exclusions

    def __iter__(self) -> Iterator[tuple[str, Exclusion]]:
        found = self._mapping
        for position in found._positions():
            exclusion = found._at(position)
            yield exclusion.chunk_id, exclusion


class _ExclusionValues(ValuesView[Exclusion]):
    """Exclusions in state order, read position by position."""

    _mapping: Exclusions

    def __iter__(self) -> Iterator[Exclusion]:
        found = self._mapping
        return (found._at(position) for position in found._positions())


NO_EXCLUSIONS: Final = Exclusions(StateRows(MemoryState()), frozenset(), LeftOutFilter(), {})


@attrs.frozen
class ContextBuildResult:
    """The messages to send and the report of the build that made them.

    A value: every field is fixed when the build returns, and two results are equal when
    they send the same messages and report the same of the same chunks (the prefix
    figures, which compare with an earlier build, are not compared). ``token_count`` is
    the count of exactly these messages with the chat format's overhead (per message and
    the reply priming); it equals ``tokenizer.count_messages(result.messages)``.
    ``included_chunk_ids`` and ``excluded_chunk_ids`` are in state order and together
    are every chunk of the state. ``exclusions`` says why each left-out chunk was left
    out, with its tokens; ``chunk_tokens`` gives the tokens of each included chunk (its
    XML and the newline after it) and of the left-out chunks the build measured.
    ``replaced_characters`` counts, per chunk, the characters XML forbids that were
    replaced by U+FFFD. ``state`` is the state built (for a paged store build, the rows
    it read).
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
    included_chunks: tuple[Chunk, ...] = attrs.field(default=(), repr=False, eq=False)
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
    exclusions: Mapping[str, Exclusion] = attrs.field(default=NO_EXCLUSIONS, repr=False)
    """For each left-out chunk id, why it was left out (see :class:`Exclusions`)."""
    prefix_tokens_shared: int = attrs.field(default=0, eq=False)
    """Tokens at the start of this request that the previous build of the same history
    with the same options sent too (what a provider's prompt cache can reuse); 0 when
    there was none."""
    prefix_messages_shared: int = attrs.field(default=0, eq=False)
    """How many leading messages (the system message included) are identical, role and
    content, to the previous build's of the same history with the same options; 0
    when there was none. ``to_anthropic(cache=True)`` places a cache marker by it."""
    state: MemoryState = attrs.field(factory=MemoryState, repr=False, eq=False)
    """The state this result was built from."""

    @property
    def added_turns(self) -> AddedTurns:
        """The user turns the Anthropic and Gemini adapters add to these messages and
        ``token_count`` counts (``AddedTurns()`` when the build counted none)."""
        if self.turn_options is None:
            return AddedTurns()
        return self.turn_options.added(m.role for m in self.messages)

    @property
    def excluded_chunk_ids(self) -> tuple[str, ...]:
        """Ids of the left-out chunks, in state order (the keys of :attr:`exclusions`)."""
        return tuple(self.exclusions)

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

    def to_html(self, builder: ChunkXml | None = None, **options: Any) -> str:
        """The build report as one self-contained HTML page (no network needed).

        ``builder`` renders the left-out chunks (the builder that built this, when it
        has renderers of its own; a builder with the installed renderers otherwise).
        Keywords: ``previous`` (an earlier build of the same history, to show what
        entered and left and the shared prefix), ``previous_label``, ``tokenizer``
        (counts the shared prefix; the builder's by default) and ``title``; see
        :func:`memctx.inspect.report_html`.
        """
        from memctx.inspect import report_html

        return report_html(self, builder, **options)

    def _repr_html_(self) -> str:
        """The report in a notebook: the page in a frame of its own."""
        page = html.escape(self.to_html(), quote=True)
        return f'<iframe srcdoc="{page}" style="width:100%;height:640px;border:0"></iframe>'

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
