"""DeclaredRenderer: a renderer made of data — a chunk type and a table of elements.

A subclass says which chunks it renders and how, in class attributes::

    class ReviewRenderer(DeclaredRenderer):
        chunk_type = ChunkType.CUSTOM
        key_fields = ("action",)
        elements = {"review": Element("code_review", "user", ("id", "tool", "status"))}

``key_fields`` name the chunk fields whose values pick the row of
``elements`` (one field: the value is the key; several: a tuple; none: the
key is ``()``). A chunk of ``chunk_type`` whose key has a row is claimed.

An attribute name is looked up on the chunk (``id``, ``action``, ``subtype``,
``role``, ``priority``, ``type``) or else on its metadata (``tool``,
``call_id``, ``status``, ``success``, …). ``None`` leaves the attribute out;
a name ending in ``?`` is written ``true`` when the value is true and left
out otherwise (a flag, such as ``error?``). ``xml=field`` writes the value of
``field`` under the name ``xml`` (``bytes=byte_size``), and a field
``content.key`` reads ``key`` of a JSON object content (``url=content.url``).

In the ``"lean"`` attribute mode (``create_builder(attributes="lean")``, see :mod:`memctx.xml`)
the attributes the tag already says are left out: those read from a key field
(every chunk of the row has the same value) and a ``role`` equal to the
element's role (the message's).

``Element(..., content=False)`` writes the element without the chunk's
content (for binary data or opaque tokens that must never reach a model as
text: images, documents, redacted reasoning).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Hashable, Mapping
from typing import Any, ClassVar

import attrs

from memctx._chunk import Chunk, ChunkType, Role
from memctx.xml import AttributeValue, lean_attributes, render_element, render_element_prefix

_CHUNK_FIELDS = frozenset({"id", "action", "subtype", "role", "priority", "type"})


@attrs.frozen
class Element:
    """How one kind of chunk is rendered: its tag, its role, its attributes in order."""

    tag: str
    role: Role
    attributes: tuple[str, ...] = ("id",)
    content: bool = True
    """Whether the chunk's content is written between the tags."""


Getter = Callable[[Chunk], Any]


def _content_key(key: str) -> Getter:
    def get(chunk: Chunk) -> Any:
        content = chunk.content
        return content.get(key) if isinstance(content, Mapping) else None

    return get


def _field(name: str) -> str:
    """The chunk field attribute ``name`` reads."""
    return name.rstrip("?").rpartition("=")[2]


def _getter(name: str) -> tuple[str, Getter]:
    """The XML name and the value getter of attribute ``name``."""
    flag = name.endswith("?")
    xml_name, _, field = name.rstrip("?").rpartition("=")
    xml_name = xml_name or field
    source = field if field in _CHUNK_FIELDS else f"metadata.{field}"
    get: Getter = operator.attrgetter(source)
    if field == "type":
        get = operator.attrgetter("type.value")
    elif field.startswith("content."):
        get = _content_key(field.removeprefix("content."))
    if flag:
        plain = get

        def get(chunk: Chunk) -> bool | None:
            return True if plain(chunk) else None

    return xml_name, get


class DeclaredRenderer:
    """Renders the chunks its class attributes declare (see the module docstring)."""

    chunk_type: ClassVar[ChunkType]
    key_fields: ClassVar[tuple[str, ...]] = ("action",)
    elements: ClassVar[Mapping[Any, Element]]
    _compiled: ClassVar[dict[Any, tuple[Element, tuple[tuple[str, Getter], ...]]]]
    _lean: ClassVar[dict[Any, tuple[tuple[str, Getter], ...]]]

    claims_by_kind: ClassVar[bool] = True
    """Whether a chunk's type, role, action and subtype alone decide :meth:`can_render` (a
    registry then remembers the renderer per kind); False for a subclass that overrides
    ``can_render`` or keys on other fields."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.claims_by_kind = cls.can_render is DeclaredRenderer.can_render and set(
            cls.key_fields
        ) <= {"role", "action", "subtype"}
        if "elements" in cls.__dict__ or "key_fields" in cls.__dict__:
            cls._compiled = {
                key: (element, tuple(_getter(name) for name in element.attributes))
                for key, element in cls.elements.items()
            }
            cls._lean = {
                key: tuple(
                    _getter(name)
                    for name in element.attributes
                    if _field(name) not in cls.key_fields
                )
                for key, element in cls.elements.items()
            }

    def _key(self, chunk: Chunk) -> Any:
        fields = self.key_fields
        if len(fields) == 1:
            return getattr(chunk, fields[0])
        return tuple(getattr(chunk, name) for name in fields)

    def can_render(self, chunk: Chunk) -> bool:
        return chunk.type is self.chunk_type and self._key(chunk) in self._compiled

    def get_role(self, chunk: Chunk) -> Role:
        return self._compiled[self._key(chunk)][0].role

    def _attributes(self, chunk: Chunk) -> tuple[Element, list[tuple[str, AttributeValue]]]:
        """The element of ``chunk`` and its attributes in the current attribute mode."""
        key = self._key(chunk)
        element, getters = self._compiled[key]
        if not lean_attributes():
            return element, [(n, get(chunk)) for n, get in getters]
        said = element.role
        found = [(n, get(chunk)) for n, get in self._lean[key]]
        return element, [(n, v) for n, v in found if n != "role" or v != said]

    def render(self, chunk: Chunk) -> str:
        if lean_attributes():
            element, attributes = self._attributes(chunk)
        else:  # the seed's attributes, every one (the default: kept short)
            element, getters = self._compiled[self._key(chunk)]
            attributes = [(n, get(chunk)) for n, get in getters]
        return render_element(element.tag, attributes, chunk.text if element.content else "")

    def render_prefix(self, chunk: Chunk, chars: int) -> str:
        """A prefix of :meth:`render` covering the first ``chars`` characters of the content."""
        element, attributes = self._attributes(chunk)
        text = chunk.text if element.content else ""
        return render_element_prefix(element.tag, attributes, text, chars)

    @property
    def cache_key(self) -> Hashable:
        """The class and its declaration: equal declarations render alike."""
        kind = type(self)
        return (
            f"{kind.__module__}.{kind.__qualname__}",
            self.chunk_type.value,
            self.key_fields,
            tuple(sorted(self.elements.items(), key=repr)),
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
