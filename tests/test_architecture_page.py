"""The architecture page's package map matches the packages under src/memctx."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "architecture.md"
PACKAGE = ROOT / "src" / "memctx"
PACKAGE_CELL = re.compile(r"^`(?P<name>[\w.]+)/`$")


def mapped_packages() -> list[str]:
    """The packages the page's "package map" table names (first cells like `` `_build/` ``)."""
    section = PAGE.read_text(encoding="utf-8").split("## The package map", 1)[1]
    section = section.split("\n## ", 1)[0]
    names = []
    for line in section.splitlines():
        if not line.startswith("|"):
            continue
        first = line.strip("|").split("|", 1)[0].strip()
        match = PACKAGE_CELL.match(first)
        if match:
            names.append(match.group("name"))
    return names


def packages_on_disk() -> list[str]:
    return sorted(p.parent.name for p in PACKAGE.glob("*/__init__.py"))


class TestThePackageMap:
    def test_it_names_packages(self) -> None:
        assert len(mapped_packages()) >= 10

    def test_every_package_it_names_exists(self) -> None:
        missing = [
            name for name in mapped_packages() if not (PACKAGE / name / "__init__.py").is_file()
        ]

        assert missing == []

    def test_every_package_is_on_it(self) -> None:
        mapped = set(mapped_packages())

        assert [name for name in packages_on_disk() if name not in mapped] == []

    def test_it_names_each_package_once(self) -> None:
        names = mapped_packages()

        assert len(names) == len(set(names))
