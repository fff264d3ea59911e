"""Matrix's part of ``assistant setup`` (``--matrix @assistant:example.org``, docs/matrix.md;
ops/channels/setup.py): the bot's account, its homeserver, the login (a password is never written: the name of an
environment variable holding it) and whose invites and messages it takes. The login is tried when the password
is there (on a device of its own, logged out again: ops/channels/matrix/probe.py); the settings are written with
``matrix.enabled`` last (the config refuses an enabled channel without its homeserver and account)."""

from __future__ import annotations

import asyncio
import re

from messaging_llm_bot.ops.channels.setup import Flags, Form, OptInSteps, SetupError, Tried

USER_ID = re.compile(r"@[^:\s]+:[^\s]+")
HOMESERVER = Form(re.compile(r"https?://[^/\s?#]+.*"), "is not an http(s):// address of a homeserver")
PASSWORD_ENV = "MATRIX_PASSWORD"


class MatrixSteps(OptInSteps):
    label, section, account = "Matrix", "matrix", "matrix_user_id"
    form = Form(USER_ID, "is not a Matrix user id (@assistant:example.org)")

    def set_up(self, account: str) -> None:
        a = self.a
        server = account.partition(":")[2]
        homeserver = HOMESERVER.checked(
            (a.matrix_homeserver or self._ask("Its homeserver's address", f"https://{server}")).rstrip("/")
        )
        env = a.matrix_password_env or self._ask("The environment variable holding its password", PASSWORD_ENV)
        owner = a.matrix_owner or self._ask("Your own Matrix id (whose invites and messages it takes)")
        Form(USER_ID, "is not a Matrix user id: the assistant answers only the owner").checked(owner)
        try:  # the channel's library is an extra
            from messaging_llm_bot.ops.channels.matrix.probe import probe
        except ImportError as err:
            raise SetupError(
                f"the Matrix library is not installed ({err}): `.venv/bin/pip install -e '.[matrix]'`"
            ) from None

        def tried(password: str) -> Tried:
            from assistant_framework.config.settings import Settings

            section = {"enabled": True, "homeserver": homeserver, "user_id": account, "password_env": env}
            found = asyncio.run(probe(Settings.from_config({"matrix": section}).matrix))
            return Tried(
                (f"{homeserver} takes the login of {account}.",), "" if found.logged_in else found.problem or "no login"
            )

        self.try_secret(env, "the password", tried, "the homeserver and the password", later="then logs in")
        self.enable({"homeserver": homeserver, "user_id": account, "password_env": env, "allowed": [owner]})
        self.io.say(
            f"Matrix: {account} joins the rooms {owner} invites it to; start a direct chat with encryption "
            "turned off (docs/matrix.md)."
        )


def add_arguments(parser: Flags) -> None:
    MatrixSteps.add_account(
        parser,
        "--matrix",
        "USER_ID",
        "the assistant's own Matrix account, @name:server (the Matrix channel; docs/matrix.md)",
    )
    parser.add_argument("--matrix-homeserver", metavar="URL", help="its homeserver (default https://<server>)")
    parser.add_argument("--matrix-password-env", metavar="NAME", help="the environment variable holding its password")
    parser.add_argument("--matrix-owner", metavar="USER_ID", help="your own Matrix id: whose invites it takes")


steps = MatrixSteps.steps
