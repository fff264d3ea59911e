"""/model from the chat (issue 45): the switch applies to the very next model request and after a restart
(hermes#37621: "switch confirmed but not applied"); an unknown name or a runner at its cap is refused with
the list; the configured order still follows the chosen runner; owner only."""

from __future__ import annotations

import json

import pytest

from tests.crash_bot import BotProcess, echo_reply, sent_texts, write_bot_config
from tests.fakes.bot_api import FakeBotAPI
from tests.fakes.chat_server import FakeChatServer
from tests.telegram_harness import OWNER, STRANGER, texts


def two_runners(config: dict, default: FakeChatServer, small: FakeChatServer, **small_extra: object) -> None:
    """``config``'s llm section with two runners: ``fake`` (the default, first) and ``small``."""
    config["llm"]["runners"] = [
        {"name": "fake", "base_url": default.base_url, "model": "fake-model", "timeout_seconds": 10},
        {"name": "small", "base_url": small.base_url, "model": "small-model", "timeout_seconds": 10, **small_extra},
    ]


@pytest.mark.timeout(90)
def test_model_switch_applies_to_the_next_request_and_after_a_restart(tmp_path, bot_config):
    with FakeBotAPI() as fake, FakeChatServer() as default, FakeChatServer() as small:
        default.set_handler(echo_reply)
        small.set_handler(echo_reply)
        base = json.loads(json.dumps(bot_config))
        two_runners(base, default, small)
        config = write_bot_config(tmp_path / "config.json", base, fake)
        workspace = tmp_path / "workspace"
        with BotProcess(config, workspace, tmp_path / "bot.log") as bot:
            bot.start().wait_ready()
            fake.send_message("/model nosuch")
            fake.wait_for(lambda: any("no model named nosuch" in t for t in sent_texts(fake, OWNER)), timeout=20)
            refusal = next(t for t in sent_texts(fake, OWNER) if "no model named" in t)
            assert "fake" in refusal and "small" in refusal
            fake.send_message("/model small")
            fake.wait_for(lambda: any("now uses small" in t for t in sent_texts(fake, OWNER)), timeout=20)
            fake.send_message("first after the switch")
            fake.wait_for(lambda: "re: first after the switch" in sent_texts(fake, OWNER), timeout=20)
            assert [r["model"] for r in small.chat_requests] == ["small-model"]
            assert default.chat_requests == []
            assert bot.terminate() == 0

            bot.start().wait_ready()
            fake.send_message("after the restart")
            fake.wait_for(lambda: "re: after the restart" in sent_texts(fake, OWNER), timeout=20)
            assert len(small.chat_requests) == 2 and default.chat_requests == []
            fake.send_message("/model default")
            fake.wait_for(lambda: any("default again" in t for t in sent_texts(fake, OWNER)), timeout=20)
            fake.send_message("back to the default")
            fake.wait_for(lambda: "re: back to the default" in sent_texts(fake, OWNER), timeout=20)
            assert len(default.chat_requests) == 1 and len(small.chat_requests) == 2
            assert bot.terminate() == 0
        assert "Traceback" not in bot.log_text()


def test_model_lists_runners_and_the_chats_choice_and_the_fallback_follows(fake, start_bot, bot_config, chat_server):
    with FakeChatServer() as small:
        small.enqueue({"status": 500})  # the chosen runner fails: the configured order answers
        start_bot(config_patch=lambda c: two_runners(c, chat_server, small, vision=True))
        fake.send_message("/model")
        fake.wait_for(lambda: any("This chat uses fake (the default)" in t for t in texts(fake)), timeout=10)
        listing = next(t for t in texts(fake) if "Models:" in t)
        assert "small — small-model (vision)" in listing
        fake.send_message("/model small")
        fake.wait_for(lambda: any("now uses small" in t for t in texts(fake)), timeout=10)
        chat_server.enqueue('{"reply": "the default answered"}')
        fake.send_message("hello")
        fake.wait_for(lambda: "the default answered" in texts(fake), timeout=10)
        assert len(small.chat_requests) == 1 and len(chat_server.chat_requests) == 1
        fake.send_message("/stats")
        fake.wait_for(lambda: any("This chat's model: small (chosen with /model)" in t for t in texts(fake)), 10)


def test_model_refuses_a_runner_at_its_cap_and_a_guest(fake, start_bot, bot_config, chat_server):
    with FakeChatServer() as small:

        def patch(config: dict) -> None:
            two_runners(config, chat_server, small, limits={"daily_tokens": 0})
            config["telegram"]["allowed_user_ids"] = [OWNER, STRANGER]

        start_bot(config_patch=patch)
        fake.send_message("/model small")
        fake.wait_for(lambda: any("daily tokens cap until" in t for t in texts(fake)), timeout=10)
        assert "Choose one of: fake." in next(t for t in texts(fake) if "cap until" in t)
        fake.send_message("/model small", user_id=STRANGER)
        fake.wait_for(lambda: any("only for the owner" in t for t in texts(fake, STRANGER)), timeout=10)
        fake.send_message("hello")
        fake.wait_for(lambda: "ok" in texts(fake), timeout=10)
        assert small.chat_requests == [] and len(chat_server.chat_requests) == 1
