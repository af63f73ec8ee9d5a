"""How many leading tokens two requests share: what a provider's prompt cache can reuse.

A request is its list of chat messages, each sent as a token that opens
it, its role, a separator, its content and a token that closes it (the
per-message overhead of ``count_messages`` is those three tokens). Two
requests share every leading message that is identical in role and
content; after those, the next messages share their opening token, and
when their roles match, their role, the separator and the tokens their
contents begin with in common.

The common content tokens are exact for a tokenizer whose ``encoding`` is a
tiktoken encoding, as a :class:`~memctx.TiktokenTokenizer`'s is: token ids are
compared, and only around the first differing character, between the last
point before it where both contents must split and the first one after it in
each (the tokens before come from the build's count of the content when it is
known and that is shorter to get). For any other tokenizer only counts are
available: the common text is counted and its last token is not credited,
since the text that follows may merge with it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import takewhile
from operator import is_, truth
from typing import Any

from memctx._chunk import ContextMessage
from memctx._render.segments import last_word_split_point, word_split_point
from memctx._render.tokens import TiktokenTokenizer
from memctx.typing import Tokenizer

Message = ContextMessage | Mapping[str, Any]
Encode = Callable[[str], Sequence[int]]


class EncodingMemo:
    """The pieces one prefix figure encoded, reused by the next one.

    Consecutive builds of a growing history compare each request with the one
    before, so the piece a figure encodes of its new request is, next time, the
    piece of the request it is compared with. Only the last figure's pieces are
    kept (a handful of short texts).
    """

    __slots__ = ("_before", "_encode", "encoded")

    def __init__(self, encode: Encode, before: Mapping[str, Sequence[int]] | None = None) -> None:
        self._encode = encode
        self._before = before or {}
        self.encoded: dict[str, Sequence[int]] = {}

    def __call__(self, text: str) -> Sequence[int]:
        tokens = self._before.get(text)
        if tokens is None:
            tokens = self._encode(text)
        self.encoded[text] = tokens
        return tokens


def _fields(message: Message) -> tuple[str, str]:
    if isinstance(message, ContextMessage):
        return message.role, message.content
    return str(message["role"]), str(message["content"])


def _common_content_tokens(
    a: str,
    b: str,
    tokenizer: Tokenizer,
    count_a: Callable[[], int | None],
    memo: EncodingMemo | None = None,
) -> int:
    """Leading tokens the contents ``a`` and ``b`` share; ``count_a()`` is ``a``'s count if
    known (asked only when it saves encoding); ``memo`` encodes, when given."""
    encode: Encode | None = getattr(getattr(tokenizer, "encoding", None), "encode_ordinary", None)
    if memo is not None and encode is not None:
        encode = memo
    if callable(encode):  # a tiktoken encoding: compare the token ids themselves
        same = _common_prefix_length(a, b)
        # Both texts split at ``start`` (the characters around it are common), and
        # no shared token reaches past ``same``: only the tokens between ``start`` and
        # the first point at or after ``same`` where each text must split can differ.
        start = last_word_split_point(a, same)
        end_a = word_split_point(a, same) or len(a)
        end_b = word_split_point(b, same) or len(b)
        rest_b = encode(b[start:end_b])
        # a's count less the tokens of its rest, when that is the shorter text to encode.
        rest_is_shorter = start > 0 and len(a) - start <= start
        tokens_a = count_a() if rest_is_shorter and _counts_by_encoding(tokenizer) else None
        if tokens_a is not None:
            rest_a = encode(a[start:])
            return tokens_a - len(rest_a) + _leading_equal(rest_a, rest_b)
        before = len(encode(a[:start])) if start else 0
        return before + _leading_equal(encode(a[start:end_a]), rest_b)
    same = _common_prefix_length(a, b)
    return max(0, tokenizer.count(a[:same]) - 1) if same else 0


def _leading_equal(a: Iterable[object], b: Iterable[object]) -> int:
    """How many leading items ``a`` and ``b`` have in common."""
    same = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        same += 1
    return same


def _counts_by_encoding(tokenizer: Tokenizer) -> bool:
    """Whether ``tokenizer``'s counts are the lengths of its encoding's token lists."""
    return isinstance(tokenizer, TiktokenTokenizer) and (
        type(tokenizer).count is TiktokenTokenizer.count
    )


def _common_prefix_length(a: str, b: str) -> int:
    low, high = 0, min(len(a), len(b))
    # Texts often differ early: grow the probe first, so that only a short
    # stretch is searched and copied.
    step = 64
    while step < high and a.startswith(b[low:step], low):  # a[:low] == b[:low] throughout
        low, step = step, step * 4
    high = min(high, step)
    while low < high:  # binary search: only the stretch not yet known equal is compared
        middle = (low + high + 1) // 2
        if a.startswith(b[low:middle], low):
            low = middle
        else:
            high = middle - 1
    return low


def _whole_messages_tokens(
    messages: Sequence[Message],
    tokenizer: Tokenizer,
    empty: int,
    content_tokens: Callable[[Message], int | None] | None,
    known_overheads: Mapping[str, int] | None = None,
) -> int:
    """``count_messages(messages)`` without the priming, from known content counts where
    ``content_tokens`` has them: a message costs its role's overhead plus its content."""
    unknown: list[dict[str, str]] = []
    known = 0
    overheads: Mapping[str, int] = known_overheads or {}
    for message in messages:
        tokens = content_tokens(message) if content_tokens is not None else None
        role, content = _fields(message)
        if tokens is None:
            unknown.append({"role": role, "content": content})
            continue
        overhead = overheads.get(role)
        if overhead is None:
            overhead = tokenizer.count_messages([{"role": role, "content": ""}]) - empty
            overheads = {**overheads, role: overhead}
        known += overhead + tokens
    return known + (tokenizer.count_messages(unknown) - empty if unknown else 0)


def shorter_by_whole_chunks(
    a: Message, b: Message, content_a: str, content_b: str
) -> Message | None:
    """The one of two messages that the other extends by whole chunks, if one does."""
    if not (isinstance(a, ContextMessage) and isinstance(b, ContextMessage)):
        return None
    ids_a, ids_b = a.chunk_ids, b.chunk_ids
    if ids_b and len(ids_b) < len(ids_a) and ids_a[: len(ids_b)] == ids_b:
        return b if content_a.startswith(content_b) else None
    if ids_a and len(ids_a) < len(ids_b) and ids_b[: len(ids_a)] == ids_a:
        return a if content_b.startswith(content_a) else None
    return None


def shared_messages(messages_a: Sequence[Message], messages_b: Sequence[Message]) -> int:
    """How many leading messages of ``a`` and ``b`` are identical in role and content."""
    # A rebuild reuses its unchanged messages: skip the identical objects at C speed.
    same = len(list(takewhile(truth, map(is_, messages_a, messages_b))))
    for a, b in zip(messages_a[same:], messages_b[same:], strict=False):
        if a is not b and _fields(a) != _fields(b):
            break
        same += 1
    return same


def shared_prefix_tokens(
    messages_a: Sequence[Message],
    messages_b: Sequence[Message],
    tokenizer: Tokenizer,
    content_tokens: Callable[[Message], int | None] | None = None,
    *,
    total_tokens: int | None = None,
    overheads: Mapping[str, int] | None = None,
    memo: EncodingMemo | None = None,
    same: int | None = None,
) -> int:
    """Tokens at the start of request ``a`` that request ``b`` begins with too.

    Messages are :class:`~memctx.ContextMessage` objects or ``{"role", "content"}``
    dicts; counts follow ``tokenizer.count_messages`` (its reply priming, which
    comes after the last message, is never shared). Symmetric in ``a`` and ``b``.
    ``content_tokens`` may give the token count of a message of ``a``'s content
    when it is known (None: count it); a build knows it from its chunks' counts.
    ``total_tokens``, when known, is ``count_messages(messages_a)`` less the reply
    priming: the shared messages are then what is left of it after the others, so
    a request that grew at its end costs only its end. ``overheads`` may give the
    tokenizer's ``priming``, each role's message overhead and (``name:ROLE``) each
    role's own tokens, measured once (see ``message_overheads``). ``memo`` encodes for
    a tiktoken tokenizer, reusing what the last figure encoded; ``same`` is
    ``shared_messages(messages_a, messages_b)`` when the caller has it.
    """
    fixed = overheads or {}
    empty = fixed["priming"] if "priming" in fixed else tokenizer.count_messages([])
    if same is None:
        same = shared_messages(messages_a, messages_b)
    if total_tokens is not None and len(messages_a) - same < same:  # the shorter sum
        rest = _whole_messages_tokens(messages_a[same:], tokenizer, empty, content_tokens, fixed)
        shared = total_tokens - rest
    else:
        shared = _whole_messages_tokens(messages_a[:same], tokenizer, empty, content_tokens, fixed)
    if same == min(len(messages_a), len(messages_b)):
        return shared
    (role_a, content_a), (role_b, content_b) = _fields(messages_a[same]), _fields(messages_b[same])
    role_tokens = fixed.get(f"name:{role_a}")
    if role_tokens is None:
        role_tokens = tokenizer.count(role_a)
    whole = fixed.get(role_a)
    if whole is None:
        whole = tokenizer.count_messages([{"role": role_a, "content": ""}]) - empty
    overhead = whole - role_tokens
    if role_a != role_b:  # only the token opening a message, before the role
        return shared + max(0, overhead - 2)
    header = role_tokens + max(0, overhead - 1)  # all but the token closing the message
    message = messages_a[same]
    whole_shorter = shorter_by_whole_chunks(message, messages_b[same], content_a, content_b)
    if whole_shorter is not None and content_tokens is not None:
        # One message is the other with chunks added at its end (an agent loop's last
        # message): where counts add up, its chunks' counts are the common tokens.
        tokens = content_tokens(whole_shorter)
        if tokens is not None:
            return shared + header + tokens

    def count_a() -> int | None:
        return content_tokens(message) if content_tokens is not None else None

    return shared + header + _common_content_tokens(content_a, content_b, tokenizer, count_a, memo)
