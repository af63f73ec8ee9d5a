"""A thread moves between SQLite and PostgreSQL: any snapshot one exports, the other imports.

Property: a thread built on one backend from any storable chunks and any sequence of
view operations exports a snapshot that the other backend imports, and whose
re-export (there, and back on the first backend) is the same document, byte for byte.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memctx import Chunk
from memctx._validators import STORE_FORBIDDEN
from memctx.store import MemoryStore
from strategies import any_chunks, examples


def storable(chunk: Chunk) -> Chunk:
    """``chunk`` without the characters no database column holds in its id, action, subtype."""

    def clean(text: str | None) -> str | None:
        return None if text is None else STORE_FORBIDDEN.sub("?", text)

    return attrs.evolve(
        chunk, id=clean(chunk.id), action=clean(chunk.action), subtype=clean(chunk.subtype)
    )


storable_chunks = any_chunks.map(storable)

operations = st.lists(
    st.one_of(
        st.tuples(st.just("append"), storable_chunks),
        st.tuples(st.just("insert"), st.integers(-1, 3), storable_chunks),
        st.tuples(st.just("truncate"), st.integers(0, 4)),
        st.tuples(st.just("clear"), st.booleans()),
        st.tuples(st.just("rollback"), st.integers(0, 8)),
    ),
    max_size=6,
)


def build_thread(store: MemoryStore, thread_id: str, history: list[Any]) -> None:
    """Create the thread and apply the operations; the ones a thread refuses are skipped."""
    store.create_thread(thread_id)
    seen: set[str] = set()
    for operation in history:
        name, *args = operation
        if name in ("append", "insert"):
            chunk = args[-1]
            if chunk.id in seen:
                continue
            seen.add(chunk.id)
            if name == "append":
                store.append(thread_id, chunk)
            else:
                visible = len(store.get_current_state(thread_id))
                store.insert(thread_id, min(args[0], visible), chunk)
        elif name == "truncate":
            store.truncate(thread_id, keep_last=args[0])
        elif name == "clear":
            store.clear(thread_id, keep_system=args[0])
        else:
            store.rollback(thread_id, args[0] % store.thread_info(thread_id).batch_count)


@pytest.fixture
def stores(tmp_path: Path, postgres_server: Any) -> Iterator[dict[str, MemoryStore]]:
    with (
        MemoryStore.open(tmp_path / "memory.db") as lite,
        MemoryStore.open(postgres_server.new_database()) as pg,
    ):
        yield {"sqlite": lite, "postgresql": pg}


_names = (f"t{n}" for n in itertools.count())


@pytest.mark.postgres
@pytest.mark.parametrize(("source", "target"), [("sqlite", "postgresql"), ("postgresql", "sqlite")])
@settings(
    max_examples=examples(25),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(history=operations)
def test_a_snapshot_imports_into_the_other_backend_and_back_unchanged(
    stores: dict[str, MemoryStore], source: str, target: str, history: list[Any]
) -> None:
    thread_id = next(_names)
    build_thread(stores[source], thread_id, history)
    exported = json.dumps(stores[source].export_snapshot(thread_id))

    stores[target].import_snapshot(exported)
    moved = json.dumps(stores[target].export_snapshot(thread_id))
    back_id = f"{thread_id}-back"
    stores[source].import_snapshot(moved, thread_id=back_id)
    back = stores[source].export_snapshot(back_id)

    assert moved == exported
    assert json.dumps({**back, "thread_id": thread_id}) == exported
