"""WhatsApp's part of ``assistant setup`` (``--whatsapp PHONE_NUMBER_ID``, docs/whatsapp.md; channels/setup.py):
the number's id, the environment variables holding the access token and the app secret (never written), the
owner's number, a template for messages outside the 24-hour window, and a verify token made for the webhook's
handshake. The token is tried when its variable is set (channels/whatsapp/probe.py); the settings are written
with ``whatsapp.enabled`` last, and what to enter in Meta's webhook setup is said."""

from __future__ import annotations

import os
import re
import secrets

from assistant_framework.json_types import JsonObject
from messaging_llm_bot.channels.setup import ChannelSetup, Flags, SetupError, Steps

TOKEN_ENV = "WHATSAPP_TOKEN"
SECRET_ENV = "WHATSAPP_APP_SECRET"
E164 = re.compile(r"\+[1-9][0-9]{6,14}")
DEFAULT_BASE_URL = "https://graph.facebook.com/v21.0"


def add_arguments(parser: Flags) -> None:
    parser.add_argument(
        "--whatsapp",
        dest="whatsapp_phone_number_id",
        metavar="PHONE_NUMBER_ID",
        help="the business number's id from WhatsApp Manager (the WhatsApp channel; docs/whatsapp.md)",
    )
    parser.add_argument("--whatsapp-token-env", metavar="NAME", help=f"the variable holding the token ({TOKEN_ENV})")
    parser.add_argument(
        "--whatsapp-secret-env", metavar="NAME", help=f"the variable holding the app secret ({SECRET_ENV})"
    )
    parser.add_argument("--whatsapp-owner", metavar="NUMBER", help="your own number, +491701234567: who it answers")
    parser.add_argument("--whatsapp-template", metavar="NAME", help="an approved template for messages after 24 hours")
    parser.add_argument("--whatsapp-base-url", metavar="URL", help=f"the Graph API (default {DEFAULT_BASE_URL})")


def steps(setup: ChannelSetup) -> None:
    if WhatsAppSteps(setup).whatsapp(setup.configured.get("whatsapp") or {}):
        setup.reached.append("WhatsApp")


class WhatsAppSteps(Steps):
    def whatsapp(self, configured: JsonObject) -> bool:
        """Set up WhatsApp when ``--whatsapp PHONE_NUMBER_ID`` is given (the rest is asked, or taken from the
        flags); True when it was set up. Without the flag nothing is asked about WhatsApp."""
        a = self.a
        phone_id = a.whatsapp_phone_number_id
        if not phone_id:
            return False
        if not phone_id.isdigit():
            raise SetupError(f"{phone_id!r} is not a phone number id (digits, from WhatsApp Manager's API Setup)")
        base_url = (a.whatsapp_base_url or configured.get("base_url") or DEFAULT_BASE_URL).rstrip("/")
        token_env = a.whatsapp_token_env or self._ask("The variable holding the access token", TOKEN_ENV)
        secret_env = a.whatsapp_secret_env or self._ask("The variable holding the app secret", SECRET_ENV)
        owner = a.whatsapp_owner or self._ask("Your own number, +491701234567 (whose messages it answers)")
        if not E164.fullmatch(owner or ""):
            raise SetupError(f"{owner!r} is not a number in E.164 form (+491701234567): the assistant answers only it")
        template = a.whatsapp_template or self._ask("An approved template for messages after 24 hours (Enter: none)")
        self._try_token(base_url, phone_id, token_env)
        verify = str(configured.get("verify_token") or secrets.token_urlsafe(24))
        hook = configured.get("webhook") or {}  # where the bot listens (the defaults unless configured)
        where = f"{hook.get('listen', '127.0.0.1')}:{hook.get('port', 8090)}"
        self.settings += [
            ("whatsapp.phone_number_id", phone_id),
            ("whatsapp.access_token_env", token_env),
            ("whatsapp.app_secret_env", secret_env),
            ("whatsapp.verify_token", verify),
            ("whatsapp.allowed", [owner]),
            *([("whatsapp.base_url", base_url)] if base_url != DEFAULT_BASE_URL else []),
            *([("whatsapp.template.name", template)] if template else []),
            ("whatsapp.enabled", True),
        ]
        self.io.say(
            "WhatsApp: in your app's WhatsApp configuration set the webhook to your https address with the path "
            f"{hook.get('path', '/whatsapp')} (forwarded to {where}), "
            f"the verify token {verify}, and subscribe to messages "
            "(docs/whatsapp.md)."
        )
        return True

    def _try_token(self, base_url: str, phone_id: str, env: str) -> None:
        from messaging_llm_bot.channels.whatsapp.probe import probe_number

        token = os.environ.get(env, "")
        if not token:
            self.io.say(f"WhatsApp: set {env} to the access token before `make run`; `make doctor` then tries it.")
            return
        reached = probe_number(base_url, phone_id, token)
        if reached.problem:
            raise SetupError(f"{reached.problem}; check the phone number id and the token in {env}")
        self.io.say(f"WhatsApp: the token in {env} reaches {reached.number}.")
