"""Snapshot testing of rendered contexts: syrupy extensions and readable file formats.

memctx stores one human-readable file per snapshot, meant to be reviewed in a pull
request like any other source file:

``.xml``
    A rendered chunk: an XML comment naming the chat role, then the exact XML the
    chunk renders to. The file is well-formed XML (a comment may precede the root)::

        <!-- role: user -->
        <user_message id="chunk_1" role="user">
        Read /src/main.py, please.
        </user_message>

``.txt``
    A list of chat messages, each under a ``=== role (chunk ids) ===`` header followed
    by its exact content. A build result adds a ``=== report ===`` section first: the
    result's :meth:`~memctx.ContextBuildResult.summary` and one line per chunk (included
    or excluded, its tokens, and why it was left out).

Where the files go
------------------
``<snapshot dir>/<test module path relative to the rootdir, without .py>/<test name>.<ext>``,
e.g. ``snapshots/tests/test_prompts/test_system_prompt.xml``. The snapshot dir is
``<rootdir>/snapshots`` unless the ``memctx_snapshot_dir`` ini option says otherwise
(a path relative to the rootdir, or absolute). The pytest plugin
(:mod:`memctx.snapshot.pytest_plugin`) sets :attr:`MemctxSnapshotExtension.snapshot_root` and
:attr:`MemctxSnapshotExtension.rootdir` from the configuration.

Partial updates are safe
------------------------
syrupy deletes "unused" snapshots on ``--snapshot-update``, and with the snapshots
outside the tests' folder it cannot tell a ``path::node`` selection apart from a whole
module: plain syrupy would delete the other tests' files. memctx's extensions only show
syrupy the files this run can vouch for (:mod:`memctx.snapshot._scope`): files of tests
that ran and passed, and files owned by no test only when their whole module ran. Other
modules' folders are never read. So ``pytest tests/test_x.py::test_one --snapshot-update``
(or ``-k``, ``-m``, ``--deselect``, ``--lf``) touches only ``test_one``'s files, and a
failing test keeps its snapshot. A run of whole modules still reports, and on update
deletes, the snapshots of removed tests. The folder of a deleted test *module* is never
looked at: delete it by hand.

Use :class:`ContextSnapshot` through the ``context_snapshot`` fixture, or use the
extensions directly with syrupy: ``snapshot.use_extension(XmlSnapshotExtension)``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Final

import pytest
from syrupy.data import SnapshotCollection, SnapshotCollections
from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode
from syrupy.location import PyTestLocation

from memctx._build.builder import ContextBuilder
from memctx.snapshot._format import (
    SnapshotKind,
    format_build_result,
    format_chunk,
    format_messages,
    to_snapshot,
    with_final_newline,
)
from memctx.snapshot._scope import RUN_RECORD

if TYPE_CHECKING:
    from syrupy.assertion import SnapshotAssertion
    from syrupy.types import PropertyFilter, PropertyMatcher, SerializableData, SerializedData

__all__ = [
    "DEFAULT_SNAPSHOT_DIR",
    "ContextSnapshot",
    "MemctxSnapshotExtension",
    "MessagesSnapshotExtension",
    "XmlSnapshotExtension",
    "format_build_result",
    "format_chunk",
    "format_messages",
    "to_snapshot",
]

DEFAULT_SNAPSHOT_DIR: Final = "snapshots"
"""The snapshot folder, relative to pytest's rootdir, when ``memctx_snapshot_dir`` is unset."""

# -- syrupy extensions ------------------------------------------------------------------


class MemctxSnapshotExtension(SingleFileSnapshotExtension):
    """One readable text file per snapshot, in a snapshot folder per test module.

    Configured by class attributes: ``file_extension`` (set by the subclasses),
    ``snapshot_root`` (the snapshot folder; ``./snapshots`` when None) and ``rootdir``
    (test module paths are taken relative to it; the working directory when None).
    The pytest plugin sets the last two from pytest's configuration.

    Discovery (what syrupy may report as unused, and delete on ``--snapshot-update``)
    covers only this extension's files directly in the folder of the test module at
    hand, and of those only the ones this run may judge (see the module docstring).
    """

    _write_mode = WriteMode.TEXT
    file_extension = "txt"
    snapshot_root: ClassVar[Path | None] = None
    rootdir: ClassVar[Path | None] = None

    @classmethod
    def snapshot_folder(cls) -> Path:
        """The configured snapshot folder (absolute)."""
        if cls.snapshot_root is not None:
            return cls.snapshot_root
        return (cls.rootdir or Path.cwd()) / DEFAULT_SNAPSHOT_DIR

    @classmethod
    def dirname(cls, *, test_location: PyTestLocation) -> str:
        module = Path(test_location.filepath)
        relative = _relative_module_path(module, cls.rootdir or Path.cwd())
        return str(cls.snapshot_folder() / relative)

    @classmethod
    def discovery_dirname(cls, *, test_location: PyTestLocation) -> str:
        # Never the shared parent: only this test module's own folder is scanned.
        return cls.dirname(test_location=test_location)

    def discover_snapshots(
        self, *, test_location: PyTestLocation, ignore_extensions: list[str] | None = None
    ) -> SnapshotCollections:
        """This extension's files in the test module's folder that this run may judge.

        Files of tests that were not selected, did not run or did not pass stay
        invisible to syrupy, so they are never reported unused nor deleted (see
        :mod:`memctx.snapshot._scope`). Without memctx's plugin, nothing is.
        """
        discovered = SnapshotCollections()
        item = test_location.item
        config = getattr(item, "config", None)
        record = config.stash.get(RUN_RECORD, None) if config is not None else None
        if record is None or (ignore_extensions and self.file_extension in ignore_extensions):
            return discovered
        folder = Path(self.dirname(test_location=test_location))
        try:
            entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
        except (FileNotFoundError, NotADirectoryError):
            return discovered
        items = item.session.items
        module = Path(test_location.filepath)
        suffix_length = len(self.file_extension) + 1
        for entry in entries:
            if (
                entry.is_file()
                and not entry.name.startswith(".")
                and self.is_snapshot_location(location=entry.path)
                and record.judges(module, entry.name[:-suffix_length], items, self._name_of)
            ):
                discovered.add(self.read_snapshot_collection(snapshot_location=entry.path))
        return discovered

    @classmethod
    def _name_of(cls, item: pytest.Item) -> str:
        return cls.get_snapshot_name(test_location=PyTestLocation(item))

    @classmethod
    def matches_test_location(
        cls, *, test_location: PyTestLocation, snapshot_location: str
    ) -> bool:
        folder = Path(cls.dirname(test_location=test_location))
        if Path(snapshot_location).parent != folder:
            return False
        return super().matches_test_location(
            test_location=test_location, snapshot_location=snapshot_location
        )

    def serialize(
        self,
        data: SerializableData,
        *,
        exclude: PropertyFilter | None = None,
        include: PropertyFilter | None = None,
        matcher: PropertyMatcher | None = None,
    ) -> SerializedData:
        if isinstance(data, str):  # already in its stored form
            return with_final_newline(data)
        kind, text = to_snapshot(data)
        if kind != self.file_extension:
            raise TypeError(
                f"{type(self).__name__} stores .{self.file_extension} snapshots; "
                f"a {type(data).__name__} goes in a .{kind} snapshot"
            )
        return text

    # Read and write without newline translation: the file holds the text exactly.

    def read_snapshot_data_from_location(
        self, *, snapshot_location: str, snapshot_name: str, session_id: str
    ) -> SerializableData | None:
        try:
            with open(snapshot_location, encoding="utf-8", newline="") as file:
                return file.read()
        except FileNotFoundError:
            return None

    @classmethod
    def write_snapshot_collection(
        cls, *, snapshot_collection: SnapshotCollection, name_order: dict[str, int] | None = None
    ) -> None:
        data = next(iter(snapshot_collection)).data
        if not isinstance(data, str):
            raise TypeError(f"expected str snapshot data, got {type(data).__name__}")
        with open(snapshot_collection.location, "w", encoding="utf-8", newline="") as file:
            file.write(data)


class XmlSnapshotExtension(MemctxSnapshotExtension):
    """``.xml`` files: a rendered chunk (a role comment and its XML) or XML text."""

    file_extension = "xml"


class MessagesSnapshotExtension(MemctxSnapshotExtension):
    """``.txt`` files: a build result (report and messages) or a list of messages."""

    file_extension = "txt"


_EXTENSIONS: Final[dict[SnapshotKind, type[MemctxSnapshotExtension]]] = {
    "xml": XmlSnapshotExtension,
    "txt": MessagesSnapshotExtension,
}


def _relative_module_path(module: Path, rootdir: Path) -> Path:
    stem = module.with_suffix("")
    for base, path in ((rootdir, stem), (rootdir.resolve(), stem.resolve())):
        try:
            return path.relative_to(base)
        except ValueError:
            continue
    return Path(stem.name)


# -- the fixture's value ----------------------------------------------------------------


class _Assertions:
    """The syrupy assertions of one test, one per file kind, shared by all views."""

    def __init__(self, snapshot: SnapshotAssertion) -> None:
        self.snapshot = snapshot
        self.by_kind: dict[SnapshotKind, SnapshotAssertion] = {}
        self.last: SnapshotAssertion | None = None

    def for_kind(self, kind: SnapshotKind) -> SnapshotAssertion:
        found = self.by_kind.get(kind)
        if found is None:
            found = self.snapshot.use_extension(_EXTENSIONS[kind])
            self.by_kind[kind] = found
        return found


class ContextSnapshot:
    """Compares a rendered context with its snapshot file: ``assert context_snapshot == x``.

    ``x`` may be a :class:`~memctx.Chunk` (rendered by the builder, stored as ``.xml``
    with its role), a ``str`` of XML (stored as is, ``.xml``), a
    :class:`~memctx.ContextBuildResult` (report and messages, ``.txt``), a
    :class:`~memctx.ContextMessage` or a sequence of them (``.txt``).

    Each comparison in a test writes its own file: the first is named after the test,
    the next ones get ``.1``, ``.2``, ... (counted per file kind), or name one with
    ``context_snapshot(name="after_compaction") == x`` (file ``test_x[after_compaction]``).
    ``context_snapshot(builder=my_builder)`` renders chunks with ``my_builder`` for
    that comparison.
    """

    __hash__ = None  # type: ignore[assignment]  # compared with ==, so not hashable

    def __init__(
        self,
        snapshot: SnapshotAssertion,
        builder: ContextBuilder | None = None,
        *,
        name: str | None = None,
        _shared: _Assertions | None = None,
    ) -> None:
        self._shared = _shared if _shared is not None else _Assertions(snapshot)
        self._builder = builder
        self._name = name

    def __call__(
        self, *, name: str | None = None, builder: ContextBuilder | None = None
    ) -> ContextSnapshot:
        """Return this snapshot with a file ``name`` and/or a ``builder`` for one comparison."""
        return ContextSnapshot(
            self._shared.snapshot,
            builder if builder is not None else self._builder,
            name=name,
            _shared=self._shared,
        )

    def __eq__(self, other: object) -> bool:
        kind, text = to_snapshot(other, self._builder)
        assertion = self._shared.for_kind(kind)
        self._shared.last = assertion
        if self._name is not None:
            assertion = assertion(name=self._name)
        return assertion == text

    def __ne__(self, other: object) -> bool:
        return not self == other

    @property
    def last_assertion(self) -> SnapshotAssertion | None:
        """The syrupy assertion of the latest comparison (for failure reports)."""
        return self._shared.last

    def __repr__(self) -> str:
        name = f", name={self._name!r}" if self._name is not None else ""
        return f"ContextSnapshot({self._shared.snapshot.test_location.nodeid!r}{name})"


def explain_failure(config: Any, op: str, left: object, right: object) -> list[str] | None:
    """syrupy's failure report (with the diff) for a comparison involving a ContextSnapshot."""
    import syrupy

    if isinstance(left, ContextSnapshot) and left.last_assertion is not None:
        left = left.last_assertion
    elif isinstance(right, ContextSnapshot) and right.last_assertion is not None:
        right = right.last_assertion
    else:
        return None
    explanation: list[str] | None = syrupy.pytest_assertrepr_compare(
        config=config, op=op, left=left, right=right
    )
    return explanation
