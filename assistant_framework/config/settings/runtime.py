"""The ``runtime`` section: time zone, plugin folders, the prompt's budgets, skill limits, traces, logging."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from assistant_framework.config.settings.fields import (
    flag,
    frozen,
    mapping_of,
    maybe,
    number,
    one_of,
    reads,
    strings,
    text,
    whole,
)

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
BUSY_MODES = ("steer", "queue", "interrupt")


@dataclass(frozen=True)
class RuntimeSettings:
    """The ``runtime`` section."""

    timezone: str = field(default="UTC", metadata=reads(text, min_length=1))
    skills_dirs: tuple[str, ...] = field(default=(), metadata=reads(strings))
    collectors_dirs: tuple[str, ...] = field(default=(), metadata=reads(strings))
    reply_footer: bool = field(default=False, metadata=reads(flag))
    #: null: the built-in base prompt (messaging_llm_bot/agent/settings.py).
    base_prompt: str | None = field(default=None, metadata=reads(maybe(text), null=True))
    history_budget_chars: int = field(default=12_000, metadata=reads(whole, minimum=0))
    history_budget_tokens: int | None = field(default=None, metadata=reads(maybe(whole), null=True, minimum=0))
    context_budget_chars: int = field(default=20_000, metadata=reads(whole, minimum=0))
    learnings_budget_chars: int = field(default=4_000, metadata=reads(whole, minimum=0))
    # 2000, as config/README.md has always said (the code read 1500 until issue 27): the profile the
    # refresh writes is "at most about 400 words", which 1500 characters cut short.
    profile_budget_chars: int = field(default=2_000, metadata=reads(whole, minimum=0))
    section_caps: Mapping[str, int] = field(
        default_factory=frozen, metadata=reads(mapping_of(whole), each={"minimum": 0})
    )
    skill_timeout_seconds: float = field(default=60.0, metadata=reads(number, above=0))
    skill_timeouts: Mapping[str, float] = field(
        default_factory=frozen, metadata=reads(mapping_of(number), each={"exclusiveMinimum": 0})
    )
    skill_result_limit_chars: int = field(default=4_000, metadata=reads(whole, minimum=100))
    trace_keep: int = field(default=200, metadata=reads(whole, minimum=0))
    shutdown_timeout_seconds: float = field(default=20.0, metadata=reads(number, minimum=0))
    #: Messages one chat may have waiting or being answered (conversation/chatqueue.py).
    max_pending_per_chat: int = field(default=20, metadata=reads(whole, minimum=1))
    #: A message from the same person while a turn runs in that chat (conversation/busy.py): ``steer`` adds it
    #: to the running turn, ``interrupt`` also cuts the model call in flight, ``queue`` answers it after.
    busy_mode: str = field(default="steer", metadata=reads(one_of(*BUSY_MODES)))
    #: A stranger gets a one-time code the owner approves (/pair CODE; conversation/pairing.py); off: a stranger
    #: is told their id, as before.
    pairing: bool = field(default=True, metadata=reads(flag))
    #: Minutes a pairing code can be approved.
    pairing_code_minutes: int = field(default=60, metadata=reads(whole, minimum=1, maximum=10080))
    #: null: INFO, but only warnings and errors on the terminal chat's screen (its stderr shows progress).
    log_level: str | None = field(default=None, metadata=reads(maybe(one_of(*LOG_LEVELS)), null=True))
