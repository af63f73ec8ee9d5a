"""The limits of valid input, defined once, and reusable checks of argument values.

Every entry point (the chunk constructors and :class:`~memctx.Chunk`, state
files, snapshots, the store, event payloads, build options, the command line)
checks its input against these limits and refuses what is outside them with
the error class of that entry point. They are chosen so that whatever one
entry point accepts, every other one accepts too: a chunk that can be
constructed can be rendered, saved, loaded, stored on SQLite and on
PostgreSQL, exported and imported again.

``MAX_JSON_DEPTH``
    Arrays and objects nest at most 100 deep in a JSON value (chunk content,
    ``metadata.custom``, event payloads, batch parameters). Python's own JSON
    parser and serialiser give up somewhere near 1,000 levels, depending on
    how deep the caller's stack already is; 100 leaves room for any caller.
``MAX_INT_DIGITS``
    An integer in a JSON value has at most 4,300 decimal digits: Python's
    default limit for converting between ``int`` and text, without which it
    could neither be written to nor read from a file or database.
``PRIORITY_MIN`` / ``PRIORITY_MAX``
    A chunk's priority is a signed 32-bit integer: what PostgreSQL's
    ``integer`` column holds (SQLite holds more; both must accept the same).
``MAX_CHUNK_ID_LENGTH``
    A chunk id has at most 256 characters. PostgreSQL indexes
    ``(thread id, chunk id)`` and an index entry must stay under about
    2,700 bytes: 256 characters are at most 1,024 bytes of UTF-8, and a
    thread id (``MAX_THREAD_ID_LENGTH``, 255 characters) at most 1,020 more.
``MAX_KIND_LENGTH``
    An event kind and a chunk's ``action`` and ``subtype`` (the kind of a
    custom chunk) have at most 255 characters.
``STORE_FORBIDDEN``
    Characters that no database text column can hold: NUL (PostgreSQL
    refuses it) and lone surrogates (no UTF-8 encoding exists). A chunk id,
    ``action`` or ``subtype`` holding one renders (as U+FFFD) but cannot be
    stored. Content and metadata are stored as JSON text, which escapes them.
``NAME_FORBIDDEN``
    Thread ids and event kinds are names: no control character (C0) and no
    lone surrogate.
``XML_FORBIDDEN``
    Characters XML 1.0 does not allow in a document. Renderers and the build
    replace them by U+FFFD (in chunks and in the ``system_prompt``).

Checks, in the style of attrs' validators:
Each check is a small private class with a readable ``repr``, made by a public
factory (``is_bool(...)``, ``non_empty_str(...)``, ``int_in_range(...)``, ...).
A check is used two ways:

- as an attrs validator, ``attrs.field(validator=is_bool(InvalidChunkError))``:
  the field's name (after ``prefix``) names the value in the error;
- as a function, ``check = is_bool(ViewOperationError); check.check(value, "keep_system")``,
  which returns the value (typed) when it passes.

Every check raises the error its ``error`` factory makes from the field's name and
a message (``InvalidChunkError``, ``BuildOptionError`` take exactly these two).
Messages show a bad value shortened: never a megabyte of text, never a failure to
print an enormous integer or a deeply nested list.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Final, Generic, TypeAlias, TypeVar

import attrs

from memctx._exceptions import StateFileError, StoreArgumentError

__all__ = [
    "MAX_CHUNK_ID_LENGTH",
    "MAX_INT_DIGITS",
    "MAX_JSON_DEPTH",
    "MAX_KIND_LENGTH",
    "MAX_THREAD_ID_LENGTH",
    "NAME_FORBIDDEN",
    "PRIORITY_MAX",
    "PRIORITY_MIN",
    "STORE_FORBIDDEN",
    "XML_FORBIDDEN",
    "ErrorFactory",
    "describe",
    "int_in_range",
    "int_too_large",
    "is_bool",
    "is_str",
    "message_error",
    "name",
    "non_empty_str",
    "optional",
    "state_file_error",
]

MAX_JSON_DEPTH: Final = 100
MAX_INT_DIGITS: Final = 4300
PRIORITY_MIN: Final = -(2**31)
PRIORITY_MAX: Final = 2**31 - 1
MAX_CHUNK_ID_LENGTH: Final = 256
MAX_THREAD_ID_LENGTH: Final = 255
MAX_KIND_LENGTH: Final = 255

STORE_FORBIDDEN: Final = re.compile("[\x00\ud800-\udfff]")
NAME_FORBIDDEN: Final = re.compile("[\x00-\x1f\ud800-\udfff]")
XML_FORBIDDEN: Final = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")

_INT_BOUND: Final = 10**MAX_INT_DIGITS


def int_too_large(value: int) -> bool:
    """Whether ``value`` has more than :data:`MAX_INT_DIGITS` decimal digits."""
    return not -_INT_BOUND < value < _INT_BOUND


T = TypeVar("T")

ErrorFactory: TypeAlias = Callable[[str, str], Exception]
"""Makes the exception for a bad value from the field's name and a message."""

_SHOWN_CHARACTERS = 60


def describe(value: object) -> str:
    """A short, safe ``repr`` of ``value`` for an error message."""
    if isinstance(value, int) and not isinstance(value, bool) and int_too_large(value):
        return f"an int of more than {MAX_INT_DIGITS} digits"
    try:
        text = repr(value)
    except Exception:  # a huge int inside, too deep to print, or a broken __repr__
        return f"a {type(value).__name__}"
    if len(text) > _SHOWN_CHARACTERS:
        return f"{text[:_SHOWN_CHARACTERS]}... ({type(value).__name__} of {_size(value)})"
    return text


def _size(value: object) -> str:
    if isinstance(value, str):
        return f"{len(value)} characters"
    try:
        return f"{len(value)} items"  # type: ignore[arg-type]
    except TypeError:
        return "a long repr"


def state_file_error(field: str, message: str) -> Exception:
    """An :data:`ErrorFactory` for a field of a state or snapshot document."""
    return StateFileError(message, field=field)


def message_error(error: Callable[[str], Exception]) -> ErrorFactory:
    """An :data:`ErrorFactory` for errors that take one message: ``"<field> <message>"``."""

    def make(field: str, message: str) -> Exception:
        return error(f"{field} {message}")

    return make


@attrs.frozen(repr=False)
class _Validator(Generic[T]):
    """A check: an attrs validator, and ``check(value, field)`` for plain arguments.

    Subclasses say what is wrong with a value in :meth:`problem` (``None``: nothing);
    the field's name is only put together when there is a problem.
    """

    error: ErrorFactory = attrs.field(kw_only=True)
    prefix: str = attrs.field(default="", kw_only=True)

    def __call__(self, instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
        message = self.problem(value)
        if message is not None:
            raise self.error(self.prefix + attribute.name, message)

    def check(self, value: object, field: str) -> T:
        """Return ``value`` if it passes, else raise the error for ``field``."""
        message = self.problem(value)
        if message is not None:
            raise self.error(field, message)
        return value  # type: ignore[return-value]  # problem() is None: it is a T

    def problem(self, value: object) -> str | None:
        """What is wrong with ``value``, or ``None``."""
        raise NotImplementedError


@attrs.frozen(repr=False)
class _BoolValidator(_Validator[bool]):
    def __call__(self, instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
        if value is not True and value is not False:  # the common case without a call
            super().__call__(instance, attribute, value)

    def problem(self, value: object) -> str | None:
        if isinstance(value, bool):
            return None
        return f"must be a bool, got {describe(value)}"

    def __repr__(self) -> str:
        return "<is_bool validator>"


@attrs.frozen(repr=False)
class _StrValidator(_Validator[str]):
    """A string, non-empty (and not blank) when asked, of a bounded length when asked."""

    non_empty: bool
    blank_ok: bool
    max_length: int | None
    forbidden: re.Pattern[str] | None
    forbidden_name: str

    def problem(self, value: object) -> str | None:
        if not isinstance(value, str):
            return f"must be a string, got {type(value).__name__}"
        if self.non_empty and not (value if self.blank_ok else value.strip()):
            empty = "empty" if self.blank_ok else "empty or blank"
            return f"must not be {empty}, got {describe(value)}"
        if self.max_length is not None and len(value) > self.max_length:
            return f"must have at most {self.max_length} characters, got {len(value)}"
        if self.forbidden is not None:
            found = self.forbidden.search(value)
            if found is not None:
                return (
                    f"must not contain {self.forbidden_name}, got {describe(found.group())} "
                    f"at position {found.start()}"
                )
        return None

    def __repr__(self) -> str:
        parts = ["non-empty" if self.non_empty else "any"]
        if self.non_empty and not self.blank_ok:
            parts.append("not blank")
        if self.max_length is not None:
            parts.append(f"at most {self.max_length} characters")
        if self.forbidden is not None:
            parts.append(f"no {self.forbidden_name}")
        return f"<str validator: {', '.join(parts)}>"


@attrs.frozen(repr=False)
class _IntRangeValidator(_Validator[int]):
    """An int (not a bool) from ``minimum`` to ``maximum``, either bound optional."""

    minimum: int | None
    maximum: int | None

    def problem(self, value: object) -> str | None:
        if (
            isinstance(value, bool)
            or not isinstance(value, int)
            or (self.minimum is not None and value < self.minimum)
            or (self.maximum is not None and value > self.maximum)
        ):
            return f"must be {self._kind()}, got {describe(value)}"
        return None

    def _kind(self) -> str:
        low, high = self.minimum, self.maximum
        if low is None and high is None:
            return "an int"
        if high is None:
            assert low is not None
            return {0: "a non-negative int", 1: "a positive int"}.get(
                low, f"an int of at least {low}"
            )
        if low is None:
            return f"an int of at most {high}"
        return f"an int from {low} to {high}"

    def __repr__(self) -> str:
        return f"<int validator: {self._kind()}>"


@attrs.frozen(repr=False)
class _OptionalValidator(_Validator[T | None]):
    """``None``, or a value the wrapped check accepts."""

    inner: _Validator[T]

    def __call__(self, instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
        if value is not None:
            self.inner(instance, attribute, value)

    def problem(self, value: object) -> str | None:
        return None if value is None else self.inner.problem(value)

    def __repr__(self) -> str:
        return f"<optional validator for {self.inner!r} or None>"


def is_bool(error: ErrorFactory, *, prefix: str = "") -> _Validator[bool]:
    """A check that the value is ``True`` or ``False`` (not 0 or 1)."""
    return _BoolValidator(error=error, prefix=prefix)


def is_str(error: ErrorFactory, *, prefix: str = "") -> _Validator[str]:
    """A check that the value is a string (any, the empty one too)."""
    return _StrValidator(False, True, None, None, "", error=error, prefix=prefix)


def non_empty_str(
    error: ErrorFactory,
    *,
    blank_ok: bool = True,
    max_length: int | None = None,
    prefix: str = "",
) -> _Validator[str]:
    """A check for a non-empty string (not blank either unless ``blank_ok``), of at most
    ``max_length`` characters when given."""
    return _StrValidator(True, blank_ok, max_length, None, "", error=error, prefix=prefix)


def name(
    error: ErrorFactory,
    *,
    max_length: int,
    forbidden: re.Pattern[str],
    forbidden_name: str,
    prefix: str = "",
) -> _Validator[str]:
    """A check for a name: not blank, at most ``max_length`` characters, none ``forbidden``."""
    return _StrValidator(
        True, False, max_length, forbidden, forbidden_name, error=error, prefix=prefix
    )


def int_in_range(
    error: ErrorFactory,
    minimum: int | None = None,
    maximum: int | None = None,
    *,
    prefix: str = "",
) -> _Validator[int]:
    """A check for an int (``bool`` refused) within the bounds given."""
    return _IntRangeValidator(minimum, maximum, error=error, prefix=prefix)


def optional(validator: _Validator[T]) -> _Validator[T | None]:
    """A check that lets ``None`` through and hands anything else to ``validator``."""
    return _OptionalValidator(validator, error=validator.error, prefix=validator.prefix)


def require_store(store: object) -> None:
    """Raise :class:`StoreArgumentError` unless ``store`` is a store object (a URL or a
    path is not: open it with ``MemoryStore.open``)."""
    if not (hasattr(store, "append_with") and hasattr(store, "thread_metadata")):
        raise StoreArgumentError(
            f"store: expected a MemoryStore (MemoryStore.open(url)), got {describe(store)}"
        )


TOKENIZER_MEMBERS = ("name", "exact", "count", "count_messages")


def is_tokenizer(value: object) -> bool:
    """Whether ``value`` has what a :class:`~memctx.typing.Tokenizer` must have."""
    return all(hasattr(value, member) for member in TOKENIZER_MEMBERS)


def check_counting_tools(
    tokenizer: object, builder: object, error: Callable[[str], Exception]
) -> None:
    """``tokenizer`` and ``builder`` (each may be None) must be a Tokenizer and a
    ContextBuilder; otherwise ``error(message)`` is raised."""
    if tokenizer is not None and not is_tokenizer(tokenizer):
        shown = describe(tokenizer)
        raise error(f"tokenizer: {shown} is not a Tokenizer; use memctx.create_tokenizer(model)")
    if builder is not None and not all(
        hasattr(builder, m) for m in ("build", "render", "registry")
    ):
        raise error(f"builder: must be a ContextBuilder, got {type(builder).__name__}")
