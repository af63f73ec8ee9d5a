"""Routing markers in team messages: finding ``[NEXT:…]`` and stripping every marker.

Agents and people route a team conversation with markers written into the
text: ``[FROM:name]`` says who a relayed message is from, ``[NEXT:a, b]`` who
speaks next, and ``[TEAM_TASK]…`` carries the task. None of them is meant for
the agent that reads the conversation, so :func:`strip_markers` removes them
(case-insensitively) before a message goes into anyone's context:

- ``[FROM:…]``: the marker, up to its ``]`` (at least one character inside);
- ``[TEAM_TASK]…``: the marker and the text after it, up to the next ``[`` or
  the end of the text;
- ``[NEXT:…]``: the marker, up to its ``]`` (possibly empty inside);

in that order. Removing a marker can join the text around it into a new
marker (``[NE[NEXT:x]XT:y]``); the removal repeats until none is left, so
stripping twice gives what stripping once gives. Then the white space is
tidied, line by line: runs of two or more white-space characters become one
space, each line is trimmed, empty lines are dropped. "White space" is the
set JavaScript's ``\\s`` matches (it includes U+FEFF and U+00A0, not the C0
separators U+001C to U+001F), as in the tools that write these markers.
"""

from __future__ import annotations

import re
from typing import Final

from memctx._exceptions import TeamMessageError

__all__ = ["cleanup_whitespace", "parse_next_markers", "strip_markers"]

FROM_PATTERN: Final = re.compile(r"\[FROM:[^\]]+\]", re.IGNORECASE)
NEXT_PATTERN: Final = re.compile(r"\[NEXT:[^\]]*\]", re.IGNORECASE)
TEAM_TASK_PATTERN: Final = re.compile(r"\[TEAM_TASK\][\s\S]*?(?=\[|\Z)", re.IGNORECASE)

_WHITESPACE: Final = "\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_RUNS: Final = re.compile(f"[{_WHITESPACE}]{{2,}}")
_EDGES: Final = re.compile(f"\\A[{_WHITESPACE}]+|[{_WHITESPACE}]+\\Z")
_NEXT_INSIDE: Final = re.compile(r"\[NEXT:([^\]]*)\]", re.IGNORECASE)


def _trim(text: str) -> str:
    return _EDGES.sub("", text)


def cleanup_whitespace(text: str) -> str:
    """Collapse white-space runs to one space, trim every line, drop empty lines."""
    lines = (_trim(_RUNS.sub(" ", line)) for line in text.split("\n"))
    return _trim("\n".join(line for line in lines if line))


def _remove_markers(text: str) -> str:
    text = FROM_PATTERN.sub("", text)
    text = TEAM_TASK_PATTERN.sub("", text)
    return NEXT_PATTERN.sub("", text)


def strip_markers(text: str) -> str:
    """``text`` without ``[FROM:…]``, ``[TEAM_TASK]…`` and ``[NEXT:…]``, white space tidied."""
    _check_text(text)
    while True:
        stripped = _remove_markers(text)
        if stripped == text:
            return cleanup_whitespace(stripped)
        text = stripped


def parse_next_markers(text: str) -> tuple[str, ...]:
    """The names the ``[NEXT:…]`` markers of ``text`` route to, in order, each once.

    A marker may name several, separated by commas: ``[NEXT: reviewer, lena]``.
    Names are trimmed; empty ones are skipped.
    """
    _check_text(text)
    found: dict[str, None] = {}
    for inside in _NEXT_INSIDE.findall(text):
        for name in inside.split(","):
            name = _trim(name)
            if name:
                found.setdefault(name)
    return tuple(found)


def _check_text(text: object) -> None:
    if not isinstance(text, str):
        raise TeamMessageError(f"text: must be a string, got {type(text).__name__}")
