"""The doctor's report: the text, the JSON, and the exit code (1 when a check failed, else 0)."""

from __future__ import annotations

from typing import TypedDict

from messaging_llm_bot.ops.channels.doctor import FAIL, OK, WARN, Check


def format_report(checks: list[Check]) -> str:
    """One line per check, the fix indented under it, and a summary line."""
    lines = []
    width = max((len(c.name) for c in checks), default=0)
    for c in checks:
        lines.append(f"[{c.status:^4}] {c.name:<{width}}  {c.detail}")
        if c.fix and c.status in (WARN, FAIL):
            lines.append(f"       {'':<{width}}  -> {c.fix}")
    counts = {s: sum(1 for c in checks if c.status == s) for s in (OK, WARN, FAIL)}
    lines.append(f"\n{counts[OK]} ok, {counts[WARN]} warning(s), {counts[FAIL]} failure(s)")
    return "\n".join(lines)


class CheckJson(TypedDict):
    """One check in ``doctor --json``'s list."""

    name: str
    status: str
    detail: str
    fix: str


def as_json(checks: list[Check]) -> list[CheckJson]:
    """The checks as JSON-ready dicts."""
    return [{"name": c.name, "status": c.status, "detail": c.detail, "fix": c.fix} for c in checks]


def exit_code(checks: list[Check]) -> int:
    """1 when a check failed (warnings do not fail), else 0."""
    return 1 if any(c.status == FAIL for c in checks) else 0
