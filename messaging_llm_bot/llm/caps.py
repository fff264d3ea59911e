"""The model client's side of the spending caps (assistant_framework/spending/): before a call, hold its own
estimate against the runner's caps (or get the cap it would pass); after it, count what the server reported
(a call cut by its deadline or a stop: its estimate; one refused with an error status: nothing); and the
sentence a call gets when no runner may answer. ``spending`` None: no caps are kept."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from assistant_framework.spending import CallTokens, CapUse, Hold, SpendingLedger, none_left_text
from messaging_llm_bot.llm.answer import Completion
from messaging_llm_bot.llm.errors import LLMError
from messaging_llm_bot.llm.runners import RunnerConfig
from messaging_llm_bot.llm.slots import in_background

log = logging.getLogger(__name__)


def hold_call(
    spending: SpendingLedger | None, runner: RunnerConfig, estimate: CallTokens, rest: Sequence[RunnerConfig]
) -> Hold | CapUse | None:
    """Check the request against ``runner``'s caps with its own estimate (``call_estimate`` of its body, made
    once a call: the count after it uses the same): the cap it would pass (a turn's refusal is told to the owner
    once, naming the runner that would answer it), or its hold."""
    if spending is None:
        return None
    background = in_background()
    held = spending.hold(runner, estimate, background=background)
    if isinstance(held, CapUse) and not background:
        try:
            following = next((r.name for r in rest if spending.blocking(r, False, estimate) is None), None)
            spending.skipped(held, following)
        except Exception:  # noqa: BLE001 - bookkeeping must not cost the turn
            log.exception("could not count the skip of runner %r", runner.name)
    return held


def release_call(spending: SpendingLedger | None, held: Hold | CapUse | None) -> None:
    """Give back a call's hold (the call failed: nothing is counted)."""
    if spending is not None and isinstance(held, Hold):
        spending.release(held)


def settle_failed_call(
    spending: SpendingLedger | None,
    runner: RunnerConfig,
    err: LLMError,
    estimate: CallTokens,
    held: Hold | CapUse | None,
    rest: Sequence[RunnerConfig],
) -> None:
    """A call that failed: one the server took and was cut (deadline, ``/stop``) or broke off is counted at its
    estimate (the server may have read the whole prompt and written up to ``max_tokens``); one it never took,
    or refused with an error status, is not. Either way its hold is given back."""
    if spending is None or not isinstance(held, Hold):
        return
    if not err.sent:  # refused with an error status, or never reached the server: nothing to count
        spending.release(held)
        return
    try:
        following = next((r.name for r in rest if spending.blocking(r, False) is None), None)
        spending.record(runner, estimate, hold=held, next_runner=following, whole_estimate=True)
    except Exception:  # noqa: BLE001 - bookkeeping must not hide the call's own error
        release_call(spending, held)
        log.exception("could not count the cut call to runner %r", runner.name)


def refusal(spending: SpendingLedger | None, runners: Sequence[RunnerConfig]) -> str | None:
    """The sentence a call gets now when every runner has reached a spending cap (None: one may answer)."""
    if spending is None:
        return None
    background = in_background()
    uses = [spending.blocking(r, background) for r in runners]
    return none_left_text([u for u in uses if u is not None]) if uses and all(uses) else None


def count_call(
    spending: SpendingLedger | None,
    runner: RunnerConfig,
    completion: Completion,
    estimate: CallTokens,
    held: Hold | CapUse | None,
    rest: Sequence[RunnerConfig],
) -> None:
    """Add an answered call to the spending counts (naming the runner that would answer next)."""
    if spending is None:
        return
    try:
        # Who answers next is named only when this runner's cap may be reached (each check reads the counts).
        following = (
            next((r.name for r in rest if spending.blocking(r, False) is None), None) if runner.limits.any else None
        )
        usage = completion.usage
        spending.record(
            runner,
            CallTokens(usage.prompt_tokens, usage.completion_tokens, usage.cached_tokens),
            estimate=estimate,
            answer=(completion.text or "") + (completion.reasoning or ""),
            hold=held if isinstance(held, Hold) else None,
            next_runner=following,
        )
    except Exception:  # noqa: BLE001 - bookkeeping must not cost the answer
        release_call(spending, held)
        log.exception("could not count the call to runner %r", runner.name)
