"""The limits of valid input, defined once.

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
"""

from __future__ import annotations

import re
from typing import Final

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
    "int_too_large",
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
