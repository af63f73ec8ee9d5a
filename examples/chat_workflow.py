"""A workflow chat session: a coder, a reviewer and a tester take turns on one task.

The user posts a task; the coder answers, then the reviewer and the tester
each take a step; the user adds a follow-up, which starts the chain again at
the coder. The agents' answers are scripted here, where a real program would
call a model with each target's prompt. Everything is stored in a chat
session (a store thread), so another process could post to it meanwhile.

Run it with ``uv run python examples/chat_workflow.py``: it prints each
round's targets and the prompt the last one sent, built for gpt-4o.
"""

from __future__ import annotations

from memctx import create_builder, create_tokenizer
from memctx.chat import ChatAgent, ChatRound, ChatSession
from memctx.store import MemoryStore

AGENTS = [
    ChatAgent("alice", "Coder Cat", aliases=("cc", "程序猫"), persona="You write the code."),
    ChatAgent("bob", "Review Cat", aliases=("rc",), persona="You review every change."),
    ChatAgent("carol", "Test Cat", aliases=("tc",), persona="You test what was built."),
]
ROLES = {"coder": "alice", "reviewer": "bob", "tester": "carol"}

ANSWERS = {
    "alice": "wc.py counts the words of each file given on the command line.",
    "bob": "Fine, but a missing file crashes it: catch FileNotFoundError.",
    "carol": "Tested with three files and a missing one: all pass after the fix.",
}


def run(store: MemoryStore) -> list[ChatRound]:
    """Play the session in ``store``; return its rounds."""
    session = ChatSession.create(store, "wc-task", agents=AGENTS, mode="workflow", role_map=ROLES)
    rounds = [session.post("Write wc.py, a word counter for files.")]
    for _ in range(2):
        for agent_id in rounds[-1].agent_ids:
            session.reply(rounds[-1], agent_id, ANSWERS[agent_id])
        rounds.append(session.step())
    for agent_id in rounds[-1].agent_ids:
        session.reply(rounds[-1], agent_id, ANSWERS[agent_id])
    rounds.append(session.post("Count lines too, like wc -l."))
    return rounds


def main() -> None:
    with MemoryStore.open("sqlite://") as store:
        rounds = run(store)
    for chat_round in rounds:
        node = chat_round.context.targets.node
        print(f"round {chat_round.number}: {node} -> {', '.join(chat_round.agent_ids)}")
    last = rounds[-1]
    result = create_builder().build(
        last.context.state_for(last.agent_ids[0]),
        max_tokens=2000,
        tokenizer=create_tokenizer("gpt-4o"),
    )
    print()
    print(result.to_text())


if __name__ == "__main__":
    main()
