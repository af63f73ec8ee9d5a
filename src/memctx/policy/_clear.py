"""ClearToolUses: replace old tool outputs by a short placeholder, in blocks.

Learnt from Anthropic's ``clear_tool_uses_20250919`` context edit and LangChain's
``ClearToolUsesEdit``: the oldest tool results are the cheapest thing to forget (the
agent can run the tool again, or recall the output), and the call stays, so the model
still sees what it did. memctx keeps the call and its ``call_id``; the result becomes a
new chunk whose content is the placeholder and whose ``metadata.derived_from`` names the
output it stands for (the store keeps the original: rollback and recall find it).

Used alone (``compress(state, [ClearToolUses()])``) it clears every output but the
newest ``keep_recent``. Inside a :class:`~memctx.policy.ContextPolicy` it runs only
when its trigger is reached, and then clears all it may at once, so the request then
grows only at its end until the next time: one cache break per clearing.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

import attrs

from memctx._chunk import Chunk, ChunkType
from memctx._exceptions import PolicyError
from memctx._state import MemoryState
from memctx._units import history_shape
from memctx.compress._call_facts import call_outcome
from memctx.compress._compressors import derived_chunk, is_tool_output

CLEARED_KIND: Final = "cleared"
"""The ``kind`` part of a cleared chunk's id (``<id>.cleared-<digest>``)."""

_CALL_ACTIONS: Final = ("tool_call", "skill_call")


def _tool_names(value: Iterable[str]) -> frozenset[str]:
    if isinstance(value, str):
        raise PolicyError("exclude_tools", "must be a list of tool names, not one string")
    try:
        names = frozenset(value)
    except TypeError:
        raise PolicyError("exclude_tools", f"must be a list of tool names, got {value!r}") from None
    for name in names:
        if not isinstance(name, str) or not name:
            raise PolicyError("exclude_tools", f"tool names must be non-empty strings: {name!r}")
    return names


def check_amount(option: str, value: object, *, allow_none: bool = True) -> float | int | None:
    """A trigger or size: ``None`` (when allowed), a fraction in (0, 1], or tokens (int >= 1)."""
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise PolicyError(
            option, f"must be a fraction of the budget or a token count, got {value!r}"
        )
    if isinstance(value, float):
        if not 0 < value <= 1:
            raise PolicyError(option, f"a fraction of the budget must be in (0, 1], got {value!r}")
        return value
    if value < 1:
        raise PolicyError(option, f"a token count must be >= 1, got {value!r}")
    return value


def resolve_amount(value: float | int, budget: int) -> int:
    """Tokens of a fraction of ``budget``, or the token count itself."""
    return int(value * budget) if isinstance(value, float) else value


def _non_negative(option: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise PolicyError(option, f"must be an int >= 0, got {value!r}")
    return value


def is_cleared(chunk: Chunk) -> bool:
    """Whether ``chunk`` is a placeholder :class:`ClearToolUses` made."""
    derived = chunk.metadata.derived_from
    return bool(derived) and f".{CLEARED_KIND}-" in chunk.id


@attrs.frozen
class ClearToolUses:
    """Clear old tool and skill outputs, keeping their calls.

    ``keep_recent``: the newest outputs kept whole. ``placeholder``: the text a
    cleared output becomes. ``exclude_tools``: tools whose outputs are never
    cleared. ``clear_inputs``: also replace the call's arguments by
    ``{"cleared": placeholder}``. ``clear_at_least``: tokens a clearing must save,
    or it is not done (a clearing breaks the prompt cache after its first change).
    ``keep_errors``: a failed output's placeholder keeps its exit status and its error
    line (``<returncode>1</returncode>``, the line, then the placeholder), so the request
    still says what went wrong; an output with an exit status keeps it too
    (``<returncode>0</returncode>``, then the placeholder), so a later summary still says
    how each command ended. ``trigger``: when a
    :class:`~memctx.policy.ContextPolicy` clears, as a fraction
    of its budget or in tokens (``None``: at the compaction trigger, else at 0.8).
    A call still waiting for its result is never touched, nor are SYSTEM and
    pinned chunks.
    """

    keep_recent: int = 3
    placeholder: str = "[output cleared]"
    exclude_tools: frozenset[str] = attrs.field(default=frozenset(), converter=_tool_names)
    clear_inputs: bool = False
    clear_at_least: int = 0
    trigger: float | int | None = None
    keep_errors: bool = True

    def __attrs_post_init__(self) -> None:
        _non_negative("keep_recent", self.keep_recent)
        _non_negative("clear_at_least", self.clear_at_least)
        if not isinstance(self.placeholder, str) or not self.placeholder.strip():
            raise PolicyError("placeholder", f"must be non-empty text, got {self.placeholder!r}")
        if self.clear_inputs is not True and self.clear_inputs is not False:
            raise PolicyError("clear_inputs", f"must be True or False, got {self.clear_inputs!r}")
        check_amount("trigger", self.trigger)
        if self.keep_errors is not True and self.keep_errors is not False:
            raise PolicyError("keep_errors", f"must be True or False, got {self.keep_errors!r}")

    @property
    def params(self) -> dict[str, Any]:
        """This clearing's settings (as :func:`memctx.compress.compress` reports them)."""
        return {
            "name": "ClearToolUses",
            "keep_recent": self.keep_recent,
            "placeholder": self.placeholder,
            "exclude_tools": sorted(self.exclude_tools),
            "clear_inputs": self.clear_inputs,
            "clear_at_least": self.clear_at_least,
            "keep_errors": self.keep_errors,
        }

    def candidates(self, chunks: tuple[Chunk, ...]) -> list[int]:
        """Positions of the outputs this clearing would clear, oldest first."""
        outputs = [
            i
            for i, chunk in enumerate(chunks)
            if is_tool_output(chunk)
            and (chunk.metadata.tool or chunk.metadata.skill) not in self.exclude_tools
        ]
        old = outputs[: max(len(outputs) - self.keep_recent, 0)]
        if not old:
            return []
        protected = history_shape(chunks).protected
        return [i for i in old if i not in protected and not is_cleared(chunks[i])]

    def placeholder_for(self, output: Chunk) -> str:
        """The text ``output`` becomes: the placeholder, with the error line of a failure."""
        if not self.keep_errors:
            return self.placeholder
        outcome, error = call_outcome([output])
        status = outcome.split(",")[0]
        code = status.removeprefix("exit ") if status.startswith("exit ") else None
        # In the shape of a tool output, so that a summary of the cleared output still
        # finds its exit status (a success's too) and error line.
        head = "" if code is None else f"<returncode>{code}</returncode>\n"
        if error is None:
            return f"{head}{self.placeholder}"
        return f"{head}{error}\n{self.placeholder}"

    def __call__(self, state: MemoryState) -> MemoryState:
        chunks = state.chunks
        positions = self.candidates(chunks)
        if not positions:
            return state
        replaced: dict[int, Chunk] = {}
        for position in positions:
            text = self.placeholder_for(chunks[position])
            replaced[position] = derived_chunk(chunks[position], text, CLEARED_KIND)
        if self.clear_inputs:
            cleared_ids = {chunks[p].metadata.call_id for p in positions} - {None}
            for position, chunk in enumerate(chunks):
                if (
                    chunk.type is ChunkType.WORKFLOW
                    and chunk.action in _CALL_ACTIONS
                    and chunk.metadata.call_id in cleared_ids
                    and chunk.content != {"cleared": self.placeholder}
                ):
                    replaced[position] = _cleared_call(chunk, self.placeholder)
        return MemoryState(
            (replaced.get(i, chunk) for i, chunk in enumerate(chunks)), thread_id=state.thread_id
        )


def _cleared_call(chunk: Chunk, placeholder: str) -> Chunk:
    stand_in = derived_chunk(chunk, placeholder, CLEARED_KIND)
    return attrs.evolve(stand_in, content={"cleared": placeholder})
