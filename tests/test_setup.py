"""``assistant setup`` against the fake Bot API and the scripted model server: from a fresh copy of
the example config to a working bot, with no tracked file changed."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from messaging_llm_bot.cli.main import main
from messaging_llm_bot.ops.channels.setup import default_flags
from messaging_llm_bot.ops.setup.answers import Answers, system_timezone
from messaging_llm_bot.ops.setup.dialog import Dialog
from messaging_llm_bot.ops.setup.wizard import Wizard
from tests.cli_inprocess import run_cli
from tests.crash_bot import BotProcess, echo_reply
from tests.fakes.bot_api import FakeBotAPI
from tests.fakes.chat_server import FakeChatServer
from tests.setup_runs import setup_by_flags, telegram_flags

REPO = Path(__file__).resolve().parents[1]
OWNER = 4242


@pytest.fixture
def fresh(tmp_path: Path) -> Path:
    """The example config as a fresh clone has it (tracked files only)."""
    target = tmp_path / "config"
    shutil.copytree(REPO / "config", target, ignore=shutil.ignore_patterns("local"))
    return target


def _tracked(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and p.relative_to(root).parts[0] != "local"
    }


def test_setup_by_flags_ends_in_a_working_bot_and_changes_no_tracked_file(
    fresh: Path, tmp_path: Path, capsys, monkeypatch
) -> None:
    monkeypatch.delenv("TELEGRAM_BOT_TOKEN", raising=False)
    before = _tracked(fresh)
    with FakeBotAPI() as tg, FakeChatServer() as chat:
        chat.set_handler(echo_reply)
        tg.send_message("hi, it's me", user_id=OWNER, username="owner")  # the owner writes to the bot
        code = setup_by_flags(
            fresh,
            tmp_path / "ws",
            *("--token", tg.token, "--telegram-base-url", tg.base_url, "--wait", "5"),
            *("--base-url", chat.base_url, "--timezone", "Europe/Berlin"),
        )
        out = capsys.readouterr().out
        assert code == 0, out
        assert "your bot is @testbot" in out and f"id {OWNER}" in out and "Test turn:" in out
        assert "Next: `make run CONFIG=" in out
        assert _tracked(fresh) == before
        local = {p.name: json.loads(p.read_text()) for p in (fresh / "local").glob("*.json")}
        assert local["telegram.json"]["token"] == tg.token and local["telegram.json"]["allowed_user_ids"] == [OWNER]
        assert local["llm.json"]["runners"][0] == {"name": "local", "base_url": chat.base_url, "model": "fake-model"}
        assert local["runtime.json"] == {"timezone": "Europe/Berlin"}
        assert tg.token not in "".join(p.read_text() for p in fresh.glob("*.json"))

        assert main(["doctor", "--quick", "--config", str(fresh), "--workspace", str(tmp_path / "ws")]) == 0, (
            capsys.readouterr().out
        )

        with BotProcess(fresh, tmp_path / "ws", tmp_path / "bot.log") as bot:
            bot.start().wait_ready()
            tg.send_message("hello bot", user_id=OWNER, username="owner")
            tg.wait_for(lambda: any(m["text"] == "re: hello bot" for m in tg.messages(OWNER)), timeout=30)
            assert bot.terminate() == 0
        # The bot logs to a rotating file in the workspace too (a service's stderr may go nowhere), token redacted.
        log = (tmp_path / "ws" / "state" / "logs" / "bot.log").read_text()
        assert "Serving @testbot" in log and tg.token not in log
        # The setup message was confirmed: the bot did not answer it.
        assert all("it's me" not in m["text"] for m in tg.messages(OWNER))


def test_git_status_stays_clean_after_setup(tmp_path: Path, capsys) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    clone = tmp_path / "clone"
    shutil.copytree(REPO / "config", clone / "config", ignore=shutil.ignore_patterns("local"))
    shutil.copy(REPO / ".gitignore", clone / ".gitignore")

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
            cwd=clone,
            check=True,
            capture_output=True,
            text=True,
        ).stdout

    git("init", "-q")
    git("add", "-A")
    git("commit", "-qm", "fresh clone")
    with FakeChatServer() as chat:
        assert (
            setup_by_flags(
                clone / "config",
                clone / "workspace",
                *("--no-telegram", "--no-test", "--base-url", chat.base_url, "--timezone", "UTC"),
            )
            == 0
        )
    assert main(["config", "set", "--config", str(clone / "config"), "telegram.token", "123:SECRET"]) == 0
    assert (clone / "config" / "local" / "llm.json").exists()
    assert git("status", "--porcelain") == ""


def test_refused_token_exits_2_and_writes_nothing(fresh: Path, tmp_path: Path, capsys) -> None:
    with FakeBotAPI() as tg, FakeChatServer() as chat:
        code = setup_by_flags(
            fresh,
            tmp_path / "ws",
            *("--token", "1:wrong", "--telegram-base-url", tg.base_url),
            *("--base-url", chat.base_url),
        )
    assert code == 2
    assert "refused the token" in capsys.readouterr().err
    assert not (fresh / "local").exists() and not (tmp_path / "ws").exists()


def test_several_senders_without_a_terminal_ask_for_owner_id(fresh: Path, tmp_path: Path, capsys) -> None:
    with FakeBotAPI() as tg, FakeChatServer() as chat:
        tg.send_message("me", user_id=1, username="a")
        tg.send_message("me too", user_id=2, username="b")
        code = setup_by_flags(
            fresh,
            tmp_path / "ws",
            *("--token", tg.token, "--telegram-base-url", tg.base_url, "--wait", "2"),
            *("--base-url", chat.base_url),
        )
    assert code == 2 and "several people wrote to the bot" in capsys.readouterr().err


def test_the_owner_is_read_from_a_private_message_and_bots_and_groups_are_skipped(
    fresh: Path, tmp_path: Path, capsys
) -> None:
    """Only a person writing to the bot in private can be its owner: another bot's message and a message in a group
    the bot is in are not offered (else, without a terminal, there would be "several people")."""
    with FakeBotAPI() as tg, FakeChatServer() as chat:
        chat_of = {"id": 77, "type": "private", "first_name": "Other"}
        bot = {"id": 77, "is_bot": True, "first_name": "Other", "username": "otherbot"}
        tg.push_update({"message": {"message_id": 1, "date": 1, "chat": chat_of, "from": bot, "text": "beep"}})
        tg.send_message("hello group", user_id=55, chat_id=-100, chat_type="group", username="stranger")
        tg.send_message("it's me", user_id=OWNER, username="owner")
        code = setup_by_flags(fresh, tmp_path / "ws", *telegram_flags(tg.token, tg.base_url, chat))
        out = capsys.readouterr()
        assert code == 0, out
        assert f'got a message from Owner (id {OWNER}): "it\'s me"' in out.out
        confirmed = tg.calls("getUpdates")[-1]["params"]
        assert confirmed["offset"] == 4 and confirmed["timeout"] == 0, confirmed  # all three read, none answered
    assert json.loads((fresh / "local" / "telegram.json").read_text())["allowed_user_ids"] == [OWNER]


def test_of_several_senders_at_a_terminal_the_one_picked_is_the_owner(fresh: Path, tmp_path: Path) -> None:
    said: list[str] = []
    with FakeBotAPI() as tg, FakeChatServer() as chat:
        tg.send_message("me", user_id=1, username="ann")
        tg.send_message("no, me", user_id=OWNER, username="bob")
        flags = default_flags()
        flags.token, flags.telegram_base_url, flags.wait = tg.token, tg.base_url, 5
        answers = Answers(
            config=fresh,
            workspace=tmp_path / "ws",
            base_url=chat.base_url,
            timezone="UTC",
            test_turn=False,
            flags=flags,
        )
        wizard = Wizard(answers, Dialog(say=said.append, ask=lambda q: "2" if "Which one" in q else "", secret=str))
        assert wizard.run() == 0, said
    assert "  1. Ann (id 1): 'me'" in said and f"  2. Bob (id {OWNER}): 'no, me'" in said
    assert json.loads((fresh / "local" / "telegram.json").read_text())["allowed_user_ids"] == [OWNER]


@pytest.mark.parametrize(
    "fault", ["getMe not JSON", "getMe ok false", "getUpdates conflict", "getUpdates trickles", "getUpdates odd"]
)
def test_a_bot_api_that_fails_setup_ends_it_with_one_line(fresh: Path, tmp_path: Path, monkeypatch, fault) -> None:
    """The token's check (getMe) and the owner's message (getUpdates) each end the setup with one line naming the
    server and never the token, within the deadline of the whole exchange; nothing is written."""
    from messaging_llm_bot.ops.channels.telegram import probe

    monkeypatch.setattr(probe, "TIMEOUT_SECONDS", 0.5)
    with FakeBotAPI() as tg, FakeChatServer() as chat:
        base = tg.base_url
        if fault == "getMe not JSON":
            tg.answer_next("getMe", b"<html>Bad Gateway</html>", status=502)
            said = f"Telegram: the Bot API at {base} answered HTTP 502, not JSON"
        elif fault == "getMe ok false":  # a 200 that is not the Bot API's: PTB's KeyError: 'result' before
            tg.answer_next("getMe", b'{"ok": false, "description": "no\\nsuch bot"}', content_type="application/json")
            said = f'Telegram: the Bot API at {base} answered HTTP 200 with "ok": false (no such bot), not a result'
        elif fault == "getUpdates odd":  # updates PTB cannot read (no update_id): its KeyError, and its log
            tg.answer_next(
                "getUpdates",
                b'{"ok": true, "result": [{"update_id": 1, "message": {}}]}',
                content_type="application/json",
            )
            said = (
                f"Telegram: reading messages failed: the Bot API at {base} answered with a result not in the Bot "
                "API's form: is telegram.base_url a Bot API server?"
            )
        elif fault == "getUpdates conflict":
            tg.conflict_on_get_updates(True)
            said = f"Telegram: reading messages failed: the Bot API at {base} answered: Conflict: terminated by other"
        else:
            tg.answer_next("getUpdates", b'{"ok": true, "result": []}', trickle={"every": 0.1, "for": 3})
            said = f"Telegram: reading messages failed: the Bot API at {base} did not answer within 0.5 s (another"
        setup = ("setup", "--yes", "--config", str(fresh), "--workspace", str(tmp_path / "ws"))
        run = run_cli(*setup, *telegram_flags(tg.token, base, chat))
    error, written = run.stderr.splitlines()
    assert run.returncode == 2 and error.startswith(f"error: {said}") and written == "Nothing was written.", run
    assert tg.token not in run.stdout + run.stderr, run
    assert not (fresh / "local").exists()


def test_model_not_offered_and_bad_timezone_exit_2(fresh: Path, tmp_path: Path, capsys) -> None:
    with FakeChatServer() as chat:
        base = [
            "setup",
            "--yes",
            "--no-telegram",
            "--config",
            str(fresh),
            "--workspace",
            str(tmp_path / "ws"),
            "--base-url",
            chat.base_url,
        ]
        assert main([*base, "--model", "qwen3:80b"]) == 2
        assert "does not list the model 'qwen3:80b'" in capsys.readouterr().err
        assert main([*base, "--timezone", "Mars/Olympus"]) == 2
        assert "unknown IANA time zone 'Mars/Olympus'" in capsys.readouterr().err
    assert not (fresh / "local").exists()


def test_interactive_run_finds_the_local_server_and_lists_its_models(fresh: Path, tmp_path: Path) -> None:
    said: list[str] = []
    with FakeChatServer(models=("small:1b", "fake-model")) as chat:
        chat.set_handler(lambda request: "Hello from the fake model")
        no_telegram = default_flags()
        no_telegram.no_telegram = True
        answers = Answers(config=fresh, workspace=tmp_path / "ws", flags=no_telegram, interactive=True)
        wizard = Wizard(answers, Dialog(say=said.append, ask=lambda prompt: next(replies), secret=lambda prompt: ""))
        wizard.candidates = (("Fake server", chat.base_url), ("Nothing here", "http://127.0.0.1:9/v1"))
        replies = iter(["1", "2", ""])  # server 1, model 2, time zone: the default
        assert wizard.run() == 0
        url = chat.base_url
    text = "\n".join(said)
    assert f"1. Fake server at {url}: small:1b, fake-model" in text and "Nothing here" not in text.split("...")[-1]
    runner = json.loads((fresh / "local" / "llm.json").read_text())["runners"][0]
    assert runner["model"] == "fake-model"
    assert json.loads((fresh / "local" / "runtime.json").read_text())["timezone"] == system_timezone()
    assert "'Hello from the fake model'" in text


def test_a_broken_config_stops_setup_before_any_question_or_call(fresh: Path, tmp_path: Path, capsys) -> None:
    (fresh / "local").mkdir()
    (fresh / "local" / "llm.json").write_text('{"max_tokens": 5')
    with FakeBotAPI() as tg, FakeChatServer() as chat:
        tg.send_message("hi", user_id=OWNER, username="me")
        code = setup_by_flags(
            fresh,
            tmp_path / "ws",
            *("--token", tg.token, "--telegram-base-url", tg.base_url, "--wait", "2"),
            *("--base-url", chat.base_url),
        )
        calls = [c["method"] for c in tg.calls()]
    assert code == 2
    err = capsys.readouterr().err
    assert "local/llm.json: line 1 column 17: invalid JSON" in err and "fix it first" in err
    assert calls == []  # the owner's message was not read (and so not used up) for a run that cannot be saved
    assert (fresh / "local" / "llm.json").read_text() == '{"max_tokens": 5'
    assert not (tmp_path / "ws").exists()


def test_a_refused_api_key_says_which_flag_gives_it(fresh: Path, tmp_path: Path, capsys) -> None:
    with FakeChatServer(api_key="sk-right") as chat:
        code = setup_by_flags(
            fresh, tmp_path / "ws", *("--no-telegram", "--base-url", chat.base_url, "--api-key", "sk-wrong")
        )
    assert code == 2
    assert "refused the API key (HTTP 401); give the right one with --api-key" in capsys.readouterr().err
    assert not (fresh / "local").exists()


def test_a_base_url_without_v1_is_completed_when_the_server_answers_there(fresh: Path, tmp_path: Path, capsys) -> None:
    with FakeChatServer() as chat:
        base = chat.base_url.removesuffix("/v1")
        code = setup_by_flags(fresh, tmp_path / "ws", *("--no-telegram", "--base-url", base, "--timezone", "UTC"))
    out = capsys.readouterr().out
    assert code == 0, out
    assert f"using {base}/v1" in out and "FAILED" not in out
    assert json.loads((fresh / "local" / "llm.json").read_text())["runners"][0]["base_url"] == f"{base}/v1"
