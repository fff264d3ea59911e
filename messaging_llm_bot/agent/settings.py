"""The agent's settings: the built-in base prompt and section caps, and what it derives from the records.

The agent reads the config records (``assistant_framework/config/settings/``: each key's default is
there) as they are; the functions below only combine keys (``section_caps`` over the named budgets, the
history budget in tokens or characters, the base prompt or the built-in one).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from assistant_framework.config.settings import RuntimeSettings
from assistant_framework.tokens import CHARS_PER_TOKEN

DEFAULT_BASE_PROMPT = (
    "You are the owner's personal assistant, running on their own machine.\n"
    "Use your skills to remember, look up and change things; never claim you saved, "
    "checked or scheduled something unless a skill did it in this conversation.\n"
    "If you do not know something about the owner, look it up with a skill before saying so.\n"
    "Be concise: short, direct answers in the user's language."
)


#: Caps of the system-prompt sections no key of their own sets (characters); runtime.section_caps overrides any
#: of them. ``context``, ``learnings`` and ``profile`` come from their ``runtime.*_budget_chars``.
BUILT_IN_SECTION_CAPS: dict[str, int] = {
    "base": 4_000,
    "protocol": 3_000,
    "tools": 8_000,
    "skills": 3_000,
    "workspace": 1_500,
    "collectors": 3_000,
}


def section_caps(runtime: RuntimeSettings) -> Mapping[str, int]:
    """Each system-prompt section's cap (characters): the built-in ones, the named budgets
    (``runtime.context_budget_chars``, ...), and ``runtime.section_caps`` over both."""
    return MappingProxyType(
        {
            **BUILT_IN_SECTION_CAPS,
            # The named budgets are the documented knobs; section_caps may still override them.
            "context": runtime.context_budget_chars,
            "learnings": runtime.learnings_budget_chars,
            "profile": runtime.profile_budget_chars,
            **runtime.section_caps,
        }
    )


def history_budget_chars(runtime: RuntimeSettings) -> int:
    """The prompt history's budget in characters: ``runtime.history_budget_tokens`` in characters when set
    (the history is then measured in estimated tokens), else ``runtime.history_budget_chars``."""
    if runtime.history_budget_tokens is not None:
        return runtime.history_budget_tokens * CHARS_PER_TOKEN
    return runtime.history_budget_chars


def base_prompt(runtime: RuntimeSettings) -> str:
    """``runtime.base_prompt``, else the built-in one."""
    return runtime.base_prompt or DEFAULT_BASE_PROMPT
