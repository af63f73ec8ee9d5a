"""The README's Python examples run as written.

Blocks run in order in one namespace (later examples use earlier names), in a
temporary directory, with the store's default database pointed at a
temporary file. A block that needs something this machine does not have (a
PostgreSQL server at an example address) is marked ``<!-- not run -->`` on
the line before it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).parent.parent / "README.md"
BLOCK = re.compile(r"(<!-- not run -->\n)?```python\n(.*?)```", re.DOTALL)


def python_blocks() -> list[tuple[int, str, bool]]:
    text = README.read_text(encoding="utf-8")
    return [
        (text[: m.start()].count("\n") + 1, m.group(2), m.group(1) is None)
        for m in BLOCK.finditer(text)
    ]


def test_readme_has_python_examples() -> None:
    assert len(python_blocks()) >= 4


def test_readme_python_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MEMCTX_DATABASE_URL", f"sqlite:///{tmp_path / 'memory.db'}")
    namespace: dict[str, object] = {"__name__": "readme"}
    ran = 0
    for line, code, runnable in python_blocks():
        if not runnable:
            continue
        try:
            exec(compile(code, f"README.md:{line}", "exec"), namespace)
        except Exception as exc:
            pytest.fail(f"README.md line {line}: {type(exc).__name__}: {exc}")
        ran += 1
    store = namespace.get("store")
    close = getattr(store, "close", None)
    if callable(close):
        close()
    assert ran >= 4
