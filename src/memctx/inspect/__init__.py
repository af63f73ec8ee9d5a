"""The build inspector: one self-contained HTML page showing what went into a context.

``result.to_html()`` writes it; :func:`report_html` takes the options (an earlier
build to compare with, a title). The page needs no network.
"""

from memctx.inspect._report import report_html

__all__ = ["report_html"]
