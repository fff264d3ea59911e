"""Per-field expectations of eval cases ("path ends with notes/groceries.md", "due is next Friday")."""

from __future__ import annotations

import re
from datetime import date, timedelta
from typing import Any

WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


def resolve_date(expr: str, today: date) -> date:
    """``today``, ``tomorrow``, ``+3d``, ``+2w``, ``next friday``, ``friday`` or ``YYYY-MM-DD``."""
    text = expr.strip().lower()
    if text == "today":
        return today
    if text == "tomorrow":
        return today + timedelta(days=1)
    match = re.fullmatch(r"\+(\d+)([dw])", text)
    if match:
        n = int(match.group(1)) * (7 if match.group(2) == "w" else 1)
        return today + timedelta(days=n)
    match = re.fullmatch(r"(next )?(\w+)", text)
    if match and match.group(2) in WEEKDAYS:
        ahead = (WEEKDAYS.index(match.group(2)) - today.weekday()) % 7 or 7
        return today + timedelta(days=ahead)
    return date.fromisoformat(text)


def check(expected: object, actual: object, *, today: date) -> str | None:
    """None when ``actual`` meets the expectation, else a short reason."""
    if not isinstance(expected, dict):
        return _equals(expected, actual)
    for op, want in expected.items():
        problem = _check_op(op, want, actual, today)
        if problem:
            return problem
    return None


def _equals(want: object, actual: object) -> str | None:
    if isinstance(want, str) and isinstance(actual, str):
        ok = want.strip().lower() == actual.strip().lower()
    else:
        ok = want == actual
    return None if ok else f"expected {want!r}, got {actual!r}"


def _text(actual: object) -> str:
    if isinstance(actual, list):
        return " ".join(str(a) for a in actual).lower()
    return "" if actual is None else str(actual).lower()


_TEXT_OPS = ("contains", "contains_any", "endswith", "startswith", "matches")


def _check_text(op: str, want: Any, actual: object) -> str | None:
    """The operators that read the value as text (case-insensitive): ``_TEXT_OPS``."""
    if op == "contains":
        wants = want if isinstance(want, list) else [want]
        missing = [w for w in wants if str(w).lower() not in _text(actual)]
        return None if not missing else f"expected to contain {missing!r}, got {actual!r}"
    if op == "contains_any":
        return None if any(str(w).lower() in _text(actual) for w in want) else f"expected one of {want!r} in {actual!r}"
    if op == "endswith":
        return None if _text(actual).endswith(str(want).lower()) else f"expected to end with {want!r}, got {actual!r}"
    if op == "startswith":
        return (
            None if _text(actual).startswith(str(want).lower()) else f"expected to start with {want!r}, got {actual!r}"
        )
    if op == "matches":
        return (
            None
            if re.search(want, "" if actual is None else str(actual), re.I)
            else f"expected to match {want!r}, got {actual!r}"
        )
    raise ValueError(f"unknown expectation operator {op!r}")


def _check_op(op: str, want: Any, actual: Any, today: date) -> str | None:
    if op == "equals":
        return _equals(want, actual)
    if op == "present":
        return None if (actual not in (None, "", [], {})) == bool(want) else f"expected present={want}, got {actual!r}"
    if op == "absent":
        return None if (actual in (None, "", [], {})) == bool(want) else f"expected absent, got {actual!r}"
    if op in _TEXT_OPS:
        return _check_text(op, want, actual)
    if op == "one_of":
        return None if any(_equals(w, actual) is None for w in want) else f"expected one of {want!r}, got {actual!r}"
    if op == "number":
        try:
            return None if abs(float(actual) - float(want)) < 1e-6 else f"expected {want}, got {actual!r}"
        except (TypeError, ValueError):
            return f"expected the number {want}, got {actual!r}"
    if op == "date":
        target = resolve_date(str(want), today).isoformat()
        return None if _text(actual).startswith(target) else f"expected the date {target} ({want}), got {actual!r}"
    raise ValueError(f"unknown expectation operator {op!r}")
