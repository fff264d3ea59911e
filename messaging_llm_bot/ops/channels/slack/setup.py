"""Slack's part of ``assistant setup`` (``--slack-owner USER_ID``, docs/slack.md; ops/channels/setup.py): the
environment variables holding the bot token and the signing secret, or with ``--slack-app-token-env`` the
app-level token of Socket Mode (never written), and the owner's member id (``--slack-owner find``: read from
their first DM to the bot). Each token is tried when its variable is set (ops/channels/slack/probe.py); the settings
are written with ``slack.enabled`` last, and what to set in the app (the request URL, or Socket Mode, and the slash
commands to register, slash.py) is said."""

from __future__ import annotations

import importlib.util
import re
import time

from messaging_llm_bot.channels.slack.slash import manifest_text
from messaging_llm_bot.ops.channels.setup import FirstSender, Flags, Form, OptInSteps, SetupError, Tried
from messaging_llm_bot.ops.channels.slack.probe import dm_senders, probe_app_token, probe_token

TOKEN_ENV = "SLACK_BOT_TOKEN"
SECRET_ENV = "SLACK_SIGNING_SECRET"
APP_TOKEN_ENV = "SLACK_APP_TOKEN"
DEFAULT_BASE_URL = "https://slack.com/api/"


class SlackSteps(OptInSteps):
    label, section, account = "Slack", "slack", "slack_owner"
    form = Form(re.compile(r"[UW][A-Z0-9]{2,20}"), "is not a Slack member id (U024BE7LH: your profile, Copy member ID)")
    finds_owner = True

    def set_up(self, account: str) -> None:
        a = self.a
        base_url = a.slack_base_url or self.configured.get("base_url") or DEFAULT_BASE_URL
        token_env = a.slack_token_env or self._ask("The variable holding the bot token (xoxb-)", TOKEN_ENV)
        events = self._socket_mode(base_url) if a.slack_app_token_env else self._events_api()

        def tried(token: str) -> Tried:
            _needs_sdk()
            reached = probe_token(base_url, token)
            return Tried((f"the token in {token_env} is the bot {reached.bot} in {reached.team}.",), reached.problem)

        self.try_secret(token_env, "the bot token", tried, "the bot token")
        since = time.time() - a.wait  # a DM sent within the wait before setup reached this step counts too

        def read(token: str, seconds: float) -> list[FirstSender]:
            return _read_dms(base_url, token, since, seconds)

        owner = self.owner(account, token_env, read, "--slack-owner")
        self.enable(
            {
                "bot_token_env": token_env,
                **events,
                "allowed": [owner],
                "base_url": base_url if base_url != DEFAULT_BASE_URL else None,
            }
        )

    def _events_api(self) -> dict[str, object]:
        secret_env = self.a.slack_secret_env or self._ask("The variable holding the signing secret", SECRET_ENV)
        path, where = self.listens(8091, "/slack/events")
        self.io.say(
            "Slack: in your app's Event Subscriptions set the request URL to your https address with the path "
            f"{path} (forwarded to {where}) once the bot runs, and subscribe to the "
            "bot events message.im and app_mention; set the same URL under Interactivity (docs/slack.md)."
        )
        self._commands(f"https://YOUR-HOST{path}")
        return {"signing_secret_env": secret_env, "socket_mode": False}

    def _commands(self, request_url: str | None) -> None:
        """What to register for the bot's commands (slash.py): the manifest's part, made from the command list."""
        where = ", each with that request URL" if request_url else ""
        self.io.say(
            f"Slack: register the bot's commands under Slash Commands{where} (or as features.slash_commands in the "
            f"app's manifest):\n{manifest_text(request_url)}"
        )

    def _socket_mode(self, base_url: str) -> dict[str, object]:
        env = self.a.slack_app_token_env

        def tried(token: str) -> Tried:
            _needs_sdk()
            problem = probe_app_token(base_url, token)
            return Tried((f"the app-level token in {env} opens a Socket Mode connection.",), problem)

        hint = "the app-level token (xapp-, connections:write)"
        self.try_secret(env, "the app-level token (xapp-)", tried, hint, later="tries it")
        self.io.say(
            "Slack: turn on Socket Mode in your app (no request URL needed) and subscribe to the bot events "
            "message.im and app_mention (docs/slack.md)."
        )
        self._commands(None)
        return {"socket_mode": True, "app_token_env": env}


def _read_dms(base_url: str, token: str, since: float, seconds: float) -> list[FirstSender]:
    """Who wrote to the bot in a DM after ``since``; nobody yet: after a pause of at most 2 s (of ``seconds``)."""
    _needs_sdk()
    found = dm_senders(base_url, token, since)
    if not found:
        time.sleep(min(2.0, seconds))
    return found


def _needs_sdk() -> None:
    if importlib.util.find_spec("slack_sdk") is None:
        raise SetupError("the Slack channel needs slack-sdk: pip install -e '.[slack]'")


def add_arguments(parser: Flags) -> None:
    SlackSteps.add_account(
        parser,
        "--slack-owner",
        "USER_ID",
        "your Slack member id, U024BE7LH, or find: read from your first DM to the bot; the Slack channel answers "
        "it (docs/slack.md)",
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


steps = SlackSteps.steps
