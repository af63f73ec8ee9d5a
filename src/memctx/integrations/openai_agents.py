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
import json
from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal

from memctx import chunks
from memctx._build.options import parse_build_options
from memctx._chunk import Chunk
from memctx._exceptions import BuildOptionError, TranscriptError
from memctx._result import ContextBuildResult
from memctx._validators import require_store
from memctx.store import MemoryStore

try:
    from agents.items import TResponseInputItem
    from agents.memory import SessionSettings
except ImportError as exc:  # pragma: no cover - the extra is not installed
    raise ImportError(
        "memctx.integrations.openai_agents needs the OpenAI Agents SDK: "
        "pip install 'memctx[openai-agents]'"
    ) from exc

__all__ = ["ITEM_KEY", "MemctxSession", "item_to_chunk"]

ITEM_KEY: Final = "openai_agents_item"
"""Key of ``metadata.custom`` under which a chunk keeps the SDK item it came from."""


def _text(content: Any) -> str | None:
    """The text of a message's content: a string, or a list of text parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence) and content:
        texts = []
        for part in content:
            if not isinstance(part, Mapping) or not isinstance(part.get("text"), str):
                return None
            texts.append(part["text"])
        return "".join(texts)
    return None


def _arguments(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw


def _plain(item: Any) -> dict[str, Any]:
    """The item as a plain JSON object (the SDK may hand over pydantic models)."""
    if hasattr(item, "model_dump"):
        item = item.model_dump(exclude_unset=True)
    result = json.loads(json.dumps(item, default=str))
    if not isinstance(result, dict):
        raise TranscriptError(f"an input item must be an object, got {type(item).__name__}")
    return result


def item_to_chunk(item: Any, tool_names: Mapping[str, str] | None = None) -> Chunk:
    """The memctx chunk for one Agents SDK input item (the item kept in its metadata).

    ``tool_names`` maps call ids to function names, to name the tool of a
    ``function_call_output`` (which does not carry it).
    """
    raw = _plain(item)
    keep = {ITEM_KEY: raw}
    kind = raw.get("type", "message")
    role = raw.get("role")
    if kind == "message" and role in ("user", "system", "developer", "assistant"):
        text = _text(raw.get("content"))
        if text is not None:
            if role == "user":
                return chunks.user(text, custom=keep)
            if role == "assistant":
                return chunks.assistant(text, custom=keep)
            return chunks.system(text, custom=keep)
    if kind == "function_call":
        return chunks.tool_call(
            str(raw.get("name", "function")),
            _arguments(raw.get("arguments")),
            call_id=str(raw.get("call_id")),
            status="completed",
            custom=keep,
        )
    if kind == "function_call_output":
        call_id = str(raw.get("call_id"))
        output = raw.get("output")
        name = (tool_names or {}).get(call_id, "function")
        return chunks.tool_result(
            name,
            output if isinstance(output, str) else json.dumps(output),
            call_id=call_id,
            custom=keep,
        )
    if kind == "reasoning":
        summary = raw.get("summary") or []
        text = "\n".join(str(s.get("text", "")) for s in summary if isinstance(s, Mapping))
        return chunks.thinking(text or "(reasoning)", custom=keep)
    content = raw.get("content")
    return chunks.custom(
        f"openai_{kind}",
        content if content is not None else raw,
        role="assistant" if role == "assistant" else "user",
        custom=keep,
    )


class MemctxSession:
    """An Agents SDK ``Session`` whose history lives in a memctx store thread.

    ``store`` is an open :class:`~memctx.store.MemoryStore` (the session does
    not close it); the thread ``session_id`` is created on first use.
    ``max_tokens`` and the other keywords are the build options of
    :meth:`memctx.ContextBuilder.build` (``tokenizer``, ``reserve_tokens``,
    ``strategy``, ``exclude_types``, ...).
    """

    session_settings: SessionSettings | None = None

    def __init__(
        self,
        session_id: str,
        store: MemoryStore,
        *,
        max_tokens: int | None = None,
        input: Literal["items", "messages"] = "items",
        session_settings: SessionSettings | None = None,
        **build_options: Any,
    ) -> None:
        if input not in ("items", "messages"):
            raise BuildOptionError("input", f"must be 'items' or 'messages', got {input!r}")
        require_store(store)
        parse_build_options(max_tokens, build_options)  # bad options fail here, not later
        self.session_id = session_id
        self.store = store
        self.max_tokens = max_tokens
        self.input = input
        self.build_options = build_options
        self.session_settings = session_settings
        self.last_result: ContextBuildResult | None = None
        self._ready = False

    def _ensure_thread(self) -> None:
        if not self._ready:
            self.store.create_thread(self.session_id, exist_ok=True)
            self._ready = True

    # -- the Session protocol ------------------------------------------------------

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The history to send: what memctx keeps under the budget, oldest first."""
        return await asyncio.to_thread(self._get_items, limit)

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Store ``items`` as chunks, in one atomic append."""
        await asyncio.to_thread(self._add_items, items)

    async def pop_item(self) -> TResponseInputItem | None:
        """Hide the newest visible item and return it (``None`` when there is none)."""
        return await asyncio.to_thread(self._pop_item)

    async def clear_session(self) -> None:
        """Hide every item (the thread's history keeps them)."""
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
            items = [_item_of(chunk) for chunk in state if chunk.id in kept]
        if limit is not None:
            items = items[-limit:] if limit > 0 else []
        return items

    def _add_items(self, items: Sequence[Any]) -> None:
        if not items:
            return
        self._ensure_thread()
        plain = [_plain(item) for item in items]
        names = {
            str(p.get("call_id")): str(p.get("name"))
            for p in plain
            if p.get("type") == "function_call"
        }
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
        item: TResponseInputItem = _item_of(newest)
        return item

    def _clear(self) -> None:
        self._ensure_thread()
        if self.store.get_current_state(self.session_id):
            self.store.clear(self.session_id, keep_system=False)


def _item_of(chunk: Chunk) -> Any:
    """The SDK item a chunk was made from; a chunk made elsewhere becomes a message."""
    item = chunk.metadata.custom.get(ITEM_KEY)
    if item is not None:
        from memctx._json import thaw_json

        return thaw_json(item)
    role = "assistant" if chunk.role == "assistant" else "user"
    return {"role": role, "content": chunk.text}
