"""Team conversations: several AI agents and people in one conversation.

::

    from memctx.team import Speaker, TeamConversation

    team = TeamConversation(window_size=5)
    team.set_team_task("Fix the retry cap in src/main.ts and get it reviewed.")
    team.add_message("Coder, please fix it. [NEXT:coder]",
                     speaker=Speaker("lena", "Lena", "human"), addressees=("coder",))
    ctx = team.context_for_agent("coder", "claude")
    out = team.assemble_prompt("claude", ctx)     # out.prompt, out.system_flag
    result = team.build_for_agent("coder", max_tokens=8000)

Each agent about to answer gets the latest message as its current message,
the few messages before it as context (routing markers stripped, an AI's
repeat left out), the team task and its instructions, laid out the way its
kind of agent reads best. :meth:`TeamConversation.open` keeps a conversation
in a store thread shared by several processes.
"""

from memctx._exceptions import TeamMessageError
from memctx.team._agent_types import normalize_agent_type
from memctx.team._assemblers import (
    ClaudeContextAssembler,
    CodexContextAssembler,
    ContextAssembler,
    GeminiContextAssembler,
    PlainTextAssembler,
)
from memctx.team._build import TEAM_TASK_CHUNK_ID, TeamMessageRenderer
from memctx.team._conversation import TeamConversation
from memctx.team._markers import parse_next_markers, strip_markers
from memctx.team._snapshot import SNAPSHOT_VERSION
from memctx.team._values import (
    DEFAULT_MAX_BYTES,
    DEFAULT_WINDOW_SIZE,
    MAX_TEAM_TASK_BYTES,
    AgentContext,
    AssembledPrompt,
    PromptMessage,
    Speaker,
    SpeakerType,
    TeamMessage,
    format_addressees,
)

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_WINDOW_SIZE",
    "MAX_TEAM_TASK_BYTES",
    "SNAPSHOT_VERSION",
    "TEAM_TASK_CHUNK_ID",
    "AgentContext",
    "AssembledPrompt",
    "ClaudeContextAssembler",
    "CodexContextAssembler",
    "ContextAssembler",
    "GeminiContextAssembler",
    "PlainTextAssembler",
    "PromptMessage",
    "Speaker",
    "SpeakerType",
    "TeamConversation",
    "TeamMessage",
    "TeamMessageError",
    "TeamMessageRenderer",
    "format_addressees",
    "normalize_agent_type",
    "parse_next_markers",
    "strip_markers",
]
