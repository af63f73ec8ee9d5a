"""Anthropic's prompt cache as documented, over request bodies, to see what markers buy.

A request is its blocks in cache order: the tool definitions, the system text
blocks, then each message's content blocks (a string content is one text
block), each taken with its message's role and without ``cache_control``. A
request writes the prefix ending at each block it marks; it reads the longest
cached prefix that ends at a marked block or at one of the
:data:`LOOKBACK` blocks before a marked block.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Final

LOOKBACK: Final = 20


def blocks(body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """``(role, block)`` in cache order: ``tools``, ``system``, then the messages."""
    out: list[tuple[str, dict[str, Any]]] = [("tools", t) for t in body.get("tools", [])]
    system = body.get("system")
    if isinstance(system, str):
        out.append(("system", {"type": "text", "text": system}))
    elif system:
        out += [("system", b) for b in system]
    for message in body["messages"]:
        content = message["content"]
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        out += [(message["role"], b) for b in content]
    return out


def prefix_keys(body: dict[str, Any]) -> list[str]:
    """A key per block for the prefix ending at it (markers left out)."""
    digest = hashlib.sha256()
    keys = []
    for role, block in blocks(body):
        plain = {k: v for k, v in block.items() if k != "cache_control"}
        digest.update(json.dumps([role, plain], sort_keys=True).encode())
        keys.append(digest.copy().hexdigest())
    return keys


def marked(body: dict[str, Any]) -> list[int]:
    """Indexes (in :func:`blocks` order) of the blocks that carry ``cache_control``."""
    return [i for i, (_, b) in enumerate(blocks(body)) if "cache_control" in b]


class Cache:
    """What a run of requests has written; :meth:`send` says how much each one read."""

    def __init__(self) -> None:
        self.written: set[str] = set()

    def send(self, body: dict[str, Any]) -> int:
        """Blocks of ``body`` served from the cache (0: none); then its marks are written."""
        keys = prefix_keys(body)
        read = 0
        for mark in marked(body):
            for end in range(mark, max(-1, mark - LOOKBACK - 1), -1):
                if keys[end] in self.written:
                    read = max(read, end + 1)
                    break
        self.written.update(keys[m] for m in marked(body))
        return read


def shared_blocks(a: dict[str, Any], b: dict[str, Any]) -> int:
    """How many leading blocks two requests have in common (markers aside)."""
    same = 0
    for x, y in zip(prefix_keys(a), prefix_keys(b), strict=False):
        if x != y:
            break
        same += 1
    return same
