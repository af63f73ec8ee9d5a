"""Chat modes, the workflow chain, and which agents answer a round."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

import attrs

from memctx._exceptions import ChatError, UnknownAgentError
from memctx.chat._agents import AgentLookup, ChatAgent, as_lookup
from memctx.chat._mentions import Mentions

WORKFLOW: Final = "workflow"
"""The mode in which agents take turns along :data:`WORKFLOW_CHAIN`."""

FREE_MODES: Final = ("free_chat", "werewolf", "quiz")
"""The modes in which mentioned agents answer, or all agents when none is mentioned."""

MODES: Final = (*FREE_MODES, WORKFLOW)
"""Every mode."""

WORKFLOW_CHAIN: Final = ("coder", "reviewer", "tester")
"""The workflow's nodes, in the order they take turns."""

RoleMap = Mapping[str, str | Sequence[str]]
"""A workflow node's name -> the id of the agent (or the ids of the agents) playing it."""


def check_mode(mode: object) -> str:
    """``mode`` if it is one of :data:`MODES`; else :class:`~memctx.ChatError` listing them."""
    if mode not in MODES:
        raise ChatError(f"mode: unknown mode {mode!r}; the modes are {', '.join(MODES)}")
    assert isinstance(mode, str)
    return mode


def _validate_node(instance: ModeState, attribute: attrs.Attribute[str], value: object) -> None:
    if value not in WORKFLOW_CHAIN:
        raise ChatError(
            f"mode_state.current_node: unknown node {value!r}; "
            f"the nodes are {', '.join(WORKFLOW_CHAIN)}"
        )


def _validate_cycles(instance: ModeState, attribute: attrs.Attribute[int], value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ChatError(f"mode_state.cycles: must be an integer >= 0, got {value!r}")


@attrs.frozen
class ModeState:
    """Where a workflow stands: the node whose turn is next, and the chains completed.

    After the ``tester``'s turn the chain starts again at the ``coder`` and
    ``cycles`` counts one more.
    """

    current_node: str = attrs.field(default=WORKFLOW_CHAIN[0], validator=_validate_node)
    cycles: int = attrs.field(default=0, validator=_validate_cycles)

    def advanced(self) -> ModeState:
        """The state after the current node's turn."""
        position = WORKFLOW_CHAIN.index(self.current_node) + 1
        if position == len(WORKFLOW_CHAIN):
            return ModeState(WORKFLOW_CHAIN[0], self.cycles + 1)
        return ModeState(WORKFLOW_CHAIN[position], self.cycles)

    def to_dict(self) -> dict[str, Any]:
        """The state as a JSON object (what :meth:`from_dict` reads)."""
        return {"current_node": self.current_node, "cycles": self.cycles}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ModeState:
        """A state from a JSON object; missing fields take their defaults."""
        if not isinstance(data, Mapping):
            raise ChatError(f"mode_state: must be a JSON object, got {type(data).__name__}")
        unknown = sorted(str(key) for key in data if key not in ("current_node", "cycles"))
        if unknown:
            raise ChatError(f"mode_state: unknown key(s) {', '.join(map(repr, unknown))}")
        return cls(**data)


def as_mode_state(value: ModeState | Mapping[str, Any] | None) -> ModeState:
    """``value`` as a :class:`ModeState`: ``None`` is the start of the chain."""
    if value is None:
        return ModeState()
    if isinstance(value, ModeState):
        return value
    return ModeState.from_dict(value)


@attrs.frozen
class Targets:
    """The agents that answer a round, and the mode state to save after it.

    ``node`` is the workflow node the agents play in this round (``None``
    outside the workflow mode).
    """

    agent_ids: tuple[str, ...]
    mode_state: ModeState | None
    node: str | None = None


def _workflow_agents(node: str, role_map: RoleMap | None, lookup: AgentLookup) -> tuple[str, ...]:
    if role_map is None:
        if node in lookup.ids:
            return (node,)
        raise ChatError(
            f"role_map: no agent plays {node!r}: give a role_map, or an agent with the id {node!r}"
        )
    if not isinstance(role_map, Mapping):
        raise ChatError(f"role_map: must be a mapping, got {type(role_map).__name__}")
    unknown = sorted(str(key) for key in role_map if key not in WORKFLOW_CHAIN)
    if unknown:
        raise ChatError(
            f"role_map: unknown node(s) {', '.join(map(repr, unknown))}; "
            f"the nodes are {', '.join(WORKFLOW_CHAIN)}"
        )
    if node not in role_map:
        raise ChatError(f"role_map: no agent plays {node!r}")
    value = role_map[node]
    ids = (value,) if isinstance(value, str) else tuple(value)
    if not ids:
        raise ChatError(f"role_map[{node!r}]: names no agent")
    for agent_id in ids:
        if agent_id not in lookup.ids:
            raise UnknownAgentError(str(agent_id), lookup.ids, f"role_map[{node!r}]")
    return tuple(dict.fromkeys(ids))


def select_targets(
    mode: str,
    mentions: Mentions | Sequence[str] | None,
    agents: AgentLookup | Iterable[ChatAgent],
    role_map: RoleMap | None = None,
    mode_state: ModeState | Mapping[str, Any] | None = None,
) -> Targets:
    """The agents that answer this round, by ``mode``.

    In the free modes (:data:`FREE_MODES`) the mentioned agents answer, in
    the order they were mentioned; with no mention, every agent, in the
    order of ``agents``. ``mode_state`` is handed back unchanged.

    In the ``workflow`` mode mentions are ignored: the agent(s) that
    ``role_map`` assigns to ``mode_state.current_node`` answer (``None`` is
    the start of the chain; without a ``role_map`` the agent whose id is the
    node's name), and ``Targets.mode_state`` is the state after their turn,
    along :data:`WORKFLOW_CHAIN` — save it for the next round.
    """
    lookup = as_lookup(agents)
    if not lookup.ids:
        raise ChatError("agents: a chat needs at least one agent")
    if check_mode(mode) == WORKFLOW:
        state = as_mode_state(mode_state)
        chosen = _workflow_agents(state.current_node, role_map, lookup)
        return Targets(chosen, state.advanced(), state.current_node)
    mentioned = mentions.agent_ids if isinstance(mentions, Mentions) else tuple(mentions or ())
    for agent_id in mentioned:
        if agent_id not in lookup.ids:
            raise UnknownAgentError(str(agent_id), lookup.ids, "mentions")
    if mode_state is not None and not isinstance(mode_state, ModeState):
        mode_state = as_mode_state(mode_state)
    return Targets(tuple(dict.fromkeys(mentioned)) or lookup.ids, mode_state)
