"""The replay report's HTML: one self-contained file, its data embedded as inert JSON.

Made as the build inspector's page is (:mod:`memctx.inspect._page`): the
reports sit in a ``<script type="application/json">`` block escaped so that no
content can end it, the page's own script draws one stacked bar per request
(read / written / uncached) with clearing, compaction and cache-break markers,
putting every text into the DOM as text, and a Content-Security-Policy lets
only the page's script and style run and forbids every network request.
"""

from __future__ import annotations

import functools
import html
import importlib.resources
from collections.abc import Mapping, Sequence
from typing import Any, Final

from memctx.inspect._page import csp_digest, embed_json

_PAGE: Final = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{csp}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="memctx">
<title>{title}</title>
<style>{css}</style>
</head>
<body>
<header><h1>{title}</h1><p class="sub" id="summary"></p>
<p class="legend"><span><i class="swatch read"></i>read from the cache</span>
<span><i class="swatch written"></i>written to the cache</span>
<span><i class="swatch uncached"></i>uncached</span>
<span><i class="marker compaction"></i>compaction</span>
<span><i class="marker clearing"></i>clearing</span>
<span><i class="marker break"></i>cache break</span></p></header>
<main id="reports"></main>
<script type="application/json" id="memctx-replay-data">{data}</script>
<script>{js}</script>
</body>
</html>
"""


@functools.cache
def _asset(name: str) -> str:
    return (importlib.resources.files("memctx.replay") / "_assets" / name).read_text("utf-8")


def render_page(reports: Sequence[Mapping[str, Any]], title: str) -> str:
    """The whole page for ``reports`` (each a ``ReplayReport.to_dict()``)."""
    css, js = _asset("replay.css"), _asset("replay.js")
    csp = (
        f"default-src 'none'; script-src {csp_digest(js)}; style-src {csp_digest(css)}; "
        "img-src data:; base-uri 'none'; form-action 'none'"
    )
    data = {"title": title, "reports": list(reports)}
    return _PAGE.format(csp=csp, title=html.escape(title), css=css, js=js, data=embed_json(data))
