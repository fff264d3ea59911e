"""``/model`` in any chat: list the configured runners, switch this chat's, or go back to the default.

The choice itself is the agent's (agent/runner_choice.py: read at the start of each turn, kept in the
workspace); this module is what the owner reads and types. A runner at a spending cap is refused with the
list, as is a name the config does not have. Owner only, as every command that changes the bot.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from assistant_framework.config.settings import RunnerSettings
from assistant_framework.spending import SpendingLedger
from messaging_llm_bot.agent.runner_choice import RunnerChoices
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


def model_command(runtime: Runtime, conversation_id: str, args: str) -> str:
    """``/model``, ``/model NAME`` or ``/model default`` in the chat or topic ``conversation_id``."""
    agent = runtime.agent
    llm = agent.llm  # the client turns use now (a /reload swaps it)
    lines = runner_lines(list(llm.runners), llm.spending)
    asked = args.strip()
    if not asked:
        return list_text(lines, agent.chosen_runner(conversation_id))
    return choose(agent.runner_choices, lines, conversation_id, asked)


def choose(
    choices: RunnerChoices,
    lines: list[RunnerLine],
    conversation_id: str,
    asked: str,
    esc: Callable[[str], str] = escape_markdown,
) -> str:
    """Switch ``conversation_id`` to the runner named ``asked`` (or back to the default): the sentence saying
    what happened. The one check of a switch, for ``/model`` and the web page's Control section (``esc``:
    how a name is written in the answer; the page's template escapes, so it passes ``str``)."""
    asked = asked.strip()
    if asked.lower() in DEFAULT_WORDS:
        try:
            choices.set(conversation_id, None)
        except OSError as err:
            return f"I could not save the choice ({err}); this chat keeps its model."
        default = lines[0].name if lines else "?"
        return f"This chat uses the default again: {esc(default)} first, then the others in order."
    line = next((line for line in lines if line.name == asked), None) if len(asked) <= MAX_ARG_CHARS else None
    if line is None:
        shown = esc(asked[:40])
        names = ", ".join(esc(one.name) for one in lines)
        return f"There is no model named {shown}. Choose one of: {names} (or /model default)."
    if line.at_cap:
        others = [other for other in lines if not other.at_cap]
        choose_one = f" Choose one of: {', '.join(esc(o.name) for o in others)}." if others else ""
        choose_one = choose_one or " Every runner is at a cap now."
        return f"{esc(line.name)} is {line.caps_left}; this chat keeps its model.{choose_one}"
    try:
        choices.set(conversation_id, line.name)
    except OSError as err:
        return f"I could not save the choice ({err}); this chat keeps its model."
    return f"This chat now uses {esc(line.name)} ({esc(line.model)}) from your next message; /model default goes back."


def stats_line(runtime: Runtime, conversation_id: str) -> str:
    """/stats' line on the model of this chat."""
    chosen = runtime.agent.chosen_runner(conversation_id)
    if chosen:
        return f"This chat's model: {escape_markdown(chosen)} (chosen with /model)."
    runners = runtime.agent.llm.runners
    return f"This chat's model: {escape_markdown(runners[0].name) if runners else '?'} (the default)."
