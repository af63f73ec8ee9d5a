"""Safe XML for renderers: every chunk becomes one well-formed element.

Renderers (the built-in ones and yours) should build their output with
:func:`render_element`. It builds the element with lxml, so the content and
the attribute values are escaped: no content can open, close or forge a tag.
The content goes on its own lines between the tags and is never indented::

    <tool_call id="chunk_1" action="tool_call" tool="read_file" call_id="call_123" status="pending">
    {"path": "/src/main.ts"}
    </tool_call>

**Characters XML 1.0 forbids** (NUL and the other C0 controls except tab,
newline and carriage return; lone surrogates; U+FFFE and U+FFFF) cannot be
written to any XML document. They are replaced by U+FFFD REPLACEMENT
CHARACTER, one for one, in content and attribute values alike, and never make
a render fail. :func:`count_forbidden` tells how many a text holds; a build
reports them per chunk in ``ContextBuildResult.replaced_characters``.

**Content modes.** ``"escape"`` (the default) writes ``<``, ``>`` and ``&``
as entities, and a carriage return as ``&#13;``: ``if a < b && c`` reaches the
model as ``if a &lt; b &amp;&amp; c``. ``"cdata"`` sends such content as it
is, inside ``<![CDATA[ ... ]]>`` (content without those characters is
written bare, exactly as in ``"escape"``). It stays unforgeable and strictly
parseable: a ``]]>`` in the content is split across two sections
(``]]]]><![CDATA[>``) and a carriage return is written ``&#13;`` between
sections (a parser would turn a raw one into a newline), so the element
still parses to exactly the content and nothing in it can close the
section or the tag. Choose the mode per builder (``create_builder(content=
"cdata")``, the default :data:`DEFAULT_CONTENT_MODE`); a builder renders
under :func:`content_mode`, which :func:`render_element` reads, so renderers
need no change. Called outside any builder or :func:`content_mode` block,
:func:`render_element` escapes (as before CDATA existed).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Final, Literal, TypeAlias

from lxml import etree

from memctx._limits import XML_FORBIDDEN

__all__ = [
    "CONTENT_MODES",
    "DEFAULT_CONTENT_MODE",
    "FORBIDDEN_XML_CHARS",
    "REPLACEMENT_CHARACTER",
    "SafeXml",
    "XmlContentMode",
    "content_mode",
    "count_forbidden",
    "parse_element",
    "render_element",
    "sanitize",
]

FORBIDDEN_XML_CHARS: Final = XML_FORBIDDEN
"""Matches one character that XML 1.0 does not allow in a document."""

REPLACEMENT_CHARACTER: Final = "\ufffd"

AttributeValue = str | int | bool | None

XmlContentMode: TypeAlias = Literal["escape", "cdata"]
CONTENT_MODES: Final[tuple[str, ...]] = ("escape", "cdata")
DEFAULT_CONTENT_MODE: Final[XmlContentMode] = "cdata"
"""A builder's mode unless told otherwise; chosen from measurements on three real agent
runs (see the README, "The XML")."""
_MODE: ContextVar[str] = ContextVar("memctx_xml_content_mode", default="escape")
_SPECIAL: Final = re.compile("[<>&]")


def check_content_mode(mode: object) -> XmlContentMode:
    """Return ``mode`` if it is a content mode; ``ValueError`` naming the modes otherwise."""
    if mode not in CONTENT_MODES:
        raise ValueError(f"unknown content mode {mode!r}; choose one of {', '.join(CONTENT_MODES)}")
    return mode  # type: ignore[return-value]


@contextmanager
def content_mode(mode: XmlContentMode) -> Iterator[None]:
    """Within the block, :func:`render_element` writes content in ``mode`` (this context only)."""
    token = _MODE.set(check_content_mode(mode))
    try:
        yield
    finally:
        _MODE.reset(token)


def _cdata_piece(piece: str) -> str:
    if _SPECIAL.search(piece) is None:
        return piece
    return "<![CDATA[" + piece.replace("]]>", "]]]]><![CDATA[>") + "]]>"


def _cdata_content(content: str) -> str:
    """``content`` as character data: CDATA sections where needed, ``&#13;`` for CR."""
    return "&#13;".join(_cdata_piece(piece) for piece in content.split("\r"))


def sanitize(text: str) -> str:
    """Return ``text`` with every XML-forbidden character replaced by U+FFFD."""
    if FORBIDDEN_XML_CHARS.search(text) is None:
        return text
    return FORBIDDEN_XML_CHARS.sub(REPLACEMENT_CHARACTER, text)


def count_forbidden(text: str) -> int:
    """Return how many characters of ``text`` XML 1.0 forbids."""
    if FORBIDDEN_XML_CHARS.search(text) is None:
        return 0
    return len(FORBIDDEN_XML_CHARS.findall(text))


class SafeXml(str):
    """Text returned by :func:`render_element`: well-formed, no forbidden characters.

    ``replaced`` is how many XML-forbidden characters were replaced by
    U+FFFD to make it so. A build trusts this type and does not re-check it.
    """

    replaced: int


def _attribute_text(value: str | int | bool) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return value


def _build(
    tag: str, attributes: list[tuple[str, str | int | bool]], content: str, clean: bool
) -> tuple[str, int]:
    element = etree.Element(tag)
    replaced = 0
    for name, value in attributes:
        text = _attribute_text(value)
        if clean:
            found = count_forbidden(text)
            if found:
                replaced += found
                text = sanitize(text)
        element.set(name, text)
    if clean:
        found = count_forbidden(content)
        if found:
            replaced += found
            content = sanitize(content)
    element.text = "\n" + content + "\n"
    return etree.tostring(element, encoding="unicode"), replaced


def render_element(
    tag: str,
    attributes: Iterable[tuple[str, AttributeValue]],
    content: str,
    *,
    mode: XmlContentMode | None = None,
) -> SafeXml:
    """Render one element: ``<tag a="1" ...>``, newline, ``content``, newline, ``</tag>``.

    Attributes keep the given order; those whose value is ``None`` are left
    out; booleans are written ``true``/``false``. ``tag`` and the attribute
    names must be valid XML names (``ValueError`` otherwise: they come from
    code, not from data). Forbidden characters in values are replaced (see
    the module docstring); the result tells how many in ``.replaced``.
    ``mode`` is the content mode; by default the one :func:`content_mode`
    set (``"escape"`` outside any).
    """
    present = [(name, value) for name, value in attributes if value is not None]
    chosen = check_content_mode(mode) if mode is not None else _MODE.get()
    if chosen == "cdata" and _SPECIAL.search(content) is not None:
        return _render_cdata(tag, present, content)
    try:
        # lxml refuses every character XML forbids, so the common case (none)
        # needs no scan of our own.
        xml, replaced = _build(tag, present, content, clean=False)
    except ValueError:
        xml, replaced = _build(tag, present, content, clean=True)
    safe = SafeXml(xml)
    safe.replaced = replaced
    return safe


def _render_cdata(tag: str, present: Sequence[tuple[str, AttributeValue]], content: str) -> SafeXml:
    empty = render_element(tag, present, "", mode="escape")  # the start tag, checked and escaped
    replaced = count_forbidden(content)
    if replaced:
        content = sanitize(content)
    end = f"\n</{tag}>"
    safe = SafeXml(empty[: -len(end)] + _cdata_content(content) + end)
    safe.replaced = empty.replaced + replaced
    return safe


_STRICT_PARSER: Final = etree.XMLParser(
    resolve_entities=False, no_network=True, huge_tree=True, remove_blank_text=False
)


def parse_element(xml: str) -> tuple[str, dict[str, str], str]:
    """Parse one rendered element strictly; return ``(tag, attributes, content)``.

    The inverse of :func:`render_element` (after sanitising): the newline
    after the start tag and the one before the end tag are removed from the
    content. Raises ``lxml.etree.XMLSyntaxError`` on anything not well formed.
    Useful in tests of your own renderers.
    """
    element = etree.fromstring(xml.encode("utf-8"), parser=_STRICT_PARSER)
    if len(element):
        raise ValueError(f"<{element.tag}> has child elements; content must be text only")
    text = element.text or ""
    if text.startswith("\n"):
        text = text[1:]
    if text.endswith("\n"):
        text = text[:-1]
    return str(element.tag), dict(element.attrib), text
