"""``web.enabled``: the bot serves the page from its own process, on its live runtime."""

from __future__ import annotations

import json
import logging
import os
import re
import resource
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from assistant_framework.config.settings import Settings
from assistant_framework.web import start_if_enabled
from messaging_llm_bot.runtime import build_runtime
from tests import preload
from tests.crash_bot import BotProcess, echo_reply, sent_texts, write_bot_config
from tests.fakes.bot_api import FakeBotAPI
from tests.web_site import WEB_TOKEN, start_site

REPO = Path(__file__).resolve().parent.parent
API_KEY = "sk-web-bot-secret-778899"


def _config(folder: Path, base_url: str, skills_dir: Path, web: dict) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "llm.json").write_text(
        json.dumps(
            {
                "runners": [
                    {
                        "name": "fake",
                        "base_url": base_url,
                        "model": "fake-model",
                        "api_key": API_KEY,
                        "timeout_seconds": 10,
                    }
                ],
                "retries_per_runner": 0,
            }
        )
    )
    (folder / "runtime.json").write_text(json.dumps({"timezone": "UTC", "skills_dirs": [str(skills_dir)]}))
    (folder / "telegram.json").write_text(json.dumps({"token": ""}))
    (folder / "memory.json").write_text(json.dumps({"enabled": True, "extract_facts": False}))
    (folder / "web.json").write_text(json.dumps(web))
    return folder


def test_the_console_bot_serves_the_page_with_its_live_conversation(tmp_path, chat_server, test_skills_dir):
    config = _config(tmp_path / "config", chat_server.base_url, test_skills_dir, {"enabled": True, "port": 0})
    chat_server.enqueue(
        '{"skill": "save_note", "args": {"name": "milk", "text": "oat milk"}}', '{"reply": "Noted: oat milk."}'
    )
    env = {k: v for k, v in os.environ.items() if k != "TELEGRAM_BOT_TOKEN"}
    with preload.popen(
        [
            sys.executable,
            "-m",
            "messaging_llm_bot",
            "--frontend",
            "console",
            "--config",
            str(config),
            "--workspace",
            str(tmp_path / "ws"),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env=env,
    ) as proc:
        try:
            banner = ""
            while not banner.startswith("web page:"):
                banner = proc.stderr.readline()
                assert banner, "the bot ended without serving the page"
            url, token = re.match(r"web page: (http://127\.0\.0\.1:\d+/)\?token=(\S+)", banner).groups()
            assert (tmp_path / "ws" / "state" / "web" / "token").read_text().strip() == token
            proc.stdin.write("remember oat milk\n")
            proc.stdin.flush()
            assert proc.stdout.readline().strip() == "Noted: oat milk."
            auth = {"Authorization": f"Bearer {token}"}
            assert requests.get(f"{url}memory").status_code == 401
            chats = requests.get(f"{url}api/conversations", headers=auth).json()["conversations"]
            assert len(chats) == 1
            traces = requests.get(f"{url}api/traces", headers=auth).json()["traces"]
            assert traces and traces[0]["rounds"] == 2
            hits = requests.get(f"{url}api/memory/search", params={"q": "oat milk"}, headers=auth).json()["hits"]
            assert "notes/milk.md" in {h["path"] for h in hits}
            trace = requests.get(f"{url}api/traces/{traces[0]['id']}", headers=auth).text
            assert API_KEY not in trace
        finally:
            proc.stdin.close()
            proc.wait(timeout=60)
        assert proc.returncode == 0
        assert API_KEY not in proc.stderr.read()


def test_the_page_sees_the_runtime_after_a_reload(tmp_path, chat_server, test_skills_dir):
    config = _config(
        tmp_path / "config", chat_server.base_url, test_skills_dir, {"enabled": True, "port": 0, "token": WEB_TOKEN}
    )
    runtime = build_runtime(config, tmp_path / "ws")
    server = start_if_enabled(runtime)
    try:
        auth = {"Authorization": f"Bearer {WEB_TOKEN}"}
        names = {s["name"] for s in requests.get(f"{server.url}api/skills", headers=auth).json()["skills"]}
        assert "save_note" in names
        (config / "runtime.json").write_text(json.dumps({"timezone": "UTC"}))  # the test skills are gone
        assert runtime.reload().error is None
        names = {s["name"] for s in requests.get(f"{server.url}api/skills", headers=auth).json()["skills"]}
        assert "save_note" not in names and "notes" in names
    finally:
        server.stop()
        runtime.shutdown(timeout=5)


def test_disabled_by_default_and_a_bad_token_does_not_stop_the_bot(tmp_path, chat_server, test_skills_dir, caplog):
    config = _config(tmp_path / "config", chat_server.base_url, test_skills_dir, {})
    runtime = build_runtime(config, tmp_path / "ws")
    try:
        assert start_if_enabled(runtime) is None
        web = {"enabled": True, "token": "short", "port": 0}
        runtime.settings = Settings.from_config({**runtime.config, "web": web})
        with caplog.at_level(logging.ERROR):
            assert start_if_enabled(runtime) is None
        assert "web page not started: web.token must be at least 16 characters" in caplog.text
    finally:
        runtime.shutdown(timeout=5)


def test_the_access_log_never_holds_the_token(tmp_path, caplog):
    site = start_site(tmp_path)
    try:
        with caplog.at_level(logging.DEBUG, logger="tornado"):
            requests.get(f"{site.base}/memory?token={WEB_TOKEN}")
            requests.get(f"{site.base}/nowhere?token={WEB_TOKEN}x")
            requests.get(f"{site.base}/file?path=../x&token={WEB_TOKEN}")
            requests.post(
                f"{site.base}/api/file?path=../x&token={WEB_TOKEN}",
                headers={"Authorization": f"Bearer {WEB_TOKEN}"},
                json={"content": ""},
            )
        assert "/memory" in caplog.text and "/nowhere" in caplog.text
        assert WEB_TOKEN not in caplog.text
    finally:
        site.close()


# -- the page cannot take the bot down (issue 26.2) -------------------------------------------------

#: The bot's open-file limit in these tests: low, as a soft limit of 1024 is for a service, so that the
#: idle sockets below would exhaust it many times over if the page accepted them all.
FD_LIMIT = 256


def _fd_limit(limit: int):
    def apply() -> None:  # runs in the child, before the bot starts
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))

    return apply


def _open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def _settled_fds(pid: int, timeout: float = 10) -> int:
    """The process's open-file count once it stopped changing (the server accepted what it will accept)."""
    deadline = time.monotonic() + timeout
    last = _open_fds(pid)
    while time.monotonic() < deadline:
        time.sleep(0.2)
        now = _open_fds(pid)
        if now == last:
            return now
        last = now
    return last


def _idle_sockets(port: int, count: int) -> list[socket.socket]:
    """``count`` connections that start a request and never finish its headers (a slowloris)."""
    held = []
    for _ in range(count):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setblocking(False)
        sock.connect_ex(("127.0.0.1", port))
        held.append(sock)
    time.sleep(0)
    for sock in held:
        try:
            sock.send(b"GET /memory HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        except OSError:
            pass  # still in the listen backlog (or refused): it holds a place there instead
    return held


@pytest.mark.timeout(120)
def test_idle_connections_to_the_page_do_not_take_the_bot_down(tmp_path, bot_config, chat_server):
    """1,000 idle connections to the page of a bot whose open-file limit is 256: the owner's Telegram
    message is still stored and answered, the page still answers the owner, and the log does not flood."""
    chat_server.set_handler(echo_reply)
    with FakeBotAPI() as fake:
        config = write_bot_config(
            tmp_path / "config.json",
            bot_config,
            fake,
            extra={"web": {"enabled": True, "port": 0, "token": WEB_TOKEN}},
        )
        with BotProcess(config, tmp_path / "ws", tmp_path / "bot.log", preexec_fn=_fd_limit(FD_LIMIT)) as bot:
            bot.start().wait_ready()
            url = re.search(r"web page: (http://127\.0\.0\.1:(\d+)/)", bot.run_log())
            base, port = url.group(1), int(url.group(2))
            held = _idle_sockets(port, 4 * FD_LIMIT)
            try:
                assert _settled_fds(bot.proc.pid) < FD_LIMIT - 32  # descriptors are left for the bot's own work
                fake.send_message("still there?", user_id=1)
                fake.wait_for(lambda: "re: still there?" in sent_texts(fake, 1), timeout=30)
                reply = requests.get(f"{base}api/usage", headers={"Authorization": f"Bearer {WEB_TOKEN}"}, timeout=10)
                assert reply.status_code == 200
            finally:
                for sock in held:
                    sock.close()
            assert bot.terminate() == 0
        log = bot.log_text()
        assert "Traceback" not in log and "Too many open files" not in log, log[-3000:]
        assert len(log) < 100_000
