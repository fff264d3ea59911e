"""Prompt size: the system prompt per section, and what each built-in skill costs in [Tools].

The bot is built over an empty workspace (no context files, learnings or profile, which add
their own capped sections) with every built-in skill and every built-in collector enabled,
so [Collectors] counts. Tokens are the framework's own estimate
(``messaging_llm_bot.agent.prompt.estimate_tokens``: ~4 ASCII characters a token), not a
tokenizer's count. The rows under [Tools] are each skill's line (description + compact args
schema), biggest first.

    python bench/prompt_size.py
    python bench/prompt_size.py --quick   # the same (it is fast); accepted for the smoke test
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ROOT, bench_config, build_bot, machine_line, table  # noqa: E402

from assistant_framework.tokens import estimate_tokens  # noqa: E402
from messaging_llm_bot.agent.prompt import final_user_message  # noqa: E402


def builtin_collectors() -> list[str]:
    """Names of the built-in collector folders."""
    folder = ROOT / "collectors"
    return sorted(p.name for p in folder.iterdir() if p.is_dir() and (p / "__init__.py").exists())


def skill_rows(catalog: list[dict]) -> list[dict]:
    """Per skill: characters of its [Tools] line, of its description and of its schema."""
    rows = []
    for entry in catalog:
        schema = json.dumps(entry.get("args_schema") or {}, separators=(",", ":"), ensure_ascii=False, sort_keys=True)
        description = (entry.get("description") or "").strip()
        line = f"- {entry['name']}: {description}\n  args: {schema}"
        rows.append(
            {"name": entry["name"], "chars": len(line) + 1, "description": len(description), "schema": len(schema)}
        )
    return sorted(rows, key=lambda r: -r["chars"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="same as the default (kept for the smoke test)")
    parser.parse_args(argv)
    collectors = builtin_collectors()
    config = bench_config("http://127.0.0.1:9/v1")
    config["collectors"] = {name: {"enabled": True} for name in collectors}
    base = Path(tempfile.mkdtemp(prefix="bench-prompt-"))
    try:
        bot = build_bot(config, base / "ws")
        try:
            system = bot.agent.prompt.system_prompt()
            catalog = bot.agent.skills.catalog()
            loaded = [c.name for c in bot.agent.collectors.enabled()] if bot.agent.collectors else []
        finally:
            bot.close()
    finally:
        shutil.rmtree(base, ignore_errors=True)
    total = len(system.text)
    rows = []
    for name, body in system.sections.items():
        rows.append([f"[{name}]", len(body), estimate_tokens(body), f"{len(body) / total:.1%}", ""])
        if name == "tools":
            for skill in skill_rows(catalog):
                rows.append(
                    [
                        f"  tools: {skill['name']}",
                        skill["chars"],
                        "",
                        f"{skill['chars'] / total:.1%}",
                        f"description {skill['description']}, schema {skill['schema']}",
                    ]
                )
    rows.append(["system prompt total", total, estimate_tokens(system.text), "100%", "sections joined by blank lines"])
    from datetime import datetime, timezone

    first = final_user_message("hi", datetime(2026, 1, 1, 9, 0, tzinfo=timezone.utc), "UTC")
    rows.append(["first user message ('hi' + [Now])", len(first), estimate_tokens(first), "", "no recall block yet"])
    print(machine_line())
    print(
        f"skills: {len(catalog)} built-in ({', '.join(s['name'] for s in catalog)}); collectors enabled: "
        f"{', '.join(loaded) or 'none'}"
    )
    print(table(["section", "chars", "est. tokens", "share of system prompt", "detail"], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
