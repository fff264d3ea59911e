"""The frontends bench: the conversation through the terminal chat and the Telegram bot (errors,
tracebacks, raw JSON shown to the user)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench._common import table
from bench.realmodel.conversation import CONVERSATION
from bench.realmodel.server import ROOT, llm_section
from tests.real_model import RealModelServer

RAW_JSON = re.compile(r'\{\s*"(skill|reply|args|facts)"|^\s*[{}\[\]]\s*$', re.M)


def _config_dir(folder: Path, server: RealModelServer, telegram: dict | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "llm.json").write_text(json.dumps(llm_section(server)))
    (folder / "runtime.json").write_text(json.dumps({"timezone": "UTC"}))
    (folder / "telegram.json").write_text(json.dumps(telegram or {"token": ""}))
    (folder / "policy.json").write_text(
        json.dumps({"capabilities": {c: "allow" for c in ("read", "write", "delete", "network", "send")}})
    )
    return folder


def part_frontends(server: RealModelServer) -> str:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        config = _config_dir(tmp_path / "console-config", server)
        env = {k: v for k, v in os.environ.items() if k != "TELEGRAM_BOT_TOKEN"}
        started = time.monotonic()
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "messaging_llm_bot",
                "--frontend",
                "console",
                "--config",
                str(config),
                "--workspace",
                str(tmp_path / "console-ws"),
            ],
            input="\n".join(CONVERSATION) + "\n",
            capture_output=True,
            text=True,
            timeout=3600,
            cwd=ROOT,
            env=env,
        )
        screen = proc.stdout + proc.stderr
        rows.append(
            [
                "terminal chat",
                proc.returncode,
                screen.count("Traceback"),
                len(RAW_JSON.findall(screen)),
                sum(1 for line in proc.stderr.splitlines() if " ERROR " in line or "WARNING" in line),
                screen.count("Sorry, something went wrong"),
                f"{time.monotonic() - started:.0f}",
            ]
        )
        (tmp_path / "console.txt").write_text(screen)
        print(screen, file=sys.stderr)
        print(" | ".join(str(c) for c in rows[-1]), flush=True)
        rows.append(_telegram(server, tmp_path))
        print(" | ".join(str(c) for c in rows[-1]), flush=True)
    head = [
        "frontend",
        "exit code",
        "tracebacks",
        "raw JSON shown",
        "warning/error log lines on screen",
        "failed turns",
        "total s",
    ]
    return table(head, rows)


def _telegram(server: RealModelServer, tmp_path: Path) -> list:
    from assistant_framework.workspace import Workspace
    from messaging_llm_bot.channels.telegram.settings import conversation_id
    from tests.fakes.bot_api import FakeBotAPI
    from tests.telegram_harness import OWNER, RunningBot, make_runtime, texts

    fake = FakeBotAPI()
    fake.start()
    started = time.monotonic()
    try:
        config = {
            "llm": llm_section(server),
            "runtime": {"timezone": "UTC"},
            "policy": {"capabilities": {c: "allow" for c in ("read", "write", "delete", "network", "send")}},
            "telegram": {
                "token": fake.token,
                "allowed_user_ids": [OWNER],
                "base_url": fake.base_url,
                "base_file_url": fake.base_file_url,
                "stream": True,
                "progress": True,
            },
        }
        runtime = make_runtime(config, Workspace(tmp_path / "tg-ws"), tmp_path)
        replies: list[str] = []
        conv = conversation_id(OWNER)
        bot = RunningBot(runtime)
        with bot:
            for text in CONVERSATION:
                traced = len(runtime.agent.traces.ids())
                fake.send_message(text)
                # every turn, answered or failed, leaves one trace; then nothing is running
                fake.wait_for(
                    lambda traced=traced: len(runtime.agent.traces.ids()) > traced and runtime.agent.pending(conv) == 0,
                    timeout=900,
                )
                time.sleep(1.5)  # let the last edit of a streamed reply land
            replies = texts(fake)
            bot.stop(timeout=300)  # shutdown sends the batched fact extraction to the slow model first
        shown = "\n".join(replies)
        print(shown, file=sys.stderr)
        return [
            "telegram (fake Bot API)",
            0,
            shown.count("Traceback"),
            len(RAW_JSON.findall(shown)),
            "-",
            shown.count("Sorry, something went wrong"),
            f"{time.monotonic() - started:.0f}",
        ]
    finally:
        fake.stop()


# ------------------------------------------------------------------ stop
