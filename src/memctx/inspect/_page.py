"""The build report's HTML: one self-contained file, its data embedded as inert JSON.

The data sits in a ``<script type="application/json">`` block with ``<``, ``>``
and ``&`` written as JSON escapes (and everything outside ASCII escaped, so
U+2028/U+2029 and lone surrogates cannot break it), so no content can end the
block. The page's script puts every text into the DOM as text, and a
Content-Security-Policy lets only the page's own script and style run and
forbids every network request.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import html
import importlib.resources
import json
from typing import Any, Final

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
<header><h1>{title}</h1><p class="sub" id="summary"></p></header>
<main>
<section class="cards">
  <div class="card"><h2>Budget</h2><div class="bar" id="budget-bar"></div>
    <div class="legend" id="budget-legend"></div>
    <h2 class="next">Messages</h2><ol class="messages" id="message-list"></ol></div>
  <div class="card"><h2>By type</h2><table id="totals-type"><thead><tr><th>type</th>
    <th class="num">chunks</th><th class="num">in</th><th class="num">out</th>
    <th class="num">tokens in</th></tr></thead><tbody></tbody></table></div>
  <div class="card"><h2>By status</h2><table id="totals-status"><thead><tr><th>status</th>
    <th class="num">chunks</th><th class="num">tokens</th><th class="num">not measured</th>
    </tr></thead><tbody></tbody></table></div>
</section>
<section class="card compare" id="compare" hidden>
  <h2 id="compare-label"></h2>
  <p>The two requests share their first <b id="compare-prefix"></b> tokens
    <span id="compare-counts"></span>: what a provider's prompt cache can reuse.</p>
  <p>Entered (<span id="entered-count"></span>): <span class="ids" id="entered-ids"></span></p>
  <p>Left (<span id="left-count"></span>): <span class="ids" id="left-ids"></span></p>
</section>
<section>
  <div class="controls">
    <label>Status <select id="filter-status"></select></label>
    <label>Type <select id="filter-type"></select></label>
    <input type="search" id="search" placeholder="Search content or id" aria-label="Search">
    <span id="shown-count"></span>
  </div>
  <div class="browser">
    <div class="list">
      <div class="row head"><span class="c-pos">#</span><span>unit</span><span>id</span>
        <span>type</span><span>tag</span><span>role</span><span>msg</span>
        <span>tokens</span><span>status</span><span>pinned</span><span>repl.</span>
        <span>change</span></div>
      <div id="viewport"><div id="spacer"><div id="rows"></div></div></div>
    </div>
    <aside class="detail" id="detail"><p class="empty">Click a chunk to see its exact XML.</p>
    </aside>
  </div>
</section>
</main>
<script type="application/json" id="memctx-data">{data}</script>
<script>{js}</script>
</body>
</html>
"""


@functools.cache
def _asset(name: str) -> str:
    return (importlib.resources.files("memctx.inspect") / "assets" / name).read_text("utf-8")


def csp_digest(text: str) -> str:
    """The Content-Security-Policy source that allows exactly ``text`` inline."""
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def embed_json(data: Any) -> str:
    """``data`` as JSON that is inert inside a ``<script>`` element (and pure ASCII)."""
    text = json.dumps(data, ensure_ascii=True, separators=(",", ":"), allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def render_page(data: dict[str, Any]) -> str:
    """The whole HTML page for the report ``data`` (see :mod:`memctx.inspect._data`)."""
    css, js = _asset("report.css"), _asset("report.js")
    csp = (
        f"default-src 'none'; script-src {csp_digest(js)}; style-src {csp_digest(css)}; "
        "img-src data:; base-uri 'none'; form-action 'none'"
    )
    return _PAGE.format(
        csp=csp,
        title=html.escape(str(data["title"])),
        css=css,
        js=js,
        data=embed_json(data),
    )
