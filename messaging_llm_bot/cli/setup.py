"""``setup``: the interactive first run (every answer also a flag); writes config/local/."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from messaging_llm_bot.cli.config import Subparsers
from messaging_llm_bot.ops.channels.setup import add_channel_flags


def register(subparsers: Subparsers) -> None:
    setup = subparsers.add_parser(
        "setup",
        help="first run: your chat channels (each asks what it needs), the model server, time zone, a test turn",
        description="Asks for each setting (or takes it from the flags), checks it, and writes it to the "
        "git-ignored local layer of the config (config/local/) once the test turn passed; values it does not ask "
        "about are kept. Run again at a terminal without answer flags, it asks which one thing to change (the model, "
        "the time zone, the chat channels, or everything). Without a terminal, or with --yes, it never asks.",
    )
    setup.add_argument("--config", default="config", help="config directory (default: config)")
    setup.add_argument("--workspace", default="workspace", help="workspace folder to create (default: workspace)")
    setup.add_argument(
        "--base-url", help="the model server's OpenAI-compatible base URL (else the usual local ports are probed)"
    )
    setup.add_argument("--model", help="the model name (else chosen from the server's /v1/models)")
    setup.add_argument("--api-key", help="the model server's API key, if it needs one")
    setup.add_argument("--timezone", help="IANA time zone (default: the configured one, else the system's)")
    setup.add_argument(
        "--no-test", action="store_true", help="skip the test turn against the model (and save without it)"
    )
    setup.add_argument("--yes", "-y", action="store_true", help="never ask; take the flags and defaults")
    add_channel_flags(setup)  # each channel's own (ops/channels/<name>/setup.py)
    setup.set_defaults(func=cmd_setup)


def cmd_setup(args: argparse.Namespace) -> int:
    # Imported here: setup talks to chat platforms and to model servers (the bot's side).
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
        base_url=args.base_url,
        model=args.model,
        api_key=args.api_key,
        timezone=args.timezone,
        test_turn=not args.no_test,
        flags=args,
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
