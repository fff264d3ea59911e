"""``assistant setup`` never breaks a working config (issue 33.2-33.4, 33.8): nothing is written until the
test turn passed, a re-run keeps every value it does not ask about and offers the current ones, a
wrong answer at a terminal is asked again, and a self-hosted Bot API address is taken as users write it."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from messaging_llm_bot.cli.main import main
from tests.console_harness import Terminal
from tests.fakes.bot_api import FakeBotAPI
from tests.fakes.chat_server import FakeChatServer
from tests.setup_runs import setup_by_flags, telegram_flags

REPO = Path(__file__).resolve().parents[1]
OWNER = 4242


@pytest.fixture
def fresh(tmp_path: Path, monkeypatch) -> Path:
    """The example config as a fresh clone has it (tracked files only)."""
    monkeypatch.delenv("TELEGRAM_BOT_TOKEN", raising=False)
    target = tmp_path / "config"
    shutil.copytree(REPO / "config", target, ignore=shutil.ignore_patterns("local"))
    return target


def _local(config: Path) -> dict:
    return {p.name: json.loads(p.read_text()) for p in (config / "local").glob("*.json")}


def _first_run(config: Path, tmp_path: Path, tg: FakeBotAPI, chat: FakeChatServer, *extra: str) -> None:
    """A working setup by flags: token, owner, the fake model server, Europe/Berlin."""
    code = setup_by_flags(
        config,
        tmp_path / "ws",
        *("--token", tg.token, "--telegram-base-url", tg.base_url),
        *("--owner-id", str(OWNER), "--base-url", chat.base_url, "--model", "small:1b"),
        *("--timezone", "Europe/Berlin", *extra),
    )
    assert code == 0


def test_a_failed_test_turn_writes_nothing_and_keeps_the_working_config(fresh: Path, tmp_path: Path, capsys) -> None:
    with FakeBotAPI() as tg, FakeChatServer(models=("small:1b", "fake-model")) as chat:
        _first_run(fresh, tmp_path, tg, chat)
        before = {p: p.read_bytes() for p in (fresh / "local").rglob("*") if p.is_file()}
        capsys.readouterr()
        chat.set_handler(lambda request: {"status": 500})  # the model server breaks at the test turn
        code = setup_by_flags(
            fresh,
            tmp_path / "ws2",
            *("--no-telegram", "--base-url", chat.base_url, "--model", "fake-model"),
            *("--timezone", "Asia/Tokyo"),
        )
    out = capsys.readouterr().out
    assert code == 1, out
    assert "Test turn: FAILED" in out and "Nothing was written" in out and "--no-test" in out
    assert {p: p.read_bytes() for p in (fresh / "local").rglob("*") if p.is_file()} == before
    assert not (tmp_path / "ws2").exists()


def test_a_fresh_setup_whose_test_turn_fails_leaves_no_local_layer(fresh: Path, tmp_path: Path, capsys) -> None:
    with FakeChatServer() as chat:
        chat.set_handler(lambda request: {"status": 500})
        code = setup_by_flags(
            fresh, tmp_path / "ws", *("--no-telegram", "--base-url", chat.base_url, "--timezone", "UTC")
        )
        assert code == 1 and not (fresh / "local").exists()
        # --no-test saves the same answers without the test turn.
        code = setup_by_flags(
            fresh, tmp_path / "ws", *("--no-telegram", "--no-test", "--base-url", chat.base_url, "--timezone", "UTC")
        )
        url = chat.base_url
    assert code == 0, capsys.readouterr()
    assert _local(fresh)["llm.json"]["runners"][0]["base_url"] == url


def test_a_rerun_by_flags_that_changes_only_the_model_keeps_everything_else(
    fresh: Path, tmp_path: Path, capsys
) -> None:
    with FakeBotAPI() as tg, FakeChatServer(models=("small:1b", "fake-model")) as chat:
        _first_run(fresh, tmp_path, tg, chat)
        assert main(["config", "set", "--config", str(fresh), "llm.runners[0].timeout_seconds", "300"]) == 0
        code = setup_by_flags(fresh, tmp_path / "ws", *("--model", "fake-model"))
        out = capsys.readouterr().out
        assert code == 0, out
        local = _local(fresh)
        assert local["telegram.json"]["token"] == tg.token and local["telegram.json"]["allowed_user_ids"] == [OWNER]
        assert local["telegram.json"]["base_url"] == tg.base_url
        assert local["runtime.json"]["timezone"] == "Europe/Berlin"
        assert local["llm.json"]["runners"] == [
            {"name": "local", "base_url": chat.base_url, "model": "fake-model", "timeout_seconds": 300}
        ]


def test_a_rerun_keeps_the_api_key_for_its_server_and_never_sends_it_to_another(
    fresh: Path, tmp_path: Path, capsys
) -> None:
    base = ["setup", "--yes", "--no-telegram", "--config", str(fresh), "--workspace", str(tmp_path / "ws")]
    with FakeChatServer(api_key="sk-right") as hosted, FakeChatServer() as local:
        assert main([*base, "--base-url", hosted.base_url, "--api-key", "sk-right", "--timezone", "UTC"]) == 0
        # The same server again without --api-key: the configured key is used and kept.
        assert main([*base, "--base-url", hosted.base_url]) == 0, capsys.readouterr()
        assert _local(fresh)["llm.json"]["runners"][0]["api_key"] == "sk-right"
        # Another server: the key is not written for it, and not sent to it.
        assert main([*base, "--base-url", local.base_url]) == 0, capsys.readouterr()
        sent = [r.headers.get("Authorization") for r in local.requests]
        url = local.base_url
    runner = _local(fresh)["llm.json"]["runners"][0]
    assert runner["base_url"] == url and "api_key" not in runner
    assert sent and all(header is None for header in sent)


def _setup_on_a_terminal(config: Path, workspace: Path, **env: str) -> Terminal:
    return Terminal(
        [
            sys.executable,
            "-m",
            "messaging_llm_bot.cli",
            "setup",
            "--config",
            str(config),
            "--workspace",
            str(workspace),
        ],
        env=env,
    )


def _answer_server(term: Terminal, url: str) -> None:
    """Answer the model server question, whether a local server answered on this machine or none did."""
    term.wait_for("base URL")
    mark = len(term.output)
    term.type(url + "\r")
    term.wait_for_any(("API key (empty: none): ", "Use which model"), start=mark)
    if "API key (empty: none): " in term.output[mark:] and url:
        term.type("\r")


def test_make_setup_again_changing_only_the_model_offers_and_keeps_the_current_values(
    fresh: Path, tmp_path: Path
) -> None:
    """The issue's case on a real terminal: Enter at every question but the model's."""
    with FakeBotAPI() as tg, FakeChatServer(models=("small:1b", "fake-model")) as chat:
        _first_run(fresh, tmp_path, tg, chat)
        term = _setup_on_a_terminal(fresh, tmp_path / "ws", TZ="America/New_York")
        try:
            term.wait_for("Change which (the rest stays as it is) [1]: ")
            term.type("4\r")  # everything, each answer offered as it is
            term.wait_for("Bot token (empty: keep the current one): ")
            term.type("\r")
            term.wait_for("your bot is @testbot")
            term.wait_for(f"[{OWNER}]: ")
            term.type("\r")
            term.wait_for("base URL")
            mark = len(term.output)
            term.type("\r")  # the default: the configured server
            term.wait_for("2. fake-model", start=mark)
            term.wait_for("Use which model (number or name) [1]: ", start=mark)  # small:1b, the current one
            term.type("2\r")
            term.wait_for("Your time zone (IANA name) [Europe/Berlin]: ")  # the configured zone, not the system's
            term.type("\r")
            term.wait_for("Written")
            assert term.proc.wait(30) == 0, term.output
        finally:
            term.close()
        token = tg.token
    local = _local(fresh)
    assert local["telegram.json"]["token"] == token and local["telegram.json"]["allowed_user_ids"] == [OWNER]
    assert local["runtime.json"]["timezone"] == "Europe/Berlin"
    assert local["llm.json"]["runners"][0]["model"] == "fake-model"


def test_a_wrong_answer_at_a_terminal_is_asked_again_and_nothing_is_thrown_away(fresh: Path, tmp_path: Path) -> None:
    with FakeBotAPI() as tg, FakeChatServer() as chat:
        # A fresh config pointed at the fake Bot API (as a self-hosted one would be, without /bot).
        assert (
            main(["config", "set", "--config", str(fresh), "telegram.base_url", tg.base_url.removesuffix("/bot")]) == 0
        )
        term = _setup_on_a_terminal(fresh, tmp_path / "ws", TZ="UTC")
        try:
            term.wait_for("Bot token: ")
            term.type("not a token\r")
            term.wait_for("does not look like a bot token")
            term.wait_for("Bot token: ", start=term.output.index("does not look"))
            term.type(tg.token + "\r")
            term.wait_for("your bot is @testbot")
            term.wait_for("(empty: find it by writing to the bot): ")
            term.type("me\r")
            term.wait_for("'me' is not a number")
            mark = len(term.output)
            term.type(f"{OWNER}\r")
            term.wait_for("base URL", start=mark)
            mark = len(term.output)
            term.type("127.0.0.1:11434\r")  # no scheme
            term.wait_for_any(("API key (empty: none): ", "is not an http(s) URL"), start=mark)
            if "API key" in term.output[mark:]:
                term.type("\r")
            term.wait_for("is not an http(s) URL", start=mark)
            _answer_server(term, chat.base_url)
            term.wait_for("Use which model")
            term.type("\r")
            term.wait_for("Your time zone (IANA name) [UTC]: ")
            term.type("Mars/Olympus\r")
            term.wait_for("unknown IANA time zone 'Mars/Olympus'")
            mark = len(term.output)
            term.type("Europe/Berlin\r")
            term.wait_for("Written", start=mark)
            assert term.proc.wait(30) == 0, term.output
        finally:
            term.close()
        token, url = tg.token, chat.base_url
    local = _local(fresh)
    assert local["telegram.json"]["token"] == token and local["telegram.json"]["allowed_user_ids"] == [OWNER]
    assert local["runtime.json"]["timezone"] == "Europe/Berlin"
    assert local["llm.json"]["runners"][0]["base_url"] == url


def test_setup_shows_the_model_list_even_when_the_server_has_one_model(fresh: Path, tmp_path: Path) -> None:
    with FakeChatServer(models=("only-model:7b",)) as chat:
        term = _setup_on_a_terminal(fresh, tmp_path / "ws", TZ="UTC")
        try:
            term.wait_for("Bot token: ")
            term.type("\r")  # no Telegram
            _answer_server(term, chat.base_url)
            term.wait_for("Use which model (number or name) [1]: ")
            listed = term.output[: term.output.rindex("Use which model")]
            assert "1. only-model:7b" in listed
            term.type("\r")
            term.wait_for("Your time zone")
            term.type("\r")
            assert term.proc.wait(30) == 0, term.output
        finally:
            term.close()
    assert _local(fresh)["llm.json"]["runners"][0]["model"] == "only-model:7b"


@pytest.mark.parametrize("written", ["{base}", "{base}/", "{base}/bot", "{base}/bot/"])
def test_a_self_hosted_bot_api_address_is_taken_as_users_write_it(
    fresh: Path, tmp_path: Path, capsys, written: str
) -> None:
    with FakeBotAPI() as tg, FakeChatServer() as chat:
        address = written.format(base=f"http://127.0.0.1:{tg.port}")
        tg.send_message("hi", user_id=OWNER, username="owner")
        code = setup_by_flags(fresh, tmp_path / "ws", *telegram_flags(tg.token, address, chat))
        out = capsys.readouterr()
        assert code == 0, out
        telegram = _local(fresh)["telegram.json"]
        assert telegram["base_url"] == tg.base_url and telegram["base_file_url"] == tg.base_file_url
        assert telegram["allowed_user_ids"] == [OWNER]


@pytest.mark.parametrize("address", ["127.0.0.1:8081", "http//127.0.0.1:8081", "http://", "ftp://host/bot"])
def test_a_bad_bot_api_address_gets_a_message_about_the_address(
    fresh: Path, tmp_path: Path, capsys, address: str
) -> None:
    code = setup_by_flags(
        fresh,
        tmp_path / "ws",
        *("--no-test", "--token", "123456:TEST-token", "--telegram-base-url", address),
        *("--owner-id", "1", "--base-url", "http://127.0.0.1:9/v1", "--model", "m"),
    )
    err = capsys.readouterr().err
    assert code == 2
    assert "is not a Bot API server address (write it as http://HOST:PORT" in err and "InvalidURL" not in err
    assert not (fresh / "local").exists()


def test_setup_again_to_change_only_the_time_zone_asks_nothing_else(fresh: Path, tmp_path: Path) -> None:
    """Day two: the first setup skipped Telegram; `make setup` again for the time zone asked for the bot token
    first, then walked through the model server and model, and ended in a test turn against the model."""
    with FakeChatServer(models=("small:1b",)) as chat:
        code = setup_by_flags(
            fresh, tmp_path / "ws", *("--no-telegram", "--base-url", chat.base_url, "--timezone", "Europe/Berlin")
        )
        assert code == 0
        llm = (fresh / "local" / "llm.json").read_bytes()
        asked = len(chat.requests)
        term = _setup_on_a_terminal(fresh, tmp_path / "ws", TZ="UTC")
        try:
            term.wait_for("the model small:1b at " + chat.base_url + ", the time zone Europe/Berlin.")
            term.wait_for("Change which (the rest stays as it is) [1]: ")
            term.type("2\r")
            term.wait_for("Your time zone (IANA name) [Europe/Berlin]: ")
            term.type("Asia/Tokyo\r")
            term.wait_for("Written")
            assert term.proc.wait(30) == 0, term.output
        finally:
            term.close()
        assert len(chat.requests) == asked  # no probe, no test turn: the model was not asked about
    assert "Bot token" not in term.output and "Use which" not in term.output and "Test turn" not in term.output
    assert _local(fresh)["runtime.json"]["timezone"] == "Asia/Tokyo"
    assert (fresh / "local" / "llm.json").read_bytes() == llm


def test_setup_again_to_change_only_the_model_keeps_telegram_unasked(fresh: Path, tmp_path: Path) -> None:
    """With Telegram set up, changing the model no longer asks to keep the token and the owner's id first."""
    with FakeBotAPI() as tg, FakeChatServer(models=("small:1b", "fake-model")) as chat:
        _first_run(fresh, tmp_path, tg, chat)
        telegram = (fresh / "local" / "telegram.json").read_bytes()
        calls = len(tg.calls())
        term = _setup_on_a_terminal(fresh, tmp_path / "ws", TZ="UTC")
        try:
            term.wait_for("Change which (the rest stays as it is) [1]: ")
            term.type("\r")  # 1: the model
            term.wait_for("base URL")
            mark = len(term.output)
            term.type("\r")
            term.wait_for("Use which model (number or name) [1]: ", start=mark)
            term.type("2\r")
            term.wait_for("Written")
            assert term.proc.wait(30) == 0, term.output
        finally:
            term.close()
        assert len(tg.calls()) == calls  # Telegram was not called: the token is not checked again
    assert "Bot token" not in term.output and "Telegram user id" not in term.output and "time zone (" not in term.output
    assert "Test turn: " in term.output
    local = _local(fresh)
    assert local["llm.json"]["runners"][0]["model"] == "fake-model"
    assert local["runtime.json"]["timezone"] == "Europe/Berlin"
    assert (fresh / "local" / "telegram.json").read_bytes() == telegram
