"""Invalid option values of the store and the command line, one row each, on both backends.

Each is refused with one clear MemctxError (one ``memctx: error:`` line from the
command line) and leaves the database exactly as it was. The library's own
option values are in ``tests/test_invalid_options.py``.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from click.testing import CliRunner

from memctx import (
    BuildOptionError,
    CompactionError,
    CompressionError,
    MemctxError,
    PolicyError,
    StoreArgumentError,
    ViewOperationError,
    chunks,
)
from memctx.cli import main
from memctx.compaction import CompactionPolicy, ExtractiveSummarizer
from memctx.store import MemoryStore, recall_tool

Rows = Callable[[], dict[str, list[tuple[object, ...]]]]
Call = Callable[[MemoryStore, str], object]

INVALID: dict[str, tuple[Call, type[MemctxError], str]] = {
    "create_thread(exist_ok=1)": (
        lambda s, t: s.create_thread("n", exist_ok=1),
        StoreArgumentError,
        "exist_ok",
    ),
    "truncate(keep_last=-1)": (
        lambda s, t: s.truncate(t, keep_last=-1),
        ViewOperationError,
        "keep_last",
    ),
    "truncate(keep_first='2')": (
        lambda s, t: s.truncate(t, keep_first="2"),
        ViewOperationError,
        "keep_first",
    ),
    "truncate(remove_last=True)": (
        lambda s, t: s.truncate(t, remove_last=True),
        ViewOperationError,
        "remove_last",
    ),
    "truncate with two options": (
        lambda s, t: s.truncate(t, keep_first=1, keep_last=1),
        ViewOperationError,
        "one",
    ),
    "truncate with none": (lambda s, t: s.truncate(t), ViewOperationError, "one"),
    "truncate(range=(2, 1, 0))": (
        lambda s, t: s.truncate(t, range=(2, 1, 0)),
        ViewOperationError,
        "range",
    ),
    "truncate(range='1:2')": (lambda s, t: s.truncate(t, range="1:2"), ViewOperationError, "range"),
    "insert(position='0')": (
        lambda s, t: s.insert(t, "0", chunks.user("x", id="n")),
        ViewOperationError,
        "position",
    ),
    "insert(position=1.5)": (
        lambda s, t: s.insert(t, 1.5, chunks.user("x", id="n")),
        ViewOperationError,
        "position",
    ),
    "replace(target=1.5)": (
        lambda s, t: s.replace(t, 1.5, chunks.user("x", id="n")),
        ViewOperationError,
        "visible index",
    ),
    "replace(target=99)": (
        lambda s, t: s.replace(t, 99, chunks.user("x", id="n")),
        ViewOperationError,
        "99",
    ),
    "clear(keep_system='yes')": (
        lambda s, t: s.clear(t, keep_system="yes"),
        ViewOperationError,
        "keep_system",
    ),
    "filter(roles=['robot'])": (
        lambda s, t: s.filter(t, roles=["robot"]),
        ViewOperationError,
        "robot",
    ),
    "filter(types=['NOPE'])": (
        lambda s, t: s.filter(t, types=["NOPE"]),
        ViewOperationError,
        "NOPE",
    ),
    "filter(contains=5)": (lambda s, t: s.filter(t, contains=5), ViewOperationError, "contains"),
    "filter with no criterion": (lambda s, t: s.filter(t), ViewOperationError, "at least one"),
    "rollback(batch=-1)": (lambda s, t: s.rollback(t, -1), ViewOperationError, "batch"),
    "rollback(batch='0')": (lambda s, t: s.rollback(t, "0"), ViewOperationError, "batch"),
    "search(limit=0)": (lambda s, t: s.search(t, "x", limit=0), StoreArgumentError, "limit"),
    "search(types=['NOPE'])": (
        lambda s, t: s.search(t, "x", types=["NOPE"]),
        StoreArgumentError,
        "NOPE",
    ),
    "search(visible='yes')": (
        lambda s, t: s.search(t, "x", visible="yes"),
        StoreArgumentError,
        "visible",
    ),
    "events(kind='')": (lambda s, t: s.events(t, kind=""), StoreArgumentError, "kind"),
    "build(max_tokens=-1)": (lambda s, t: s.build(t, -1), BuildOptionError, "max_tokens"),
    "build(strategy='x')": (
        lambda s, t: s.build(t, 100, strategy="x"),
        BuildOptionError,
        "strategy",
    ),
    "compress(tokenizer=5)": (
        lambda s, t: s.compress(t, [], tokenizer=5),
        CompressionError,
        "tokenizer",
    ),
    "compact(keep_recent_tokens=-1)": (
        lambda s, t: s.compact(t, ExtractiveSummarizer(), keep_recent_tokens=-1),
        CompactionError,
        "keep_recent_tokens",
    ),
    "compact(budget=0)": (
        lambda s, t: s.compact(t, ExtractiveSummarizer(), policy=CompactionPolicy(), budget=0),
        CompactionError,
        "budget",
    ),
    "step(policy=5)": (lambda s, t: s.step(t, 5), PolicyError, "policy"),
    "recall_tool('bedrock')": (lambda s, t: recall_tool("bedrock"), StoreArgumentError, "bedrock"),
    "apply_view(based_on=5)": (
        lambda s, t: s.apply_view(t, [], operation="x", based_on=5),
        ViewOperationError,
        "based_on",
    ),
}

CLI_INVALID: dict[str, tuple[list[str], str]] = {
    "thread truncate --keep-last -1": (
        ["thread", "truncate", "t1", "--keep-last", "-1"],
        "keep.last",
    ),
    "thread truncate --range 1": (["thread", "truncate", "t1", "--range", "1"], "range"),
    "thread search --limit 0": (["thread", "search", "t1", "x", "--limit", "0"], "limit"),
    "thread rollback -- -1": (["thread", "rollback", "t1", "--", "-1"], "batch"),
    "thread build --max-tokens -5": (["thread", "build", "t1", "--max-tokens", "-5"], "max"),
    "thread build --strategy newest": (
        ["thread", "build", "t1", "--strategy", "newest"],
        "strategy",
    ),
    "thread filter --role robot": (["thread", "filter", "t1", "--role", "robot"], "robot"),
    "thread compress --max-chars 0": (["thread", "compress", "t1", "--max-chars", "0"], "max"),
    "team task on a thread that is not a team": (["team", "task", "t1", "Do it."], "not a team"),
    "team add on a thread that is not a team": (
        ["team", "add", "t1", "hi", "--speaker", "lena"],
        "not a team",
    ),
    "team add --speaker ''": (["team", "add", "t1", "hi", "--speaker", ""], "roleId"),
    "chat new --mode party": (["chat", "new", "s1", "--agents", "-", "--mode", "party"], "mode"),
    "chat new --window -1": (["chat", "new", "s1", "--agents", "-", "--window", "-1"], "window"),
    "chat mode on a thread that is not a chat": (["chat", "mode", "t1", "quiz"], "chat"),
}


class TestInvalidStoreOptions:
    @pytest.mark.parametrize("case", list(INVALID))
    def test_an_invalid_value_is_refused_and_writes_nothing(
        self, store: MemoryStore, thread: str, db_rows: Rows, case: str
    ) -> None:
        call, error, names = INVALID[case]
        before = db_rows()

        with pytest.raises(MemctxError) as caught:
            call(store, thread)

        assert isinstance(caught.value, error), f"{type(caught.value).__name__}: {caught.value}"
        message = str(caught.value)
        assert "\n" not in message
        assert re.search(re.escape(names), message), message
        assert db_rows() == before


@pytest.mark.parametrize("api", ["sync"], indirect=True)
class TestInvalidCommandLineOptions:
    @pytest.mark.parametrize("case", list(CLI_INVALID))
    def test_an_invalid_value_is_one_error_line_and_writes_nothing(
        self, store_url: str, thread: str, db_rows: Rows, case: str
    ) -> None:
        arguments, names = CLI_INVALID[case]
        before = db_rows()

        group, *rest = arguments
        agents = '[{"id": "coder"}, {"id": "reviewer"}]'
        result = CliRunner().invoke(main, [group, "--db", store_url, *rest], input=agents)

        assert result.exit_code in (1, 2), result.output
        assert result.stderr.startswith("memctx: error: "), result.stderr
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
        assert re.search(names, result.stderr, re.IGNORECASE), result.stderr
        assert result.stdout == ""
        assert db_rows() == before
