"""``@mentions``: which agents a message names, and the message without them.

The rules, for an ``@`` at position *i*:

- It opens a mention only if nothing word-like comes right before it: the
  start of the text, white space, punctuation, or a CJK character (Chinese
  and Japanese write ``请@牛奶看下`` without spaces) — but not a Latin letter
  or digit, so ``bob@example.com`` is an e-mail address, not a mention. An
  ``@`` right after another mention opens one too (``@cc@rv``).
- What follows must be one of the agents' names, case-insensitively; the
  longest name wins (``@Coder Cat`` before ``@Coder``).
- A name ending in a CJK character may be followed by anything
  (``@牛奶帮我看下``). Any other name must not run on into a longer word:
  ``@ccx`` does not mention ``cc``, and neither does ``@cc.com`` or
  ``@cc-bot`` (a ``.`` or ``-`` followed by a letter or digit).

Anything else after an ``@`` (``@nobody``, ``@``, an e-mail address) is left
as it is. The clean text is the message with every mention taken out; the
white space around a mention collapses to one space between words, to
nothing at the start or end of a line or next to punctuation, and a line
that held only mentions disappears; the text is then stripped. Taking a
mention out can never make a new one appear in the clean text: if it would
(``@@cc x`` becomes ``@x``), that one is a mention too.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

import attrs

from memctx._exceptions import ChatError
from memctx.chat._agents import AgentLookup, ChatAgent, as_lookup, fold

_LINE_BREAKS = frozenset("\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")

_CJK_RANGES = (
    (0x2E80, 0x2FDF),  # CJK radicals, Kangxi radicals
    (0x3005, 0x3007),  # iteration mark, closing mark, ideographic zero
    (0x3040, 0x30FF),  # hiragana, katakana
    (0x3100, 0x312F),  # bopomofo
    (0x3130, 0x318F),  # hangul compatibility jamo
    (0x31F0, 0x31FF),  # katakana phonetic extensions
    (0x3400, 0x4DBF),  # CJK extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xAC00, 0xD7AF),  # hangul syllables
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0xFF66, 0xFF9F),  # half-width katakana
    (0x20000, 0x3134F),  # CJK extensions B-G
)


def is_cjk(char: str) -> bool:
    """Whether ``char`` is a Chinese, Japanese or Korean letter (scripts written without spaces)."""
    code = ord(char)
    return any(low <= code <= high for low, high in _CJK_RANGES)


def _is_word(char: str) -> bool:
    """A letter, digit, underscore or combining mark outside the CJK scripts."""
    if is_cjk(char):
        return False
    return char.isalnum() or char == "_" or unicodedata.category(char).startswith("M")


def _is_blank(char: str) -> bool:
    """White space within a line."""
    return char.isspace() and char not in _LINE_BREAKS


@attrs.frozen
class Mentions:
    """The agents a message mentions (ids, in order of first mention) and its clean text."""

    agent_ids: tuple[str, ...]
    clean_text: str


def _mention_at(text: str, at: int, lookup: AgentLookup) -> tuple[ChatAgent, int] | None:
    """The agent mentioned by the ``@`` at ``at`` and where the mention ends, if any."""
    start = at + 1
    for length in lookup.name_lengths:
        end = start + length
        if end > len(text):
            continue
        agent = lookup.by_folded_name(fold(text[start:end]))
        if agent is None or not _ends_cleanly(text, end):
            continue
        return agent, end
    return None


def _ends_cleanly(text: str, end: int) -> bool:
    if end == len(text) or is_cjk(text[end - 1]):
        return True
    after = text[end]
    if _is_word(after):
        return False
    return not (after in ".-" and end + 1 < len(text) and _is_word(text[end + 1]))


def _find(text: str, lookup: AgentLookup) -> list[tuple[int, int, ChatAgent]]:
    """Every mention in ``text`` as ``(start, end, agent)``, left to right."""
    found: list[tuple[int, int, ChatAgent]] = []
    at = text.find("@")
    while at != -1:
        follows_mention = bool(found) and found[-1][1] == at
        if at == 0 or follows_mention or not _is_word(text[at - 1]):
            hit = _mention_at(text, at, lookup)
            if hit is not None:
                found.append((at, hit[1], hit[0]))
                at = text.find("@", hit[1])
                continue
        at = text.find("@", at + 1)
    return found


def _remove(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` without the spans, white space around each removed group tidied."""
    groups: list[list[int]] = []
    for start, end in spans:  # mentions separated by blanks only go as one
        if groups and all(_is_blank(c) for c in text[groups[-1][1] : start]):
            groups[-1][1] = end
        else:
            groups.append([start, end])
    parts: list[str] = []
    position = 0
    for start, end in groups:
        left = start
        while left > position and _is_blank(text[left - 1]):
            left -= 1
        right = end
        while right < len(text) and _is_blank(text[right]):
            right += 1
        line_start = left == 0 or text[left - 1] in _LINE_BREAKS
        line_end = right == len(text) or text[right] in _LINE_BREAKS
        if line_start and line_end and right < len(text):
            right += 2 if text.startswith("\r\n", right) else 1  # the line is gone
        joint = " " if left < start and right > end and not (line_start or line_end) else ""
        parts.append(text[position:left])
        parts.append(joint)
        position = right
    parts.append(text[position:])
    return "".join(parts)


def parse_mentions(text: str, lookup: AgentLookup | Iterable[ChatAgent]) -> Mentions:
    """The agents ``text`` mentions with ``@name``, and the text without the mentions.

    ``lookup`` is an :class:`AgentLookup` (or the agents to build one from).
    Unknown ``@words`` and e-mail addresses are not mentions and stay in the
    clean text; an agent mentioned twice is listed once. See the module
    documentation for the exact rules.
    """
    if not isinstance(text, str):
        raise ChatError(f"text: must be a string, got {type(text).__name__}")
    index = as_lookup(lookup)
    ids: dict[str, None] = {}
    clean = text
    while True:
        found = _find(clean, index)
        if not found:
            break
        ids.update((agent.id, None) for _, _, agent in found)
        clean = _remove(clean, [(start, end) for start, end, _ in found])
    return Mentions(agent_ids=tuple(ids), clean_text=clean.strip())
