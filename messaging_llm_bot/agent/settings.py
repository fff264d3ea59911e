"""The agent's settings: the built-in base prompt and section caps, and the view of the config records it uses.

The keys' defaults are in the records (``assistant_framework/config/settings/``); ``BotSettings`` only
combines them (``section_caps`` over the named budgets, the history budget in tokens or characters).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from assistant_framework.config.settings import Settings
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


@dataclass(frozen=True)
class BotSettings:
    """The agent's knobs, derived from the ``runtime`` and ``llm`` records (their defaults are there)."""

    base_prompt: str
    timezone: str
    history_budget_chars: int
    #: runtime.history_budget_tokens when set: the history is then measured in estimated tokens.
    history_budget_tokens: int | None
    section_caps: Mapping[str, int]
    skill_result_limit_chars: int
    max_skill_rounds: int
    trace_keep: int
    reply_footer: bool
    #: llm.stream: ask for the answer as a stream.
    stream: bool

    @classmethod
    def from_settings(cls, settings: Settings) -> BotSettings:
        """The agent's view of the records built once per load or ``/reload``."""
        runtime = settings.runtime
        caps = {
            **BUILT_IN_SECTION_CAPS,
            # The named budgets are the documented knobs; section_caps may still override them.
            "context": runtime.context_budget_chars,
            "learnings": runtime.learnings_budget_chars,
            "profile": runtime.profile_budget_chars,
            **runtime.section_caps,
        }
        history = runtime.history_budget_chars
        if runtime.history_budget_tokens is not None:
            history = runtime.history_budget_tokens * CHARS_PER_TOKEN
        return cls(
            base_prompt=runtime.base_prompt or DEFAULT_BASE_PROMPT,
            timezone=runtime.timezone,
            history_budget_chars=history,
            history_budget_tokens=runtime.history_budget_tokens,
            section_caps=MappingProxyType(caps),
            skill_result_limit_chars=runtime.skill_result_limit_chars,
            max_skill_rounds=settings.llm.max_skill_rounds,
            trace_keep=runtime.trace_keep,
            reply_footer=runtime.reply_footer,
            stream=settings.llm.stream,
        )

    @classmethod
    def from_config(cls, config: Mapping[str, object]) -> BotSettings:
        """Settings from a loaded config dict (missing keys take the records' defaults)."""
        return cls.from_settings(Settings.from_config(config))
