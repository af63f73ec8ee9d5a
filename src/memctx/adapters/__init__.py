"""Provider adapters: one build, each provider's request shape.

The state and the build are provider-agnostic; these functions turn a
:class:`~memctx.ContextBuildResult` (or its messages) into what each SDK's
call takes, and meet each provider's documented rules:

- :func:`to_openai` -- ``client.chat.completions.create(model=..., messages=...)``
- :func:`to_anthropic` -- ``client.messages.create(model=..., max_tokens=..., **...)``
- :func:`to_gemini` -- ``client.models.generate_content(model=..., **...)``
- :func:`to_langchain` -- LangChain message objects (``memctx[langchain]``)
- :func:`to_text` -- a readable form for logs

Each takes ``tools="text"`` (the default: calls and results are XML text, as
built) or ``tools="native"`` (calls and results as the provider's own
structures). A call is sent natively when its ``call_id`` is unique, its
arguments are a JSON object and exactly one result is included, in the very
next message; any other call stays XML text with its results, so a native
call never goes without its result. :func:`tool_mapping` reports the ids and
names sent. A request with nothing to send raises
:class:`~memctx.EmptyContextError`.

Token counts: ``result.token_count`` counts the messages as built (the text
form). A build with ``provider="anthropic"`` or ``"gemini"`` also counts the
user turns that adapter adds, with the texts and ``prefill`` given to the
build (``opening_turn=``, ``closing_turn=``, ``prefill=``; the result keeps
them as ``result.turn_options``, and its adapters send exactly those turns --
a different one given to the adapter raises :class:`~memctx.TurnMismatchError`).

``to_anthropic(cache=True)`` adds ``cache_control`` breakpoints on the stable
prefix (the system prompt, and the messages the previous request sent or the
next one will repeat; see "Prompt caching" in docs/strategies-and-caching.md).
A native request is a different text (no XML around calls and results, the
provider's own tool format instead) whose size no published formula gives,
so it is not counted; expect it near the text form's count.
"""

from memctx._build.turns import (
    CLOSING_TURN,
    OPENING_TURN,
    PROVIDERS,
    AddedTurns,
    Provider,
    TurnOptions,
    added_turns,
)
from memctx._exceptions import AdapterError, EmptyContextError, TurnMismatchError
from memctx.adapters._anthropic import DECLARED_TOOL_DESCRIPTION, to_anthropic
from memctx.adapters._checks import TOOL_MODES
from memctx.adapters._conversation import ToolMapping, ToolMode, tool_mapping
from memctx.adapters._gemini import to_gemini
from memctx.adapters._langchain import to_langchain
from memctx.adapters._openai import to_openai
from memctx.adapters._text import to_text

__all__ = [
    "CLOSING_TURN",
    "DECLARED_TOOL_DESCRIPTION",
    "OPENING_TURN",
    "PROVIDERS",
    "TOOL_MODES",
    "AdapterError",
    "AddedTurns",
    "EmptyContextError",
    "Provider",
    "ToolMapping",
    "ToolMode",
    "TurnMismatchError",
    "TurnOptions",
    "added_turns",
    "to_anthropic",
    "to_gemini",
    "to_langchain",
    "to_openai",
    "to_text",
    "tool_mapping",
]
