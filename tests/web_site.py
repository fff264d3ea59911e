"""A real ``assistant web`` site over a temporary config and workspace, shared by the HTTP and browser tests.

The workspace holds a note, facts (one superseded), tasks, a profile, a conversation whose reply
has a trace (with recalled memory, a skill call and a secret inside the request), usage, and two
collectors (one that works, one that fails). Secrets are planted in the config, a note and the
trace, so every page can be checked for them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

from assistant_framework.stores import FactStore, TaskStore
from assistant_framework.traces import TraceStore, new_trace_id
from assistant_framework.web import WebServer, standalone_parts
from assistant_framework.workspace import Workspace
from tests.fixtures.collectors.helpers import write_collector

API_KEY = "sk-web-test-SECRET-4f9a2c"
BOT_TOKEN = "123456:TELEGRAM-SECRET-b7e1d0"
WEB_TOKEN = "web-token-for-tests-0123456789abcdef"

WRITER = """
DESCRIPTION = "Writes a counter (test collector)."
FILE_STRUCTURE = "latest.md holds the last run"
GENERATED_FILES = ["collectors/writer/latest.md"]
INTERVAL_SECONDS = 3600
def run(workspace, config):
    n = len(workspace.read_jsonl("collectors/writer/items.jsonl"))
    workspace.append_jsonl("collectors/writer/items.jsonl", {"n": n})
    workspace.write_text("collectors/writer/latest.md", f"# run {n}\\n")
    return {"new_items": [{"title": f"item {n}"}], "summary": f"run {n}", "errors": ["feed b.example: HTTP 503"]}
"""

RAISER = """
DESCRIPTION = "Always fails (test collector)."
FILE_STRUCTURE = "nothing"
GENERATED_FILES = []
INTERVAL_SECONDS = 600
def run(workspace, config):
    raise RuntimeError("mail server refused the login")
"""


@dataclass
class Site:
    server: WebServer
    workspace: Workspace
    root: Path
    trace_id: str
    chat: str
    day: str

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server.port}"

    def close(self) -> None:
        self.server.stop()
        self.server.state.parts.close()


def write_config(folder: Path, plugins: Path, *, token: str | None = WEB_TOKEN, web: dict | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "llm.json").write_text(
        json.dumps(
            {
                "runners": [
                    {"name": "hosted", "base_url": "http://127.0.0.1:9/v1", "model": "test-model", "api_key": API_KEY}
                ]
            }
        )
    )
    (folder / "telegram.json").write_text(json.dumps({"token": BOT_TOKEN, "allowed_user_ids": [42]}))
    broken = plugins / "skills" / "broken"
    broken.mkdir(parents=True, exist_ok=True)
    (broken / "__init__.py").write_text("DESCRIPTION = 'never loads'\nthis is not python\n")
    (folder / "runtime.json").write_text(
        json.dumps({"timezone": "UTC", "collectors_dirs": [str(plugins)], "skills_dirs": [str(plugins / "skills")]})
    )
    (folder / "collectors").mkdir(exist_ok=True)
    (folder / "collectors" / "writer.json").write_text(json.dumps({"enabled": True}))
    (folder / "collectors" / "raiser.json").write_text(json.dumps({"enabled": True}))
    settings = {"enabled": False} if token is None else {"enabled": False, "token": token}
    (folder / "web.json").write_text(json.dumps({**settings, **(web or {})}))
    return folder


def fill_workspace(ws: Workspace) -> tuple[str, str, str]:
    """Owner data, one conversation with its trace and usage; returns (trace id, chat, day)."""
    ws.write_text("notes/shopping.md", "# Shopping\n\nBuy oat milk and coffee beans.\nAsk about the blue bicycle.\n")
    ws.write_text("notes/keys.md", f"# Keys\n\nThe hosted key is {API_KEY} (pasted by mistake).\n")
    ws.write_text("learnings/general.md", "- The owner prefers short answers.\n")
    ws.write_text("profile.md", "# Profile\n\nLives in Paris. Cycles to work.\n")
    facts = FactStore(ws)
    facts.add("owner", "city", "Lyon", source="user")
    facts.add("owner", "city", "Paris", source="user")
    facts.add("owner", "bicycle", "blue", source="extraction", source_ref="42:2026-11-29:1")
    TaskStore(ws).add("Repair the bicycle light")
    ws.write_json(
        "jobs/jobs.json",
        [
            {
                "id": "j1",
                "name": "bins",
                "cron": "0 19 * * 0",
                "message": "Bins out",
                "created_at": "2026-11-01T00:00:00+00:00",
            }
        ],
    )
    now = datetime.now(timezone.utc).replace(microsecond=0)
    day = now.date().isoformat()
    chat = "42"
    trace_id = new_trace_id(now)
    ws.append_jsonl(
        f"conversations/{chat}/{day}.jsonl",
        {
            "time": now.isoformat(),
            "conversation": chat,
            "role": "user",
            "text": "what colour is my bicycle?",
            "message_id": 7,
            "turn_id": f"{chat}:{day}:1",
        },
    )
    ws.append_jsonl(
        f"conversations/{chat}/{day}.jsonl",
        {
            "time": (now + timedelta(seconds=3)).isoformat(),
            "conversation": chat,
            "role": "assistant",
            "text": "Your bicycle is blue.",
            "message_id": None,
            "turn_id": f"{chat}:{day}:2",
            "trace_id": trace_id,
        },
    )
    recalled = [
        {
            "source": "facts",
            "path": "facts/facts.json",
            "ref": "[2]",
            "time": None,
            "snippet": "subject: owner; attribute: bicycle; value: blue",
            "score": 0.91,
        }
    ]
    request = {
        "round": 1,
        "model": "test-model",
        "runner": "hosted",
        "elapsed_s": 1.25,
        "usage": {"prompt_tokens": 1800, "completion_tokens": 40, "cached_tokens": 1200},
        "messages": [
            {"role": "system", "content": f"You are the assistant. (debug: key {API_KEY})"},
            {"role": "user", "content": "what colour is my bicycle?"},
        ],
        "text": '{"reply": "Your bicycle is blue."}',
        "parsed": {"calls": [], "reply": "Your bicycle is blue."},
    }
    # Written without secrets to redact: the page must still keep the key off the screen.
    TraceStore(ws).write(
        {
            "id": trace_id,
            "conversation": chat,
            "time": now.isoformat(),
            "ok": True,
            "runner": "hosted",
            "model": "test-model",
            "rounds": 1,
            "elapsed_s": 1.4,
            "model_s": 1.25,
            "usage": request["usage"],
            "recalled": recalled,
            "user_text": "what colour is my bicycle?",
            "reply": "Your bicycle is blue.",
            "section_sizes": {
                "base": {"chars": 2400, "tokens": 600},
                "tools": {"chars": 5200, "tokens": 1300},
                "profile": {"chars": 320, "tokens": 80},
                "history": {"chars": 900, "tokens": 225},
                "recall": {"chars": 410, "tokens": 103},
            },
            "skill_calls": [
                {
                    "skill": "facts",
                    "args": {"action": "get", "subject": "owner"},
                    "result": {"value": "blue"},
                    "elapsed_s": 0.01,
                }
            ],
            "error": None,
            "requests": [request],
        }
    )
    return trace_id, chat, day


def start_site(tmp_path: Path, *, token: str | None = WEB_TOKEN, web: dict | None = None) -> Site:
    """The site over a filled workspace; ``web`` adds keys to ``web.json`` (limits, say)."""
    plugins = tmp_path / "plugins"
    write_collector(plugins, "writer", WRITER)
    write_collector(plugins, "raiser", RAISER)
    config = write_config(tmp_path / "config", plugins, token=token, web=web)
    root = tmp_path / "ws"
    ws = Workspace(root)
    trace_id, chat, day = fill_workspace(ws)
    parts = standalone_parts(config, root)
    server = WebServer(parts, host="127.0.0.1", port=0)
    server.start()
    return Site(server, parts.workspace, root, trace_id, chat, day)
