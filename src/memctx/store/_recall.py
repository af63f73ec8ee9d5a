"""Recall for agents: a tool the model can call to search what left its context, and its handler.

::

    tools = [recall_tool("anthropic")]          # with the agent's own tools
    ...                                         # the model calls "recall" with {"query": ...}
    output = recall(store, "t1", call.input)    # the matching chunks as XML, within a token cap

:func:`recall_tool` gives the definition in each provider's shape;
:func:`recall` (and :func:`arecall` for :class:`~memctx.store.AsyncMemoryStore`)
runs :meth:`~memctx.store.MemoryStore.search` with the model's arguments and
renders the hits, best first, as the builder renders chunks in a context.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Literal

from memctx._chunk import ChunkType
from memctx._exceptions import StoreArgumentError
from memctx._render.tokens import create_tokenizer
from memctx._validators import describe, is_tokenizer
from memctx.store._search import DEFAULT_LIMIT, SearchHit

if TYPE_CHECKING:
    from memctx._build.builder import ContextBuilder
    from memctx.store._async_store import AsyncMemoryStore
    from memctx.store._store import MemoryStore
    from memctx.typing import Tokenizer

Provider = Literal["openai", "anthropic", "gemini", "responses"]

PROVIDERS: Final = ("openai", "anthropic", "gemini", "responses")
"""The shapes :func:`recall_tool` makes: OpenAI Chat Completions, Anthropic Messages, Gemini
(a function declaration), OpenAI Responses."""

MAX_RECALL_LIMIT: Final = 20
"""The most hits one recall may ask for."""

DESCRIPTION: Final = (
    "Search the earlier history of this conversation, including the messages, tool calls and "
    "tool outputs that were summarised or cleared from your context, and get the matching "
    "entries back verbatim, best match first. Use it when you need an exact detail that is no "
    "longer in front of you: an error message, a file path, a command and its output, an id. "
    "The query is plain words (no operators); entries holding the words as a phrase rank first."
)
_NAME_CHARACTERS: Final = frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-"
)
_ARGUMENTS: Final = ("query", "limit", "types")


def _schema(upper: bool) -> dict[str, Any]:
    """The parameters' JSON schema (Gemini spells its types in capitals)."""

    def kind(name: str) -> str:
        return name.upper() if upper else name

    return {
        "type": kind("object"),
        "properties": {
            "query": {
                "type": kind("string"),
                "description": "Words to look for, e.g. an error message or a file name.",
            },
            "limit": {
                "type": kind("integer"),
                "description": f"How many entries at most (default {DEFAULT_LIMIT}).",
                "minimum": 1,
                "maximum": MAX_RECALL_LIMIT,
            },
            "types": {
                "type": kind("array"),
                "description": "Only entries of these kinds (ENVIRONMENT: tool outputs; "
                "WORKFLOW: tool calls; AGENT: messages). Default: every kind.",
                "items": {"type": kind("string"), "enum": [t.value for t in ChunkType]},
            },
        },
        "required": ["query"],
    }


def recall_tool(provider: Provider = "openai", *, name: str = "recall") -> dict[str, Any]:
    """The recall tool's definition for ``provider``, to put in the request's tools.

    ``openai``: ``{"type": "function", "function": {...}}``; ``responses``:
    ``{"type": "function", "name": ..., "parameters": ..., "strict": False}``;
    ``anthropic``: ``{"name", "description", "input_schema"}``; ``gemini``: a
    function declaration (``{"name", "description", "parameters"}``, to put in a
    tool's ``function_declarations``). Its arguments are ``query`` (required),
    ``limit`` and ``types``, which :func:`recall` takes. A fresh dict each call.
    """
    if provider not in PROVIDERS:
        raise StoreArgumentError(
            f"unknown provider {describe(provider)}; recall_tool knows {', '.join(PROVIDERS)}"
        )
    if not isinstance(name, str) or not 1 <= len(name) <= 64 or not set(name) <= _NAME_CHARACTERS:
        raise StoreArgumentError(
            f"a tool name is 1 to 64 letters, digits, '_' or '-', got {describe(name)}"
        )
    if provider == "openai":
        function = {"name": name, "description": DESCRIPTION, "parameters": _schema(False)}
        return {"type": "function", "function": function}
    if provider == "responses":
        return {
            "type": "function",
            "name": name,
            "description": DESCRIPTION,
            "parameters": _schema(False),
            "strict": False,
        }
    if provider == "anthropic":
        return {"name": name, "description": DESCRIPTION, "input_schema": _schema(False)}
    return {"name": name, "description": DESCRIPTION, "parameters": _schema(True)}


def recall_arguments(given: object) -> tuple[str, int, list[str] | None]:
    """The model's arguments (a mapping, or its JSON text) as ``(query, limit, types)``."""
    arguments = given
    if isinstance(given, bytes | bytearray):
        given = bytes(given).decode("utf-8", "replace")
    if isinstance(given, str):
        try:
            arguments = json.loads(given)
        except (ValueError, RecursionError):
            raise StoreArgumentError(f"recall arguments are not JSON: {given[:80]!r}") from None
    if not isinstance(arguments, Mapping):
        raise StoreArgumentError(
            f"recall arguments must be a JSON object, got {describe(arguments)}"
        )
    unknown = sorted(str(k) for k in arguments if k not in _ARGUMENTS)
    if unknown:
        raise StoreArgumentError(
            f"recall takes {', '.join(_ARGUMENTS)}; unknown argument {', '.join(unknown)}"
        )
    query = arguments.get("query")
    if not isinstance(query, str) or not query.strip():
        raise StoreArgumentError(f"recall needs a query (text), got {describe(query)}")
    limit = arguments.get("limit", DEFAULT_LIMIT)
    if limit is None:
        limit = DEFAULT_LIMIT
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_RECALL_LIMIT:
        raise StoreArgumentError(
            f"recall's limit must be an integer from 1 to {MAX_RECALL_LIMIT}, got {describe(limit)}"
        )
    types = arguments.get("types")
    if types is not None and (
        not isinstance(types, Sequence)
        or isinstance(types, str)
        or not all(isinstance(t, str) for t in types)
    ):
        raise StoreArgumentError(f"recall's types must be a list of kinds, got {describe(types)}")
    return query, limit, None if not types else list(types)


def render_hits(
    hits: Sequence[SearchHit],
    query: str,
    builder: ContextBuilder,
    max_tokens: int,
    tokenizer: Tokenizer | None,
) -> str:
    """The hits as XML, best first, as many whole ones as fit ``max_tokens``.

    A first hit bigger than the cap is cut to fit, with a line saying so;
    the hits left out are counted in a last line.
    """
    if not hits:
        return f"No earlier entry matches {query!r}."
    counter = tokenizer if tokenizer is not None else create_tokenizer("estimate")
    parts: list[str] = []
    used = 0
    for hit in hits:
        xml = builder.render(hit.chunk)[1]
        tokens = counter.count(xml) + (1 if parts else 0)
        if used + tokens > max_tokens:
            if not parts:
                parts.append(_cut(xml, max_tokens, counter))
                used = max_tokens
                continue
            break
        parts.append(xml)
        used += tokens
    left = len(hits) - len(parts)
    if left:
        parts.append(
            f"[{left} more matching {'entry' if left == 1 else 'entries'} left out: "
            f"over the {max_tokens}-token recall cap]"
        )
    return "\n".join(parts)


def _cut(xml: str, max_tokens: int, counter: Tokenizer) -> str:
    """The longest head of ``xml`` that fits ``max_tokens`` with the cut marker after it."""
    marker = f"\n[cut: this entry is longer than the {max_tokens}-token recall cap]"
    room = max_tokens - counter.count(marker)
    low, high = 0, len(xml)
    while low < high:  # the longest prefix whose count fits the room left
        middle = (low + high + 1) // 2
        if counter.count(xml[:middle]) <= room:
            low = middle
        else:
            high = middle - 1
    return xml[:low] + marker


def _check_cap(max_tokens: object, tokenizer: object, builder: object) -> int:
    from memctx._build.builder import ContextBuilder

    if builder is not None and not isinstance(builder, ContextBuilder):
        raise StoreArgumentError(
            f"recall's builder must be a ContextBuilder, got {describe(builder)}"
        )
    if tokenizer is not None and not is_tokenizer(tokenizer):
        raise StoreArgumentError(
            f"recall's tokenizer must be a Tokenizer, got {describe(tokenizer)}"
        )
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 50:
        raise StoreArgumentError(
            f"recall's max_tokens must be an int of at least 50, got {describe(max_tokens)}"
        )
    return max_tokens


def recall(
    store: MemoryStore,
    thread_id: str,
    arguments: Mapping[str, Any] | str,
    *,
    max_tokens: int = 2000,
    tokenizer: Tokenizer | None = None,
    visible: bool | None = None,
    builder: ContextBuilder | None = None,
) -> str:
    """Run the model's recall call on ``thread_id``: the matching chunks rendered as XML.

    ``arguments`` are the call's (a mapping, or the JSON text OpenAI sends).
    The hits of :meth:`~memctx.store.MemoryStore.search` are rendered by the
    store's builder, best first, as many whole ones as fit ``max_tokens``
    (counted by ``tokenizer``, by default the chars/4 estimate); a first hit
    bigger than that is cut, with a line saying so. Nothing found gives a
    one-line answer. ``visible=False`` recalls only what the current view
    hides. ``builder`` renders the hits (default: the store's; give the one
    that builds the agent's context, so recalled entries read alike). Bad
    arguments raise :class:`~memctx.StoreArgumentError`, whose message can go
    back to the model as the tool's error.
    """
    cap = _check_cap(max_tokens, tokenizer, builder)
    query, limit, types = recall_arguments(arguments)
    hits = store.search(thread_id, query, limit=limit, types=types, visible=visible)
    return render_hits(hits, query, store.builder if builder is None else builder, cap, tokenizer)


async def arecall(
    store: AsyncMemoryStore,
    thread_id: str,
    arguments: Mapping[str, Any] | str,
    *,
    max_tokens: int = 2000,
    tokenizer: Tokenizer | None = None,
    visible: bool | None = None,
    builder: ContextBuilder | None = None,
) -> str:
    """:func:`recall` for an :class:`~memctx.store.AsyncMemoryStore`."""
    cap = _check_cap(max_tokens, tokenizer, builder)
    query, limit, types = recall_arguments(arguments)
    hits = await store.search(thread_id, query, limit=limit, types=types, visible=visible)
    return render_hits(hits, query, store.builder if builder is None else builder, cap, tokenizer)
