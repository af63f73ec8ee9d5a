"""A throwaway PostgreSQL server for the store benchmarks, started as the store tests start one."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path


@contextlib.contextmanager
def postgres_databases() -> Iterator[Callable[[], str] | None]:
    """A maker of new empty databases on a throwaway server (its URL each); None when
    PostgreSQL's binaries are missing or the server does not start."""
    tests = Path(__file__).resolve().parents[1] / "tests" / "store"
    sys.path.insert(0, str(tests))
    try:
        import conftest  # the store suite's server helpers

        bindir = conftest.find_pg_bin()
        if bindir is None:
            yield None
            return
        try:
            server = conftest._start_server(bindir)
        except BaseException as exc:  # pytest.skip is a BaseException
            print(f"PostgreSQL not started: {exc}", file=sys.stderr)
            yield None
            return
        try:
            yield server.new_database
        finally:
            server.close()
    finally:
        sys.path.remove(str(tests))
