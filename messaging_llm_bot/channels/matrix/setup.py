"""Matrix's part of ``assistant setup`` (``--matrix @assistant:example.org``, docs/matrix.md;
channels/setup.py): the bot's account, its homeserver, the login (a password is never written: the name of an
environment variable holding it) and whose invites and messages it takes. The login is tried when the password
is there (on a device of its own, logged out again: channels/matrix/probe.py); the settings are written with
``matrix.enabled`` last (the config refuses an enabled channel without its homeserver and account)."""

from __future__ import annotations

import asyncio
import os
import re

from messaging_llm_bot.channels.setup import ChannelSetup, Flags, SetupError, Steps

USER_ID = re.compile(r"@[^:\s]+:[^\s]+")
PASSWORD_ENV = "MATRIX_PASSWORD"


def add_arguments(parser: Flags) -> None:
    parser.add_argument(
        "--matrix",
        dest="matrix_user_id",
        metavar="USER_ID",
        help="the assistant's own Matrix account, @name:server (the Matrix channel; docs/matrix.md)",
    )
    parser.add_argument("--matrix-homeserver", metavar="URL", help="its homeserver (default https://<server>)")
    parser.add_argument("--matrix-password-env", metavar="NAME", help="the environment variable holding its password")
    parser.add_argument("--matrix-owner", metavar="USER_ID", help="your own Matrix id: whose invites it takes")


def steps(setup: ChannelSetup) -> None:
    if MatrixSteps(setup).matrix():
        setup.reached.append("Matrix")


class MatrixSteps(Steps):
    def matrix(self) -> bool:
        """Set up the Matrix channel when ``--matrix USER_ID`` is given (the rest is asked, or taken from the
        flags); True when it was set up. Without the flag the first run asks nothing about Matrix."""
        a = self.a
        user_id = a.matrix_user_id
        if not user_id:
            return False
        if not USER_ID.fullmatch(user_id):
            raise SetupError(f"{user_id!r} is not a Matrix user id (@assistant:example.org)")
        server = user_id.partition(":")[2]
        homeserver = (a.matrix_homeserver or self._ask("Its homeserver's address", f"https://{server}")).rstrip("/")
        if not re.fullmatch(r"https?://[^/\s?#]+.*", homeserver):
            raise SetupError(f"{homeserver!r} is not an http(s):// address of a homeserver")
        env = a.matrix_password_env or self._ask("The environment variable holding its password", PASSWORD_ENV)
        owner = a.matrix_owner or self._ask("Your own Matrix id (whose invites and messages it takes)")
        if not USER_ID.fullmatch(owner or ""):
            raise SetupError(f"{owner!r} is not a Matrix user id: the assistant answers only the owner")
        self._try_login(homeserver, user_id, env)
        self.settings += [
            ("matrix.homeserver", homeserver),
            ("matrix.user_id", user_id),
            ("matrix.password_env", env),
            ("matrix.allowed", [owner]),
            ("matrix.enabled", True),
        ]
        self.io.say(
            f"Matrix: {user_id} joins the rooms {owner} invites it to; start a direct chat with encryption "
            "turned off (docs/matrix.md)."
        )
        return True

    def _try_login(self, homeserver: str, user_id: str, env: str) -> None:
        from assistant_framework.config.settings import Settings
        from messaging_llm_bot.channels.matrix.settings import MatrixConfig

        try:  # the channel's library is an extra
            from messaging_llm_bot.channels.matrix.probe import probe
        except ImportError as err:
            raise SetupError(
                f"the Matrix library is not installed ({err}): `.venv/bin/pip install -e '.[matrix]'`"
            ) from None
        if not os.environ.get(env):
            self.io.say(f"Matrix: set {env} to the password before `make run`; `make doctor` then logs in.")
            return
        section = {"enabled": True, "homeserver": homeserver, "user_id": user_id, "password_env": env}
        found = asyncio.run(probe(MatrixConfig.from_settings(Settings.from_config({"matrix": section}))))
        if not found.logged_in:
            raise SetupError(f"{found.problem}; check the homeserver and the password in {env}")
        self.io.say(f"Matrix: {homeserver} takes the login of {user_id}.")
