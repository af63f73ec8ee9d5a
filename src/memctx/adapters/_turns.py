"""Which user turns an Anthropic or Gemini request gets: the ones its build counted."""

from __future__ import annotations

from memctx._build.turns import CLOSING_TURN, OPENING_TURN, TurnOptions
from memctx._exceptions import TurnMismatchError
from memctx.adapters._checks import check_flag, check_turn_text
from memctx.adapters._conversation import Source, is_build_result


def turn_options(
    source: Source,
    *,
    opening_turn: str | None,
    closing_turn: str | None,
    prefill: bool | None,
) -> TurnOptions:
    """The turn options to send ``source`` with.

    A result built with ``provider="anthropic"`` or ``"gemini"`` counted its
    :attr:`~memctx.ContextBuildResult.turn_options`: those are sent, and an
    option given here that differs from them raises
    :class:`~memctx.TurnMismatchError` (pass it to the build instead). Any
    other source counted none: the options given here are used, the defaults
    for those not given.
    """
    check_turn_text("opening_turn", opening_turn)
    check_turn_text("closing_turn", closing_turn)
    check_flag("prefill", prefill, optional=True)
    counted = source.turn_options if is_build_result(source) else None
    if counted is None:
        return TurnOptions(
            OPENING_TURN if opening_turn is None else opening_turn,
            CLOSING_TURN if closing_turn is None else closing_turn,
            bool(prefill),
        )
    given = {"opening_turn": opening_turn, "closing_turn": closing_turn, "prefill": prefill}
    for option, value in given.items():
        if value is not None and value != getattr(counted, option):
            raise TurnMismatchError(option, value, getattr(counted, option))
    return counted
