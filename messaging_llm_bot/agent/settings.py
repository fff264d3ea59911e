"""Bot defaults: the base prompt and the budgets, read from the ``runtime``/``llm`` config sections.

Consumers call ``BotSettings.from_config(config)`` once per (re)load instead of sprinkling
``.get(key, default)`` over the code, so every default lives here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

DEFAULT_BASE_PROMPT = (
    "You are the owner's personal assistant, running on their own machine.\n"
    "Use your skills to remember, look up and change things; never claim you saved, "
    "checked or scheduled something unless a skill did it in this conversation.\n"
    "If you do not know something about the owner, look it up with a skill before saying so.\n"
    "Be concise: short, direct answers in the user's language."
)

DEFAULT_TIMEZONE = "UTC"
DEFAULT_HISTORY_BUDGET_CHARS = 12_000
DEFAULT_CONTEXT_BUDGET_CHARS = 20_000
DEFAULT_LEARNINGS_BUDGET_CHARS = 4_000
DEFAULT_PROFILE_BUDGET_CHARS = 1_500
DEFAULT_SKILL_RESULT_LIMIT_CHARS = 4_000
DEFAULT_MAX_SKILL_ROUNDS = 5
DEFAULT_TRACE_KEEP = 200
CHARS_PER_TOKEN = 4

#: Caps of the system-prompt sections (characters); runtime.section_caps overrides any of them.
DEFAULT_SECTION_CAPS: dict[str, int] = {
    "base": 4_000,
    "context": DEFAULT_CONTEXT_BUDGET_CHARS,
    "protocol": 3_000,
    "tools": 8_000,
    "workspace": 1_500,
    "collectors": 3_000,
    "profile": DEFAULT_PROFILE_BUDGET_CHARS,
    "learnings": DEFAULT_LEARNINGS_BUDGET_CHARS,
}


@dataclass(frozen=True)
class BotSettings:
    """The bot's knobs with defaults applied."""

    base_prompt: str = DEFAULT_BASE_PROMPT
    timezone: str = DEFAULT_TIMEZONE
    history_budget_chars: int = DEFAULT_HISTORY_BUDGET_CHARS
    #: runtime.history_budget_tokens when set: the history is then measured in estimated tokens.
    history_budget_tokens: int | None = None
    section_caps: dict[str, int] = field(default_factory=lambda: dict(DEFAULT_SECTION_CAPS))
    skill_result_limit_chars: int = DEFAULT_SKILL_RESULT_LIMIT_CHARS
    max_skill_rounds: int = DEFAULT_MAX_SKILL_ROUNDS
    trace_keep: int = DEFAULT_TRACE_KEEP
    reply_footer: bool = False
    stream: bool = False

    @classmethod
    def from_config(cls, config: dict) -> "BotSettings":
        """Settings from a loaded config dict (missing keys take the defaults above)."""
        runtime = config.get("runtime") or {}
        llm = config.get("llm") or {}
        caps = dict(DEFAULT_SECTION_CAPS)
        # The named budgets are the documented knobs; section_caps may still override them.
        caps["context"] = int(runtime.get("context_budget_chars", caps["context"]))
        caps["learnings"] = int(runtime.get("learnings_budget_chars", caps["learnings"]))
        caps["profile"] = int(runtime.get("profile_budget_chars", caps["profile"]))
        caps.update({str(k): int(v) for k, v in (runtime.get("section_caps") or {}).items()})
        history = int(runtime.get("history_budget_chars", DEFAULT_HISTORY_BUDGET_CHARS))
        if runtime.get("history_budget_tokens") is not None:
            history = int(runtime["history_budget_tokens"]) * CHARS_PER_TOKEN
        return cls(
            base_prompt=runtime.get("base_prompt") or DEFAULT_BASE_PROMPT,
            timezone=runtime.get("timezone") or DEFAULT_TIMEZONE,
            history_budget_chars=history,
            history_budget_tokens=None
            if runtime.get("history_budget_tokens") is None
            else int(runtime["history_budget_tokens"]),
            section_caps=caps,
            skill_result_limit_chars=int(runtime.get("skill_result_limit_chars", DEFAULT_SKILL_RESULT_LIMIT_CHARS)),
            max_skill_rounds=int(llm.get("max_skill_rounds", DEFAULT_MAX_SKILL_ROUNDS)),
            trace_keep=int(runtime.get("trace_keep", DEFAULT_TRACE_KEEP)),
            reply_footer=bool(runtime.get("reply_footer", False)),
            stream=bool(llm.get("stream", False)),
        )
