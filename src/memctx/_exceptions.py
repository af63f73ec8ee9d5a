"""The exceptions memctx raises.

Every error memctx raises on purpose derives from :class:`MemctxError`, so one
``except MemctxError`` catches them all. Each also derives from the builtin
whose meaning it shares, so code that already catches ``ValueError``,
``TypeError`` or ``LookupError`` keeps working::

    MemctxError
    ├── ArgumentError (ValueError, TypeError) an argument of the wrong type or value
    │   ├── InvalidChunkError                 a chunk could not be constructed
    │   ├── BuildOptionError                  a build option has an invalid value
    │   │   └── SessionSettingsError (TypeError) ... a framework session's settings are malformed
    │   ├── ChatError                         a chat agent, message, mode or role map is invalid
    │   │   └── UnknownAgentError (LookupError) ... names an agent the chat does not have
    │   ├── TeamMessageError                  a team message, speaker or task is malformed
    │   ├── AdapterError                      an adapter was given an option or input it cannot use
    │   ├── CompressionError                  a compressor is misconfigured or broke a rule
    │   ├── StoreArgumentError (StoreError)   a malformed thread id, event, URL or argument
    │   └── ViewOperationError (StoreError)   a view operation's arguments are invalid
    ├── DuplicateChunkError (ValueError)      two chunks share one id
    ├── ChunkNotFoundError (LookupError)      no chunk has that id
    ├── StateIndexError (IndexError)          a state was indexed out of range
    ├── StateFileError (ValueError)           a state or snapshot file is malformed or unreadable
    │   ├── UnsupportedVersionError           ... or written in a version we do not read
    │   └── StateFileAccessError (OSError)    ... or cannot be read or written at all
    ├── TranscriptError (ValueError)          a chat transcript cannot be imported
    │   └── ItemNotJSONError (TypeError)      ... an item holds a value JSON cannot store
    ├── XmlError (ValueError)                 memctx.xml got a bad name or malformed XML
    ├── RendererError                         a renderer misbehaved
    │   └── PluginLoadError (ImportError)     a renderer plugin could not be loaded
    ├── MissingExtraError (ImportError)       a feature needs an optional extra not installed
    ├── TokenizerError (ValueError)           a tokenizer could not be created
    │   └── UnknownModelError                 ... because the model name is unknown
    ├── SessionClosedError (RuntimeError)     a framework session was used after close()
    ├── BudgetExceededError (ValueError)      what must be kept does not fit the budget
    │   └── PromptTooLargeError               ... an agent prompt's fixed parts exceed max_bytes
    ├── TeamThreadError (ValueError)          a store thread holds something other than a team
    ├── InspectError (ValueError)             a build report was asked of a mismatched state
    ├── EmptyContextError (ValueError)        a provider request would hold no conversation
    ├── TurnMismatchError (ValueError)        an adapter got turns the build did not count
    ├── CompactionError (ValueError)          a compaction cannot be done as asked
    ├── PolicyError (ValueError)              a context policy or model profile option is invalid
    ├── ReplayError (ValueError)              a run cannot be replayed as asked
    └── StoreError                            the persistent store refused an operation
        ├── ThreadNotFoundError (LookupError)
        ├── ThreadExistsError (ValueError)
        ├── ChunkConflictError (ValueError)   another chunk already has that id
        ├── ViewConflictError                 a view was computed from a state that changed since
        ├── StoreArgumentError                (drawn above, under ArgumentError)
        ├── ViewOperationError                (drawn above, under ArgumentError)
        └── SchemaVersionError                the database was written by a newer memctx

**Arguments.** An argument of the wrong type and one of the wrong value are
the same mistake for the caller, so they raise one error: the entry point's
:class:`ArgumentError` family (``BuildOptionError`` from a build,
``StoreArgumentError`` from the store, ...), which is both a ``ValueError``
and a ``TypeError``; plain :class:`ArgumentError` where no family fits (a
state's index, an ``on_progress`` callback). Errors about *content* -- a
state file, a transcript, XML, a summary -- raise ``ValueError`` subclasses. Nothing
else leaves a public entry point on purpose: no bare ``TypeError``,
``AttributeError``, ``json`` or ``lxml`` error, ``RecursionError`` or
``OSError`` (a file that cannot be read or written is a
:class:`StateFileError`).

Catch :class:`MemctxError` at an application boundary; catch the specific
classes where you can do something about that one failure.
"""

from __future__ import annotations


class MemctxError(Exception):
    """Base class of every error memctx raises on purpose."""


class ArgumentError(MemctxError, ValueError, TypeError):
    """An argument of the wrong type or value (see "Arguments" above).

    ``argument`` names it when one argument is to blame.
    """

    def __init__(self, message: str, *, argument: str | None = None) -> None:
        self.argument = argument
        super().__init__(f"{argument}: {message}" if argument else message)


class InvalidChunkError(ArgumentError):
    """A chunk was given a value of the wrong type or shape.

    ``field`` names the offending field.
    """

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        super().__init__(message, argument=field)


class DuplicateChunkError(MemctxError, ValueError):
    """Two chunks in one state share the id ``chunk_id``."""

    def __init__(self, chunk_id: str) -> None:
        self.chunk_id = chunk_id
        super().__init__(f"duplicate chunk id {chunk_id!r}")


class ChunkNotFoundError(MemctxError, LookupError):
    """No chunk has the id ``chunk_id`` (``message`` says where it was looked for)."""

    def __init__(self, chunk_id: str, message: str | None = None) -> None:
        self.chunk_id = chunk_id
        super().__init__(message or f"no chunk with id {chunk_id!r}")

    def __str__(self) -> str:
        return str(self.args[0])


class StateIndexError(MemctxError, IndexError):
    """``index`` is outside a state of ``length`` chunks."""

    def __init__(self, index: int, length: int) -> None:
        self.index = index
        self.length = length
        super().__init__(
            f"MemoryState index {index} is out of range (the state has {length} chunks)"
        )


class StateFileError(MemctxError, ValueError):
    """A state or snapshot document is malformed.

    ``index`` is the position of the bad chunk (``None`` when the problem is
    not in one chunk) and ``field`` the dotted path of the bad field.
    """

    def __init__(self, message: str, *, index: int | None = None, field: str | None = None) -> None:
        self.index = index
        self.field = field
        where = []
        if index is not None:
            where.append(f"chunks[{index}]")
        if field is not None:
            where.append(field)
        prefix = ".".join(where)
        super().__init__(f"{prefix}: {message}" if prefix else message)


class UnsupportedVersionError(StateFileError):
    """The document's ``version`` is not one this memctx reads."""


class StateFileAccessError(StateFileError, OSError):
    """A state file could not be read or written (a missing directory, no permission, a
    full disk): ``errno``, ``strerror`` and ``filename`` (the path given) as on ``OSError``."""

    def __init__(self, action: str, error: OSError, filename: str) -> None:
        OSError.__init__(self, error.errno, error.strerror or str(error), filename)
        self.index = None
        self.field = None
        self.args = (f"cannot {action} {filename!r}: {error.strerror or error}",)

    def __str__(self) -> str:
        return str(self.args[0])


class TranscriptError(MemctxError, ValueError):
    """A chat transcript cannot be imported; ``index`` is the bad message."""

    def __init__(self, message: str, *, index: int | None = None) -> None:
        self.index = index
        super().__init__(f"messages[{index}]: {message}" if index is not None else message)


class XmlError(MemctxError, ValueError):
    """:mod:`memctx.xml` was given a tag or attribute name XML does not allow, an unknown
    content or attribute mode, or text that is not one well-formed element."""


class ItemNotJSONError(TranscriptError, TypeError):
    """A framework's item holds a value JSON cannot store, at ``path``
    (``items[0].content``); nothing was written."""

    def __init__(self, path: str, message: str, *, index: int | None = None) -> None:
        self.path = path
        super().__init__(f"{path}: {message}", index=index)


class RendererError(MemctxError):
    """A renderer returned something unusable or raised."""


class PluginLoadError(RendererError, ImportError):
    """The renderer plugin ``plugin`` (an entry point) could not be loaded."""

    def __init__(self, plugin: str, cause: str) -> None:
        self.plugin = plugin
        self.cause = cause
        super().__init__(f"renderer plugin {plugin!r} failed to load: {cause}")


class MissingExtraError(MemctxError, ImportError):
    """A feature needs an optional extra that is not installed.

    ``extra`` names it (``pip install 'memctx[<extra>]'``), ``feature`` says what needed it.
    """

    def __init__(self, extra: str, feature: str) -> None:
        self.extra = extra
        self.feature = feature
        super().__init__(f"{feature} needs the {extra!r} extra: pip install 'memctx[{extra}]'")


class TokenizerError(MemctxError, ValueError):
    """A tokenizer could not be created or its encoding could not be loaded."""


class UnknownModelError(TokenizerError):
    """``model`` is not a model or encoding memctx knows how to count."""

    def __init__(self, model: str, known: list[str]) -> None:
        self.model = model
        self.known = known
        super().__init__(f"unknown model {model!r}; known models and prefixes: {', '.join(known)}")


class BuildOptionError(ArgumentError):
    """The build option ``option`` has an invalid value."""

    def __init__(self, option: str, message: str) -> None:
        self.option = option
        super().__init__(message, argument=option)


class SessionSettingsError(BuildOptionError, TypeError):
    """A framework session's settings are malformed: an unknown key or a wrong type
    (the type of error the framework's own sessions raise)."""


class SessionClosedError(MemctxError, RuntimeError):
    """The session ``session_id`` was used after ``close()``."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        super().__init__(f"session {session_id!r} is closed")


class BudgetExceededError(MemctxError, ValueError):
    """The chunks that must be kept need ``needed`` tokens but only ``available`` are free."""

    def __init__(self, needed: int, available: int, detail: str = "") -> None:
        self.needed = needed
        self.available = available
        msg = (
            f"the pinned chunks and the system message need {needed} tokens "
            f"but the budget leaves {available}"
        )
        super().__init__(f"{msg} ({detail})" if detail else msg)


class ChatError(ArgumentError):
    """A chat agent, message, mode, mode state or role map is invalid (see :mod:`memctx.chat`)."""


class UnknownAgentError(ChatError, LookupError):
    """``agent_id`` is not one of the chat's agents; ``known`` lists those it has."""

    def __init__(self, agent_id: str, known: tuple[str, ...], where: str = "") -> None:
        self.agent_id = agent_id
        self.known = known
        prefix = f"{where}: " if where else ""
        super().__init__(
            f"{prefix}unknown agent {agent_id!r}; the agents are {', '.join(known) or '(none)'}"
        )

    def __str__(self) -> str:
        return str(self.args[0])


class PromptTooLargeError(BudgetExceededError):
    """An agent's prompt cannot fit ``available`` bytes: the parts never dropped
    (current message, team task, instructions) need ``needed`` bytes."""

    def __init__(self, needed: int, available: int) -> None:
        self.needed = needed
        self.available = available
        ValueError.__init__(
            self,
            f"the prompt needs {needed} bytes without any context message "
            f"(current message, team task and instructions) but max_bytes is {available}",
        )


class TeamMessageError(ArgumentError):
    """A team conversation was given a message, speaker or team task it cannot take."""


class TeamThreadError(MemctxError, ValueError):
    """The store thread ``thread_id`` holds something other than a team conversation."""

    def __init__(self, thread_id: str, detail: str) -> None:
        self.thread_id = thread_id
        super().__init__(f"thread {thread_id!r} is not a team conversation: {detail}")


class InspectError(MemctxError, ValueError):
    """The build inspector was given a result that was not built from the given state,
    or builds that cannot be compared."""


class AdapterError(ArgumentError):
    """A provider adapter was given an option or an input it cannot use."""


class EmptyContextError(MemctxError, ValueError):
    """A provider adapter was asked for a request with nothing to send.

    ``provider`` names the target and ``reason`` says why the request is empty
    (an empty state, only a system message, every chunk filtered out).
    """

    def __init__(self, provider: str, reason: str) -> None:
        self.provider = provider
        self.reason = reason
        super().__init__(f"nothing to send to {provider}: {reason}")


class TurnMismatchError(MemctxError, ValueError):
    """An adapter was given an added turn (or ``prefill``) other than the one the result
    was built and counted with.

    ``option`` names it (``opening_turn``, ``closing_turn`` or ``prefill``), ``given``
    is what the adapter got and ``counted`` what the build counted in ``token_count``.
    """

    def __init__(self, option: str, given: object, counted: object) -> None:
        self.option = option
        self.given = given
        self.counted = counted
        super().__init__(
            f"{option}={given!r} differs from the {option}={counted!r} this result was built "
            f"and counted with: pass {option}={given!r} to the build (with its provider) "
            "instead, so token_count and the budget include it"
        )


class CompressionError(ArgumentError):
    """A compressor was given bad settings, or its result broke a rule.

    ``compressor`` names it (``None`` when the error is not about one).
    """

    def __init__(self, message: str, *, compressor: str | None = None) -> None:
        self.compressor = compressor
        super().__init__(f"{compressor}: {message}" if compressor else message)


class CompactionError(MemctxError, ValueError):
    """A compaction could not be done: bad settings, or a summarizer that failed."""


class PolicyError(MemctxError, ValueError):
    """A :mod:`memctx.policy` option (of a ``ContextPolicy``, ``ClearToolUses`` or
    ``ModelProfile``) has an invalid value; ``option`` names it."""

    def __init__(self, option: str, message: str) -> None:
        self.option = option
        super().__init__(f"{option}: {message}")


class ReplayError(MemctxError, ValueError):
    """A recorded run could not be replayed as asked: an unknown strategy, a model
    without a profile, a run file that is not a run.

    ``option`` names the argument at fault (``strategy``, ``model``, ``run``, ...).
    """

    def __init__(self, option: str, message: str) -> None:
        self.option = option
        super().__init__(f"{option}: {message}")


class StoreError(MemctxError):
    """The persistent store refused an operation."""


class ThreadNotFoundError(StoreError, LookupError):
    """The thread ``thread_id`` does not exist."""

    def __init__(self, thread_id: str) -> None:
        self.thread_id = thread_id
        super().__init__(f"no thread {thread_id!r}")

    def __str__(self) -> str:
        return str(self.args[0])


class ThreadExistsError(StoreError, ValueError):
    """The thread ``thread_id`` already exists."""

    def __init__(self, thread_id: str) -> None:
        self.thread_id = thread_id
        super().__init__(f"thread {thread_id!r} already exists")


class ChunkConflictError(StoreError, ValueError):
    """A different chunk is already stored under ``chunk_id``."""

    def __init__(self, thread_id: str, chunk_id: str, detail: str = "") -> None:
        self.thread_id = thread_id
        self.chunk_id = chunk_id
        msg = f"thread {thread_id!r} already holds a different chunk with id {chunk_id!r}"
        super().__init__(f"{msg}: {detail}" if detail else msg)


class ViewConflictError(StoreError):
    """The view given to ``apply_view(..., based_on=...)`` was computed from a state the
    thread no longer starts with (another view operation changed it): nothing was written."""

    def __init__(self, thread_id: str, detail: str) -> None:
        self.thread_id = thread_id
        super().__init__(
            f"thread {thread_id!r} changed since the state the view was computed from "
            f"({detail}); read the state again and compute the view again"
        )


class ViewOperationError(StoreError, ArgumentError):
    """A view operation (truncate, insert, replace, ...) got invalid arguments."""


class StoreArgumentError(StoreError, ArgumentError):
    """The store was given an unusable argument.

    A malformed thread id, an event whose kind or payload is not usable, or a
    database URL of a kind the store does not support.
    """


class SchemaVersionError(StoreError):
    """The database schema was written by a version of memctx this one cannot read."""
