"""``web.enabled``: the bot serves the page from its own process, on its live runtime."""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import requests

from assistant_framework.web import start_if_enabled
from messaging_llm_bot.runtime import build_runtime
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
    proc = subprocess.Popen(
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
    )
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
        assert runtime.reload() is None
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
        runtime.config["web"] = {"enabled": True, "token": "short", "port": 0}
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
