"""Slack in this process for the channel contract kit: the channel's service in a thread, its request URL on a
free loopback port, the fake Slack Web API (tests/fakes/slack_api.py) answering its calls and posting Slack's
signed events to it. The real bot process: tests/test_slack_bot.py."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.fakes.slack_api import FakeSlackAPI
from tests.running_channel import RunningChannel, starting

OWNER = "U0OWNER001"
STRANGER = "U0STRANGE1"
SECRET = "kit-signing-secret-0123456789abcdef"


class RunningSlack(RunningChannel):
    """A SlackService running in a thread; ``start`` returns once its request URL listens."""

    def __init__(self, runtime: Any, slack: FakeSlackAPI) -> None:
        from messaging_llm_bot.channels.slack.service import SlackService

        super().__init__(runtime, SlackService(runtime), "Slack")
        self.slack = slack

    def start(self) -> RunningSlack:
        super().start()
        assert self.service.webhook is not None, "it listens"
        self.slack.connect(self.service.webhook.url, SECRET)
        return self


def slack_config(base: dict, slack: FakeSlackAPI, **overrides: Any) -> dict:
    return {
        **base,
        "memory": {"enabled": False},
        "slack": {
            "enabled": True,
            "bot_token": slack.token,
            "signing_secret_env": "SLACK_KIT_SECRET",
            "allowed": [OWNER],
            "webhook": {"port": 0},
            "base_url": slack.base_url,
            **overrides,
        },
    }


def owner_texts(slack: FakeSlackAPI) -> list[str]:
    """The bot's messages in the owner's DM as they show now."""
    return [m["text"] for m in slack.posted(slack.add_user(OWNER))]


def owner_writes(slack: FakeSlackAPI, text: str) -> None:
    assert slack.deliver(slack.dm(OWNER, text)).status_code == 200


@pytest.fixture
def slack_api() -> Iterator[FakeSlackAPI]:
    with FakeSlackAPI() as fake:
        fake.add_user(OWNER)
        yield fake


@pytest.fixture
def start_slack(
    bot_config: dict, workspace: Any, tmp_path: Any, slack_api: FakeSlackAPI, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[..., RunningSlack]]:
    """Factory: ``start_slack(patch=None)`` runs the channel; every one stops after the test."""
    from tests.telegram_harness import make_runtime

    monkeypatch.setenv("SLACK_KIT_SECRET", SECRET)
    yield from starting(
        lambda: slack_config(bot_config, slack_api),
        lambda config: RunningSlack(make_runtime(config, workspace, tmp_path), slack_api).start(),
    )
