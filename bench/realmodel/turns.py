"""The turns bench: one conversation, per turn the latency and the prompt tokens the server evaluated."""

from __future__ import annotations

import statistics
import sys
import tempfile
import time

from bench._common import table
from bench.realmodel.conversation import CONVERSATION
from bench.realmodel.server import LogReader, llm_section
from tests.real_model import RealModelServer


def part_turns(server: RealModelServer, log: LogReader, settings: list[str], pause: float, turns: int = 10) -> str:
    from assistant_framework.config.settings import Settings
    from assistant_framework.memory import MemoryService
    from assistant_framework.skills import SkillManager
    from assistant_framework.workspace import Workspace
    from messaging_llm_bot.agent.loop import Agent, AgentMessage
    from messaging_llm_bot.llm.client import LLMClient
    from messaging_llm_bot.runtime import BackgroundModel

    out = []
    summary = []
    for setting in settings:
        with tempfile.TemporaryDirectory() as tmp:
            memory_config = {
                "extract_facts": setting != "off",
                "extract_idle_seconds": 0 if setting == "immediate" else 20,
            }
            config = {
                "llm": llm_section(server),
                "runtime": {"timezone": "UTC"},
                "memory": memory_config,
                "policy": {"capabilities": {c: "allow" for c in ("read", "write", "delete", "network", "send")}},
            }
            workspace = Workspace(tmp)
            llm = LLMClient.from_section(config["llm"])
            memory = MemoryService(workspace, config, complete=BackgroundModel(llm))
            records = Settings.from_config(config)
            skills = SkillManager.from_config(config, workspace, settings=records)
            agent = Agent(records, workspace, skills, llm, memory=memory)
            log.new_text()
            rows = []
            background = []
            for n, text in enumerate(CONVERSATION[:turns], 1):
                result = agent.handle(AgentMessage("bench", text, chat_id=1, user_id=1))
                chat = log.evaluated()
                if setting == "immediate":
                    memory.drain(600)  # the old behaviour: extraction right after the turn, before the next one
                    background.extend(log.evaluated())
                prompt = int(result.usage.get("prompt_tokens") or 0)
                rows.append(
                    [
                        n,
                        result.rounds,
                        prompt,
                        sum(chat),
                        f"{100 * (1 - sum(chat) / prompt):.0f}%" if prompt else "-",
                        f"{result.elapsed_s:.1f}",
                        "ok" if result.ok else "FAIL",
                        result.reply[:40].replace("\n", " ").replace("|", "/"),
                    ]
                )
                print(f"  [{setting}] turn {n}: " + " | ".join(str(c) for c in rows[-1]), file=sys.stderr, flush=True)
                time.sleep(pause)
            memory.drain(900)
            background.extend(log.evaluated())
            memory.close()
            llm.close()
        out += [
            f"### extraction {setting}",
            "",
            table(["turn", "rounds", "prompt tok", "evaluated", "reused", "s", "ok", "reply"], rows),
            "",
        ]
        first, rest = rows[0], rows[1:]
        summary.append(
            [
                setting,
                len(rows),
                first[3],
                f"{statistics.mean(r[3] for r in rest):.0f}" if rest else "-",
                f"{float(first[5]):.1f}",
                f"{statistics.median(float(r[5]) for r in rest):.1f}" if rest else "-",
                len(background),
                sum(background),
            ]
        )
    head = [
        "extraction",
        "turns",
        "turn 1 evaluated",
        "later turns evaluated (mean)",
        "turn 1 s",
        "later turns s (median)",
        "background calls",
        "background tok evaluated",
    ]
    return "\n".join([table(head, summary), ""] + out)


# ------------------------------------------------------------------ frontends
