"""pytest's way in to memctx's plugin (the ``pytest11`` entry point names this module).

It is a module of its own, outside the ``memctx`` package, so that a pytest
session in an environment where memctx is installed without its ``pytest``
extra imports nothing of memctx: it only checks whether syrupy is installed.

- syrupy installed: loads :mod:`memctx.snapshot.pytest_plugin` (the ``context_snapshot``
  fixtures and the ``memctx_snapshot_dir`` ini option).
- syrupy missing: defines ``context_snapshot`` and ``context_snapshot_builder``
  as fixtures that fail the test asking for them with
  ``pip install 'memctx[pytest]'``; nothing else in the session changes.
"""

from __future__ import annotations

import importlib.util

import pytest

MISSING_SYRUPY = (
    "memctx's context_snapshot fixture needs syrupy, which is not installed: "
    "pip install 'memctx[pytest]'"
)

if importlib.util.find_spec("syrupy") is not None:
    pytest_plugins = ["memctx.snapshot.pytest_plugin"]
else:

    @pytest.fixture
    def context_snapshot() -> None:
        """Needs syrupy: ``pip install 'memctx[pytest]'``."""
        pytest.fail(MISSING_SYRUPY, pytrace=False)

    @pytest.fixture
    def context_snapshot_builder() -> None:
        """Needs syrupy: ``pip install 'memctx[pytest]'``."""
        pytest.fail(MISSING_SYRUPY, pytrace=False)
