"""The terminal chat as a real subprocess: a config folder pointing at the fake model server, and a run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
API_KEY = "sk-console-secret-123456"


def write_config(folder: Path, base_url: str, skills_dir: Path, **runtime) -> Path:
    """A config directory like config/ in the repo, pointing at the fake server."""
    folder.mkdir(parents=True, exist_ok=True)
    llm = {
        "runners": [
            {"name": "fake", "base_url": base_url, "model": "fake-model", "api_key": API_KEY, "timeout_seconds": 10}
        ],
        "max_skill_rounds": 3,
        "max_concurrency": 2,
    }
    (folder / "llm.json").write_text(json.dumps(llm))
    (folder / "runtime.json").write_text(json.dumps({"timezone": "UTC", "skills_dirs": [str(skills_dir)], **runtime}))
    (folder / "telegram.json").write_text(json.dumps({"token": ""}))
    (folder / "memory.json").write_text(json.dumps({"enabled": False}))
    return folder


#: The ways to start the bot, as the installed commands run them: ``python -m messaging_llm_bot``,
#: ``assistant run`` (``make run``, ``make chat``) and ``assistant-bot`` (the alias's entry point).
ENTRIES = {
    "python -m": ["-m", "messaging_llm_bot"],
    "assistant run": ["-m", "messaging_llm_bot.cli", "run"],
    "assistant-bot": ["-c", "from messaging_llm_bot.cli.run import run_and_exit; run_and_exit()"],
}


def run_bot(args: list[str], stdin: str, timeout: float = 60, entry: str = "python -m") -> subprocess.CompletedProcess:
    """The bot started the way ``entry`` names, with ARGS and ``stdin`` typed in; its output captured."""
    env = {k: v for k, v in os.environ.items() if k != "TELEGRAM_BOT_TOKEN"}
    return subprocess.run(
        [sys.executable, *ENTRIES[entry], *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
        env=env,
    )
