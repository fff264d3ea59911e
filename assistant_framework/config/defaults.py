"""The documented defaults (config/README.md), so ``config get``/``show`` print effective values.

Only what the code falls back to when a key is absent; the code stays the authority, this
table is what the CLI shows (``tests/test_config_cli.py`` checks it against the README).
"""

from __future__ import annotations

from typing import Any, Iterator

DEFAULTS: dict[str, dict[str, Any]] = {
    "llm": {
        "retries_per_runner": 1,
        "retry_max_wait_seconds": 30,
        "retry_backoff_seconds": 1.0,
        "temperature": 0.3,
        "max_tokens": 800,
        "max_skill_rounds": 5,
        "max_concurrency": 1,
        "stream": True,
    },
    "telegram": {
        "token": "",
        "allowed_user_ids": [],
        "base_url": None,
        "base_file_url": None,
        "mode": "polling",
        "group_mode": "mention",
        "stream": True,
        "progress": True,
        "morning_digest": None,
    },
    "runtime": {
        "timezone": "UTC",
        "skills_dirs": [],
        "collectors_dirs": [],
        "reply_footer": False,
        "history_budget_chars": 12000,
        "history_budget_tokens": None,
        "context_budget_chars": 20000,
        "learnings_budget_chars": 4000,
        "profile_budget_chars": 2000,
        "section_caps": {},
        "skill_timeout_seconds": 60,
        "skill_timeouts": {},
        "skill_result_limit_chars": 4000,
        "trace_keep": 200,
        "shutdown_timeout_seconds": 20,
        "max_pending_per_chat": 20,
        "log_level": "INFO",
    },
    "memory": {
        "enabled": True,
        "recall": {"enabled": True, "limit": 5, "budget_chars": 1500, "skip_recent_turns": 12, "min_score": 0},
        "extract_facts": True,
        "episodes": True,
        "profile": True,
        "refresh_seconds": 60,
        "exclude_chats": [],
        "share_owner_data_with": [],
    },
    "policy": {
        "capabilities": {"read": "allow", "write": "allow", "delete": "ask", "network": "ask", "send": "ask"},
        "skills": {},
        "allow_private_network": False,
    },
}

_MISSING = object()


def default_of(path: tuple) -> Any:
    """The documented default at ``path`` (a tuple of keys), or KeyError."""
    node: Any = DEFAULTS
    for part in path:
        if not isinstance(node, dict) or part not in node:
            raise KeyError(path)
        node = node[part]
    return node


def with_defaults(data: dict) -> dict:
    """``data`` with every documented default filled in where the key is absent (a new dict)."""

    def fill(base: Any, extra: Any) -> Any:
        if isinstance(base, dict) and isinstance(extra, dict):
            out = dict(extra)
            for key, value in base.items():
                out[key] = fill(value, extra.get(key, _MISSING)) if key in extra else value
            return out
        return base if extra is _MISSING else extra

    return fill(DEFAULTS, data)


def leaves(data: Any, prefix: tuple = ()) -> Iterator[tuple[tuple, Any]]:
    """Every leaf (scalar, list or empty dict) of a nested dict with its path."""
    if isinstance(data, dict) and data:
        for key, value in data.items():
            yield from leaves(value, prefix + (key,))
    else:
        yield prefix, data
