"""Agent types: the short names team configurations use, and the full names."""

from __future__ import annotations

from typing import Final

from memctx._exceptions import TeamMessageError

__all__ = ["AGENT_TYPES", "normalize_agent_type"]

AGENT_TYPES: Final[dict[str, str]] = {
    "claude": "claude-code",
    "claude-code": "claude-code",
    "codex": "openai-codex",
    "openai-codex": "openai-codex",
    "gemini": "google-gemini",
    "google-gemini": "google-gemini",
}
"""Known agent types, short and full, lower case, to the full name."""


def normalize_agent_type(agent_type: str) -> str:
    """The full name of ``agent_type`` (case-insensitive): ``claude`` → ``claude-code``,
    ``codex`` → ``openai-codex``, ``gemini`` → ``google-gemini``; a type it does
    not know comes back as given."""
    if not isinstance(agent_type, str):
        raise TeamMessageError(f"agent_type must be a string, got {type(agent_type).__name__}")
    return AGENT_TYPES.get(agent_type.lower(), agent_type)
