"""Slack's part of ``assistant setup`` (``--slack-owner USER_ID``, docs/slack.md; channels/setup.py): the
environment variables holding the bot token and the signing secret, or with ``--slack-app-token-env`` the
app-level token of Socket Mode (never written), and the owner's member id. Each token is tried when its
variable is set (channels/slack/probe.py); the settings are written with ``slack.enabled`` last, and what to set
in the app (the request URL, or Socket Mode) is said."""

from __future__ import annotations

import importlib.util
import os
import re
from typing import Any

from assistant_framework.json_types import JsonObject
from messaging_llm_bot.channels.setup import ChannelSetup, Flags, SetupError, Steps
from messaging_llm_bot.channels.slack.probe import probe_app_token, probe_token

TOKEN_ENV = "SLACK_BOT_TOKEN"
SECRET_ENV = "SLACK_SIGNING_SECRET"
APP_TOKEN_ENV = "SLACK_APP_TOKEN"
USER_ID = re.compile(r"[UW][A-Z0-9]{2,20}")
DEFAULT_BASE_URL = "https://slack.com/api/"


def add_arguments(parser: Flags) -> None:
    parser.add_argument(
        "--slack-owner",
        dest="slack_owner",
        metavar="USER_ID",
        help="your Slack member id, U024BE7LH: the Slack channel answers it (docs/slack.md)",
    )
    parser.add_argument("--slack-token-env", metavar="NAME", help=f"the variable holding the bot token ({TOKEN_ENV})")
    parser.add_argument(
        "--slack-secret-env", metavar="NAME", help=f"the variable holding the signing secret ({SECRET_ENV})"
    )
    parser.add_argument(
        "--slack-app-token-env",
        metavar="NAME",
        help=f"Socket Mode (no request URL): the variable holding the app-level token, xapp- ({APP_TOKEN_ENV})",
    )
    parser.add_argument("--slack-base-url", metavar="URL", help=f"the Web API (default {DEFAULT_BASE_URL})")


def steps(setup: ChannelSetup) -> None:
    if SlackSteps(setup).slack(setup.configured.get("slack") or {}):
        setup.reached.append("Slack")


class SlackSteps(Steps):
    def slack(self, configured: JsonObject) -> bool:
        """Set up Slack when ``--slack-owner USER_ID`` is given (the rest is asked, or taken from the flags);
        True when it was set up. Without the flag nothing is asked about Slack."""
        a = self.a
        owner = a.slack_owner
        if not owner:
            return False
        if not USER_ID.fullmatch(owner):
            raise SetupError(f"{owner!r} is not a Slack member id (U024BE7LH: your profile, Copy member ID)")
        base_url = a.slack_base_url or configured.get("base_url") or DEFAULT_BASE_URL
        token_env = a.slack_token_env or self._ask("The variable holding the bot token (xoxb-)", TOKEN_ENV)
        events = self._socket_mode(base_url) if a.slack_app_token_env else self._events_api(configured)
        self._try_token(base_url, token_env)
        self.settings += [
            ("slack.bot_token_env", token_env),
            *events,
            ("slack.allowed", [owner]),
            *([("slack.base_url", base_url)] if base_url != DEFAULT_BASE_URL else []),
            ("slack.enabled", True),
        ]
        return True

    def _events_api(self, configured: JsonObject) -> list[tuple[str, Any]]:
        secret_env = self.a.slack_secret_env or self._ask("The variable holding the signing secret", SECRET_ENV)
        hook = configured.get("webhook") or {}  # where the bot listens (the defaults unless configured)
        where = f"{hook.get('listen', '127.0.0.1')}:{hook.get('port', 8091)}"
        self.io.say(
            "Slack: in your app's Event Subscriptions set the request URL to your https address with the path "
            f"{hook.get('path', '/slack/events')} (forwarded to {where}) once the bot runs, and subscribe to the "
            "bot events message.im and app_mention; set the same URL under Interactivity (docs/slack.md)."
        )
        return [("slack.signing_secret_env", secret_env), ("slack.socket_mode", False)]

    def _socket_mode(self, base_url: str) -> list[tuple[str, Any]]:
        env = self.a.slack_app_token_env
        token = os.environ.get(env, "")
        if not token:
            self.io.say(f"Slack: set {env} to the app-level token (xapp-) before `make run`; `make doctor` tries it.")
        else:
            _needs_sdk()
            problem = probe_app_token(base_url, token)
            if problem:
                raise SetupError(f"{problem}; check the app-level token (xapp-, connections:write) in {env}")
            self.io.say(f"Slack: the app-level token in {env} opens a Socket Mode connection.")
        self.io.say(
            "Slack: turn on Socket Mode in your app (no request URL needed) and subscribe to the bot events "
            "message.im and app_mention (docs/slack.md)."
        )
        return [("slack.socket_mode", True), ("slack.app_token_env", env)]

    def _try_token(self, base_url: str, env: str) -> None:
        token = os.environ.get(env, "")
        if not token:
            self.io.say(f"Slack: set {env} to the bot token before `make run`; `make doctor` then tries it.")
            return
        _needs_sdk()
        reached = probe_token(base_url, token)
        if reached.problem:
            raise SetupError(f"{reached.problem}; check the bot token in {env}")
        self.io.say(f"Slack: the token in {env} is the bot {reached.bot} in {reached.team}.")


def _needs_sdk() -> None:
    if importlib.util.find_spec("slack_sdk") is None:
        raise SetupError("the Slack channel needs slack-sdk: pip install -e '.[slack]'")
