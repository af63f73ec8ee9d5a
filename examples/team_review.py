"""A team of three, end to end: a person, a coding agent and a reviewing agent.

Lena (a person) sets the team task and asks the coder for a fix. Each agent's
answer ends with a ``[NEXT:…]`` marker naming who speaks next; a small
coordinator routes on it until the conversation comes back to Lena. Before
each turn the coordinator asks the team for that agent's context and lays it
out for the agent's command line: the coder is Claude Code (instructions
through ``--append-system-prompt``), the reviewer is Codex (instructions at
the top of the prompt). The agents here answer from a script, so the example
runs anywhere; swap ``ScriptedAgent`` for a call to the real command line.

Run it with ``uv run python examples/team_review.py``: it prints each prompt
as the agent receives it, then the reviewer's view of the whole conversation
as a 600-token gpt-4o build.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import attrs

from memctx import create_tokenizer
from memctx.team import AssembledPrompt, Speaker, TeamConversation, parse_next_markers

TASK = "Cap the retry delay of src/main.ts at 30 seconds, with a test, reviewed before merge."


@attrs.frozen
class Member:
    """A member of the team: who they are, what kind of agent, their instructions."""

    speaker: Speaker
    agent_type: str | None = None  # None: a person
    system_instruction: str | None = None


LENA = Member(Speaker("lena", "Lena", "human"))
CODER = Member(
    Speaker("coder", "Coder", "ai"),
    "claude",
    "You write the code. End every answer with [NEXT:reviewer] or [NEXT:lena].",
)
REVIEWER = Member(
    Speaker("reviewer", "Reviewer", "ai"),
    "codex",
    "You review changes. End every answer with [NEXT:coder] or [NEXT:lena].",
)
MEMBERS = {m.speaker.role_id: m for m in (LENA, CODER, REVIEWER)}


class ScriptedAgent:
    """Answers with the next line of its script (a real agent would run the prompt)."""

    def __init__(self, *replies: str) -> None:
        self._replies: Iterator[str] = iter(replies)

    def __call__(self, prompt: AssembledPrompt) -> str:
        return next(self._replies)


SCRIPTS: dict[str, Callable[[AssembledPrompt], str]] = {
    "coder": ScriptedAgent(
        "Capped it: `return Math.min(30_000, 2 ** attempt * 100);` in src/main.ts. [NEXT:reviewer]",
        "[FROM:coder] Added `expect(retryDelay(20)).toBe(30_000)` to src/main.test.ts; "
        "the suite passes. [NEXT:reviewer]",
    ),
    "reviewer": ScriptedAgent(
        "The cap is right, but nothing tests it. Please add a test. [NEXT:coder]",
        "Looks good to me: the cap and its test are in. Ready to merge. [NEXT:lena]",
    ),
}


def run_review(team: TeamConversation, show: Callable[[str], None] = print) -> list[str]:
    """Run the review until the conversation is routed back to a person; return who spoke."""
    team.set_team_task(TASK)
    opening = "Coder, the retry delay grows without bound. Please cap it. [NEXT:coder]"
    team.add_message(opening, speaker=LENA.speaker, addressees=parse_next_markers(opening))
    turns = []
    while (latest := team.latest_message) is not None:
        route = parse_next_markers(latest.content)
        member = MEMBERS.get(route[0]) if route else None
        if member is None or member.agent_type is None:
            break  # back to a person
        ctx = team.context_for_agent(
            member.speaker.role_id,
            member.agent_type,
            system_instruction=member.system_instruction,
        )
        prompt = team.assemble_prompt(member.agent_type, ctx)
        show(f"===== {member.speaker.role_name} ({member.agent_type}) =====")
        if prompt.system_flag is not None:
            show(f"--append-system-prompt: {prompt.system_flag}")
        show(prompt.prompt)
        reply = SCRIPTS[member.speaker.role_id](prompt)
        team.add_message(reply, speaker=member.speaker, addressees=parse_next_markers(reply))
        turns.append(member.speaker.role_id)
    return turns


def main() -> None:
    team = TeamConversation(window_size=4)
    turns = run_review(team)
    print(f"===== turns: {' → '.join(turns)}; back to Lena =====")
    result = team.build_for_agent("reviewer", max_tokens=600, tokenizer=create_tokenizer("gpt-4o"))
    print(result.to_text())
    print(result.summary())


if __name__ == "__main__":
    main()
