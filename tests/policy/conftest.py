"""Fixtures of the policy tests; the store suite's (``store``, ``store_url``: SQLite and a
real PostgreSQL, ``MemoryStore`` and ``AsyncMemoryStore``) for those run on a store."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
from policy_runs import run_of

from memctx import MemoryState

_STORE_TESTS = Path(__file__).resolve().parents[1] / "store"
if str(_STORE_TESTS) not in sys.path:
    sys.path.insert(0, str(_STORE_TESTS))  # store_apis, which the store fixtures import
_spec = importlib.util.spec_from_file_location("store_suite_fixtures", _STORE_TESTS / "conftest.py")
assert _spec is not None
assert _spec.loader is not None
_store_fixtures = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_store_fixtures)

postgres_server = _store_fixtures.postgres_server
sqlite_template = _store_fixtures.sqlite_template
store_url = _store_fixtures.store_url
api = _store_fixtures.api
open_store = _store_fixtures.open_store
store = _store_fixtures.store


@pytest.fixture
def long_run() -> MemoryState:
    """A task and 30 calls with outputs of ~400 tokens."""
    return run_of(30)
