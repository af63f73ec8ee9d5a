"""Model profiles: what a context policy and a replay need to know about a model.

A :class:`ModelProfile` holds a model's context window, its largest answer, the
tokenizer memctx counts it with, its provider's prompt-cache rules
(:class:`CacheRules`) and its prices. ``model_profile(name)`` looks a name up in
the bundled table (:data:`MODEL_PROFILES`) and in the profiles registered with
:func:`register_model_profile`; a ``ModelProfile`` is accepted wherever a name is.

The bundled figures are the providers' published ones as of **May 2026**
(Anthropic's models overview, pricing and prompt-caching pages; OpenAI's pricing
and prompt-caching guide; Google's Gemini API pricing and caching pages). Prices
are USD per million tokens at the standard (not batch, not priority) tier and
the base context tier: long-context surcharges (Gemini above 200k tokens, Claude
Sonnet 4.5 above 200k) are not modelled. Where a provider documents no cache
lifetime (Gemini's implicit cache) five minutes is assumed. Prices change:
register your own profile (same name) to override a bundled one.

- Anthropic (``kind="explicit"``): at most 4 ``cache_control`` breakpoints, each
  read by looking back at most 20 content blocks; writes cost 1.25x input (5-minute
  lifetime) or 2x (1 hour), reads 0.1x; the minimum cacheable prefix is per model.
- OpenAI (``kind="automatic"``): prefixes of 1,024 tokens or more are cached
  automatically and matched in 128-token steps; writes cost nothing extra; reads
  are discounted per model.
- Gemini (``kind="implicit"``): 2.5 and newer models cache common prefixes
  implicitly above a per-model minimum; reads are discounted per model.
"""

from __future__ import annotations

import difflib
import re
import types
from collections.abc import Callable, Mapping
from typing import Final, Literal

import attrs

from memctx._exceptions import PolicyError, UnknownModelError

__all__ = [
    "MODEL_PROFILES",
    "CacheRules",
    "ModelProfile",
    "model_profile",
    "register_model_profile",
]

CacheKind = Literal["explicit", "automatic", "implicit"]
Provider = Literal["openai", "anthropic", "gemini"]

_KINDS: Final = ("explicit", "automatic", "implicit")
_PROVIDERS: Final = ("openai", "anthropic", "gemini")


def _positive_int(instance: object, attribute: attrs.Attribute[int], value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise PolicyError(attribute.name, f"must be a positive int, got {value!r}")


def _non_negative_int(instance: object, attribute: attrs.Attribute[int], value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise PolicyError(attribute.name, f"must be an int >= 0, got {value!r}")


def _non_negative_number(
    instance: object, attribute: attrs.Attribute[float], value: object
) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
        raise PolicyError(attribute.name, f"must be a number >= 0, got {value!r}")


def _one_of(*choices: str) -> Callable[[object, attrs.Attribute[str], object], None]:
    def check(instance: object, attribute: attrs.Attribute[str], value: object) -> None:
        if value not in choices:
            raise PolicyError(attribute.name, f"must be one of {', '.join(choices)}; got {value!r}")

    return check


def _lifetimes(
    instance: object, attribute: attrs.Attribute[tuple[float, ...]], value: object
) -> None:
    if not isinstance(value, tuple) or not all(
        isinstance(v, int | float) and not isinstance(v, bool) and v > 0 for v in value
    ):
        raise PolicyError(attribute.name, f"must be a tuple of seconds > 0, got {value!r}")


def _name(instance: object, attribute: attrs.Attribute[str], value: object) -> None:
    if not isinstance(value, str) or not value.strip():
        raise PolicyError(attribute.name, f"must be a non-empty string, got {value!r}")


@attrs.frozen
class CacheRules:
    """A provider's prompt-cache rules for one model.

    ``kind`` is ``"explicit"`` (Anthropic: breakpoints in the request),
    ``"automatic"`` (OpenAI) or ``"implicit"`` (Gemini). A prefix shorter than
    ``min_cacheable_tokens`` is never cached; an explicit cache takes at most
    ``max_breakpoints`` breakpoints, each found by looking back at most
    ``lookback_blocks`` content blocks; ``lifetimes`` are the cache lifetimes on
    offer, in seconds (the first is the default); an automatic cache matches
    prefixes in steps of ``step_tokens``.
    """

    kind: CacheKind = attrs.field(validator=_one_of(*_KINDS))
    min_cacheable_tokens: int = attrs.field(validator=_non_negative_int)
    max_breakpoints: int = attrs.field(default=0, validator=_non_negative_int)
    lookback_blocks: int = attrs.field(default=0, validator=_non_negative_int)
    lifetimes: tuple[float, ...] = attrs.field(default=(300.0,), validator=_lifetimes)
    step_tokens: int = attrs.field(default=1, validator=_positive_int)


@attrs.frozen
class ModelProfile:
    """What memctx knows about one model: window, tokenizer, cache rules, prices.

    Prices are USD per million tokens; ``cache_read_multiplier`` and the two write
    multipliers are fractions of ``input_price`` (Anthropic: 0.1, 1.25 and 2.0).
    ``tokenizer`` is a name :func:`memctx.create_tokenizer` accepts.
    """

    name: str = attrs.field(validator=_name)
    provider: Provider = attrs.field(validator=_one_of(*_PROVIDERS))
    context_window: int = attrs.field(validator=_positive_int)
    max_output_tokens: int = attrs.field(validator=_positive_int)
    tokenizer: str = attrs.field(validator=_name)
    cache: CacheRules = attrs.field()
    input_price: float = attrs.field(validator=_non_negative_number)
    output_price: float = attrs.field(validator=_non_negative_number)
    cache_read_multiplier: float = attrs.field(validator=_non_negative_number)
    cache_write_multiplier: float = attrs.field(default=1.0, validator=_non_negative_number)
    cache_write_1h_multiplier: float = attrs.field(default=1.0, validator=_non_negative_number)

    @cache.validator
    def _check_cache(self, attribute: attrs.Attribute[CacheRules], value: object) -> None:
        if not isinstance(value, CacheRules):
            raise PolicyError("cache", f"must be a CacheRules, got {type(value).__name__}")


# -- the bundled table ----------------------------------------------------------------


def _anthropic(
    name: str, window: int, output: int, price_in: float, price_out: float, minimum: int
) -> ModelProfile:
    return ModelProfile(
        name=name,
        provider="anthropic",
        context_window=window,
        max_output_tokens=output,
        tokenizer=name,  # cl100k_base standing in, marked inexact
        cache=CacheRules(
            kind="explicit",
            min_cacheable_tokens=minimum,
            max_breakpoints=4,
            lookback_blocks=20,
            lifetimes=(300.0, 3600.0),
        ),
        input_price=price_in,
        output_price=price_out,
        cache_read_multiplier=0.1,
        cache_write_multiplier=1.25,
        cache_write_1h_multiplier=2.0,
    )


def _openai(
    name: str, window: int, output: int, price_in: float, price_out: float, read: float
) -> ModelProfile:
    return ModelProfile(
        name=name,
        provider="openai",
        context_window=window,
        max_output_tokens=output,
        tokenizer=name,  # tiktoken's own table: exact
        cache=CacheRules(kind="automatic", min_cacheable_tokens=1024, step_tokens=128),
        input_price=price_in,
        output_price=price_out,
        cache_read_multiplier=read,
    )


def _gemini(
    name: str, price_in: float, price_out: float, read: float, minimum: int
) -> ModelProfile:
    return ModelProfile(
        name=name,
        provider="gemini",
        context_window=1_048_576,
        max_output_tokens=65_536,
        tokenizer="estimate",  # no offline Gemini tokenizer: chars/4
        cache=CacheRules(kind="implicit", min_cacheable_tokens=minimum),
        input_price=price_in,
        output_price=price_out,
        cache_read_multiplier=read,
    )


_BUNDLED: Final[dict[str, ModelProfile]] = {
    p.name: p
    for p in (
        # Anthropic: window, max output, $ in, $ out, minimum cacheable prefix
        _anthropic("claude-opus-4-7", 1_000_000, 128_000, 5.0, 25.0, 4096),
        _anthropic("claude-opus-4-6", 1_000_000, 128_000, 5.0, 25.0, 4096),
        _anthropic("claude-opus-4-5", 200_000, 64_000, 5.0, 25.0, 4096),
        _anthropic("claude-opus-4-1", 200_000, 32_000, 15.0, 75.0, 1024),
        _anthropic("claude-opus-4", 200_000, 32_000, 15.0, 75.0, 1024),
        _anthropic("claude-sonnet-4-6", 1_000_000, 128_000, 3.0, 15.0, 1024),
        _anthropic("claude-sonnet-4-5", 200_000, 64_000, 3.0, 15.0, 1024),
        _anthropic("claude-sonnet-4", 200_000, 64_000, 3.0, 15.0, 1024),
        _anthropic("claude-haiku-4-5", 200_000, 64_000, 1.0, 5.0, 4096),
        _anthropic("claude-3-5-haiku", 200_000, 8_192, 0.8, 4.0, 2048),
        _anthropic("claude-3-haiku", 200_000, 4_096, 0.25, 1.25, 2048),
        # OpenAI: window, max output, $ in, $ out, cached-input multiplier
        _openai("gpt-4o", 128_000, 16_384, 2.5, 10.0, 0.5),
        _openai("gpt-4o-mini", 128_000, 16_384, 0.15, 0.6, 0.5),
        _openai("gpt-4.1", 1_047_576, 32_768, 2.0, 8.0, 0.25),
        _openai("gpt-4.1-mini", 1_047_576, 32_768, 0.4, 1.6, 0.25),
        _openai("gpt-4.1-nano", 1_047_576, 32_768, 0.1, 0.4, 0.25),
        _openai("gpt-5", 400_000, 128_000, 1.25, 10.0, 0.1),
        _openai("gpt-5-mini", 400_000, 128_000, 0.25, 2.0, 0.1),
        _openai("gpt-5-nano", 400_000, 128_000, 0.05, 0.4, 0.1),
        _openai("o3", 200_000, 100_000, 2.0, 8.0, 0.25),
        _openai("o4-mini", 200_000, 100_000, 1.1, 4.4, 0.25),
        # Gemini: $ in, $ out, cached-input multiplier, minimum for implicit caching
        _gemini("gemini-2.5-pro", 1.25, 10.0, 0.25, 4096),
        _gemini("gemini-2.5-flash", 0.3, 2.5, 0.25, 1024),
        _gemini("gemini-2.5-flash-lite", 0.1, 0.4, 0.25, 1024),
        _gemini("gemini-3-pro-preview", 2.0, 12.0, 0.1, 4096),
        _gemini("gemini-3-flash-preview", 0.5, 3.0, 0.1, 1024),
    )
}

_ALIASES: Final = types.MappingProxyType(
    {
        "gemini-3-pro": "gemini-3-pro-preview",
        "gemini-3-flash": "gemini-3-flash-preview",
        "claude-3-5-haiku-latest": "claude-3-5-haiku",
    }
)

MODEL_PROFILES: Final[Mapping[str, ModelProfile]] = types.MappingProxyType(_BUNDLED)
"""The bundled profiles by name (read-only; see :func:`register_model_profile`)."""

_registered: dict[str, ModelProfile] = {}

# A dated snapshot names the same model: claude-haiku-4-5-20251001, gpt-4o-2024-08-06.
_DATE_SUFFIX: Final = re.compile(r"-(?:\d{8}|\d{4}-\d{2}-\d{2})$")


def register_model_profile(profile: ModelProfile) -> None:
    """Make ``profile`` known by its name to :func:`model_profile` (and so to every
    ``model=`` option), in this process.

    A registered profile wins over a bundled one of the same name: register a copy
    with ``attrs.evolve(model_profile("gpt-4o"), input_price=...)`` to correct a price.
    """
    if not isinstance(profile, ModelProfile):
        raise PolicyError("profile", f"must be a ModelProfile, got {type(profile).__name__}")
    _registered[profile.name] = profile


def model_profile(name: str | ModelProfile) -> ModelProfile:
    """The profile of the model ``name`` (a ``ModelProfile`` is returned as it is).

    Registered profiles come first, then the bundled table; a dated snapshot name
    (``claude-haiku-4-5-20251001``, ``gpt-4o-2024-08-06``) finds its model. An
    unknown name raises :class:`~memctx.UnknownModelError` naming the close matches.
    """
    if isinstance(name, ModelProfile):
        return name
    if not isinstance(name, str) or not name:
        raise PolicyError("model", f"must be a model name or a ModelProfile, got {name!r}")
    for candidate in (name, _DATE_SUFFIX.sub("", name)):
        candidate = _ALIASES.get(candidate, candidate)
        found = _registered.get(candidate) or _BUNDLED.get(candidate)
        if found is not None:
            return found
    known = sorted({*_BUNDLED, *_registered, *_ALIASES})
    close = difflib.get_close_matches(name, known, n=5, cutoff=0.5)
    raise UnknownModelError(name, close or known)
