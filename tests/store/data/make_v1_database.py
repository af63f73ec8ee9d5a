"""Write ``store-schema-1.db`` and ``store-schema-1.json`` with memctx 0.1.0 (store schema 1).

Run from a checkout of that release::

    python tests/store/data/make_v1_database.py

The database holds threads with views, rollbacks, events, cached token
counts and an imported snapshot; the JSON file is what that release reads
back from it (snapshots, thread summaries, events), which
``test_store_migration.py`` expects from the migrated database.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from memctx import chunks, create_tokenizer
from memctx.store import MemoryStore

HERE = Path(__file__).resolve().parent
DATABASE = HERE / "store-schema-1.db"
EXPECTED = HERE / "store-schema-1.json"


def main() -> None:
    DATABASE.unlink(missing_ok=True)
    with MemoryStore.open(DATABASE) as store:
        store.create_thread("chat")
        store.append(
            "chat",
            chunks.system("You are terse.", id="s"),
            chunks.user("What is 2+2? \u00e9\u4e2d", id="u1"),
            chunks.assistant("4", id="a1"),
            chunks.tool_call("read_file", {"path": "/x", "n": 1.5}, call_id="c1", id="tc1"),
            chunks.tool_result("read_file", "contents <of> x", call_id="c1", id="tr1"),
            chunks.user("And 3+3?", id="u2", custom={"k": [1, 2]}),
        )
        store.truncate("chat", keep_last=3)
        store.insert("chat", 0, chunks.user("inserted", id="ins"))
        store.rollback("chat", batch=0)
        store.replace("chat", "a1", chunks.assistant("four", id="a1b"))
        store.filter("chat", types=["AGENT", "SYSTEM"])
        store.append("chat", chunks.assistant("6", id="a2"))
        store.record_event("chat", "custom.event", {"n": 1, "nested": {"x": None}})
        store.build("chat", max_tokens=50, tokenizer=create_tokenizer("gpt-4o"))
        store.create_thread("empty")
        data = store.export_snapshot("chat")
        store.import_snapshot(data, thread_id="copy")
        store.clear("copy")
        expected = {
            "threads": [
                {
                    "id": info.id,
                    "created_at": info.created_at.isoformat(),
                    "chunk_count": info.chunk_count,
                    "batch": info.batch,
                    "batch_count": info.batch_count,
                }
                for info in store.list_threads()
            ],
            "snapshots": {t: store.export_snapshot(t) for t in ("chat", "empty", "copy")},
            "events": {
                t: [
                    {
                        "kind": e.kind,
                        "payload": json.loads(json.dumps(e.payload)),
                        "created_at": e.created_at.isoformat(),
                    }
                    for e in store.events(t)
                ]
                for t in ("chat", "empty", "copy")
            },
        }
    with sqlite3.connect(DATABASE) as connection:  # one file: no WAL left beside it
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        connection.execute("PRAGMA journal_mode = DELETE")
    EXPECTED.write_text(json.dumps(expected, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
