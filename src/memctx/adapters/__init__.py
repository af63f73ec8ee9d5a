"""Provider adapters: one build, each provider's request shape.

The state and the build are provider-agnostic; these functions turn a
:class:`~memctx.ContextBuildResult` (or its messages) into what each SDK's
call takes, and meet each provider's documented rules:

- :func:`to_openai` -- ``client.chat.completions.create(model=..., messages=...)``
- :func:`to_responses` -- ``client.responses.create(model=..., input=...)``
- :func:`to_anthropic` -- ``client.messages.create(model=..., max_tokens=..., **...)``
- :func:`to_gemini` -- ``client.models.generate_content(model=..., **...)``
- :func:`to_langchain` -- LangChain message objects (``memctx[langchain]``)
- :func:`to_text` -- a readable form for logs

Each takes ``tools="native"`` (the default: calls and results as the
provider's own structures, and images, documents and signed reasoning as the
provider's own blocks where it takes them; see ``docs/providers-fidelity.md``)
or ``tools="text"`` (every chunk as its XML text, as built; an image or
document as a short placeholder element). A call is sent natively when its
``call_id`` is unique, its arguments are a JSON object (or ``None``, sent as
``{}``) and exactly one result is included, in the very next message; any
other call stays XML text with its results, so a native call never goes
without its result. :func:`tool_mapping` reports the ids and
names sent. A request with nothing to send raises
:class:`~memctx.EmptyContextError`.

Token counts: ``result.token_count`` counts the messages as built (the text
form, ``result.tools_counted == "text"``) plus each image's and document's
cost by the formula of the build's ``provider``; a build with
``provider="openai"`` counts the native chat request instead
(``tools_counted == "native"``; see :class:`~memctx.BuildOptions`). A build
with ``provider="anthropic"`` or ``"gemini"`` also counts the user turns
that adapter adds, with the texts and ``prefill`` given to the build
(``opening_turn=``, ``closing_turn=``, ``prefill=``; the result keeps them
as ``result.turn_options``, and its adapters send exactly those turns --
a different one given to the adapter raises :class:`~memctx.TurnMismatchError`).

``to_anthropic(cache=True)`` adds ``cache_control`` breakpoints on the stable
prefix (the system prompt, and the messages the previous request sent or the
next one will repeat; see "Prompt caching" in docs/strategies-and-caching.md).
For Anthropic and Gemini a native request is counted as its text form (no
published formula gives the size of their tool blocks; the count is marked
inexact anyway, the tokenizer being a stand-in).
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
from memctx.adapters._responses import to_responses
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
    "to_responses",
    "to_text",
    "tool_mapping",
]
