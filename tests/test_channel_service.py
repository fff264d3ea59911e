"""conversation/service.py's ChannelService, through a real channel's service in this process: a config that
cannot run is refused in one line naming the key (exit code 2), a second copy on the same workspace in one
line naming the lock (exit code 1); neither starts a loop, reaches a server or shows a traceback."""

from __future__ import annotations

import json
from pathlib import Path

from assistant_framework.workspace import Workspace
from messaging_llm_bot.channels.email.service import EmailService
from messaging_llm_bot.conversation.shutdown import take_lock


def _runtime(tmp_path: Path, **sections: object):
    from messaging_llm_bot.runtime import build_runtime

    config = {
        "llm": {"runners": [{"name": "none", "base_url": "http://127.0.0.1:9/v1", "model": "m"}]},
        "telegram": {"token": ""},
        "memory": {"enabled": False},
        **sections,
    }
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    return build_runtime(path, Workspace(tmp_path / "ws").root)


EMAIL = {
    "enabled": True,
    "address": "assistant@example.org",
    "imap": {"host": "127.0.0.1", "port": 9, "security": "none", "user": "u", "password": "p"},
    "smtp": {"host": "127.0.0.1", "port": 9, "security": "none"},
}


def test_a_second_copy_on_the_same_workspace_is_refused_in_one_line(tmp_path: Path, capsys) -> None:
    runtime = _runtime(tmp_path, email=EMAIL)
    held = take_lock(runtime.workspace, "state/email.lock", "the test")
    assert held is not None
    try:
        service = EmailService(runtime, manage_runtime=False)
        assert service.run() == 1
    finally:
        held.release()
    err = capsys.readouterr().err
    assert "email: another email bot is already running" in err and "state/email.lock" in err
    assert "Traceback" not in err and not service.ready.is_set() and service._loop is None


def test_a_config_that_cannot_run_is_refused_naming_the_key(tmp_path: Path, capsys, monkeypatch) -> None:
    # Imported here: matrix-nio costs each xdist worker 0.2 s of CPU at collection, and only this test needs it.
    from messaging_llm_bot.channels.matrix.service import MatrixService

    monkeypatch.delenv("TEST_MATRIX_PASSWORD_UNSET", raising=False)
    matrix = {
        "enabled": True,
        "homeserver": "http://127.0.0.1:9",
        "user_id": "@bot:localhost",
        "password_env": "TEST_MATRIX_PASSWORD_UNSET",
    }
    service = MatrixService(_runtime(tmp_path, matrix=matrix), manage_runtime=False)
    assert service.run() == 2
    err = capsys.readouterr().err
    assert "matrix: cannot log in: matrix.password_env names TEST_MATRIX_PASSWORD_UNSET, which is not set" in err
    assert "Traceback" not in err and service._loop is None  # refused before a loop was made
    assert not (tmp_path / "ws" / "state" / "matrix.lock").exists()


def test_the_secrets_a_record_names_are_read_once_per_load_or_reload(tmp_path: Path, monkeypatch) -> None:
    """The app secret checks every webhook POST: read from its variable at the load and again at a ``/reload``
    (the record is new then), not at every request."""
    from messaging_llm_bot.channels.whatsapp.service import WhatsAppService

    monkeypatch.setenv("TEST_WA_TOKEN", "token-1")
    monkeypatch.setenv("TEST_WA_SECRET", "secret-1")
    whatsapp = {
        "enabled": True,
        "phone_number_id": "106540352242922",
        "access_token_env": "TEST_WA_TOKEN",
        "app_secret_env": "TEST_WA_SECRET",
        "verify_token": "verify-me-please",
        "allowed": ["+491701234567"],
    }
    runtime = _runtime(tmp_path, whatsapp=whatsapp)
    service = WhatsAppService(runtime, manage_runtime=False)
    assert service.secrets.app_secret == "secret-1" and service.problem() is None
    monkeypatch.setenv("TEST_WA_SECRET", "secret-2")
    assert service.secrets.app_secret == "secret-1"  # the same load: read once
    runtime.reload()
    assert service.secrets.app_secret == "secret-2"  # a /reload reads it again
    monkeypatch.delenv("TEST_WA_TOKEN")
    runtime.reload()
    assert (
        service.problem() == "whatsapp: cannot start: whatsapp.access_token_env names TEST_WA_TOKEN, which is not set"
    )


def test_a_stop_while_the_channel_reads_after_a_pause_ends_its_reading(tmp_path: Path) -> None:
    """A reading task that paused (``sleep``: the inbox could not store, a server was down) and then reads on is
    cancelled by the stop, also when the stop's wake-up and its cancel reach the pause together (asyncio's
    ``wait_for`` returned then, the cancel lost, and the task read on: the stop waited for it for ever)."""
    import asyncio
    import threading

    from messaging_llm_bot.conversation.service import ChannelService

    class Pausing(ChannelService):
        NAME, TITLE = "pausing", "the pausing channel"
        paused = threading.Event()

        async def serve(self) -> None:
            self.reading(self._read())

        async def _read(self) -> None:
            self.paused.set()
            await self.sleep(60)  # the pause before storing again
            await asyncio.Event().wait()  # the next event of a stream that sends none

    service = Pausing(_runtime(tmp_path), manage_runtime=False)
    codes: list[int] = []
    thread = threading.Thread(target=lambda: codes.append(service.run()), name="pausing-under-test", daemon=True)
    thread.start()
    assert service.paused.wait(10)
    service.stop(10)
    thread.join(10)
    assert not thread.is_alive() and codes == [0]
