"""The doctor's Python checks: the interpreter's version and the runtime dependencies installed."""

from __future__ import annotations

import platform
import sys
from importlib import metadata

from assistant_framework.hints import CLI
from messaging_llm_bot.ops.channels.doctor import FAIL, OK, Check, Context

#: Runtime dependencies whose versions doctor reports (a missing one fails).
DEPENDENCIES = (
    "python-telegram-bot",
    "requests",
    "pyyaml",
    "jsonschema",
    "filelock",
    "telegramify-markdown",
    "feedparser",
    "icalendar",
    "recurring-ical-events",
    "tzdata",
    "tornado",
    "croniter",
    "pillow",
    "mcp",
    "ddgs",
)


def check_python(ctx: Context) -> list[Check]:
    checks = []
    version = platform.python_version()
    if sys.version_info < (3, 11):  # noqa: UP036 - doctor names the version to a user who runs an older one
        checks.append(
            Check(
                "python",
                FAIL,
                f"Python {version}; 3.11 or newer is needed",
                "install Python 3.11+, then `make install`",
            )
        )
    else:
        checks.append(Check("python", OK, f"Python {version} ({sys.executable})"))
    if ctx.quick:
        return checks
    found, missing = [], []
    for name in DEPENDENCIES:
        try:
            found.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            missing.append(name)
    if missing:
        checks.append(Check("dependencies", FAIL, f"missing: {', '.join(missing)}", f"`make install` (or use {CLI})"))
    else:
        checks.append(Check("dependencies", OK, ", ".join(found)))
    return checks
