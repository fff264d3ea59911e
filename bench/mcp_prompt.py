"""What MCP tools cost in the prompt: the [Tools] section, the native tool specs and the answer schema
with the built-in skills alone, and with 10 and 50 outside tools beside them.

The tools are the real listings of ``mcp-server-git`` and ``mcp-server-time`` (started here once, on a
temporary repository), repeated under new names to reach 10 and 50, each cut as the bot cuts it
(``assistant_framework/mcp/shapes.py``). Tokens are the framework's estimate (``estimate_tokens``,
~4 ASCII characters a token), not a tokenizer's count. Rows with an allow-list (3 tools) and with
``description_chars: 60`` show the two ways to keep a small model's prompt short.

    python bench/mcp_prompt.py
    python bench/mcp_prompt.py --quick   # the same (it is fast); accepted for the smoke test
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import end_children_when_killed, machine_line, module_command, table  # noqa: E402

from assistant_framework.mcp import McpSkills, mcp_settings  # noqa: E402
from assistant_framework.mcp.source import tool_skill  # noqa: E402
from assistant_framework.skills import BUILTIN_SKILLS_DIR, SkillManager, SourceLoad  # noqa: E402
from assistant_framework.tokens import estimate_tokens  # noqa: E402
from assistant_framework.workspace import Workspace  # noqa: E402
from messaging_llm_bot.agent.prompt import tools_section  # noqa: E402
from messaging_llm_bot.llm.structured import protocol_schema  # noqa: E402
from messaging_llm_bot.llm.tools import tool_specs  # noqa: E402

DEFAULT_CAP = 8000  # runtime.section_caps.tools


class Listed:
    """A skill source that offers tools already listed (no server: the bench measures the prompt)."""

    def __init__(self, skills: list) -> None:
        self.skills = skills

    def load(self) -> SourceLoad:
        return SourceLoad(skills=list(self.skills))

    def close(self) -> None:
        pass


def real_tools(root: Path) -> list[tuple[str, object, object]]:
    """(server settings, tool, connection) of every tool mcp-server-git and mcp-server-time list."""
    repo = root / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    commands = {
        "git": module_command("mcp_server_git", "--repository", str(repo)),
        "time": module_command("mcp_server_time", "--local-timezone", "UTC"),
    }
    servers = {name: {"command": command[0], "args": command[1:]} for name, command in commands.items()}
    source = McpSkills(mcp_settings({"mcp": {"servers": servers}}))
    try:
        source.load()
        return [(settings, tool, None) for settings, tools in source.listings() for tool in tools]
    finally:
        source.close()


def outside_skills(listed: list, count: int, description_chars: int | None = None) -> list:
    """``count`` skills made from the real listings (repeated under new server names past their number)."""
    skills = []
    for n in range(count):
        settings, tool, connection = listed[n % len(listed)]
        server = replace(settings, name=f"{settings.name}{n // len(listed) or ''}")
        if description_chars is not None:
            server = replace(server, description_chars=description_chars)
        made = tool_skill(server, tool, connection)
        skills.append(made)
    return skills


def measure(label: str, skills: list, workspace: Workspace) -> list:
    manager = SkillManager([BUILTIN_SKILLS_DIR], workspace, sources=[Listed(skills)])
    catalog = manager.catalog()
    capped = tools_section(catalog, DEFAULT_CAP)
    whole = tools_section(catalog, 10**9)
    triples = [(s.name, s.description, s.args_schema) for s in manager.skills.values()]
    specs = json.dumps(tool_specs(triples), separators=(",", ":"))
    schema = json.dumps(protocol_schema((n, a) for n, _, a in triples), separators=(",", ":"))
    named_only = (
        capped.split("More skills (descriptions cut for space): ")[1].count(",") + 1 if "More skills" in capped else 0
    )
    return [
        label,
        len(manager.names()),
        f"{len(capped)} / {estimate_tokens(capped)}",
        named_only,
        f"{len(whole)} / {estimate_tokens(whole)}",
        f"{len(specs)} / {estimate_tokens(specs)}",
        f"{len(schema)} / {estimate_tokens(schema)}",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="same as the default (kept for the smoke test)")
    parser.parse_args(argv)
    end_children_when_killed()
    with tempfile.TemporaryDirectory(prefix="bench-mcp-") as tmp:
        root = Path(tmp)
        listed = real_tools(root)
        workspace = Workspace(root / "ws")
        rows = [
            measure("built-in skills only", [], workspace),
            measure("+ 10 MCP tools", outside_skills(listed, 10), workspace),
            measure("+ 50 MCP tools", outside_skills(listed, 50), workspace),
            measure("+ 50, description_chars 60", outside_skills(listed, 50, 60), workspace),
            measure("+ 3 (an allow-list)", outside_skills(listed, 3), workspace),
        ]
    print(machine_line())
    print(f"tools listed by the real servers: {len(listed)} (mcp-server-git, mcp-server-time)")
    print()
    print(
        table(
            [
                "skills offered",
                "skills",
                f"[Tools] at the {DEFAULT_CAP}-char cap (chars / est. tokens)",
                "named only past the cap",
                "[Tools] uncapped",
                "native tool specs",
                "answer schema (json_schema)",
            ],
            rows,
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
