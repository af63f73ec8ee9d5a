"""Reusable checks of argument values, in the style of attrs' validators.

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
from typing import Any, Generic, TypeAlias, TypeVar

import attrs

from memctx._exceptions import StateFileError, StoreArgumentError
from memctx._limits import MAX_INT_DIGITS, int_too_large

__all__ = [
    "ErrorFactory",
    "describe",
    "int_in_range",
    "is_bool",
    "is_str",
    "message_error",
    "name",
    "non_empty_str",
    "optional",
    "state_file_error",
]

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
    if builder is not None and not hasattr(builder, "render_chunk"):
        raise error(f"builder: must be a ContextBuilder, got {type(builder).__name__}")
