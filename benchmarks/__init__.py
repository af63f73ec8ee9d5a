"""memctx benchmarks: builds against the tiktoken floor, LangChain, and plain sqlite3.

Run with ``uv run --group bench python -m benchmarks`` (see ``benchmarks/README.md``).
Not part of the test run.
"""
