"""Tool-call ids and tool names made valid for every provider, deterministically.

One rule serves the three providers: an id matches ``^[A-Za-z0-9_-]{1,40}$``
(Anthropic allows 64 characters, OpenAI 40) and a name matches
``^[A-Za-z_][A-Za-z0-9_-]{0,63}$`` (OpenAI and Anthropic: letters, digits,
``_`` and ``-`` up to 64; Gemini: starting with a letter or ``_``). A valid
value is kept; any other becomes its valid characters (others replaced by
``_``), shortened, followed by ``_`` and 8 hex digits of its SHA-256: the
same value always maps alike, and two different values practically never
meet (should two call ids of one request meet, the later call is sent as
text).
"""

from __future__ import annotations

import hashlib
import re
from typing import Final

ID_PATTERN: Final = re.compile(r"[A-Za-z0-9_-]{1,40}\Z")
NAME_PATTERN: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}\Z")
_INVALID: Final = re.compile(r"[^A-Za-z0-9_-]")


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:8]


def provider_id(call_id: str) -> str:
    """``call_id`` as a tool-call id every provider accepts."""
    if ID_PATTERN.match(call_id):
        return call_id
    return f"{_INVALID.sub('_', call_id)[:31]}_{_digest(call_id)}"


def provider_name(name: str) -> str:
    """``name`` as a tool name every provider accepts."""
    if NAME_PATTERN.match(name):
        return name
    cleaned = _INVALID.sub("_", name)
    if not re.match(r"[A-Za-z_]", cleaned):
        cleaned = "_" + cleaned
    return f"{cleaned[:55]}_{_digest(name)}"
