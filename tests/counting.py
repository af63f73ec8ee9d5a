"""A tokenizer that keeps every text it was asked to count, for tests of what is counted."""

from __future__ import annotations

from collections.abc import Sequence

from memctx import TiktokenTokenizer


class CountingTokenizer(TiktokenTokenizer):
    """gpt-4o's encoding, keeping every text it was asked to count."""

    def __init__(self) -> None:
        super().__init__("o200k_base")
        self.texts: list[str] = []

    def count(self, text: str) -> int:
        self.texts.append(text)
        return super().count(text)

    def count_many(self, texts: Sequence[str]) -> list[int]:
        self.texts.extend(texts)
        return super().count_many(texts)
