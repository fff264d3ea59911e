"""The stop bench: a long streamed answer stopped after a few deltas, then a short turn."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from bench._common import table
from bench.realmodel.server import llm_section
from tests.real_model import RealModelServer

STORY = "Write a very long story about a dragon who learns to bake bread, at least 600 words."


def part_stop(server: RealModelServer, deltas: int = 10) -> str:
    """The same long answer in full, then stopped after ``deltas`` deltas and followed by a short turn."""
    from assistant_framework.config.settings import Settings
    from assistant_framework.skills import SkillManager
    from assistant_framework.workspace import Workspace
    from messaging_llm_bot.agent.loop import Agent, AgentMessage
    from messaging_llm_bot.llm.client import LLMClient

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        # Prose (structured_output off): the 135M model writes long free text, where a constrained one stops early.
        config = {
            "llm": {**llm_section(server, structured_output="off"), "max_tokens": 800},
            "runtime": {"timezone": "UTC"},
            "memory": {"enabled": False},
        }
        workspace = Workspace(Path(tmp) / "ws")
        settings = Settings.from_config(config)
        skills = SkillManager.from_config(config, workspace, settings=settings)
        agent = Agent(settings, workspace, skills, LLMClient.from_section(config["llm"]))
        agent.handle(AgentMessage("warm-up", "Hi.", stream=True))  # the system prompt is evaluated once, then cached
        started = time.monotonic()
        full = agent.handle(AgentMessage("full", STORY, stream=True))
        rows.append(["full answer", f"{time.monotonic() - started:.1f}", len(full.reply), "-", "-"])
        seen = [0]

        def on_event(event) -> None:
            if event.kind == "delta":
                seen[0] += 1
                if seen[0] == deltas:
                    agent.stop("stopped")

        started = time.monotonic()
        stopped = agent.handle(AgentMessage("stopped", STORY, stream=True, on_event=on_event))
        stop_s = time.monotonic() - started
        started = time.monotonic()
        short = agent.handle(AgentMessage("next", "Say hello in three words.", stream=True))
        rows.append(
            [
                f"stopped after {deltas} deltas",
                f"{stop_s:.1f}",
                len(stopped.reply),
                stopped.stopped,
                f"{time.monotonic() - started:.1f} ({short.ok})",
            ]
        )
    return table(["turn", "s", "reply chars", "stopped", "next short turn s (ok)"], rows)
