"""Which cases of a side-by-side run lie beyond the harness's own noise.

    uv run --group bench python -m benchmarks.side_by_side /tmp/before . --output ab.md
    uv run --group bench python -m benchmarks.side_by_side /tmp/same . --output aa.md
    uv run python -m benchmarks.side_by_side_noise ab.md aa.md

``aa.md`` is a run of the after commit against itself (a second checkout of
it): each side runs in a process of its own, and two processes of the same
code differ by a few per cent for their whole life (memory layout), which a
case's own interval does not see. A case of ``ab.md`` is slower beyond that
when its interval lies wholly above 1 and above the same case's interval in
``aa.md``.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

Case = tuple[str, str, str]
Interval = tuple[float, float]

_INTERVAL = re.compile(r"([\d.]+)–([\d.]+)")


def intervals(report: Path) -> tuple[dict[Case, Interval | None], set[Case]]:
    """Each case's 95% interval in a side-by-side report (None: no verdict), and the cases
    the report marks slower than its noise."""
    found: dict[Case, Interval | None] = {}
    marked: set[Case] = set()
    for line in report.read_text(encoding="utf-8").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) < 7 or not line.startswith("| ") or cells[0] in ("workload", ""):
            continue
        if set(cells[0]) <= set("-:"):
            continue
        match = _INTERVAL.match(cells[6])
        case = (cells[0], cells[1], cells[2])
        found[case] = (float(match.group(1)), float(match.group(2))) if match else None
        if "**slower**" in cells[6]:
            marked.add(case)
    return found, marked


def beyond_noise(ab: dict[Case, Interval | None], aa: dict[Case, Interval | None]) -> list[Case]:
    """Cases of ``ab`` whose interval (as printed, to two decimals) lies above 1 and above
    ``aa``'s for the same case."""
    slower = []
    for case, interval in ab.items():
        same = aa.get(case)
        if interval is not None and same is not None and interval[0] > max(1.0, same[1]):
            slower.append(case)
    return slower


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("ab", type=Path, help="the side-by-side report of before and after")
    parser.add_argument("aa", type=Path, help="the report of the after commit against itself")
    args = parser.parse_args()
    (ab, flagged), (aa, noise) = intervals(args.ab), intervals(args.aa)
    slower = beyond_noise(ab, aa)
    print(f"before/after: {len(flagged)} of {len(ab)} cases marked slower than noise")
    print(f"after/after (the noise): {len(noise)} of {len(aa)}")
    print(f"before/after above the noise of the same case: {len(slower)}")
    for case in slower:
        print(f"  {' / '.join(case)}: {ab[case]} (after/after: {aa[case]})")


if __name__ == "__main__":
    main()
