"""Snapshots: a thread as one JSON document, and back.

A snapshot is a state file (:mod:`memctx.statefile`, ``"version": 1``) whose
``chunks`` are the visible chunks, so ``memctx render`` and
:func:`memctx.load_state` read it as is, plus a ``store`` section with
everything else::

    "store": {
      "version": 2,
      "batch": 2,                                   # the current batch
      "metadata": {"mode": "free"},                 # the thread's metadata
      "history": [                                  # every chunk, in sequence order
        {"seq": 1, "origin": "append", "batch": 0, "chunk": {...}}, ...
      ],
      "batches": [
        {"number": 0, "operation": "create", "params": {}, "view": null,
         "base_seq": 0, "created_at": "..."}, ...
      ]
    }

Version 1 (memctx 0.1.0, without ``metadata``) is read too. Importing
checks the whole document (and that ``chunks`` is what the
current batch shows) before it writes anything. A state file without a
``store`` section imports as a new thread holding its chunks.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping
from typing import Any, Final

import attrs
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session

from memctx._chunk import Chunk
from memctx._exceptions import (
    InvalidChunkError,
    StateFileError,
    StoreArgumentError,
    ThreadExistsError,
    UnsupportedVersionError,
)
from memctx._json import NotJSONError, freeze_json, thaw_json
from memctx._progress import Progress
from memctx._state import MemoryState
from memctx._validators import (
    MAX_KIND_LENGTH,
    NAME_FORBIDDEN,
    describe,
    int_in_range,
    name,
    state_file_error,
)
from memctx.statefile import (
    FORMAT_VERSION,
    chunk_from_dict,
    chunk_to_dict,
    parse_json,
    state_from_dict,
)
from memctx.store._queries import (
    check_thread_id,
    get_batch,
    get_thread,
    insert_chunks,
    metadata_of,
    record_event,
    thread_batches,
)
from memctx.store._records import SNAPSHOT_IMPORTED
from memctx.store._row_reads import (
    history_rows,
    visible_seqs,
)
from memctx.store._schema import (
    ORIGINS,
    BatchRow,
    ThreadRow,
    chunk_values,
    dump_json,
    load_json,
    now,
    row_to_chunk,
)

SNAPSHOT_STORE_VERSION: Final = 2
"""The version of a snapshot's ``store`` section (version 1, without metadata, is read too)."""

_STORE_FIELDS: Final = frozenset({"version", "batch", "metadata", "history", "batches"})
_STORE_FIELDS_V1: Final = _STORE_FIELDS - {"metadata"}
_HISTORY_FIELDS: Final = frozenset({"seq", "origin", "batch", "chunk"})
_BATCH_FIELDS: Final = frozenset(
    {"number", "operation", "params", "view", "base_seq", "created_at"}
)


def export_thread(
    session: Session, thread_id: str, progress: Progress | None = None
) -> dict[str, Any]:
    """The snapshot document of a thread.

    Steps for ``progress``: each stored chunk read, each visible one and each
    stored one written into the document.
    """
    check_thread_id(thread_id)
    progress = progress or Progress(None)
    thread = get_thread(session, thread_id)
    visible = visible_seqs(session, get_batch(session, thread_id, thread.batch))
    rows = history_rows(session, thread_id)
    progress.start(2 * len(rows) + len(visible))
    stored = {row.seq: row_to_chunk(row) for row in progress.over(rows)}
    return {
        "version": FORMAT_VERSION,
        "thread_id": thread_id,
        "chunks": [chunk_to_dict(stored[seq]) for seq in progress.over(visible)],
        "store": {
            "version": SNAPSHOT_STORE_VERSION,
            "batch": thread.batch,
            "metadata": metadata_of(thread),
            "history": [
                {
                    "seq": r.seq,
                    "origin": r.origin,
                    "batch": r.batch,
                    "chunk": chunk_to_dict(stored[r.seq]),
                }
                for r in progress.over(rows)
            ],
            "batches": [
                {
                    "number": b.number,
                    "operation": b.operation,
                    "params": load_json(b.params, f"batch {b.number}"),
                    "view": None if b.view is None else load_json(b.view, f"batch {b.number}"),
                    "base_seq": b.base_seq,
                    "created_at": b.created_at.isoformat(),
                }
                for b in thread_batches(session, thread_id)
            ],
        },
    }


@attrs.frozen
class Snapshot:
    """A checked snapshot, ready to be written."""

    thread_id: str | None
    chunks: list[tuple[str, dict[str, Any]]]  # (origin, column values) per seq 1..n
    chunk_batches: list[int]
    batches: list[dict[str, Any]]
    batch: int
    source_has_store: bool
    metadata: dict[str, Any] = attrs.field(factory=dict)


def _fail(message: str, field: str) -> StateFileError:
    return StateFileError(message, field=field)


def _int(value: object, field: str, low: int, high: int) -> int:
    return int_in_range(state_file_error, low, high).check(value, field)


_OPERATION: Final = name(
    state_file_error,
    max_length=MAX_KIND_LENGTH,
    forbidden=NAME_FORBIDDEN,
    forbidden_name="control characters or lone surrogates",
)


def _storable(chunk: Chunk, where: str) -> dict[str, Any]:
    """The chunk's column values; a chunk no database can hold is a :class:`StateFileError`."""
    try:
        return chunk_values(chunk)
    except InvalidChunkError as exc:
        raise _fail(str(exc).split(": ", 1)[-1], f"{where}.{exc.field}") from None


def _object(value: object, field: str, allowed: frozenset[str]) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise _fail(f"must be an object, got {type(value).__name__}", field)
    unknown = set(value) - allowed
    if unknown:
        raise _fail(f"unknown field(s) {sorted(unknown)}", field)
    missing = allowed - set(value)
    if missing:
        raise _fail(f"missing field(s) {sorted(missing)}", field)
    return value


def _steps(data: object) -> int:
    """How many steps checking and writing ``data`` takes: each visible chunk read and
    checked, each stored one read and written (the visible ones for a state file)."""
    if not isinstance(data, Mapping):
        return 0
    chunks, store = data.get("chunks"), data.get("store")
    visible = len(chunks) if isinstance(chunks, list) else 0
    if store is None:
        return 3 * visible
    history = store.get("history") if isinstance(store, Mapping) else None
    return 2 * visible + 2 * (len(history) if isinstance(history, list) else 0)


def parse_snapshot(data: object, progress: Progress | None = None) -> Snapshot:
    """Check a snapshot (a mapping, or JSON text) completely; :class:`StateFileError` if bad.

    ``progress`` counts the steps :func:`import_snapshot` makes (see :func:`_steps`).
    """
    progress = progress or Progress(None)
    if isinstance(data, str | bytes | bytearray):
        data = parse_json(data)
    progress.start(_steps(data))
    state = state_from_dict(data)
    progress.advance(len(state))
    assert isinstance(data, Mapping)
    if "store" not in data:
        return Snapshot(
            thread_id=state.thread_id,
            chunks=[
                ("append", _storable(chunk, f"chunks[{i}]"))
                for i, chunk in enumerate(progress.over(state))
            ],
            chunk_batches=[0] * len(state),
            batches=[
                {
                    "number": 0,
                    "operation": "import",
                    "params": {},
                    "view": None,
                    "base_seq": 0,
                    "created_at": now(),
                }
            ],
            batch=0,
            source_has_store=False,
        )
    raw = data["store"]
    if not isinstance(raw, Mapping):
        raise _fail(f"must be an object, got {type(raw).__name__}", "store")
    version = raw.get("version")
    if version not in (1, SNAPSHOT_STORE_VERSION) or isinstance(version, bool):
        raise UnsupportedVersionError(
            f"unsupported snapshot store version {describe(version)}; this memctx reads "
            f"versions 1 and {SNAPSHOT_STORE_VERSION}",
            field="store.version",
        )
    store = _object(raw, "store", _STORE_FIELDS if version > 1 else _STORE_FIELDS_V1)
    metadata: dict[str, Any] = {}
    if "metadata" in store:
        if not isinstance(store["metadata"], Mapping):
            raise _fail("must be an object", "store.metadata")
        try:
            metadata = thaw_json(freeze_json(store["metadata"], "store.metadata"))
        except (TypeError, ValueError) as exc:
            raise _fail(f"must be JSON: {exc}", "store.metadata") from None
    raw_batches = store["batches"]
    if not isinstance(raw_batches, list) or not raw_batches:
        raise _fail("must be a non-empty array", "store.batches")
    chunks, chunk_batches = _parse_history(store["history"], len(raw_batches) - 1, progress)
    batches = _parse_batches(raw_batches, len(chunks))
    current = _int(store["batch"], "store.batch", 0, len(batches) - 1)
    _check_visible(state, chunks, batches[current])
    progress.advance(len(state))
    return Snapshot(state.thread_id, chunks, chunk_batches, batches, current, True, metadata)


def _parse_history(
    history: object, last_batch: int, progress: Progress
) -> tuple[list[tuple[str, dict[str, Any]]], list[int]]:
    if not isinstance(history, list):
        raise _fail(f"must be an array, got {type(history).__name__}", "store.history")
    chunks: list[tuple[str, dict[str, Any]]] = []
    batches: list[int] = []
    seen: dict[str, int] = {}
    for index, item in enumerate(progress.over(history)):
        where = f"store.history[{index}]"
        entry = _object(item, where, _HISTORY_FIELDS)
        if entry["seq"] != index + 1 or isinstance(entry["seq"], bool):
            raise _fail(
                f"must be {index + 1} (sequences have no gaps), got {describe(entry['seq'])}",
                f"{where}.seq",
            )
        origin = entry["origin"]
        if not isinstance(origin, str) or origin not in ORIGINS:
            raise _fail(
                f"must be one of {sorted(ORIGINS)}, got {describe(origin)}", f"{where}.origin"
            )
        batches.append(_int(entry["batch"], f"{where}.batch", 0, last_batch))
        try:
            chunk = chunk_from_dict(entry["chunk"])
        except StateFileError as exc:
            raise _fail(str(exc), f"{where}.chunk") from None
        if chunk.id in seen:
            raise _fail(
                f"duplicate chunk id {chunk.id!r} (first at seq {seen[chunk.id]})",
                f"{where}.chunk.id",
            )
        seen[chunk.id] = index + 1
        chunks.append((entry["origin"], _storable(chunk, f"{where}.chunk")))
    return chunks, batches


def _parse_batches(raw: list[Any], chunk_count: int) -> list[dict[str, Any]]:
    batches: list[dict[str, Any]] = []
    previous_base = 0
    for index, item in enumerate(raw):
        where = f"store.batches[{index}]"
        entry = dict(_object(item, where, _BATCH_FIELDS))
        _int(entry["number"], f"{where}.number", index, index)
        _OPERATION.check(entry["operation"], f"{where}.operation")
        if not isinstance(entry["params"], Mapping):
            raise _fail("must be an object", f"{where}.params")
        try:
            entry["params"] = freeze_json(entry["params"], f"{where}.params")
        except NotJSONError as exc:
            raise _fail(exc.message, exc.path) from None
        base = _int(entry["base_seq"], f"{where}.base_seq", previous_base, chunk_count)
        previous_base = base
        view = entry["view"]
        if view is not None:
            if not isinstance(view, list):
                raise _fail("must be an array of sequence numbers or null", f"{where}.view")
            for position, seq in enumerate(view):
                _int(seq, f"{where}.view[{position}]", 1, base)
            if len(set(view)) != len(view):
                raise _fail("names a chunk twice", f"{where}.view")
        try:
            if not isinstance(entry["created_at"], str):
                raise ValueError
            created = _dt.datetime.fromisoformat(entry["created_at"])
        except ValueError:
            raise _fail("must be an ISO 8601 timestamp", f"{where}.created_at") from None
        # A timestamp without an offset is taken as UTC.
        entry["created_at"] = created if created.tzinfo else created.replace(tzinfo=_dt.UTC)
        batches.append(entry)
    return batches


def _check_visible(
    state: MemoryState, chunks: list[tuple[str, dict[str, Any]]], batch: Mapping[str, Any]
) -> None:
    view = batch["view"]
    appended = [i + 1 for i, (origin, _) in enumerate(chunks) if origin == "append"]
    seqs = appended
    if view is not None:
        seqs = list(view) + [s for s in appended if s > batch["base_seq"]]
    expected = [chunks[s - 1][1] for s in seqs]
    if [_storable(c, f"chunks[{i}]") for i, c in enumerate(state)] != expected:
        raise _fail(
            "do not match what the store section's current batch shows "
            "(the snapshot was edited or is corrupt)",
            "chunks",
        )


def import_snapshot(
    session: Session, data: object, thread_id: str | None, progress: Progress | None = None
) -> str:
    """Create a thread from a snapshot (checked completely first); return its id."""
    progress = progress or Progress(None)
    snapshot = parse_snapshot(data, progress)
    target = thread_id if thread_id is not None else snapshot.thread_id
    if target is None:
        raise StoreArgumentError("the snapshot names no thread; pass thread_id")
    check_thread_id(target)
    if session.get(ThreadRow, target) is not None:
        raise ThreadExistsError(target)
    thread = ThreadRow(
        id=target,
        last_seq=len(snapshot.chunks),
        batch=snapshot.batch,
        last_batch=snapshot.batches[-1]["number"],
        meta=dump_json(snapshot.metadata),
    )
    try:
        session.add(thread)
        session.flush()
    except IntegrityError:  # created by another writer since the check above
        raise ThreadExistsError(target) from None
    insert_chunks(
        session,
        target,
        1,
        [
            (values, origin, batch)
            for (origin, values), batch in zip(snapshot.chunks, snapshot.chunk_batches, strict=True)
        ],
        progress.advance,
    )
    session.add_all(
        BatchRow(
            thread_id=target,
            number=b["number"],
            operation=b["operation"],
            params=dump_json(b["params"]),
            view=None if b["view"] is None else dump_json(b["view"]),
            base_seq=b["base_seq"],
            created_at=b["created_at"],
        )
        for b in snapshot.batches
    )
    record_event(
        session,
        target,
        SNAPSHOT_IMPORTED,
        {
            "source_thread_id": snapshot.thread_id,
            "chunks": len(snapshot.chunks),
            "batches": len(snapshot.batches),
            "batch": snapshot.batch,
            "with_history": snapshot.source_has_store,
        },
    )
    progress.finish()
    return target
