"""The web skill: fetches text pages, refuses internal addresses unless allowed, marks the turn untrusted."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from assistant_framework.skills import SkillContext, SkillManager

PAGES = {
    "/page": ("text/html; charset=utf-8", "<html><head><title>T</title><script>x()</script></head>"
              "<body><h1>Recipe</h1><p>Bake 40 minutes.</p></body></html>"),
    "/plain": ("text/plain", "just text"),
    "/image": ("image/png", "\x89PNG"),
}


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server API
        if self.path == "/hop":
            self.send_response(302)
            self.send_header("Location", "/page")
            self.end_headers()
            return
        kind, body = PAGES.get(self.path, ("text/plain", "missing"))
        data = body.encode("latin-1" if kind == "image/png" else "utf-8")
        self.send_response(200 if self.path in PAGES else 404)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def site():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def run(workspace, args, allow_private):
    skills = SkillManager.from_config({}, workspace)
    context = SkillContext(config={"policy": {"allow_private_network": allow_private}})
    return skills.run("web", args, context)


def test_internal_address_refused_by_default(workspace, site):
    result = run(workspace, {"url": f"{site}/page"}, allow_private=False)
    assert not result.ok and "internal address" in result.error and "allow_private_network" in result.error


def test_page_fetched_as_text_when_allowed(workspace, site):
    result = run(workspace, {"url": f"{site}/hop"}, allow_private=True)
    assert result.ok
    assert result.value["url"].endswith("/page")
    assert "Recipe" in result.value["text"] and "Bake 40 minutes." in result.value["text"]
    assert "x()" not in result.value["text"]
    assert run(workspace, {"url": f"{site}/plain"}, allow_private=True).value["text"] == "just text"


def test_non_text_and_errors_are_reported(workspace, site):
    assert "not a text page" in run(workspace, {"url": f"{site}/image"}, allow_private=True).error
    assert "HTTP 404" in run(workspace, {"url": f"{site}/nothing"}, allow_private=True).error
    assert not run(workspace, {"url": "file:///etc/passwd"}, allow_private=True).ok  # schema: http(s) only


def test_a_fetch_marks_the_turn_untrusted(bot_config, workspace, chat_server, site):
    from messaging_llm_bot.agent.loop import Agent
    from messaging_llm_bot.llm.client import LLMClient

    config = dict(bot_config, policy={"capabilities": {"network": "allow", "delete": "allow"}, "allow_private_network": True})
    workspace.write_text("notes/keep.md", "keep")
    agent = Agent(config, workspace, SkillManager.from_config(config, workspace), LLMClient(config["llm"]))
    chat_server.enqueue(f'{{"skill": "web", "args": {{"url": "{site}/page"}}}}',
                        '{"skill": "file", "args": {"action": "delete", "path": "notes/keep.md"}}',
                        '{"reply": "done"}')
    agent.handle_message("c1", "read this page")
    assert workspace.exists("notes/keep.md")  # the page could have asked for that delete
    assert chat_server.chat_requests[1]["messages"][-1]["content"].startswith("[Untrusted content")
