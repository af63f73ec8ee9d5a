"""BuildOptions: every option of :meth:`ContextBuilder.build`, validated."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final, Literal, TypeAlias, TypedDict, get_args

import attrs

from memctx._build.turns import (
    CLOSING_TURN,
    OPENING_TURN,
    PROVIDERS,
    Provider,
    TurnOptions,
    is_turn_text,
)
from memctx._chunk import ChunkType
from memctx._exceptions import BuildOptionError
from memctx._validators import int_in_range, is_bool, is_str, is_tokenizer, optional
from memctx.typing import Compressor, Tokenizer
from memctx.xml import sanitize

Strategy: TypeAlias = Literal["recent", "stable", "priority", "in_order"]
STRATEGIES: Final[tuple[str, ...]] = get_args(Strategy)
"""The strategy names (the select stage has one selector for each)."""


MAX_BUDGET: Final = 2**63 - 1
"""The largest ``max_tokens`` (and ``reserve_tokens``) a build takes."""

_positive_or_none = optional(int_in_range(BuildOptionError, 1, MAX_BUDGET))
_non_negative = int_in_range(BuildOptionError, 0, MAX_BUDGET)
_bool = is_bool(BuildOptionError)
_check_prompt = optional(is_str(BuildOptionError))
_chunk_id = is_str(BuildOptionError)


def _types(value: Iterable[ChunkType | str] | None) -> frozenset[ChunkType]:
    if value is None:
        return frozenset()
    if isinstance(value, str | ChunkType):
        value = [value]
    result = set()
    for item in value:
        try:
            result.add(ChunkType(item))
        except ValueError:
            known = ", ".join(t.value for t in ChunkType)
            raise BuildOptionError(
                "exclude_types", f"unknown chunk type {item!r}; known: {known}"
            ) from None
    return frozenset(result)


def _ids(
    value: Iterable[str] | None, option: str = "include_only_chunk_ids"
) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise BuildOptionError(option, f"must be a list of chunk ids, got {value!r}")
    ids = tuple(value)
    for item in ids:
        _chunk_id.check(item, f"{option}'s chunk ids")
    return ids


def _pinned_ids(value: Iterable[str] | None) -> tuple[str, ...]:
    return _ids(value, "pinned_chunk_ids") or ()


def _check_strategy(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value not in STRATEGIES:
        raise BuildOptionError(
            "strategy", f"unknown strategy {value!r}; choose one of {', '.join(STRATEGIES)}"
        )


def check_tokenizer(value: object) -> None:
    """Raise :class:`BuildOptionError` unless ``value`` is None or has a Tokenizer's members."""
    if value is not None and not is_tokenizer(value):
        raise BuildOptionError(
            "tokenizer",
            f"{value!r} is not a Tokenizer (needs name, exact, count and count_messages); "
            "use memctx.create_tokenizer(model)",
        )


def _check_tokenizer(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    check_tokenizer(value)


def _clean_prompt(value: object) -> Any:
    """Characters XML forbids become U+FFFD, as in chunks: the messages stay encodable.
    A whitespace-only prompt carries nothing: it counts as none (never sent)."""
    if not isinstance(value, str):
        return value
    return sanitize(value) if value.strip() else None


def _check_provider(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None and value not in PROVIDERS:
        raise BuildOptionError(
            "provider", f"unknown provider {value!r}; choose one of {', '.join(PROVIDERS)}"
        )


def _check_turn(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None and not is_turn_text(value):
        raise BuildOptionError(attribute.name, f"must be a non-blank string, got {value!r}")


_TURN_PROVIDERS: Final = ("anthropic", "gemini")

CountedTools: TypeAlias = Literal["text", "native"]
"""Which request ``token_count`` counts: the messages as built, or the native request."""


def _check_tools(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None and value not in ("text", "native"):
        raise BuildOptionError("tools", f"must be 'text' or 'native', got {value!r}")


@attrs.frozen(kw_only=True, cache_hash=True)
class BuildOptions:
    """How to build: the budget, what to include, and how to choose when it does not all fit.

    ``max_tokens``
        The budget for the whole request (``None``: no limit).
    ``reserve_tokens``
        Kept free for the model's answer: messages use at most
        ``max_tokens - reserve_tokens``.
    ``tokenizer``
        Counts tokens; the builder's default (chars/4 estimate) when ``None``.
    ``system_prompt``
        Text that opens the leading system message, before any SYSTEM chunk
        (characters XML forbids replaced by U+FFFD; whitespace only counts as none).
    ``include_system`` / ``include_environment`` / ``exclude_types`` / ``include_only_chunk_ids``
        Filters; a filtered chunk is reported with the option that removed it.
    ``pinned_chunk_ids``
        Chunks that must always be kept (as ``pinned=True`` on the chunk does).
    ``strategy``
        ``recent`` (default): the pinned chunks, then the newest chunks that
        fit, without holes. ``stable``: like ``recent``, but the oldest chunk
        sent moves only in large steps, so consecutive requests share their
        prefix (prompt caches hit). ``priority``: higher ``priority`` first,
        then the newest. ``in_order``: oldest first, each chunk that still fits.
    ``pin_newest`` / ``pin_pending_calls``
        Keep the newest chunk, and calls whose result has not arrived yet.
    ``provider``
        ``"anthropic"`` or ``"gemini"``: keep room for the user turns that
        provider's adapter adds (see :mod:`memctx.adapters`) and count the
        ones it adds in ``token_count``, which is then not exact (the formula
        is OpenAI's). ``"openai"`` or ``None``: nothing is added.
    ``opening_turn`` / ``closing_turn`` / ``prefill``
        With ``provider="anthropic"`` or ``"gemini"``: the texts of the user
        turns added before a leading and after a final assistant turn
        (``None``: the adapters' defaults), and whether a final assistant turn
        is kept as a prefill instead (no closing turn; its trailing white space
        is not sent). They are counted, and the result's adapters send exactly
        these turns (:attr:`ContextBuildResult.turn_options`).
    ``tools``
        Which request ``token_count`` counts (:attr:`ContextBuildResult.tools_counted`).
        With ``provider="openai"`` the default is ``"native"``: the request
        ``to_openai()`` sends by default (tool calls, ``tool`` messages, image
        parts), trimmed to the budget by that count; ``"text"`` counts the
        messages as built (``to_openai(tools="text")``). Other providers count
        the messages as built (``"text"``; their native tool blocks have no
        published size), so ``tools="native"`` needs ``provider="openai"``.
        Images and documents add their cost by the formula of ``provider``
        (OpenAI's when None) either way.
    """

    max_tokens: int | None = attrs.field(default=None, validator=_positive_or_none)
    reserve_tokens: int = attrs.field(default=0, validator=_non_negative)
    tokenizer: Tokenizer | None = attrs.field(default=None, validator=_check_tokenizer)
    system_prompt: str | None = attrs.field(
        default=None, converter=_clean_prompt, validator=_check_prompt
    )
    include_system: bool = attrs.field(default=True, validator=_bool)
    include_environment: bool = attrs.field(default=True, validator=_bool)
    exclude_types: frozenset[ChunkType] = attrs.field(default=None, converter=_types)
    include_only_chunk_ids: tuple[str, ...] | None = attrs.field(default=None, converter=_ids)
    pinned_chunk_ids: tuple[str, ...] = attrs.field(default=(), converter=_pinned_ids)
    strategy: Strategy = attrs.field(default="recent", validator=_check_strategy)
    pin_newest: bool = attrs.field(default=True, validator=_bool)
    pin_pending_calls: bool = attrs.field(default=True, validator=_bool)
    provider: Provider | None = attrs.field(default=None, validator=_check_provider)
    opening_turn: str | None = attrs.field(default=None, validator=_check_turn)
    closing_turn: str | None = attrs.field(default=None, validator=_check_turn)
    prefill: bool = attrs.field(default=False, validator=_bool)
    tools: CountedTools | None = attrs.field(default=None, validator=_check_tools)

    def __attrs_post_init__(self) -> None:
        if self.tools == "native" and self.provider != "openai":
            raise BuildOptionError(
                "tools",
                f"'native' is counted only for provider='openai', not {self.provider!r}: the "
                "size of the other providers' tool blocks is not published",
            )
        if self.max_tokens is not None and self.reserve_tokens >= self.max_tokens:
            raise BuildOptionError(
                "reserve_tokens",
                f"{self.reserve_tokens} leaves nothing of max_tokens={self.max_tokens}",
            )
        if self.provider not in _TURN_PROVIDERS:
            for name in ("opening_turn", "closing_turn", "prefill"):
                if getattr(self, name):
                    raise BuildOptionError(
                        name,
                        f"has no effect with provider={self.provider!r}: only the anthropic "
                        "and gemini adapters add turns (build with provider='anthropic' or "
                        "'gemini')",
                    )

    @property
    def turn_options(self) -> TurnOptions | None:
        """The added turns this build counts (``None``: the provider adds none)."""
        if self.provider not in _TURN_PROVIDERS:
            return None
        return TurnOptions(
            self.opening_turn or OPENING_TURN, self.closing_turn or CLOSING_TURN, self.prefill
        )

    @property
    def counted_tools(self) -> CountedTools:
        """The request ``token_count`` counts: ``"native"`` for OpenAI unless told otherwise."""
        if self.provider == "openai" and self.tools != "text":
            return "native"
        return "text"

    @property
    def budget(self) -> int | None:
        """Tokens the messages may use: ``max_tokens - reserve_tokens``."""
        return None if self.max_tokens is None else self.max_tokens - self.reserve_tokens


class BuildKwargs(TypedDict, total=False):
    """The keywords of :meth:`ContextBuilder.build` after ``max_tokens``: the fields of
    :class:`BuildOptions` (or ``options=BuildOptions(...)`` alone), and compression."""

    reserve_tokens: int
    tokenizer: Tokenizer | None
    system_prompt: str | None
    include_system: bool
    include_environment: bool
    exclude_types: Iterable[ChunkType | str] | None
    include_only_chunk_ids: Iterable[str] | None
    pinned_chunk_ids: Iterable[str]
    strategy: Strategy
    pin_newest: bool
    pin_pending_calls: bool
    provider: Provider | None
    opening_turn: str | None
    closing_turn: str | None
    prefill: bool
    tools: CountedTools | None
    options: BuildOptions
    compressors: Iterable[Compressor] | None
    """Run first, in order (see :mod:`memctx.compress`)."""
    compress_to_fit: Compressor | None
    """Gives old chunks a cheaper rendition rather than leaving them out for the budget."""


def parse_build_options(max_tokens: int | None, options: Mapping[str, Any]) -> BuildOptions:
    """The options of a ``build(state, max_tokens, **options)`` call, validated.

    ``options`` holds :class:`BuildOptions` fields as keywords, or only
    ``options=BuildOptions(...)`` (then ``max_tokens`` must be None).
    """
    options = dict(options)
    given = options.pop("options", None)
    if given is None:
        try:
            return BuildOptions(max_tokens=max_tokens, **options)
        except BuildOptionError:
            raise  # a TypeError too (an ArgumentError), already naming its option
        except TypeError as exc:  # an unknown keyword
            raise BuildOptionError("build", str(exc)) from None
    if options or max_tokens is not None:
        raise BuildOptionError("options", "pass BuildOptions or keywords, not both")
    if not isinstance(given, BuildOptions):
        raise BuildOptionError("options", f"must be BuildOptions, got {given!r}")
    return given


_PLAIN: Final = frozenset({int, str, bool, float, type(None)})
_PARSED_KEPT: Final = 32
"""Distinct calls a :class:`ParsedOptions` keeps; past that it starts anew."""


class ParsedOptions:
    """:func:`parse_build_options` parsed once per distinct call (an agent loop repeats one).

    A call made of plain values (numbers, strings, booleans, None) and a tokenizer
    object is parsed once and kept under those values, types included (``1 != True``),
    the tokenizer under its identity (the kept options hold it, so no other object takes
    its place while they are kept). Anything else is parsed each time.
    """

    def __init__(self) -> None:
        self._parsed: dict[tuple[Any, ...], BuildOptions] = {}

    def __call__(self, max_tokens: int | None, options: Mapping[str, Any]) -> BuildOptions:
        key = _call_key(max_tokens, options)
        if key is None:
            return parse_build_options(max_tokens, options)
        found = self._parsed.get(key)
        if found is None:
            found = parse_build_options(max_tokens, options)
            if len(self._parsed) >= _PARSED_KEPT:
                self._parsed.clear()
            self._parsed[key] = found
        return found


def _call_key(max_tokens: object, options: Mapping[str, Any]) -> tuple[Any, ...] | None:
    """The call's values with their types, the tokenizer by identity; None when a value is
    neither plain nor the tokenizer."""
    if type(max_tokens) not in _PLAIN:
        return None
    key: list[Any] = [max_tokens, type(max_tokens)]
    for name in sorted(options):
        value = options[name]
        if type(value) in _PLAIN:
            key += (name, type(value), value)
        elif name == "tokenizer":
            key += (name, None, id(value))
        else:
            return None
    return tuple(key)
