"""``memctx replay``: what a recorded run costs under a policy or baselines, as a table,
JSON, or an HTML chart."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import click

from memctx.cli._errors import fail, friendly_errors
from memctx.cli._options import format_option
from memctx.cli._support import FILE, STDIO, dumps_json, note, write_output
from memctx.replay._report import ReplayReport, render_reports
from memctx.replay._run import default_policy

POLICY: Final = "policy"
"""The name ``--compare`` gives the default ContextPolicy for the model."""

_COLUMNS: Final = (
    ("strategy", "<"),
    ("requests", ">"),
    ("input", ">"),
    ("read", ">"),
    ("written", ">"),
    ("uncached", ">"),
    ("cost", ">"),
    ("no cache", ">"),
    ("ratio", ">"),
    ("breaks", ">"),
    ("compact.", ">"),
    ("cleared", ">"),
    ("peak", ">"),
    ("over", ">"),
    ("orphans", ">"),
)


def _strategies(compare: str | None) -> list[str]:
    """The names ``--compare`` lists (each checked), or the default: the policy if
    :mod:`memctx.policy` has one, else ``stable``."""
    from memctx.replay._run import STRATEGIES

    if compare is None:
        return [POLICY if _policy_class() is not None else "stable"]
    names = [n.strip().lower() for n in compare.split(",") if n.strip()]
    known = [*STRATEGIES, POLICY]
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        fail(
            f"--compare: unknown strategy {', '.join(map(repr, unknown)) or '(none given)'}; "
            f"choose from {', '.join(known)}"
        )
    if POLICY in names and _policy_class() is None:
        fail("--compare: 'policy' needs memctx.policy.ContextPolicy, which this memctx lacks")
    return list(dict.fromkeys(names))


def _policy_class() -> Any:
    import memctx.policy

    return getattr(memctx.policy, "ContextPolicy", None)


def _row(report: ReplayReport) -> list[str]:
    return [
        report.label,
        f"{len(report.requests):,}",
        f"{report.input_tokens:,}",
        f"{report.cache_read_share:.1%}",
        f"{report.cache_write_tokens:,}",
        f"{report.uncached_tokens:,}",
        f"{report.cost:.4f}",
        f"{report.cost_without_cache:.4f}",
        f"{report.cost_ratio:.3f}x",
        str(report.cache_breaks),
        str(report.compactions),
        str(report.clearings),
        f"{report.peak_tokens:,}",
        str(report.budget_violations),
        str(report.orphaned_tool_calls),
    ]


def table(reports: Sequence[ReplayReport]) -> str:
    """The reports as an aligned text table, one row each (cost in the profile's currency)."""
    rows = [[name for name, _ in _COLUMNS], *(_row(r) for r in reports)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(_COLUMNS))]
    lines = []
    for row in rows:
        cells = [
            f"{cell:{align}{width}}"
            for cell, (_, align), width in zip(row, _COLUMNS, widths, strict=True)
        ]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


@click.command("replay")
@click.argument("runs", metavar="RUN...", nargs=-1, required=True, type=FILE)
@click.option(
    "--model", required=True, help="The model to build for and price with (e.g. claude-sonnet-4-6)."
)
@click.option(
    "--max-tokens",
    type=click.IntRange(min=1),
    default=None,
    help="The budget each request is built to and checked against "
    "[default: the model's window less its largest answer].",
)
@click.option(
    "--compare",
    default=None,
    metavar="NAMES",
    help="Comma-separated strategies to replay side by side: none (or raw), recent, stable, "
    "rolling, policy (a ContextPolicy clearing old tool outputs and compacting at 80%% of the "
    "budget) [default: policy].",
)
@click.option(
    "-o",
    "--output",
    type=FILE,
    default=None,
    help="Also write the HTML report (one bar per request, events marked) to this file.",
)
@format_option(
    "text",
    "json",
    help="text: a table, one row per strategy; json: {model, budget, reports: [{label, "
    "request_count, input_tokens, cache_read_share, cost, cost_ratio, cache_breaks, ..., "
    "requests: [{index, input_tokens, cache_read_tokens, cache_write_tokens, "
    "uncached_tokens, cost, cost_without_cache, cache_break, events, ...}]}]}.",
)
@friendly_errors
def replay_command(
    runs: tuple[str, ...],
    model: str,
    max_tokens: int | None,
    compare: str | None,
    output: str | None,
    output_format: str,
) -> None:
    """Replay a recorded run (a memctx state file, or an OpenAI transcript such as
    examples/trajectories/*.traj.json; several files make one run) and price the
    request before each assistant turn with MODEL's prompt-cache rules.

    Example: memctx replay run.json --model claude-sonnet-4-6 --max-tokens 8000
    --compare recent,stable,none -o replay.html
    """
    from memctx.policy import model_profile
    from memctx.replay._load import load_run
    from memctx.replay._run import replay

    profile = model_profile(model)  # an unknown model fails before any work
    names = _strategies(compare)
    if any(r == STDIO for r in runs):
        fail("RUN: '-' is not supported; give a file")
    state = load_run(*runs)
    reports = [
        replay(
            state,
            default_policy(profile.name, max_tokens) if name == POLICY else name,
            model=profile,
            max_tokens=max_tokens,
            label=name,
        )
        for name in names
    ]
    page = render_reports(reports) if output is not None else None
    if output_format == "json":
        text = dumps_json(
            {
                "model": profile.name,
                "budget": max_tokens,
                "reports": [r.to_dict() for r in reports],
            }
        )
    else:
        text = table(reports)
    if page is not None and output is not None:
        write_output(output, page)
        if output != STDIO:
            note(f"wrote {output}")
    if output != STDIO:
        click.echo(text)
