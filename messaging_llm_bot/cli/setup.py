"""``setup``: the interactive first run (every answer also a flag); writes config/local/."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from messaging_llm_bot.cli.config import Subparsers


def register(subparsers: Subparsers) -> None:
    setup = subparsers.add_parser(
        "setup",
        help="first run: Telegram token and your user id, the model server, time zone, a test turn",
        description="Asks for each setting (or takes it from the flags), checks it, and writes it to the "
        "git-ignored local layer of the config (config/local/) once the test turn passed; values it does not ask "
        "about are kept. Without a terminal, or with --yes, it never asks.",
    )
    setup.add_argument("--config", default="config", help="config directory (default: config)")
    setup.add_argument("--workspace", default="workspace", help="workspace folder to create (default: workspace)")
    setup.add_argument("--token", help="the bot token from @BotFather (checked with getMe)")
    setup.add_argument("--no-telegram", action="store_true", help="no Telegram: the terminal chat only")
    setup.add_argument(
        "--telegram-base-url",
        help="a self-hosted Bot API server, e.g. http://127.0.0.1:8081 (default: api.telegram.org)",
    )
    setup.add_argument(
        "--owner-id", type=int, help="your numeric Telegram user id (else: write to the bot and it is read)"
    )
    setup.add_argument(
        "--wait",
        type=float,
        default=120.0,
        metavar="SECONDS",
        help="how long to wait for your message to the bot (default 120)",
    )
    setup.add_argument(
        "--base-url", help="the model server's OpenAI-compatible base URL (else the usual local ports are probed)"
    )
    setup.add_argument("--model", help="the model name (else chosen from the server's /v1/models)")
    setup.add_argument("--api-key", help="the model server's API key, if it needs one")
    setup.add_argument("--timezone", help="IANA time zone (default: the configured one, else the system's)")
    setup.add_argument(
        "--no-test", action="store_true", help="skip the test turn against the model (and save without it)"
    )
    setup.add_argument(
        "--email",
        dest="email_address",
        metavar="ADDRESS",
        help="the assistant's own email address (the email channel; docs/email.md)",
    )
    setup.add_argument("--email-imap", metavar="HOST[:PORT]", help="its IMAP server (default imap.<domain>)")
    setup.add_argument("--email-smtp", metavar="HOST[:PORT]", help="its SMTP server (default smtp.<domain>)")
    setup.add_argument("--email-security", choices=("ssl", "starttls", "none"), help="TLS for both (default ssl)")
    setup.add_argument("--email-user", help="the login (default the address)")
    setup.add_argument("--email-password-env", metavar="NAME", help="the environment variable holding the password")
    setup.add_argument("--email-owner", metavar="ADDRESS", help="your own address: whose mail it answers")
    setup.add_argument(
        "--matrix",
        dest="matrix_user_id",
        metavar="USER_ID",
        help="the assistant's own Matrix account, @name:server (the Matrix channel; docs/matrix.md)",
    )
    setup.add_argument("--matrix-homeserver", metavar="URL", help="its homeserver (default https://<server>)")
    setup.add_argument("--matrix-password-env", metavar="NAME", help="the environment variable holding its password")
    setup.add_argument("--matrix-owner", metavar="USER_ID", help="your own Matrix id: whose invites it takes")
    setup.add_argument("--yes", "-y", action="store_true", help="never ask; take the flags and defaults")
    setup.set_defaults(func=cmd_setup)


def cmd_setup(args: argparse.Namespace) -> int:
    # Imported here: setup talks to Telegram and to model servers (the bot's side).
    from messaging_llm_bot.ops.setup.answers import Answers
    from messaging_llm_bot.ops.setup.dialog import SetupError
    from messaging_llm_bot.ops.setup.wizard import Wizard

    config = Path(args.config)
    if not config.is_dir():
        print(
            f"error: --config {config}: not a config directory (run from the checkout, or pass --config); "
            "setup writes its local/ layer",
            file=sys.stderr,
        )
        return 2
    answers = Answers(
        config=config,
        workspace=Path(args.workspace),
        token=args.token,
        no_telegram=args.no_telegram,
        telegram_base_url=args.telegram_base_url,
        owner_id=args.owner_id,
        wait_seconds=args.wait,
        base_url=args.base_url,
        model=args.model,
        api_key=args.api_key,
        timezone=args.timezone,
        test_turn=not args.no_test,
        email_address=args.email_address,
        email_imap=args.email_imap,
        email_smtp=args.email_smtp,
        email_security=args.email_security,
        email_user=args.email_user,
        email_password_env=args.email_password_env,
        email_owner=args.email_owner,
        matrix_user_id=args.matrix_user_id,
        matrix_homeserver=args.matrix_homeserver,
        matrix_password_env=args.matrix_password_env,
        matrix_owner=args.matrix_owner,
        interactive=not args.yes and sys.stdin.isatty(),
    )
    try:
        return Wizard(answers).run()
    except SetupError as exc:
        print(f"error: {exc}", file=sys.stderr)
        print("Nothing was written.", file=sys.stderr)
        return 2
    except (EOFError, KeyboardInterrupt):
        print("\nsetup cancelled; nothing was written", file=sys.stderr)
        return 2
