"""``assistant doctor`` checks the outside services the config names: the web search backend (one search through
the ``web_search`` skill, against the fake search APIs), the speech and the transcription server (the fake
Chat Completions server's audio endpoints); unreachable, each is a failure in one sentence with the fix, but
DuckDuckGo, the default that needs nothing set up: on a machine without internet it is a warning whose fix is
the off switch (``search.enabled: false``), and the doctor passes."""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
from pathlib import Path

import pytest

from assistant_framework.workspace import Workspace
from messaging_llm_bot.cli.main import main
from tests import preload
from tests.cli_inprocess import run_cli
from tests.fakes.bot_api import FakeBotAPI
from tests.fakes.chat_server import FakeChatServer
from tests.fakes.search_apis import FakeBrave, FakeSearXNG

REPO = Path(__file__).resolve().parents[1]
RESULTS = [{"title": "Weather", "url": "https://weather.example/", "content": "Sunny."}]


@pytest.fixture
def servers():
    with FakeBotAPI() as tg, FakeChatServer() as chat:
        chat.set_handler(lambda request: "OK")
        yield tg, chat


def closed_port() -> int:
    with socket.socket() as probe:  # bound and closed again: nobody listens there
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def doctor(capsys, tmp_path: Path, servers, *extra: str, **sections: dict) -> tuple[int, dict[str, dict]]:
    tg, chat = servers
    config = tmp_path / "config"
    config.mkdir(exist_ok=True)
    files = {
        "telegram": {"token": tg.token, "base_url": tg.base_url, "allowed_user_ids": [42]},
        "llm": {"runners": [{"name": "local", "base_url": chat.base_url, "model": "fake-model"}]},
        "runtime": {"timezone": "UTC"},
        **sections,
    }
    for name, value in files.items():
        (config / f"{name}.json").write_text(json.dumps(value))
    Workspace(tmp_path / "ws")
    code = main(["doctor", "--json", "--config", str(config), "--workspace", str(tmp_path / "ws"), *extra])
    return code, {check["name"]: check for check in json.loads(capsys.readouterr().out)}


def test_an_unreachable_search_backend_fails_in_one_sentence_with_the_fix(servers, tmp_path, capsys) -> None:
    port = closed_port()
    code, checks = doctor(capsys, tmp_path, servers, search={"backend": "searxng", "url": f"http://127.0.0.1:{port}"})
    assert code == 1
    check = checks["search searxng"]
    assert check["status"] == "fail"
    assert check["detail"] == (
        f"SearXNG at http://127.0.0.1:{port}/search is not reachable (connection refused): check that the instance "
        "runs and search.url"
    )
    assert "config set search.backend" in check["fix"] and "\n" not in check["fix"]
    assert "config set search.enabled false" in check["fix"]  # or no web search at all


def test_a_search_backend_that_answers_is_ok_and_was_asked_once(servers, tmp_path, capsys) -> None:
    with FakeSearXNG(results=list(RESULTS)) as searx:
        code, checks = doctor(capsys, tmp_path, servers, search={"backend": "searxng", "url": searx.url})
        assert [r.params["q"] for r in searx.requests] == ["weather"]
    assert checks["search searxng"]["status"] == "ok", checks["search searxng"]
    assert code == 0, {name: c for name, c in checks.items() if c["status"] != "ok"}


def test_a_refused_key_is_named_and_quick_or_no_search_section_asks_nothing(servers, tmp_path, capsys) -> None:
    with FakeBrave(results=list(RESULTS)) as brave:
        section = {"backend": "brave", "url": brave.url, "api_key": "wrong-key"}
        code, checks = doctor(capsys, tmp_path, servers, search=section)
        assert code == 1 and checks["search brave"]["status"] == "fail"
        assert "Brave Search refused the API key" in checks["search brave"]["detail"]
        asked = len(brave.requests)
        _, quick = doctor(capsys, tmp_path, servers, "--quick", search=section)
        assert "search brave" not in quick and len(brave.requests) == asked  # --quick sends nothing
    (tmp_path / "config" / "search.json").unlink()
    _, unset = doctor(capsys, tmp_path, servers)
    assert not [name for name in unset if name.startswith("search")]  # not configured: not asked


def test_speech_and_transcription_servers_are_asked_a_minimal_request(servers, tmp_path, capsys) -> None:
    _, chat = servers
    chat.set_transcription("")
    voice = {"reply": "mirror", "tts": {"base_url": chat.base_url, "model": "kokoro"}}
    llm = {
        "runners": [{"name": "local", "base_url": chat.base_url, "model": "fake-model"}],
        "transcription": {"base_url": chat.base_url, "model": "whisper-1"},
    }
    code, checks = doctor(capsys, tmp_path, servers, voice=voice, llm=llm)
    assert checks["speech"]["status"] == "ok" and "spoke a word" in checks["speech"]["detail"], checks["speech"]
    assert checks["transcription"]["status"] == "ok", checks["transcription"]
    assert code == 0

    dead = f"http://127.0.0.1:{closed_port()}/v1"
    voice["tts"]["base_url"] = dead
    llm["transcription"]["base_url"] = dead
    code, checks = doctor(capsys, tmp_path, servers, voice=voice, llm=llm)
    assert code == 1
    assert (
        checks["speech"]["status"] == "fail"
        and f"speech request to {dead}/audio/speech failed" in (checks["speech"]["detail"])
    )
    assert "voice.tts.base_url" in checks["speech"]["fix"]
    assert checks["transcription"]["status"] == "fail" and dead in checks["transcription"]["detail"]
    assert "llm.transcription.base_url" in checks["transcription"]["fix"]


def test_offline_the_shipped_config_warns_of_web_search_and_the_doctor_passes(servers, tmp_path) -> None:
    """The first day of a local-model owner without internet: the shipped config (DuckDuckGo on) with their
    settings in ``local/``; ``ddgs`` goes through a proxy on a closed local port, as a machine with no way out.
    The doctor, a process, exits 0 with a warning naming the cause and the off switch; once it is set (``config
    set``), the doctor skips search and asks nothing."""
    tg, chat = servers
    config = tmp_path / "config"
    shutil.copytree(REPO / "config", config, ignore=shutil.ignore_patterns("local"))
    assert json.loads((config / "search.json").read_text())["backend"] == "duckduckgo"  # on, as shipped
    (config / "local").mkdir()
    (config / "local" / "telegram.json").write_text(
        json.dumps({"token": tg.token, "base_url": tg.base_url, "allowed_user_ids": [42]})
    )
    runner = {"name": "local", "base_url": chat.base_url, "model": "fake-model"}
    (config / "local" / "llm.json").write_text(json.dumps({"runners": [runner]}))
    Workspace(tmp_path / "ws")
    argv = ["doctor", "--json", "--config", str(config), "--workspace", str(tmp_path / "ws")]
    offline = {**os.environ, "PYTHONPATH": str(REPO), "DDGS_PROXY": f"http://127.0.0.1:{closed_port()}"}
    done = preload.run(
        [sys.executable, "-m", "messaging_llm_bot.cli", *argv], capture_output=True, text=True, env=offline, timeout=120
    )
    checks = {check["name"]: check for check in json.loads(done.stdout)}
    assert done.returncode == 0, {name: c for name, c in checks.items() if c["status"] == "fail"}
    search = checks["search duckduckgo"]
    assert search["status"] == "warn", search
    assert search["detail"].startswith("DuckDuckGo is not reachable (connection refused): check this machine's")
    assert "config set search.enabled false" in search["fix"]
    assert "Traceback" not in done.stderr

    assert run_cli("config", "set", "search.enabled", "false", "--config", str(config)).returncode == 0
    again = run_cli(*argv, env=offline)
    checks = {check["name"]: check for check in json.loads(again.stdout)}
    assert again.returncode == 0
    assert checks["search"]["status"] == "skip" and "search.enabled: false" in checks["search"]["detail"]
    assert "search duckduckgo" not in checks


def test_a_backend_the_owner_set_up_turned_off_is_not_asked(servers, tmp_path, capsys) -> None:
    with FakeSearXNG(results=list(RESULTS)) as searx:
        section = {"enabled": False, "backend": "searxng", "url": searx.url}
        code, checks = doctor(capsys, tmp_path, servers, search=section)
        assert searx.requests == []
    assert code == 0 and checks["search"]["status"] == "skip"


def test_a_bad_off_switch_is_a_config_error_naming_file_and_key(tmp_path) -> None:
    config = tmp_path / "config"
    config.mkdir()
    (config / "search.json").write_text(json.dumps({"enabled": "off"}))
    done = run_cli("config", "validate", "--config", "config", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr == "config error: config/search.json: enabled: 'off' is not of type 'boolean'\n"
    assert "Traceback" not in done.stderr
