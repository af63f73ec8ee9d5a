"""Chat agents and the index of the names they answer to."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import attrs

from memctx._exceptions import ChatError, UnknownAgentError

_FORBIDDEN_IN_NAMES = "@\n\r\t\x0b\x0c\x85\u2028\u2029"


def _check_name(what: str, value: object) -> str:
    if not isinstance(value, str):
        raise ChatError(f"{what}: must be a string, got {type(value).__name__}")
    name = value.strip()
    if not name:
        raise ChatError(f"{what}: must not be empty")
    bad = sorted({c for c in name if c in _FORBIDDEN_IN_NAMES})
    if bad:
        raise ChatError(f"{what}: {name!r} must not contain {', '.join(map(repr, bad))}")
    return name


def _to_aliases(value: object) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise ChatError(f"aliases: must be a sequence of strings, got {value!r}")
    return tuple(value)


def _to_display_name(value: object) -> str:
    return _check_name("display_name", value)


def _to_id(value: object) -> str:
    if _check_name("id", value) != value or any(c.isspace() for c in str(value)):
        raise ChatError(f"id: {value!r} must be one word without spaces")
    return str(value)


@attrs.frozen
class ChatAgent:
    """One AI agent of a chat.

    ``id`` is one word (no spaces, no ``@``) that identifies the agent in
    targets, role maps and stored messages. ``display_name`` (the ``id`` when
    not given) and ``aliases`` (nicknames) are other names users may write
    after ``@``; they may hold spaces and any script, and surrounding
    whitespace is dropped. ``persona`` describes the agent to itself and to
    its colleagues.
    """

    id: str = attrs.field(converter=_to_id)
    display_name: str = attrs.field(
        default=attrs.Factory(lambda self: self.id, takes_self=True),
        converter=_to_display_name,
    )
    aliases: tuple[str, ...] = attrs.field(default=(), converter=_to_aliases)
    persona: str = attrs.field(default="")

    def __attrs_post_init__(self) -> None:
        stripped = tuple(_check_name(f"aliases[{i}]", a) for i, a in enumerate(self.aliases))
        object.__setattr__(self, "aliases", stripped)
        if not isinstance(self.persona, str):
            raise ChatError(f"persona: must be a string, got {type(self.persona).__name__}")

    @property
    def names(self) -> tuple[str, ...]:
        """Every name the agent answers to: id, display name, aliases (without repeats)."""
        return tuple(dict.fromkeys((self.id, self.display_name, *self.aliases)))

    def to_dict(self) -> dict[str, Any]:
        """The agent as a JSON object (what :meth:`from_dict` reads)."""
        return {
            "id": self.id,
            "display_name": self.display_name,
            "aliases": list(self.aliases),
            "persona": self.persona,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ChatAgent:
        """An agent from a JSON object with ``id`` and optionally the other fields."""
        if not isinstance(data, Mapping):
            raise ChatError(f"an agent must be a JSON object, got {type(data).__name__}")
        unknown = sorted(set(data) - {"id", "display_name", "aliases", "persona"})
        if unknown:
            raise ChatError(f"agent: unknown field(s) {', '.join(map(repr, unknown))}")
        if "id" not in data:
            raise ChatError("agent: 'id' is required")
        return cls(**data)


def fold(name: str) -> str:
    """The case-insensitive form names are compared in (Unicode case folding)."""
    return name.casefold()


class AgentLookup(Mapping[str, ChatAgent]):
    """Agents by every name they answer to, compared case-insensitively.

    A name is an agent's id, display name or one of its aliases; comparison
    uses Unicode case folding, so ``@CODER``, ``@coder`` and ``@Coder`` are
    one name, and names in scripts without case (Chinese, Japanese) match as
    written. Two agents may not share an id or a name: that raises
    :class:`~memctx.ChatError` naming both.
    """

    def __init__(self, agents: Iterable[ChatAgent]) -> None:
        self._agents: dict[str, ChatAgent] = {}
        self._names: dict[str, ChatAgent] = {}
        if isinstance(agents, str | bytes | Mapping) or not isinstance(agents, Iterable):
            raise ChatError(f"agents: expected a list of ChatAgent, got {type(agents).__name__}")
        for agent in agents:
            if not isinstance(agent, ChatAgent):
                raise ChatError(f"agents: expected ChatAgent, got {type(agent).__name__}")
            if agent.id in self._agents:
                raise ChatError(f"agents: two agents have the id {agent.id!r}")
            self._agents[agent.id] = agent
            for name in agent.names:
                other = self._names.setdefault(fold(name), agent)
                if other is not agent:
                    raise ChatError(
                        f"agents: the name {name!r} is used by {other.id!r} and {agent.id!r}"
                    )
        written = {len(name) for agent in self._agents.values() for name in agent.names}
        self._lengths = tuple(sorted(written | {len(key) for key in self._names}, reverse=True))

    @property
    def agents(self) -> tuple[ChatAgent, ...]:
        """The agents, in the order given."""
        return tuple(self._agents.values())

    @property
    def ids(self) -> tuple[str, ...]:
        """The agents' ids, in the order given."""
        return tuple(self._agents)

    @property
    def name_lengths(self) -> tuple[int, ...]:
        """Lengths to try when matching text, longest first.

        Those of the names as written and as folded: ``Straße`` is matched by
        ``straße`` (6 characters) and by ``STRASSE`` (7).
        """
        return self._lengths

    def agent(self, agent_id: str) -> ChatAgent:
        """The agent with this id; :class:`~memctx.UnknownAgentError` if there is none."""
        try:
            return self._agents[agent_id]
        except (KeyError, TypeError):
            raise UnknownAgentError(str(agent_id), self.ids) from None

    def by_folded_name(self, folded: str) -> ChatAgent | None:
        """The agent whose name folds to exactly ``folded`` (no stripping), or None."""
        return self._names.get(folded)

    def __getitem__(self, name: str) -> ChatAgent:
        """The agent answering to ``name`` (any case); ``KeyError`` if none does."""
        if not isinstance(name, str):
            raise KeyError(name)
        return self._names[fold(name.strip())]

    def __iter__(self) -> Iterator[str]:
        """The folded names."""
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def __repr__(self) -> str:
        return f"AgentLookup({list(self._agents)!r})"


def as_lookup(agents: AgentLookup | Iterable[ChatAgent]) -> AgentLookup:
    """``agents`` as an :class:`AgentLookup` (built when given a sequence of agents)."""
    return agents if isinstance(agents, AgentLookup) else AgentLookup(agents)
