"""The typed seams between the layers hold: what implements a protocol has every call of it, with
the parameters the caller passes (a renamed keyword or a dropped method fails here, not at the
first message in production), and the records that cross a seam keep their stored forms."""

from __future__ import annotations

import inspect
from typing import Protocol

import pytest

from assistant_framework.memory import MemoryService
from messaging_llm_bot.agent.memory import Memory
from messaging_llm_bot.conversation.runtime import Runtime
from messaging_llm_bot.runtime import BotRuntime


def protocol_members(protocol: type) -> list[str]:
    """The methods a protocol declares (its own, not ``Protocol``'s)."""
    return [
        name
        for name, value in vars(protocol).items()
        if callable(value) and not name.startswith("_") and name not in vars(Protocol)
    ]


def protocol_attributes(protocol: type) -> list[str]:
    """The attributes and properties a protocol declares."""
    properties = [name for name, value in vars(protocol).items() if isinstance(value, property)]
    return [*protocol.__annotations__, *properties]


def missing_calls(protocol: type, implementation: type) -> list[str]:
    """What ``implementation`` lacks of ``protocol``: a method, or a parameter the protocol passes."""
    fields = getattr(implementation, "__dataclass_fields__", {})
    problems = [
        f"{name}: missing"
        for name in protocol_attributes(protocol)
        if name not in fields and not hasattr(implementation, name)
    ]
    for name in protocol_members(protocol):
        wanted = inspect.signature(getattr(protocol, name))
        found = getattr(implementation, name, None)
        if found is None:
            problems.append(f"{name}: missing")
            continue
        have = inspect.signature(found).parameters
        for param in wanted.parameters.values():
            other = have.get(param.name)
            if other is None:
                problems.append(f"{name}: no parameter {param.name!r}")
            elif param.kind != other.kind:
                problems.append(f"{name}: {param.name!r} is {other.kind.description}, not {param.kind.description}")
            elif param.default is inspect.Parameter.empty and other.default is not inspect.Parameter.empty:
                continue  # optional where the protocol requires it: fine
            elif param.default is not inspect.Parameter.empty and other.default is inspect.Parameter.empty:
                problems.append(f"{name}: {param.name!r} is required, the caller may leave it out")
    return problems


@pytest.mark.parametrize("protocol,implementation", [(Memory, MemoryService), (Runtime, BotRuntime)])
def test_the_implementation_has_every_call_of_its_protocol(protocol, implementation):
    assert protocol_members(protocol), protocol
    assert missing_calls(protocol, implementation) == []


def test_the_check_finds_a_missing_call_and_a_renamed_keyword():
    class Renamed:
        def log_turn(self, conversation_id, role, text, *, when=None, message_id=None, meta=None):
            return {}

    problems = missing_calls(Memory, Renamed)
    assert "log_turn: no parameter 'time'" in problems and "recall: missing" in problems

    class NoAgent:
        config: dict = {}
        workspace = None

    assert "agent: missing" in missing_calls(Runtime, NoAgent)
