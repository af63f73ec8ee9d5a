"""Safe XML for renderers: every chunk becomes one well-formed element.

Renderers (the built-in ones and yours) should build their output with
:func:`render_element`. It writes the element exactly as lxml writes it (lxml
is the reference: property tests hold the two byte-identical, and lxml
builds every element with a name or character the fast path leaves to it),
so the content and the attribute values are escaped: no content can open,
close or forge a tag.
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

**Attribute modes.** ``"seed"`` (a builder's default, :data:`DEFAULT_ATTRIBUTE_MODE`)
writes every attribute of the reference XML. ``"lean"`` leaves out the attributes
that the tag or the message already say: a ``role`` equal to the message's role,
and an ``action`` or ``subtype`` that the tag stands for (``<tool_call>`` is
always ``action="tool_call"``, ``<thinking>`` always ``subtype="THINKING"``).
Choose it per builder (``create_builder(attributes="lean")``); renderers read it
with :func:`lean_attributes` (the built-in ones and every
:class:`~memctx.DeclaredRenderer` do). Outside a builder or
:func:`attribute_mode` block it is ``"seed"``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import Final

from lxml import etree

from memctx._exceptions import XmlError
from memctx._render.xml_modes import (
    ATTRIBUTE_MODES,
    CONTENT_MODE,
    CONTENT_MODES,
    DEFAULT_ATTRIBUTE_MODE,
    DEFAULT_CONTENT_MODE,
    XmlAttributeMode,
    XmlContentMode,
    attribute_mode,
    check_content_mode,
    content_mode,
    lean_attributes,
)
from memctx._validators import XML_FORBIDDEN

__all__ = [
    "ATTRIBUTE_MODES",
    "CONTENT_MODES",
    "DEFAULT_ATTRIBUTE_MODE",
    "DEFAULT_CONTENT_MODE",
    "FORBIDDEN_XML_CHARS",
    "REPLACEMENT_CHARACTER",
    "SafeXml",
    "XmlAttributeMode",
    "XmlContentMode",
    "attribute_mode",
    "content_mode",
    "count_forbidden",
    "lean_attributes",
    "parse_element",
    "render_element",
    "render_element_prefix",
    "sanitize",
]

FORBIDDEN_XML_CHARS: Final = XML_FORBIDDEN
"""Matches one character that XML 1.0 does not allow in a document."""

REPLACEMENT_CHARACTER: Final = "\ufffd"

AttributeValue = str | int | bool | None

_ALLOWED_ASCII: Final = bytes([0x09, 0x0A, 0x0D, *range(0x20, 0x80)])


def _has_forbidden(text: str) -> bool:
    """Whether ``text`` holds a character XML forbids (``in`` tests and byte
    deletion are many times faster than a regular expression on the common,
    ASCII, text)."""
    if text.isascii():
        return bool(text.encode("ascii").translate(None, _ALLOWED_ASCII))
    return FORBIDDEN_XML_CHARS.search(text) is not None


def _has_markup(text: str) -> bool:
    """Whether ``text`` holds ``<``, ``>`` or ``&``."""
    return "<" in text or ">" in text or "&" in text


def _cdata_piece(piece: str) -> str:
    if not _has_markup(piece):
        return piece
    return "<![CDATA[" + piece.replace("]]>", "]]]]><![CDATA[>") + "]]>"


def _cdata_content(content: str) -> str:
    """``content`` as character data: CDATA sections where needed, ``&#13;`` for CR."""
    return "&#13;".join(_cdata_piece(piece) for piece in content.split("\r"))


def sanitize(text: str) -> str:
    """Return ``text`` with every XML-forbidden character replaced by U+FFFD."""
    if not _has_forbidden(text):
        return text
    return FORBIDDEN_XML_CHARS.sub(REPLACEMENT_CHARACTER, text)


def count_forbidden(text: str) -> int:
    """Return how many characters of ``text`` XML 1.0 forbids."""
    if not _has_forbidden(text):
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


_ATTRIBUTE_SPECIAL: Final = re.compile('[<>&"\n\r\t]')
_NAMES_KEPT: Final = 4096
"""At most this many tag and attribute names are remembered as valid."""
_valid_tags: set[str] = set()
_valid_attribute_names: set[str] = set()


def _build(
    tag: str, attributes: list[tuple[str, str | int | bool]], content: str, clean: bool
) -> tuple[str, int]:
    """The reference: the element built and written by lxml."""
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


def _is_plain_name(name: str, valid: set[str], check: Callable[[str], object]) -> bool:
    """Whether lxml accepts ``name`` and writes it as is (asked once per name)."""
    if type(name) is not str:
        return False  # left to lxml, which refuses it
    if name in valid:
        return True
    if name[:3].lower() == "xml":
        return False  # left to lxml: its errors, and its handling of reserved names
    try:
        check(name)
    except (ValueError, TypeError):
        return False
    if len(valid) < _NAMES_KEPT:
        valid.add(name)
    return True


def _check_attribute_name(name: str) -> None:
    etree.Element("a").set(name, "")


def _escape_text(text: str) -> str:
    if not _has_markup(text) and "\r" not in text:
        return text
    return (
        text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\r", "&#13;")
    )


def _escape_attribute(value: str) -> str:
    if _ATTRIBUTE_SPECIAL.search(value) is None:
        return value
    return (
        value.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("\n", "&#10;")
        .replace("\r", "&#13;")
        .replace("\t", "&#9;")
    )


def _write(tag: str, attributes: Sequence[tuple[str, AttributeValue]], content: str) -> str | None:
    """What :func:`_build` writes, without lxml; None where lxml's own path must decide.

    That is: a name not yet known to be valid and plain, a repeated attribute
    name, a value that is not text, or a character XML forbids. Property
    tests hold its output byte-identical to lxml's.
    """
    if not _is_plain_name(tag, _valid_tags, etree.Element):
        return None
    parts = ["<", tag]
    for name, value in attributes:
        if not _is_plain_name(name, _valid_attribute_names, _check_attribute_name):
            return None
        text = _attribute_text(value)  # type: ignore[arg-type]
        if type(text) is not str or _has_forbidden(text):
            return None
        parts += (" ", name, '="', _escape_attribute(text), '"')
    if len(attributes) > 1 and len({name for name, _ in attributes}) != len(attributes):
        return None
    if _has_forbidden(content):
        return None
    parts += (">\n", _escape_text(content), "\n</", tag, ">")
    return "".join(parts)


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
    chosen = check_content_mode(mode) if mode is not None else CONTENT_MODE.get()
    if chosen == "cdata" and _has_markup(content):
        return _render_cdata(tag, present, content)
    written = _write(tag, present, content)
    if written is not None:
        safe = SafeXml(written)
        safe.replaced = 0
        return safe
    try:
        # lxml refuses every character XML forbids, so the common case (none)
        # needs no scan of our own.
        xml, replaced = _build(tag, present, content, clean=False)
    except (ValueError, TypeError):
        try:
            xml, replaced = _build(tag, present, content, clean=True)
        except (ValueError, TypeError) as exc:  # a name XML does not allow, a value not text
            raise XmlError(f"cannot render <{tag!s}>: {exc}") from None
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


def render_element_prefix(
    tag: str,
    attributes: Iterable[tuple[str, AttributeValue]],
    content: str,
    chars: int,
    *,
    mode: XmlContentMode | None = None,
) -> str:
    """The start of ``render_element(tag, attributes, content)``, without rendering it all.

    The result is a prefix of what :func:`render_element` returns for the
    same arguments: the start tag, the newline, and the rendering of at
    least the first ``chars`` characters of ``content`` (all of the element
    when ``content`` is no longer). Its cost follows ``chars``, not the
    length of ``content``: a build counting a huge chunk against a small
    limit reads only what the limit needs.
    """
    present = [(name, value) for name, value in attributes if value is not None]
    if chars >= len(content):
        return render_element(tag, present, content, mode=mode)
    chosen = check_content_mode(mode) if mode is not None else CONTENT_MODE.get()
    empty = render_element(tag, present, "", mode="escape")
    start = empty[: -len(f"\n</{tag}>")]
    head = sanitize(content[:chars])  # forbidden characters are replaced one for one
    if chosen == "escape":
        return start + _escape_text(head)
    # As _cdata_content, for the pieces (between carriage returns) the head holds:
    # the last one is cut, and whether it is a CDATA section depends on all of it.
    pieces = head.split("\r")
    last = pieces.pop()
    end = content.find("\r", chars)
    end = len(content) if end == -1 else end
    begin = chars - len(last)
    special = any(content.find(c, begin, end) != -1 for c in "<>&")
    rendered = [_cdata_piece(piece) for piece in pieces]
    rendered.append("<![CDATA[" + last.replace("]]>", "]]]]><![CDATA[>") if special else last)
    return start + "&#13;".join(rendered)


_STRICT_PARSER: Final = etree.XMLParser(
    resolve_entities=False, no_network=True, huge_tree=True, remove_blank_text=False
)


def parse_element(xml: str) -> tuple[str, dict[str, str], str]:
    """Parse one rendered element strictly; return ``(tag, attributes, content)``.

    The inverse of :func:`render_element` (after sanitising): the newline
    after the start tag and the one before the end tag are removed from the
    content. Raises :class:`~memctx.XmlError` on anything that is not one
    well-formed element with text only. Useful in tests of your own renderers.
    """
    if not isinstance(xml, str):
        raise XmlError(f"expected the element's text, got {type(xml).__name__}")
    try:
        element = etree.fromstring(xml.encode("utf-8", "surrogatepass"), parser=_STRICT_PARSER)
    except etree.XMLSyntaxError as exc:
        raise XmlError(f"not a well-formed element: {exc}") from None
    if len(element):
        raise XmlError(f"<{element.tag}> has child elements; content must be text only")
    text = element.text or ""
    if text.startswith("\n"):
        text = text[1:]
    if text.endswith("\n"):
        text = text[:-1]
    return str(element.tag), dict(element.attrib), text
