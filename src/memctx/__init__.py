"""memctx: turn an agent's memory into the exact messages the model is called with."""

from memctx import chunks
from memctx._builder import ContextBuilder, create_builder
from memctx._chunk import Chunk, ChunkMetadata, ChunkType, Role
from memctx._exceptions import (
    BudgetExceededError,
    BuildOptionError,
    ChunkConflictError,
    ChunkNotFoundError,
    DuplicateChunkError,
    InvalidChunkError,
    MemctxError,
    PluginLoadError,
    RendererError,
    SchemaVersionError,
    StateFileError,
    StoreError,
    ThreadExistsError,
    ThreadNotFoundError,
    TokenizerError,
    TranscriptError,
    UnknownModelError,
    UnsupportedVersionError,
    ViewOperationError,
)
from memctx._options import BuildOptions
from memctx._rendering import ChunkRenderer, GenericRenderer, RendererRegistry
from memctx._result import ContextBuildResult, ContextMessage, Exclusion, ExclusionReason
from memctx._state import MemoryState
from memctx._tokens import EstimatingTokenizer, TiktokenTokenizer, Tokenizer, create_tokenizer
from memctx.statefile import load_state, save_state

__version__ = "0.1.0"

__all__ = [
    "BudgetExceededError",
    "BuildOptionError",
    "BuildOptions",
    "Chunk",
    "ChunkConflictError",
    "ChunkMetadata",
    "ChunkNotFoundError",
    "ChunkRenderer",
    "ChunkType",
    "ContextBuildResult",
    "ContextBuilder",
    "ContextMessage",
    "DuplicateChunkError",
    "EstimatingTokenizer",
    "Exclusion",
    "ExclusionReason",
    "GenericRenderer",
    "InvalidChunkError",
    "MemctxError",
    "MemoryState",
    "PluginLoadError",
    "RendererError",
    "RendererRegistry",
    "Role",
    "SchemaVersionError",
    "StateFileError",
    "StoreError",
    "ThreadExistsError",
    "ThreadNotFoundError",
    "TiktokenTokenizer",
    "Tokenizer",
    "TokenizerError",
    "TranscriptError",
    "UnknownModelError",
    "UnsupportedVersionError",
    "ViewOperationError",
    "chunks",
    "create_builder",
    "create_tokenizer",
    "load_state",
    "save_state",
]
