"""The owner's memory over MCP, through the real paths: the bot process (Telegram turns in, /mcp on its web
server) and ``assistant mcp serve`` over stdio, each driven by the official MCP SDK's client."""

from __future__ import annotations

import asyncio
import json
import re
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import httpx2
import pytest

from assistant_framework.memory.log import TurnLog
from assistant_framework.workspace import Workspace
from tests import preload
from tests.crash_bot import REPO, BotProcess, echo_reply, sent_texts, write_bot_config
from tests.fakes.bot_api import FakeBotAPI

OWNER, GUEST = 1, 2
OWNER_MAIL, GUEST_MAIL = "owner@example.org", "guest@example.org"
READER_TOKEN = "reader-token-" + "r" * 24
WRITER_TOKEN = "writer-token-" + "w" * 24
CLIENTS = {
    "clients": [
        {"name": "desk", "token_env": "DESK_TOKEN"},
        {"name": "scripts", "token_env": "SCRIPTS_TOKEN", "write": True},
    ]
}
ENV = {"DESK_TOKEN": READER_TOKEN, "SCRIPTS_TOKEN": WRITER_TOKEN}
TOOLS = {
    "memory_search",
    "recall",
    "notes",
    "note_read",
    "tasks",
    "facts",
    "contacts",
    "note_add",
    "task_add",
    "fact_add",
}


# The MCP SDK is imported in the helpers that use it: at the top it cost every xdist worker's collection
# half a second of CPU, for tests that all start a bot process.


async def _session(transport: Any, work: Any) -> Any:
    from mcp import Client

    async with Client(transport, cache=None) as client:
        return await work(client)


def over_http(url: str, token: str, work: Any) -> Any:
    from mcp.client.streamable_http import streamable_http_client

    async def main() -> Any:
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http:
            return await _session(streamable_http_client(url, http_client=http), work)

    return asyncio.run(main())


def over_stdio(config: Path, workspace: Path, work: Any, *write: str) -> Any:
    from mcp import StdioServerParameters
    from mcp.client.stdio import stdio_client

    # The client starts it as it starts any command; the worker's zygote forks it (tests/preload.py).
    serve = [sys.executable, "-m", "messaging_llm_bot.cli", "mcp", "serve", "--config", str(config)]
    entry = preload.server_entry([*serve, "--workspace", str(workspace), *write])
    params = StdioServerParameters(command=entry["command"], args=entry["args"], cwd=str(REPO))
    # The server's stderr to the worker's own: stdio_client's default is the sys.stderr of the moment the SDK
    # was imported, which is pytest's capture (no fileno) now that the SDK is imported inside the test.
    return asyncio.run(_session(stdio_client(params, errlog=sys.__stderr__), work))


def text_of(result: Any) -> str:
    return "".join(getattr(part, "text", "") for part in result.content)


async def tour(client: Any) -> dict[str, Any]:
    """List the tools, search for the owner's fact and the guest's, try a write."""
    tools = {tool.name for tool in (await client.list_tools()).tools}
    found = json.loads(text_of(await client.call_tool("memory_search", {"query": "locker code"})))
    guest = json.loads(text_of(await client.call_tool("memory_search", {"query": "pelican"})))
    mail = json.loads(text_of(await client.call_tool("memory_search", {"query": "albatross", "limit": 10})))
    added = await client.call_tool("note_add", {"title": "From a client", "body": "written over MCP"})
    threads = {word for hit in mail["results"] for word in ("owner-thread", "guest-thread") if word in hit["snippet"]}
    return {"tools": tools, "found": found["results"], "guest": guest["results"], "added": added, "mail": threads}


def post(url: str, body: dict, headers: dict[str, str]) -> tuple[int, str]:
    request = urllib.request.Request(
        url,
        json.dumps(body).encode(),
        {"Content-Type": "application/json", "Accept": "application/json, text/event-stream", **headers},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


@pytest.mark.timeout(120)
def test_mcp_clients_search_what_the_owner_told_the_bot_and_write_only_when_allowed(
    tmp_path: Path, bot_config: dict, chat_server: Any
) -> None:
    chat_server.set_handler(echo_reply)
    workspace = tmp_path / "workspace"
    # Two email threads as the email channel logs them (the channel itself is tested elsewhere): the owner's is
    # served, the guest's never, though a thread's folder name is hashed (conversation/routes.py).
    log = TurnLog(Workspace(workspace))
    log.append(f"mail:{OWNER_MAIL}:0123456789ab", "user", "the albatross plan is owner-thread")
    log.append(f"mail:{GUEST_MAIL}:0123456789ab", "user", "the albatross plan is guest-thread")
    with FakeBotAPI() as fake:
        config = write_bot_config(
            tmp_path / "config.json",
            bot_config,
            fake,
            allowed=[OWNER, GUEST],
            extra={
                "memory": {"enabled": True, "extract_facts": False, "episodes": False, "profile": {"enabled": False}},
                "web": {"enabled": True, "port": 0},
                "serve": CLIENTS,
                "email": {"allowed": [OWNER_MAIL, GUEST_MAIL]},
            },
        )
        with BotProcess(config, workspace, tmp_path / "bot.log", env=ENV) as bot:
            bot.start().wait_ready()
            fake.send_message("my locker code is 4711 zebra", user_id=OWNER)
            fake.send_message("a guest secret: pelican 99", user_id=GUEST)
            fake.wait_for(lambda: sent_texts(fake, OWNER) and sent_texts(fake, GUEST), timeout=30)
            port = re.search(r"web page: http://127\.0\.0\.1:(\d+)/", bot.run_log())
            assert port, bot.run_log()[-2000:]
            url = f"http://127.0.0.1:{port.group(1)}/mcp"

            # Without a client's token (none, a wrong one, the page's own session-less request): 401, nothing runs.
            call = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "note_add", "arguments": {"title": "intruder"}},
            }
            for headers in ({}, {"Authorization": "Bearer " + "x" * 40}, {"Authorization": f"Basic {WRITER_TOKEN}"}):
                status, body = post(url, call, headers)
                assert status == 401, (headers, status, body)
                assert "bearer token" in body
            assert not (workspace / "notes").exists() or not list((workspace / "notes").glob("*.md"))

            # Guessing meets the page's bound on wrong tokens (429); the right token still works below.
            statuses = [post(url, call, {"Authorization": f"Bearer guess-{n}-" + "g" * 30})[0] for n in range(6)]
            assert 429 in statuses and set(statuses) <= {401, 429}, statuses

            reader = over_http(url, READER_TOKEN, tour)
            assert reader["tools"] == TOOLS
            assert reader["found"], "the fact told in the Telegram turn is found"
            hit = reader["found"][0]
            assert "4711 zebra" in hit["snippet"] and hit["conversation"].startswith(f"tg_{OWNER}-") and hit["date"]
            assert reader["guest"] == [], "a guest's chat is never served"
            assert reader["added"].is_error and "refused" in text_of(reader["added"])
            assert not list((workspace / "notes").glob("*.md")) if (workspace / "notes").exists() else True

            writer = over_http(url, WRITER_TOKEN, tour)
            assert not writer["added"].is_error, text_of(writer["added"])
            note = workspace / json.loads(text_of(writer["added"]))["path"]
            text = note.read_text(encoding="utf-8")
            assert "source: mcp:scripts" in text and "untrusted: true" in text
            assert "client scripts wrote note" in bot.run_log()
            assert bot.terminate() == 0

        # stdio: the owner's own client starts the server; read-only unless --write.
        local = over_stdio(config, workspace, tour)
        assert local["tools"] == TOOLS
        assert any("4711 zebra" in hit["snippet"] for hit in local["found"])
        assert local["guest"] == []
        # `mcp serve` reads the logs written before it (the bot indexes its own turns as it makes them).
        assert local["mail"] == {"owner-thread"}, "the owner's email thread is served, a guest's never"
        assert local["added"].is_error and "--write" in text_of(local["added"])
        writing = over_stdio(config, workspace, tour, "--write")
        assert not writing["added"].is_error, text_of(writing["added"])
        written = (workspace / json.loads(text_of(writing["added"]))["path"]).read_text(encoding="utf-8")
        assert "source: mcp:local" in written and "untrusted: true" in written
