"""ContextMessage: one chat message of a build and the chunks it holds."""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from memctx._chunk import Role


def _to_tuple(value: Iterable[str]) -> tuple[str, ...]:
    return tuple(value)


@attrs.frozen
class ContextMessage:
    """One chat message: its ``role``, its ``content`` and the ids of the chunks it holds."""

    role: Role
    content: str
    chunk_ids: tuple[str, ...] = attrs.field(default=(), converter=_to_tuple)

    def to_dict(self) -> dict[str, str]:
        """Return ``{"role": ..., "content": ...}``."""
        return {"role": self.role, "content": self.content}
