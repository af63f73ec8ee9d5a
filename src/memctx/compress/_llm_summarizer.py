"""LLMSummarizer: a summary written by a model, within that model's own budget."""

from __future__ import annotations

from collections.abc import Callable, Sequence
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
Write one new summary that folds the previous one in: keep what still matters, drop what \
was superseded.

Use these Markdown headings, and leave out a heading with nothing under it:
## Goal            what the user asked for, in their words where it matters
## Constraints     requirements, preferences and limits the user or the task set
## Progress        ### Done, ### In progress, ### Blocked
## Key decisions   what was decided and why
## Next steps      what the agent should do next, in order
## Critical context facts the agent would otherwise have to rediscover (values, errors, \
results of sub-agents)
## Files           files read, and files changed (with what changed)

Keep file paths, commands, identifiers and error messages exact. Be brief. Answer with the \
summary only."""


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

    complete: Callable[[list[ChatMessage]], str]
    prompt: str | None = None
    max_tokens: int = 16_000
    tokenizer: Tokenizer | None = None
    builder: ContextBuilder | None = None

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
        summary = previous
        remaining = list(chunks)
        if not self._fits([], summary):
            raise CompactionError(
                f"the prompt and the previous summary alone do not fit the summary model's "
                f"{self.max_tokens} tokens"
            )
        while remaining:
            group = self._next_group(remaining, summary)
            messages = self.messages(group, summary)
            answer = self.complete(messages)
            if not isinstance(answer, str) or not answer.strip():
                raise CompactionError(f"complete() must return non-empty text, got {answer!r}")
            summary = answer.strip()
            remaining = remaining[len(group) :]
        if summary is None:
            raise CompactionError("nothing to summarise")
        return summary

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
