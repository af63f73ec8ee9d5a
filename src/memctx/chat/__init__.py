"""Chat routing: which agents answer a message, and what each one is prompted with.

::

    from memctx.chat import ChatAgent, AgentLookup, parse_mentions, build_chat_context

    agents = [ChatAgent("coder", "Coder Cat", aliases=("cc", "程序猫")), ChatAgent("reviewer")]
    parse_mentions("@cc please fix it", AgentLookup(agents))
    # Mentions(agent_ids=('coder',), clean_text='please fix it')
    context = build_chat_context("@cc please fix it", history, agents, "free_chat")
    context.targets.agent_ids, context.prompt_user_text, context.prompt_history

In the free modes (``free_chat``, ``werewolf``, ``quiz``) the mentioned
agents answer, or all of them; in the ``workflow`` mode the agents take turns
along ``coder -> reviewer -> tester``. :class:`ChatSession` keeps a session in
a :class:`~memctx.store.MemoryStore` thread, safe with several processes.
"""

from memctx._exceptions import ChatError, UnknownAgentError
from memctx.chat._agents import AgentLookup, ChatAgent
from memctx.chat._context import ChatContext, build_chat_context
from memctx.chat._history import (
    DEFAULT_WINDOW,
    FOLLOW_UPS_HEADING,
    ChatMessage,
    prompt_history,
    workflow_task_prompt,
)
from memctx.chat._mentions import Mentions, parse_mentions
from memctx.chat._modes import (
    FREE_MODES,
    MODES,
    WORKFLOW,
    WORKFLOW_CHAIN,
    ModeState,
    Targets,
    select_targets,
)
from memctx.chat._session import ChatRound, ChatSession
from memctx.chat._settings import ChatSettings

__all__ = [
    "DEFAULT_WINDOW",
    "FOLLOW_UPS_HEADING",
    "FREE_MODES",
    "MODES",
    "WORKFLOW",
    "WORKFLOW_CHAIN",
    "AgentLookup",
    "ChatAgent",
    "ChatContext",
    "ChatError",
    "ChatMessage",
    "ChatRound",
    "ChatSession",
    "ChatSettings",
    "Mentions",
    "ModeState",
    "Targets",
    "UnknownAgentError",
    "build_chat_context",
    "parse_mentions",
    "prompt_history",
    "select_targets",
    "workflow_task_prompt",
]
