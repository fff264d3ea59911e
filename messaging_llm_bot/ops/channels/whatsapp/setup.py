"""WhatsApp's part of ``assistant setup`` (``--whatsapp PHONE_NUMBER_ID``, docs/whatsapp.md; ops/channels/setup.py):
the number's id, the environment variables holding the access token and the app secret (never written), the
owner's number, a template for messages outside the 24-hour window, and a verify token made for the webhook's
handshake. The token is tried when its variable is set (ops/channels/whatsapp/probe.py); the settings are written
with ``whatsapp.enabled`` last, and what to enter in Meta's webhook setup is said."""

from __future__ import annotations

import re
import secrets

from messaging_llm_bot.ops.channels.setup import Flags, Form, OptInSteps, Tried

TOKEN_ENV = "WHATSAPP_TOKEN"
SECRET_ENV = "WHATSAPP_APP_SECRET"
E164 = Form(
    re.compile(r"\+[1-9][0-9]{6,14}"), "is not a number in E.164 form (+491701234567): the assistant answers only it"
)
DEFAULT_BASE_URL = "https://graph.facebook.com/v21.0"


class WhatsAppSteps(OptInSteps):
    label, section, account = "WhatsApp", "whatsapp", "whatsapp_phone_number_id"
    form = Form(re.compile(r"[0-9]+"), "is not a phone number id (digits, from WhatsApp Manager's API Setup)")

    def set_up(self, account: str) -> None:
        a = self.a
        base_url = str(a.whatsapp_base_url or self.configured.get("base_url") or DEFAULT_BASE_URL).rstrip("/")
        token_env = a.whatsapp_token_env or self._ask("The variable holding the access token", TOKEN_ENV)
        secret_env = a.whatsapp_secret_env or self._ask("The variable holding the app secret", SECRET_ENV)
        owner = E164.checked(
            a.whatsapp_owner or self._ask("Your own number, +491701234567 (whose messages it answers)")
        )
        template = a.whatsapp_template or self._ask("An approved template for messages after 24 hours (Enter: none)")
        hint = "the phone number id and the token"
        self.try_secret(token_env, "the access token", lambda token: _tried(base_url, account, token, token_env), hint)
        verify = str(self.configured.get("verify_token") or secrets.token_urlsafe(24))
        path, where = self.listens(8090, "/whatsapp")
        self.enable(
            {
                "phone_number_id": account,
                "access_token_env": token_env,
                "app_secret_env": secret_env,
                "verify_token": verify,
                "allowed": [owner],
                "base_url": base_url if base_url != DEFAULT_BASE_URL else None,
                "template.name": template or None,
            }
        )
        self.io.say(
            "WhatsApp: in your app's WhatsApp configuration set the webhook to your https address with the path "
            f"{path} (forwarded to {where}), the verify token {verify}, and subscribe to messages (docs/whatsapp.md)."
        )


def _tried(base_url: str, phone_id: str, token: str, env: str) -> Tried:
    from messaging_llm_bot.ops.channels.whatsapp.probe import probe_number

    reached = probe_number(base_url, phone_id, token)
    return Tried((f"the token in {env} reaches {reached.number}.",), reached.problem)


def add_arguments(parser: Flags) -> None:
    WhatsAppSteps.add_account(
        parser,
        "--whatsapp",
        "PHONE_NUMBER_ID",
        "the business number's id from WhatsApp Manager (the WhatsApp channel; docs/whatsapp.md)",
    )
    parser.add_argument("--whatsapp-token-env", metavar="NAME", help=f"the variable holding the token ({TOKEN_ENV})")
    parser.add_argument(
        "--whatsapp-secret-env", metavar="NAME", help=f"the variable holding the app secret ({SECRET_ENV})"
    )
    parser.add_argument("--whatsapp-owner", metavar="NUMBER", help="your own number, +491701234567: who it answers")
    parser.add_argument("--whatsapp-template", metavar="NAME", help="an approved template for messages after 24 hours")
    parser.add_argument("--whatsapp-base-url", metavar="URL", help=f"the Graph API (default {DEFAULT_BASE_URL})")


steps = WhatsAppSteps.steps
