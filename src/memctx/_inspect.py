"""The build inspector: one self-contained HTML page that shows what went into a context.

:func:`report_html` is what :meth:`ContextBuildResult.to_html` calls; the page's data
is made in :mod:`memctx._inspect_data` and its HTML in :mod:`memctx._inspect_page`.
"""

from __future__ import annotations

from memctx._inspect_data import report_data
from memctx._inspect_page import render_page
from memctx._inspect_types import BuildReport, ChunkXml
from memctx._state import MemoryState
from memctx.typing import Tokenizer


def default_title(state: MemoryState) -> str:
    """The report's title: ``memctx build report``, and the thread id when the state has one."""
    return "memctx build report" + (f": {state.thread_id}" if state.thread_id else "")


def report_html(
    result: BuildReport,
    state: MemoryState,
    builder: ChunkXml,
    *,
    previous: BuildReport | None = None,
    previous_state: MemoryState | None = None,
    previous_label: str = "the previous build",
    tokenizer: Tokenizer | None = None,
    title: str | None = None,
) -> str:
    """The report of ``result`` (a build of ``state``) as one HTML page.

    ``builder`` renders each chunk's XML: pass the one that built ``result``.
    With ``previous`` (an earlier build of the same history) the page also
    shows what entered and left since then and how many leading tokens the
    two requests share, counted with ``tokenizer`` (default: the builder's),
    which must be the one both builds counted with. ``previous_state``, when
    given, names the chunks that left and are no longer in ``state``. Raises
    :class:`~memctx.InspectError` when a result does not report on exactly
    its state's chunks.
    """
    if title is None:
        title = default_title(state)
    data = report_data(
        result,
        state,
        builder,
        title=title,
        previous=previous,
        previous_state=previous_state,
        previous_label=previous_label,
        tokenizer=tokenizer,
    )
    return render_page(data)
