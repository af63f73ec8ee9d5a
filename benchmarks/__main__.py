"""``python -m benchmarks``: run the whole suite and write ``benchmarks/results/latest.md``."""

from benchmarks.run import main

raise SystemExit(main())
