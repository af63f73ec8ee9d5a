"""memctx: turn an agent's memory into the exact messages the model is called with."""

import typing as _typing

from memctx import chunks
from memctx._build.builder import ContextBuilder, create_builder
from memctx._build.options import BuildKwargs, BuildOptions
from memctx._chunk import Chunk, ChunkMetadata, ChunkType, ContextMessage, Role
from memctx._exceptions import (
    AdapterError,
    ArgumentError,
    BudgetExceededError,
    BuildOptionError,
    ChatError,
    ChunkConflictError,
    ChunkNotFoundError,
    CompactionError,
    CompressionError,
    DuplicateChunkError,
    EmptyContextError,
    InspectError,
    InvalidChunkError,
    ItemNotJSONError,
    MemctxError,
    MissingExtraError,
    PluginLoadError,
    PolicyError,
    PromptTooLargeError,
    RendererError,
    ReplayError,
    SchemaVersionError,
    SessionClosedError,
    SessionSettingsError,
    StateFileAccessError,
    StateFileError,
    StateIndexError,
    StoreArgumentError,
    StoreError,
    TeamMessageError,
    TeamThreadError,
    ThreadExistsError,
    ThreadNotFoundError,
    TokenizerError,
    TranscriptError,
    TurnMismatchError,
    UnknownAgentError,
    UnknownModelError,
    UnsupportedVersionError,
    ViewConflictError,
    ViewOperationError,
    XmlError,
)
from memctx._render.declared import DeclaredRenderer, Element
from memctx._render.registry import GenericRenderer, RendererRegistry, renderer_cache_key
from memctx._render.tokens import EstimatingTokenizer, TiktokenTokenizer, create_tokenizer
from memctx._result import ContextBuildResult, Exclusion, ExclusionReason, Exclusions
from memctx._state import MemoryState
from memctx.statefile import load_state, save_state
from memctx.typing import ChunkRenderer, Tokenizer

if _typing.TYPE_CHECKING:
    from memctx.store import MemoryStore

__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    # The store pulls in SQLAlchemy (a second or two to import); load it on first use.
    if name == "MemoryStore":
        from memctx.store import MemoryStore

        return MemoryStore
    raise AttributeError(f"module 'memctx' has no attribute {name!r}")


__all__ = [
    "AdapterError",
    "ArgumentError",
    "BudgetExceededError",
    "BuildKwargs",
    "BuildOptionError",
    "BuildOptions",
    "ChatError",
    "Chunk",
    "ChunkConflictError",
    "ChunkMetadata",
    "ChunkNotFoundError",
    "ChunkRenderer",
    "ChunkType",
    "CompactionError",
    "CompressionError",
    "ContextBuildResult",
    "ContextBuilder",
    "ContextMessage",
    "DeclaredRenderer",
    "DuplicateChunkError",
    "Element",
    "EmptyContextError",
    "EstimatingTokenizer",
    "Exclusion",
    "ExclusionReason",
    "Exclusions",
    "GenericRenderer",
    "InspectError",
    "InvalidChunkError",
    "ItemNotJSONError",
    "MemctxError",
    "MemoryState",
    "MemoryStore",
    "MissingExtraError",
    "PluginLoadError",
    "PolicyError",
    "PromptTooLargeError",
    "RendererError",
    "RendererRegistry",
    "ReplayError",
    "Role",
    "SchemaVersionError",
    "SessionClosedError",
    "SessionSettingsError",
    "StateFileAccessError",
    "StateFileError",
    "StateIndexError",
    "StoreArgumentError",
    "StoreError",
    "TeamMessageError",
    "TeamThreadError",
    "ThreadExistsError",
    "ThreadNotFoundError",
    "TiktokenTokenizer",
    "Tokenizer",
    "TokenizerError",
    "TranscriptError",
    "TurnMismatchError",
    "UnknownAgentError",
    "UnknownModelError",
    "UnsupportedVersionError",
    "ViewConflictError",
    "ViewOperationError",
    "XmlError",
    "chunks",
    "create_builder",
    "create_tokenizer",
    "load_state",
    "renderer_cache_key",
    "save_state",
]
