"""Spending caps: what each model runner used today and this month, and whether it may be asked again.

Per runner, ``limits`` (``daily_tokens``, ``monthly_tokens``, ``daily_cost``, ``monthly_cost``) and
``price`` (per million input, output and cached input tokens). The day and the month are those of
``runtime.timezone`` at the ledger's clock. Every answered call adds what the server reported (prompt
plus completion tokens, the cost from the price); a server that reports no usage is counted from its text
(``assistant_framework/tokens.py``) and the ledger says those counts are estimated.

Before each call the client asks ``hold`` with the call's own estimate (``call_estimate``: its prompt plus
the bound of its answer): a runner the call would take past a cap (or that has reached one) is refused and
the next runner is asked; background work (``llm/slots.background_calls``) is refused past
``BACKGROUND_SHARE`` of a cap so the owner's own turns keep the rest. A call that goes holds its estimate
until it is recorded, so calls running at once cannot pass a cap together. ``capped`` is called once per
runner, cap and period: the first time a turn's call is refused for that cap, or a call reached it (the
runtime tells the owner). The counts live in ``state/spending.json``, read and written under the file's lock
on each call (the bot and ``assistant eval``/``trace replay`` count into the same file; written without an
fsync: a power loss may forget the last calls' counts; a broken file starts the counts again from zero). A turn's
calls are written once its reply is out (``SpendingLedger.after_reply``): until then their counts are in memory,
where every check and read of the ledger adds them.
The model client records (messaging_llm_bot/llm/client.py); /stats, the web Usage page and doctor read
(``cap_rows``); /stats and ``assistant usage`` show each runner's day and month (``usage``: ``runner_usage``).
"""

from assistant_framework.spending.calls import (
    DEFAULT_ANSWER_TOKENS,
    IMAGE_TOKENS,
    MESSAGE_TOKENS,
    CallTokens,
    call_cost,
    call_estimate,
)
from assistant_framework.spending.caps import BACKGROUND_SHARE, CAPS, CapRow, CapUse, capped_text, none_left_text
from assistant_framework.spending.ledger import STATE_FILE, Hold, RunnerCounts, SpendingLedger, cap_rows
from assistant_framework.spending.usage import PeriodUsage, RunnerUsage, runner_usage, usage_json, usage_text

__all__ = [
    "BACKGROUND_SHARE",
    "CAPS",
    "DEFAULT_ANSWER_TOKENS",
    "IMAGE_TOKENS",
    "MESSAGE_TOKENS",
    "STATE_FILE",
    "CallTokens",
    "CapRow",
    "CapUse",
    "Hold",
    "PeriodUsage",
    "RunnerCounts",
    "RunnerUsage",
    "SpendingLedger",
    "call_cost",
    "call_estimate",
    "cap_rows",
    "capped_text",
    "none_left_text",
    "runner_usage",
    "usage_json",
    "usage_text",
]
