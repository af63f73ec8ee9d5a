"""The build inspector: one self-contained HTML page that shows what went into a context.

:func:`report_html` is what :meth:`ContextBuildResult.to_html` calls; the page's data
is made in :mod:`memctx.inspect._data` and its HTML in :mod:`memctx.inspect._page`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memctx._exceptions import InspectError
from memctx._render.registry import RendererRegistry
from memctx._render.rendering import XmlRendering
from memctx._state import MemoryState
from memctx._validators import is_tokenizer
from memctx.inspect._data import report_data
from memctx.inspect._page import render_page
from memctx.inspect._types import ChunkXml
from memctx.typing import Tokenizer

if TYPE_CHECKING:
    from memctx._result import ContextBuildResult


def default_title(state: MemoryState) -> str:
    """The report's title: ``memctx build report``, and the thread id when the state has one."""
    return "memctx build report" + (f": {state.thread_id}" if state.thread_id else "")


def report_html(
    result: ContextBuildResult,
    builder: ChunkXml | None = None,
    *,
    previous: ContextBuildResult | None = None,
    previous_label: str = "the previous build",
    tokenizer: Tokenizer | None = None,
    title: str | None = None,
) -> str:
    """The report of ``result`` (a build of ``result.state``) as one HTML page.

    ``builder`` renders each chunk's XML: pass the one that built ``result`` when it
    has renderers of its own (default: the installed renderers). With ``previous``
    (an earlier build of the same history) the page also shows what entered and
    left since then and how many leading tokens the two requests share, counted
    with ``tokenizer`` (default: the builder's), which must be the one both builds
    counted with. Raises :class:`~memctx.InspectError` for an argument of the wrong
    kind, or a result that does not report on exactly its state's chunks.
    """
    _check_arguments(result, builder, previous, previous_label, tokenizer, title)
    state = result.state
    if title is None:
        title = default_title(state)
    data = report_data(
        result,
        state,
        builder if builder is not None else XmlRendering(RendererRegistry()),
        title=title,
        previous=previous,
        previous_label=previous_label,
        tokenizer=tokenizer,
    )
    return render_page(data)


def _check_arguments(
    result: object,
    builder: object,
    previous: object,
    previous_label: object,
    tokenizer: object,
    title: object,
) -> None:
    """:class:`InspectError` for an argument of the wrong kind, before anything is read."""
    if not _is_result(result):
        raise InspectError(f"result: must be a build result, got {type(result).__name__}")
    if builder is not None and not callable(getattr(builder, "render", None)):
        raise InspectError(f"builder: must be a ContextBuilder, got {type(builder).__name__}")
    if previous is not None and not _is_result(previous):
        raise InspectError(f"previous: must be a build result, got {type(previous).__name__}")
    for name, text in (("previous_label", previous_label), ("title", title)):
        if text is not None and not isinstance(text, str):
            raise InspectError(f"{name}: must be text, got {type(text).__name__}")
    if tokenizer is not None and not is_tokenizer(tokenizer):
        raise InspectError(f"tokenizer: must be a Tokenizer, got {tokenizer!r}")


def _is_result(value: object) -> bool:
    return hasattr(value, "included_chunk_ids") and hasattr(value, "state")
