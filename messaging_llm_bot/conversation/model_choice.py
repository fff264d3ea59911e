"""``/model`` in any chat: list the configured runners, switch this chat's, or go back to the default.

The choice itself is the agent's (agent/runner_choice.py: read at the start of each turn, kept in the
workspace); this module is what the owner reads and types. A runner at a spending cap is refused with the
list, as is a name the config does not have. Owner only, as every command that changes the bot.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from assistant_framework.config.settings import RunnerSettings
from assistant_framework.spending import SpendingLedger
from messaging_llm_bot.conversation.markup import escape_markdown

if TYPE_CHECKING:  # pragma: no cover
    from messaging_llm_bot.conversation.runtime import Runtime

#: ``/model default`` (and these words) go back to the configured order.
DEFAULT_WORDS = frozenset({"default", "reset", "auto"})
#: A name longer than this is no runner's: refused before any lookup.
MAX_ARG_CHARS = 100


@dataclass(frozen=True)
class RunnerLine:
    """One configured runner as /model shows it."""

    name: str
    model: str
    vision: bool
    caps_left: str  # "" without caps; else what is left of each daily cap, or "at its cap until ..."
    at_cap: bool


def runner_lines(runners: list[RunnerSettings], spending: SpendingLedger | None) -> list[RunnerLine]:
    """The runners in their configured order, with what is left of their caps today."""
    lines = []
    for runner in runners:
        uses = spending.uses(runner) if spending is not None and runner.limits.any else []
        reached = next((use for use in uses if use.reached), None)
        if reached is not None:
            left = f"at its {reached.cap.replace('_', ' ')} cap until {reached.resets.strftime('%Y-%m-%d %H:%M')}"
        else:
            left = ", ".join(f"{use.amount(use.left)} {use.cap.replace('_', ' ')} left" for use in uses)
        lines.append(RunnerLine(runner.name, runner.model, runner.vision, left, reached is not None))
    return lines


def list_text(lines: list[RunnerLine], current: str | None) -> str:
    """The answer to a bare /model: every runner, and which one this chat uses."""
    default = lines[0].name if lines else "?"
    rows = []
    for line in lines:
        extras = [text for text in ("vision" if line.vision else "", line.caps_left) if text]
        mark = " ← this chat" if line.name == (current or default) else ""
        shown = f"- {escape_markdown(line.name)} — {escape_markdown(line.model)}"
        rows.append(shown + (f" ({'; '.join(extras)})" if extras else "") + mark)
    now = f"{escape_markdown(current)} (chosen here)" if current else f"{escape_markdown(default)} (the default)"
    return "\n".join(
        [
            f"This chat uses {now}.",
            "",
            "Models:",
            *rows,
            "",
            "/model NAME switches this chat; /model default goes back. If the chosen one fails, the others "
            "answer in their configured order.",
        ]
    )


def _names(lines: list[RunnerLine]) -> str:
    return ", ".join(escape_markdown(line.name) for line in lines)


def model_command(runtime: Runtime, conversation_id: str, args: str) -> str:
    """``/model``, ``/model NAME`` or ``/model default`` in the chat or topic ``conversation_id``."""
    agent = runtime.agent
    llm = agent.llm  # the client turns use now (a /reload swaps it)
    lines = runner_lines(list(llm.runners), llm.spending)
    asked = args.strip()
    if not asked:
        return list_text(lines, agent.chosen_runner(conversation_id))
    if asked.lower() in DEFAULT_WORDS:
        try:
            agent.runner_choices.set(conversation_id, None)
        except OSError as err:
            return f"I could not save the choice ({err}); this chat keeps its model."
        default = lines[0].name if lines else "?"
        return f"This chat uses the default again: {escape_markdown(default)} first, then the others in order."
    line = next((line for line in lines if line.name == asked), None) if len(asked) <= MAX_ARG_CHARS else None
    if line is None:
        shown = escape_markdown(asked[:40])
        return f"There is no model named {shown}. Choose one of: {_names(lines)} (or /model default)."
    if line.at_cap:
        others = [other for other in lines if not other.at_cap]
        choose = f" Choose one of: {_names(others)}." if others else " Every runner is at a cap now."
        return f"{escape_markdown(line.name)} is {line.caps_left}; this chat keeps its model.{choose}"
    try:
        agent.runner_choices.set(conversation_id, line.name)
    except OSError as err:
        return f"I could not save the choice ({err}); this chat keeps its model."
    return (
        f"This chat now uses {escape_markdown(line.name)} ({escape_markdown(line.model)}) from your next message; "
        "/model default goes back."
    )


def stats_line(runtime: Runtime, conversation_id: str) -> str:
    """/stats' line on the model of this chat."""
    chosen = runtime.agent.chosen_runner(conversation_id)
    if chosen:
        return f"This chat's model: {escape_markdown(chosen)} (chosen with /model)."
    runners = runtime.agent.llm.runners
    return f"This chat's model: {escape_markdown(runners[0].name) if runners else '?'} (the default)."
