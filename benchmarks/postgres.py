"""A throwaway PostgreSQL server for the store benchmarks, started as the store tests start one."""

from __future__ import annotations

import contextlib
import os
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


def server_cpu(url: str) -> Callable[[], float] | None:
    """A reader of the CPU seconds the server at ``url`` has used so far (its processes
    alive when read: the postmaster's children, from ``/proc``); None where ``/proc`` or
    the server's processes cannot be read (a server on another machine)."""
    import psycopg

    with psycopg.connect(url.replace("postgresql+psycopg:", "postgresql:", 1)) as connection:
        row = connection.execute("SELECT pg_backend_pid()").fetchone()
    try:
        postmaster = _stat(int(row[0]))[1] if row else None
    except (OSError, IndexError, ValueError):
        return None
    if postmaster is None:
        return None
    tick = os.sysconf("SC_CLK_TCK")

    def read() -> float:
        used = 0
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                fields = _stat(int(name))
            except (OSError, IndexError, ValueError):
                continue  # gone meanwhile
            if fields[1] == postmaster:
                used += fields[11] + fields[12]  # utime, stime
        return used / tick

    return read


def _stat(pid: int) -> list[int]:
    """The numeric fields of ``/proc/PID/stat`` after the command name (state as 0)."""
    with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return [0 if not field.lstrip("-").isdigit() else int(field) for field in fields]
