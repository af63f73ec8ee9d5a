"""LLMSummarizer: a summary written by a model, within that model's own budget."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, ClassVar, Final

import attrs

from memctx._build.default import default_builder
from memctx._chunk import Chunk
from memctx._exceptions import CompactionError
from memctx._state import MemoryState
from memctx.compress._compressors import cut_text, derived_chunk
from memctx.typing import Tokenizer

if TYPE_CHECKING:
    from memctx._build.builder import ContextBuilder

ChatMessage = dict[str, str]

DEFAULT_PROMPT: Final = """\
You keep the working memory of an autonomous agent. The agent's history is too long for \
its context window, so an older part of it will be replaced by your summary; the agent \
continues from the summary and the newest messages alone.

You get the older part as memctx XML (messages, tool calls and their results, delegations \
to sub-agents), and, when there is one, the summary written at the previous compaction. \
UPDATE that summary: keep every fact of it that still holds, add what the new part \
adds, and drop only what was superseded; do not shorten it into a summary of a summary.

Use these Markdown headings, and leave out a heading with nothing under it:
## Goal            the task, in the user's words where it matters
## Constraints     requirements, preferences, limits and decisions the user stated
## Progress        ### Done, ### In progress, ### Blocked
## Commands        each command run, exact, with its exit code (`cmd` -> exit 0)
## Errors          each error met, its exact line, and whether it was fixed
## Tests           test names run and their results (passed, failed, errors)
## Files           files read, and files changed (with what changed)
## Sub-agents      what each sub-agent was asked and what it reported
## Key decisions   what the agent decided and why
## Open todos      the items still open, in order
## Next steps      what the agent should do next

Keep file paths, commands, identifiers, test names and error messages exact. Be brief \
elsewhere. Answer with the summary only."""

RECALL_LINE: Final = (
    "Older details (whole outputs, exact texts) were left out of this summary; "
    "recall them with the `recall` tool."
)


def _request_text(previous: str | None, conversation: str) -> str:
    parts = []
    if previous is not None:
        parts.append(f"<previous_summary>\n{previous}\n</previous_summary>")
    parts.append(f"<conversation>\n{conversation}</conversation>")
    parts.append("Write the new summary.")
    return "\n\n".join(parts)


@attrs.frozen
class LLMSummarizer:
    """Summarise with a model: ``complete(messages) -> str`` is any function you give.

    The covered chunks are rendered by memctx (``builder``, the default
    renderers when not given) and sent as one user message after a system
    message holding ``prompt``. Every request fits ``max_tokens`` — the
    summary model's window minus the room its answer needs — counted with
    ``tokenizer`` (pass the summary model's, e.g. ``create_tokenizer("gpt-4o-mini")``;
    the builder's estimate otherwise). When the chunks do not fit one
    request they are sent in several, oldest first, each folding the summary
    so far in; a chunk too long for any request is cut to fit, visibly.
    """

    DEFAULT_PROMPT: ClassVar[str] = DEFAULT_PROMPT
    """The system prompt used when ``prompt`` is not given."""

    complete: Callable[[list[ChatMessage]], str] | Callable[[list[ChatMessage]], Awaitable[str]]
    prompt: str | None = None
    max_tokens: int = 16_000
    tokenizer: Tokenizer | None = None
    builder: ContextBuilder | None = None
    recall_hint: bool = False

    def __attrs_post_init__(self) -> None:
        if not callable(self.complete):
            raise CompactionError(f"complete must be a callable, got {self.complete!r}")
        if isinstance(self.max_tokens, bool) or not isinstance(self.max_tokens, int):
            raise CompactionError(f"max_tokens must be an int, got {self.max_tokens!r}")
        if self.max_tokens < 64:
            raise CompactionError(f"max_tokens must be at least 64, got {self.max_tokens}")

    def _builder(self) -> ContextBuilder:
        return self.builder if self.builder is not None else default_builder()

    def _tokenizer(self) -> Tokenizer:
        return self.tokenizer if self.tokenizer is not None else self._builder().tokenizer

    def messages(self, chunks: Sequence[Chunk], previous: str | None) -> list[ChatMessage]:
        """The request for ``chunks`` in one call (whether or not it fits)."""
        if chunks:
            built = self._builder().build(MemoryState(chunks), tokenizer=self._tokenizer())
            conversation = built.to_text()
        else:
            conversation = ""
        return [
            {"role": "system", "content": self.prompt or DEFAULT_PROMPT},
            {"role": "user", "content": _request_text(previous, conversation)},
        ]

    def _fits(self, chunks: Sequence[Chunk], previous: str | None) -> bool:
        count = self._tokenizer().count_messages(self.messages(chunks, previous))
        return count <= self.max_tokens

    def __call__(self, chunks: Sequence[Chunk], previous: str | None) -> str:
        summary, remaining = self._start(chunks, previous)
        while remaining:
            group = self._next_group(remaining, summary)
            answer = self.complete(self.messages(group, summary))
            if inspect.isawaitable(answer):
                close = getattr(answer, "close", None)
                if close is not None:
                    close()
                raise CompactionError(
                    "complete() is async: await summarizer.asummarize(...) "
                    "(ContextPolicy.astep does)"
                )
            summary = self._answer(answer)
            remaining = remaining[len(group) :]
        return self._finish(summary)

    async def asummarize(self, chunks: Sequence[Chunk], previous: str | None) -> str:
        """:meth:`__call__` for an ``async def complete`` (a sync one works too): the
        requests are fitted in a worker thread, the answers awaited."""
        summary, remaining = self._start(chunks, previous)
        while remaining:
            group = await asyncio.to_thread(self._next_group, remaining, summary)
            answer = self.complete(self.messages(group, summary))
            if inspect.isawaitable(answer):
                answer = await answer
            summary = self._answer(answer)
            remaining = remaining[len(group) :]
        return self._finish(summary)

    def _start(
        self, chunks: Sequence[Chunk], previous: str | None
    ) -> tuple[str | None, list[Chunk]]:
        if previous is not None and self.recall_hint:
            previous = previous.replace(f"\n\n{RECALL_LINE}", "")
        if not self._fits([], previous):
            raise CompactionError(
                f"the prompt and the previous summary alone do not fit the summary model's "
                f"{self.max_tokens} tokens"
            )
        return previous, list(chunks)

    @staticmethod
    def _answer(answer: object) -> str:
        if not isinstance(answer, str) or not answer.strip():
            raise CompactionError(f"complete() must return non-empty text, got {answer!r}")
        return answer.strip()

    def _finish(self, summary: str | None) -> str:
        if summary is None:
            raise CompactionError("nothing to summarise")
        return f"{summary}\n\n{RECALL_LINE}" if self.recall_hint else summary

    def _next_group(self, remaining: list[Chunk], previous: str | None) -> list[Chunk]:
        """The longest prefix of ``remaining`` that fits one request (one chunk, cut to fit)."""
        if self._fits(remaining, previous):
            return remaining
        # Grow by doubling, then narrow down by bisection: O(log n) trial renderings.
        low, high = 0, 1
        while high <= len(remaining) and self._fits(remaining[:high], previous):
            low, high = high, high * 2
        high = min(high, len(remaining))
        while high - low > 1:
            middle = (low + high) // 2
            if self._fits(remaining[:middle], previous):
                low = middle
            else:
                high = middle
        if low:
            return remaining[:low]
        return [self._cut_to_fit(remaining[0], previous)]

    def _cut_to_fit(self, chunk: Chunk, previous: str | None) -> Chunk:
        text = chunk.text
        low, high = 0, len(text)
        best: Chunk | None = None
        while low <= high:
            middle = (low + high) // 2
            candidate = derived_chunk(chunk, cut_text(text, middle), "cut")
            if self._fits([candidate], previous):
                best, low = candidate, middle + 1
            else:
                high = middle - 1
        if best is None:
            raise CompactionError(
                f"chunk {chunk.id!r} does not fit the summary model's {self.max_tokens} tokens "
                "even when cut to nothing"
            )
        return best
