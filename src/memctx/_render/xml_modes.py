"""How a build writes its XML: the content mode and the attribute mode (see :mod:`memctx.xml`).

Both are context variables: a builder renders under :class:`content_mode` and
:class:`attribute_mode`, and :func:`memctx.xml.render_element` and the
renderers read them, so a renderer's signature carries neither.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar, Token
from typing import Final, Literal, TypeAlias, TypeVar

from memctx._exceptions import XmlError

XmlContentMode: TypeAlias = Literal["escape", "cdata"]
CONTENT_MODES: Final[tuple[str, ...]] = ("escape", "cdata")
DEFAULT_CONTENT_MODE: Final[XmlContentMode] = "cdata"
"""A builder's mode unless told otherwise; chosen from measurements on three real agent
runs (see docs/chunks-and-xml.md, "The XML")."""

XmlAttributeMode: TypeAlias = Literal["lean", "seed"]
ATTRIBUTE_MODES: Final[tuple[str, ...]] = ("lean", "seed")
DEFAULT_ATTRIBUTE_MODE: Final[XmlAttributeMode] = "seed"
"""A builder's attribute mode unless told otherwise; measured on the same runs (see
docs/chunks-and-xml.md, "What the XML costs")."""

CONTENT_MODE: ContextVar[str] = ContextVar("memctx_xml_content_mode", default="escape")
_ATTRIBUTE_MODE: ContextVar[str] = ContextVar("memctx_xml_attribute_mode", default="seed")


def check_content_mode(mode: object) -> XmlContentMode:
    """Return ``mode`` if it is a content mode; ``ValueError`` naming the modes otherwise."""
    if mode not in CONTENT_MODES:
        raise XmlError(f"unknown content mode {mode!r}; choose one of {', '.join(CONTENT_MODES)}")
    return mode  # type: ignore[return-value]


def check_attribute_mode(mode: object) -> XmlAttributeMode:
    """Return ``mode`` if it is an attribute mode; ``ValueError`` naming the modes otherwise."""
    if mode not in ATTRIBUTE_MODES:
        modes = ", ".join(ATTRIBUTE_MODES)
        raise XmlError(f"unknown attribute mode {mode!r}; choose one of {modes}")
    return mode  # type: ignore[return-value]


class _ModeBlock:
    """Sets ``variable`` to a mode within a ``with`` block (this context only)."""

    __slots__ = ("_mode", "_tokens")
    _variable: ContextVar[str]

    def __init__(self, mode: str) -> None:
        self._mode = mode
        self._tokens: list[Token[str]] = []

    def __enter__(self) -> None:
        self._tokens.append(self._variable.set(self._mode))

    def __exit__(self, *exc_info: object) -> None:
        self._variable.reset(self._tokens.pop())


class content_mode(_ModeBlock):  # noqa: N801 -- used as a function: ``with content_mode("cdata"):``
    """Within the block, :func:`~memctx.xml.render_element` writes content in ``mode``."""

    __slots__ = ()
    _variable = CONTENT_MODE

    def __init__(self, mode: XmlContentMode) -> None:
        super().__init__(check_content_mode(mode))


class attribute_mode(_ModeBlock):  # noqa: N801 -- used as a function: ``with attribute_mode("seed"):``
    """Within the block, renderers write their attributes in ``mode``."""

    __slots__ = ()
    _variable = _ATTRIBUTE_MODE

    def __init__(self, mode: XmlAttributeMode) -> None:
        super().__init__(check_attribute_mode(mode))


_T = TypeVar("_T")
_R = TypeVar("_R")


def in_modes(content: str, attributes: str, call: Callable[[_T], _R], argument: _T) -> _R:
    """``call(argument)`` with the content and attribute modes set, each only if it is not
    in force already (a builder renders every chunk so: no block object per chunk)."""
    content_token = CONTENT_MODE.set(content) if CONTENT_MODE.get() != content else None
    attribute_token = (
        _ATTRIBUTE_MODE.set(attributes) if _ATTRIBUTE_MODE.get() != attributes else None
    )
    try:
        return call(argument)
    finally:
        if attribute_token is not None:
            _ATTRIBUTE_MODE.reset(attribute_token)
        if content_token is not None:
            CONTENT_MODE.reset(content_token)


def lean_attributes() -> bool:
    """Whether renderers leave out the attributes their tag or their message already say."""
    return _ATTRIBUTE_MODE.get() == "lean"
