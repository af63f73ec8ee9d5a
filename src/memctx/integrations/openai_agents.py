"""A session for the OpenAI Agents SDK kept in a memctx store thread.

::

    from agents import Agent, Runner
    from memctx import create_tokenizer
    from memctx.integrations.openai_agents import MemctxSession
    from memctx.store import MemoryStore

    store = MemoryStore.open("agent.db")
    session = MemctxSession("user-42", store, max_tokens=8000,
                            tokenizer=create_tokenizer("gpt-4o"))
    result = await Runner.run(agent, "What did we decide?", session=session)

Every item the SDK saves (``add_items``) becomes one chunk of the thread
``session_id``: user, system and developer messages, assistant messages,
function calls and their outputs, reasoning; anything else a ``CUSTOM`` chunk. The
item itself is kept in the chunk's ``metadata.custom["openai_agents_item"]``.

``get_items()`` — what the SDK sends the model as history — is built by memctx
under the budget: the pinned chunks, then the newest that fit, a function call
and its output kept or dropped together. ``input="items"`` (the default)
returns the SDK's own items for the chunks memctx kept, in order;
``input="messages"`` returns memctx's messages (XML grouped by role) as
``{"role", "content"}`` items, exactly what the budget counted. ``limit``
keeps the newest ``limit`` of those. The build is recorded in the thread's
events (``context.built``); :attr:`MemctxSession.last_result` is its report.

``pop_item()`` and ``clear_session()`` are view operations: they hide chunks
(a new batch) and the thread's history keeps them, so
``store.rollback(session_id, batch)`` brings them back.

Store calls run in a worker thread (``asyncio.to_thread``), so the event loop
is never blocked by the database.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from memctx._build.options import parse_build_options
from memctx._exceptions import BuildOptionError, SessionClosedError, SessionSettingsError
from memctx._result import ContextBuildResult
from memctx._validators import require_store
from memctx.integrations._agents_filter import BudgetFilter, budget_filter
from memctx.integrations._agents_items import (
    ITEM_KEY,
    item_of,
    item_to_chunk,
    plain_item,
    tool_names,
)
from memctx.store import MemoryStore

try:
    from agents.items import TResponseInputItem
    from agents.memory import SessionSettings
except ImportError as exc:  # pragma: no cover - the extra is not installed
    raise ImportError(
        "memctx.integrations.openai_agents needs the OpenAI Agents SDK: "
        "pip install 'memctx[openai-agents]'"
    ) from exc

# Sorted as sorted() sorts, which tests/test_exported_members.py checks.
__all__ = ["BudgetFilter", "ITEM_KEY", "MemctxSession", "budget_filter", "item_to_chunk"]  # noqa: RUF022


def _settings(value: object) -> SessionSettings:
    """``value`` as SessionSettings: ``None`` is the defaults, a dict is checked key by key."""
    if value is None:
        return SessionSettings()
    if isinstance(value, SessionSettings):
        return value
    if not isinstance(value, Mapping):
        raise SessionSettingsError(
            "session_settings",
            f"must be a SessionSettings or a dict, got {type(value).__name__}",
        )
    known = {field.name for field in dataclasses.fields(SessionSettings) if field.init}
    unknown = sorted(str(key) for key in value if key not in known)
    if unknown:
        raise SessionSettingsError(
            "session_settings", f"Unknown session settings: {', '.join(unknown)}"
        )
    try:
        return SessionSettings(**value)
    except ValueError as exc:  # pydantic's ValidationError
        raise SessionSettingsError("session_settings", str(exc)) from None


class MemctxSession:
    """An Agents SDK ``Session`` whose history lives in a memctx store thread.

    ``store`` is an open :class:`~memctx.store.MemoryStore` (the session does
    not close it); the thread ``session_id`` is created on first use.
    ``max_tokens`` and the other keywords are the build options of
    :meth:`memctx.ContextBuilder.build` (``tokenizer``, ``reserve_tokens``,
    ``strategy``, ``exclude_types``, ...). ``session_settings``: a
    ``SessionSettings`` or a dict of its fields (default: ``SessionSettings()``);
    its ``limit`` is the default of :meth:`get_items`.

    As the SDK's contract says: an unknown settings key raises
    :class:`~memctx.SessionSettingsError` (a ``TypeError``), an item JSON cannot
    store :class:`~memctx.ItemNotJSONError` (a ``TypeError``) with nothing stored,
    and every call after :meth:`close` :class:`~memctx.SessionClosedError` (a
    ``RuntimeError``).
    """

    session_settings: SessionSettings | None = None

    def __init__(
        self,
        session_id: str,
        store: MemoryStore,
        *,
        max_tokens: int | None = None,
        input: Literal["items", "messages"] = "items",
        session_settings: SessionSettings | Mapping[str, Any] | None = None,
        **build_options: Any,
    ) -> None:
        if input not in ("items", "messages"):
            raise BuildOptionError("input", f"must be 'items' or 'messages', got {input!r}")
        require_store(store)
        parse_build_options(max_tokens, build_options)  # bad options fail here, not later
        self.session_settings = _settings(session_settings)
        self.session_id = session_id
        self.store = store
        self.max_tokens = max_tokens
        self.input = input
        self.build_options = build_options
        self.last_result: ContextBuildResult | None = None
        self._ready = False
        self._closed = False

    def close(self) -> None:
        """Refuse every later call (the store stays open: it is not the session's)."""
        self._closed = True

    @property
    def closed(self) -> bool:
        return self._closed

    def _check_open(self) -> None:
        if self._closed:
            raise SessionClosedError(self.session_id)

    def _ensure_thread(self) -> None:
        if not self._ready:
            self.store.create_thread(self.session_id, exist_ok=True)
            self._ready = True

    # -- the Session protocol ------------------------------------------------------

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The history to send: what memctx keeps under the budget, oldest first."""
        self._check_open()
        return await asyncio.to_thread(self._get_items, limit)

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Store ``items`` as chunks, in one atomic append (all or none)."""
        self._check_open()
        await asyncio.to_thread(self._add_items, items)

    async def pop_item(self) -> TResponseInputItem | None:
        """Hide the newest visible item and return it (``None`` when there is none)."""
        self._check_open()
        return await asyncio.to_thread(self._pop_item)

    async def clear_session(self) -> None:
        """Hide every item (the thread's history keeps them)."""
        self._check_open()
        await asyncio.to_thread(self._clear)

    # -- the same, synchronously ---------------------------------------------------

    def _get_items(self, limit: int | None) -> list[TResponseInputItem]:
        if limit is not None and (type(limit) is not int or limit < 0):
            raise BuildOptionError("limit", f"must be None or an int >= 0, got {limit!r}")
        self._ensure_thread()
        if limit is None and self.session_settings is not None:
            limit = self.session_settings.limit
        result = self.store.build(self.session_id, max_tokens=self.max_tokens, **self.build_options)
        self.last_result = result
        items: list[Any]
        if self.input == "messages":
            items = [{"role": m.role, "content": m.content} for m in result.messages]
        else:
            state = self.store.get_current_state(self.session_id)
            kept = set(result.included_chunk_ids)
            items = [item_of(chunk) for chunk in state if chunk.id in kept]
        if limit is not None:
            items = items[-limit:] if limit > 0 else []
        return items

    def _add_items(self, items: Sequence[Any]) -> None:
        if not items:
            return
        plain = [plain_item(item, f"items[{i}]") for i, item in enumerate(items)]
        self._ensure_thread()
        names = tool_names(plain)
        if any(
            p.get("type") == "function_call_output" and p.get("call_id") not in names for p in plain
        ):
            for chunk in self.store.get_all_chunks(self.session_id):
                if chunk.action == "tool_call" and chunk.metadata.call_id is not None:
                    names.setdefault(chunk.metadata.call_id, chunk.metadata.tool or "function")
        self.store.append(self.session_id, *(item_to_chunk(p, names) for p in plain))

    def _pop_item(self) -> TResponseInputItem | None:
        self._ensure_thread()
        state = self.store.get_current_state(self.session_id)
        if not state:
            return None
        newest = state.chunks[-1]
        self.store.truncate(self.session_id, remove_last=1)
        item: TResponseInputItem = item_of(newest)
        return item

    def _clear(self) -> None:
        self._ensure_thread()
        if self.store.get_current_state(self.session_id):
            self.store.clear(self.session_id, keep_system=False)
