"""Compaction: replace old history by a summary, keeping the newest part as is.

```python
from memctx.compaction import compact, CompactionPolicy, ExtractiveSummarizer, LLMSummarizer

state, report = compact(state, ExtractiveSummarizer(), keep_recent_tokens=20_000, tokenizer=tok)

policy = CompactionPolicy(trigger=12_000, keep_recent=6_000)
state = state.append(chunk)
state, report = policy.apply(state, summarizer, tokenizer=tok)   # after every append
```

The summary is one ``progress_summary`` chunk with ``compacted_at``,
``original_count`` and ``metadata.derived_from`` (the ids it covers). A
unit (a call and its results, a spawn and its results) is never cut, and a
call still waiting for its result, a pinned chunk or a SYSTEM chunk is never
covered. A second compaction folds the previous summary in.
"""

from memctx.compress._compaction import (
    CompactionPolicy,
    CompactionReport,
    compact,
    is_compaction_summary,
)
from memctx.compress._extractive import ExtractiveSummarizer
from memctx.compress._llm_summarizer import LLMSummarizer
from memctx.typing import Summarizer

__all__ = [
    "CompactionPolicy",
    "CompactionReport",
    "ExtractiveSummarizer",
    "LLMSummarizer",
    "Summarizer",
    "compact",
    "is_compaction_summary",
]
