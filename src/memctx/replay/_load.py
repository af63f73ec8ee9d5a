"""Reading a recorded run: a memctx state file, or an OpenAI-style transcript or trajectory.

A state file (``{"version": 1, "chunks": [...]}``, see :mod:`memctx.statefile`)
is read as it is. Anything else must be an OpenAI chat transcript (a list of
messages, or ``{"messages": [...]}`` as the bundled mini-swe-agent
trajectories are) and is imported with
:func:`memctx.importers.load_openai_transcript`; a message's
``extra.timestamp`` (seconds since the epoch, as those trajectories record
it) becomes its chunks' ``created_at``, so cache lifetimes see the run's real
pace (a message without one takes its predecessor's time).

Several files make one run, one after the other: each chunk id is prefixed
with its file's name (``astropy__astropy-12907:msg3``; ``#2`` added to a name
seen before), and each run's times
are shifted so that it starts one second after the previous one ended.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import attrs

from memctx import Chunk, MemctxError, MemoryState, ReplayError
from memctx.importers import load_openai_transcript
from memctx.statefile import state_from_dict

_MESSAGE_ID: Final = re.compile(r"^msg(\d+)(?:_|$)")
_GAP: Final = dt.timedelta(seconds=1)


def load_run(path: str | os.PathLike[str], *more: str | os.PathLike[str]) -> MemoryState:
    """The run recorded in ``path`` (and ``more`` files, concatenated) as one state.

    Raises :class:`~memctx.ReplayError` (``option="run"``) naming the file when
    it cannot be read or is neither a state file nor a transcript.
    """
    states = [_load_one(Path(p)) for p in (path, *more)]
    if len(states) == 1:
        return states[0]
    return concatenate([(Path(p).name, s) for p, s in zip((path, *more), states, strict=True)])


def _load_one(path: Path) -> MemoryState:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ReplayError("run", f"{path}: {exc.strerror or exc}") from exc
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ReplayError("run", f"{path}: not JSON ({exc})") from exc
    try:
        if isinstance(data, dict) and "chunks" in data:
            return state_from_dict(data)
        if _is_transcript(data):
            return _from_transcript(data)
    except MemctxError as exc:
        raise ReplayError("run", f"{path}: {exc}") from exc
    raise ReplayError(
        "run", f"{path}: neither a memctx state file nor a chat transcript (a list of messages)"
    )


def _is_transcript(data: Any) -> bool:
    messages = data.get("messages") if isinstance(data, dict) else data
    return isinstance(messages, list) and all(isinstance(m, dict) for m in messages)


def _message_times(messages: Sequence[Any]) -> list[dt.datetime | None]:
    stamps: list[dt.datetime | None] = []
    for message in messages:
        extra = message.get("extra") if isinstance(message, dict) else None
        stamp = extra.get("timestamp") if isinstance(extra, dict) else None
        if isinstance(stamp, int | float) and not isinstance(stamp, bool):
            stamps.append(dt.datetime.fromtimestamp(stamp, tz=dt.UTC))
        else:
            stamps.append(None)
    known = [s for s in stamps if s is not None]
    if not known:
        return stamps
    last = known[0]  # leading messages without a time take the first one
    for n, stamp in enumerate(stamps):
        last = stamp if stamp is not None else last
        stamps[n] = last
    return stamps


def _from_transcript(data: Any) -> MemoryState:
    state, _report = load_openai_transcript(data)
    messages: Sequence[Any] = data["messages"] if isinstance(data, dict) else data
    times = _message_times(messages)
    if not any(times):
        return state

    def timed(chunk: Chunk) -> Chunk:
        found = _MESSAGE_ID.match(chunk.id)
        index = int(found.group(1)) if found else -1
        when = times[index] if 0 <= index < len(times) else None
        return chunk if when is None else attrs.evolve(chunk, created_at=when)

    return MemoryState([timed(c) for c in state], thread_id=state.thread_id)


def concatenate(runs: Sequence[tuple[str, MemoryState]]) -> MemoryState:
    """Named runs as one: ids prefixed with the name, times shifted to follow each other."""
    out: list[Chunk] = []
    end: dt.datetime | None = None
    seen: dict[str, int] = {}
    for name, state in runs:
        stem = name.removesuffix(".json").removesuffix(".traj")
        seen[stem] = seen.get(stem, 0) + 1
        if seen[stem] > 1:  # the same file again: a second copy of its run
            stem = f"{stem}#{seen[stem]}"
        shift = dt.timedelta(0)
        if end is not None and len(state):
            shift = end + _GAP - state.chunks[0].created_at
        for chunk in state:
            out.append(
                attrs.evolve(chunk, id=f"{stem}:{chunk.id}", created_at=chunk.created_at + shift)
            )
        if out:
            end = max(c.created_at for c in out)
    return MemoryState(out, thread_id=None)
