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
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

from lxml import etree

__all__ = [
    "FORBIDDEN_XML_CHARS",
    "REPLACEMENT_CHARACTER",
    "count_forbidden",
    "parse_element",
    "render_element",
    "sanitize",
]

FORBIDDEN_XML_CHARS: Final = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
"""Matches one character that XML 1.0 does not allow in a document."""

REPLACEMENT_CHARACTER: Final = "\ufffd"

AttributeValue = str | int | bool | None


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


def _attribute_text(value: str | int | bool) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return sanitize(value)


def render_element(tag: str, attributes: Iterable[tuple[str, AttributeValue]], content: str) -> str:
    """Render one element: ``<tag a="1" ...>``, newline, ``content``, newline, ``</tag>``.

    Attributes keep the given order; those whose value is ``None`` are left
    out; booleans are written ``true``/``false``. ``tag`` and the attribute
    names must be valid XML names (``ValueError`` otherwise: they come from
    code, not from data).
    """
    element = etree.Element(tag)
    for name, value in attributes:
        if value is not None:
            element.set(name, _attribute_text(value))
    element.text = "\n" + sanitize(content) + "\n"
    return etree.tostring(element, encoding="unicode")


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
