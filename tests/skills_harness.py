"""The built-in skills on a temporary workspace: fixtures ``manager`` and ``ctx`` (a pytest plugin,
registered in conftest) and the ``ok``/``err`` helpers that run one call and unwrap its result."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from assistant_framework.skills import BUILTIN_SKILLS_DIR, SkillContext, SkillManager
from assistant_framework.workspace import Workspace

BERLIN = ZoneInfo("Europe/Berlin")
#: Friday 28 March 2025, 10:00 in Berlin; DST starts on Sunday 30 March at 02:00.
NOW = datetime(2025, 3, 28, 10, 0, tzinfo=BERLIN)


@pytest.fixture
def manager(ws: Workspace) -> SkillManager:
    return SkillManager([BUILTIN_SKILLS_DIR], ws, timeout_seconds=10)


@pytest.fixture
def ctx() -> SkillContext:
    return SkillContext(conversation_id="tg:42", chat_id=42, timezone="Europe/Berlin", services={"clock": lambda: NOW})


def ok(manager: SkillManager, name: str, args: dict, context: SkillContext | None = None):
    result = manager.run(name, args, context)
    assert result.ok, result.error
    return result.value


def err(manager: SkillManager, name: str, args: dict, context: SkillContext | None = None) -> str:
    result = manager.run(name, args, context)
    assert not result.ok, result.value
    return result.error
