"""What one call did, read from its chunks: key arguments, outcome, files read and changed.

Best guesses from the shapes agents use: JSON arguments with ``command``,
``path`` and the like, shell commands (``cat``, ``sed -i``, redirections,
``tee``, ``cp``/``mv``; a here-document's body is data), and tool outputs
that start with ``<returncode>N</returncode>``.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from typing import Any, Final

from memctx._chunk import Chunk

_KEY_ARGUMENTS: Final = (
    "command",
    "cmd",
    "path",
    "file_path",
    "file",
    "filename",
    "pattern",
    "query",
    "url",
    "old_str",
)
_READ_COMMANDS: Final = frozenset(
    {"cat", "head", "tail", "nl", "less", "more", "grep", "sed", "wc"}
)
_RETURNCODE: Final = re.compile(r"^\s*<returncode>(-?\d+)</returncode>")
_TAGS: Final = re.compile(r"<returncode>-?\d+</returncode>|</?(?:output|stdout|stderr)>")
_ERROR_WORDS: Final = re.compile(
    r"error|exception|traceback|fail|not found|denied|no such|invalid|cannot", re.IGNORECASE
)
_SPACES: Final = re.compile(r"\s+")


def one_line(text: str, limit: int) -> str:
    flat = _SPACES.sub(" ", text).strip()
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def key_arguments(content: Any, limit: int) -> str:
    if isinstance(content, Mapping):
        keys = [k for k in _KEY_ARGUMENTS if k in content] or list(content)[:2]
        if len(keys) == 1 and keys[0] in ("command", "cmd"):
            # The first line verbatim (a here-document's body or a script's rest is data).
            lines = str(content[keys[0]]).strip().splitlines() or [""]
            more = " …" if len(lines) > 1 else ""
            return "`" + one_line(lines[0], limit) + more + "`"
        parts = [f"{k}={one_line(str(content[k]), limit // max(len(keys), 1))}" for k in keys]
        return " ".join(parts)
    if content is None:
        return ""
    return one_line(content if isinstance(content, str) else str(content), limit)


def _lines(text: str) -> list[str]:
    return [line for line in (_TAGS.sub("", raw).strip() for raw in text.splitlines()) if line]


def call_outcome(results: Sequence[Chunk]) -> tuple[str, str | None]:
    """``(outcome, error line or None)`` of a call from its results."""
    if not results:
        return "no result", None
    last = results[-1]
    text = last.text
    lines = _lines(text)
    found = _RETURNCODE.match(text)
    failed = last.metadata.error is True or last.metadata.success is False
    if found is not None and found.group(1) != "0":
        failed = True
    size = f"{len(lines)} line{'s' if len(lines) != 1 else ''}"
    status = f"exit {found.group(1)}" if found is not None else ("failed" if failed else "ok")
    if failed:
        telling = [line for line in lines if _ERROR_WORDS.search(line)]
        line = telling[-1] if telling else (lines[0] if lines else "(no output)")
        return f"{status}, {size}", one_line(line, 160)
    return f"{status}, {size}", None


def _paths_in_command(command: str) -> tuple[list[str], list[str]]:
    """Files a shell command reads and changes (a best guess from its words)."""
    read: list[str] = []
    changed: list[str] = []
    # A here-document's body is data, not commands: read up to the line that opens it.
    lines = []
    for line in command.splitlines():
        lines.append(line.split("<<", 1)[0] if "<<" in line else line)
        if "<<" in line:
            break
    for segment in re.split(r"&&|\|\||;|\|", "\n".join(lines)):
        try:
            words = shlex.split(segment, posix=True)
        except ValueError:
            words = segment.split()
        if not words:
            continue
        for i, word in enumerate(words):
            if word in (">", ">>") and i + 1 < len(words):
                changed.append(words[i + 1])
            elif word.startswith(">") and len(word) > 2 and not word.startswith(">&"):
                changed.append(word.lstrip(">"))
        name = words[0].rsplit("/", 1)[-1]
        arguments = [w for i, w in enumerate(words[1:], 1) if words[i - 1] not in (">", ">>", "<")]
        if name == "grep":  # its first word that is not an option is the pattern
            plain = [w for w in arguments if not w.startswith("-")]
            arguments = plain[1:]
        paths = [w for w in arguments if _looks_like_path(w)]
        if name == "tee" or (name == "sed" and any(w.startswith("-i") for w in words[1:])):
            changed.extend(paths)
        elif name in ("cp", "mv") and paths:
            changed.append(paths[-1])
        elif name in _READ_COMMANDS:
            read.extend(paths)
    changed = [p for p in changed if p != "/dev/null" and _looks_like_path(p)]
    return read, changed


def _looks_like_path(word: str) -> bool:
    if not word or word.startswith("-") or any(c in word for c in "<>$*=\"'`(){}\n"):
        return False
    tail = word.rsplit("/", 1)[-1]
    return "." in tail[1:] or ("/" in word and bool(tail))


def files_of_call(call: Chunk) -> tuple[list[str], list[str]]:
    content = call.content
    tool = (call.metadata.tool or call.metadata.skill or "").lower()
    if not isinstance(content, Mapping):
        return [], []
    command = content.get("command") or content.get("cmd")
    if isinstance(command, str) and ("bash" in tool or "shell" in tool or tool in ("sh", "run")):
        return _paths_in_command(command)
    path = next(
        (content[k] for k in ("path", "file_path", "file", "filename") if k in content), None
    )
    if not isinstance(path, str) or not path:
        return [], []
    words = f"{tool} {command if isinstance(command, str) else ''}"
    if re.search(r"write|edit|create|replace|patch|insert|str_replace|delete|move", words):
        return [], [path]
    return [path], []
