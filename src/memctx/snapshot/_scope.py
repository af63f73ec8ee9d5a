"""Which snapshot files a pytest run may judge (report as unused, delete on update).

syrupy decides which snapshots are unused from the tests that ran, and it narrows a
``path::node`` selection to those nodes only when the snapshot file lies under the test
file's directory. memctx keeps its snapshots in a top-level folder, so without help
``pytest tests/test_x.py::test_one --snapshot-update`` would delete the snapshots of
every other test in ``test_x.py``. The extensions therefore only show syrupy the files
this run can vouch for:

- a file owned by a test (its name is the test's snapshot name, optionally followed by
  ``.N`` or ``[name]``) when that test ran and passed: syrupy then deletes only the
  files of that test the test no longer writes;
- a file owned by no test of its module (the test was removed or renamed) only when the
  whole module ran: no ``path::node`` argument named it, nothing in it was deselected
  (``-k``, ``-m``, ``--deselect``, ``--sw``) and ``--lf`` was not given.

Everything else is invisible to syrupy in this run, so it is neither reported as unused
nor deleted. Files of modules that were not collected are never even looked at.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import pytest

__all__ = ["RUN_RECORD", "RunRecord"]


class RunRecord:
    """What the current pytest run selected and how its tests ended."""

    def __init__(self, config: pytest.Config) -> None:
        self._last_failed_only = bool(config.getoption("lf", False))
        self._pyargs = bool(config.getoption("pyargs", False))
        self._partial_modules: set[Path] = set()
        self._failed: set[str] = set()
        self._passed: set[str] = set()
        self._by_module: dict[Path, list[pytest.Item]] | None = None
        invocation_dir = config.invocation_params.dir
        for arg in config.args:
            path, separator, _ = arg.partition("::")
            if separator:
                if self._pyargs:
                    self._last_failed_only = True  # cannot map to a file: judge no orphans
                else:
                    self._partial_modules.add(_key(invocation_dir / path))

    def deselected(self, items: Iterable[pytest.Item]) -> None:
        """Record items left out of the run (``-k``, ``-m``, ``--deselect``, ...)."""
        for item in items:
            self._partial_modules.add(_key(item.path))

    def reported(self, report: pytest.TestReport) -> None:
        """Record one phase's outcome: a test passed when its call passed and no phase failed."""
        if report.failed:
            self._failed.add(report.nodeid)
            self._passed.discard(report.nodeid)
        elif report.when == "call" and report.passed and report.nodeid not in self._failed:
            self._passed.add(report.nodeid)

    def judges(
        self,
        module: Path,
        stem: str,
        items: Sequence[pytest.Item],
        snapshot_name: Callable[[pytest.Item], str],
    ) -> bool:
        """Whether this run may judge the snapshot file ``stem`` of ``module``.

        ``items`` are the session's items; ``snapshot_name`` gives an item's snapshot
        name as the extension writes it.
        """
        module_key = _key(module)
        owners = [
            item for item in self._items_of(module_key, items) if _owns(snapshot_name(item), stem)
        ]
        if owners:
            return all(item.nodeid in self._passed for item in owners)
        return not self._last_failed_only and module_key not in self._partial_modules

    def _items_of(self, module_key: Path, items: Sequence[pytest.Item]) -> list[pytest.Item]:
        if self._by_module is None:
            by_module: dict[Path, list[pytest.Item]] = {}
            for item in items:
                by_module.setdefault(_key(item.path), []).append(item)
            self._by_module = by_module
        return self._by_module.get(module_key, [])


def _owns(name: str, stem: str) -> bool:
    """Whether a test with snapshot ``name`` writes the file ``stem`` (its first, a ``.N``
    or a ``[name]``d snapshot)."""
    return stem == name or stem.startswith((f"{name}.", f"{name}["))


def _key(path: Path) -> Path:
    return path.resolve()


RUN_RECORD = pytest.StashKey[RunRecord]()
"""Where the plugin keeps the run's :class:`RunRecord` on ``config.stash``."""
