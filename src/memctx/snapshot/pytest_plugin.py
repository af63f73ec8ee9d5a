"""memctx's pytest plugin: snapshot-test your rendered prompts.

Loaded by pytest automatically once memctx is installed with syrupy
(``pip install 'memctx[pytest]'``): the ``pytest11`` entry point is the small
:mod:`memctx_pytest` module, which loads this one only when syrupy is there.
Without syrupy nothing of memctx is imported, and a test that asks for
``context_snapshot`` fails with a message naming the extra.

Fixtures
--------
``context_snapshot``
    A :class:`~memctx.snapshot.ContextSnapshot`. Compare it with what you render::

        from memctx import MemoryState, chunks

        def test_read_file_call(context_snapshot):
            chunk = chunks.tool_call("read_file", {"path": "a.py"}, call_id="c1", id="chunk_1")
            assert context_snapshot == chunk            # .xml: role comment + XML

        def test_prompt(context_snapshot, context_snapshot_builder):
            result = context_snapshot_builder.build(state, max_tokens=800)
            assert context_snapshot == result           # .txt: report + messages
            assert context_snapshot(name="messages") == result.messages

    Accepted: a ``Chunk``, a ``str`` of XML, a ``ContextBuildResult``, a
    ``ContextMessage`` or a sequence of them. ``context_snapshot(name=..., builder=...)``
    names the file of one comparison and/or renders its chunk with another builder.
    Give chunks fixed ids (and ``created_at``) so the files stay stable.

``context_snapshot_builder``
    The :class:`~memctx.ContextBuilder` that renders chunks for ``context_snapshot``:
    ``create_builder()`` by default. Override the fixture in your ``conftest.py`` to
    snapshot with your own renderers registered.

Configuration
-------------
``memctx_snapshot_dir`` (ini option)
    Where the files go: a path relative to pytest's rootdir (or absolute); default
    ``snapshots``. A test in ``tests/test_prompts.py`` writes to
    ``snapshots/tests/test_prompts/<test name>.xml`` (or ``.txt``).

Create or update the files with ``pytest --snapshot-update``; a missing or different
snapshot fails the test otherwise. Updating only some tests
(``pytest tests/test_prompts.py::test_prompt --snapshot-update``) leaves every other
snapshot alone: see :mod:`memctx.snapshot`.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from memctx_pytest import MISSING_SYRUPY

if TYPE_CHECKING:
    from memctx._build.builder import ContextBuilder
    from memctx.snapshot import ContextSnapshot
    from memctx.snapshot._scope import RunRecord

__all__ = ["context_snapshot", "context_snapshot_builder"]

SNAPSHOT_DIR_INI = "memctx_snapshot_dir"
DEFAULT_SNAPSHOT_DIR = "snapshots"  # the same as memctx.snapshot.DEFAULT_SNAPSHOT_DIR


def syrupy_installed() -> bool:
    """Whether syrupy can be imported (checked without importing it)."""
    return importlib.util.find_spec("syrupy") is not None


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        SNAPSHOT_DIR_INI,
        help=(
            "memctx: folder for context snapshots, relative to the rootdir "
            f"(default: {DEFAULT_SNAPSHOT_DIR})"
        ),
        default=DEFAULT_SNAPSHOT_DIR,
    )


def pytest_configure(config: pytest.Config) -> None:
    if not syrupy_installed():
        return
    from memctx.snapshot import MemctxSnapshotExtension
    from memctx.snapshot._scope import RUN_RECORD, RunRecord

    rootdir = config.rootpath
    configured = str(config.getini(SNAPSHOT_DIR_INI)).strip() or DEFAULT_SNAPSHOT_DIR
    previous = (MemctxSnapshotExtension.snapshot_root, MemctxSnapshotExtension.rootdir)
    MemctxSnapshotExtension.snapshot_root = rootdir / Path(configured)
    MemctxSnapshotExtension.rootdir = rootdir

    def restore() -> None:
        MemctxSnapshotExtension.snapshot_root, MemctxSnapshotExtension.rootdir = previous

    config.add_cleanup(restore)
    record = RunRecord(config)
    config.stash[RUN_RECORD] = record
    config.pluginmanager.register(_RunTracker(record), "memctx-snapshot-run")


class _RunTracker:
    """Feeds the run's selection and outcomes to the :class:`RunRecord`."""

    def __init__(self, record: RunRecord) -> None:
        self.record = record

    def pytest_deselected(self, items: Sequence[pytest.Item]) -> None:
        self.record.deselected(items)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.record.reported(report)


@pytest.hookimpl(tryfirst=True)
def pytest_assertrepr_compare(
    config: pytest.Config, op: str, left: Any, right: Any
) -> list[str] | None:
    snapshot_module = sys.modules.get("memctx.snapshot")  # loaded only if a test used it
    if snapshot_module is None:
        return None
    snapshot_type = snapshot_module.ContextSnapshot
    if isinstance(left, snapshot_type) or isinstance(right, snapshot_type):
        result: list[str] | None = snapshot_module.explain_failure(config, op, left, right)
        return result
    return None


@pytest.fixture
def context_snapshot_builder() -> ContextBuilder:
    """The builder that renders chunks for ``context_snapshot`` (override to customise)."""
    from memctx._build.builder import create_builder

    return create_builder()


@pytest.fixture
def context_snapshot(
    request: pytest.FixtureRequest, context_snapshot_builder: ContextBuilder
) -> ContextSnapshot:
    """Compare chunks, messages and build results with readable snapshot files."""
    if not syrupy_installed():
        pytest.fail(MISSING_SYRUPY, pytrace=False)
    from memctx.snapshot import ContextSnapshot

    return ContextSnapshot(request.getfixturevalue("snapshot"), context_snapshot_builder)
