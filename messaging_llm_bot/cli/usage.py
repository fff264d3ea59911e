"""``usage``: each model runner's tokens and cost today and this month, estimated counts marked, and the
spending caps (what ``/stats`` shows first), read from the workspace's ``state/spending.json``."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from assistant_framework.config import ConfigError, load_config
from assistant_framework.config.settings import Settings
from assistant_framework.spending import SpendingLedger, cap_rows, runner_usage, usage_json, usage_text
from assistant_framework.workspace import existing_workspace
from messaging_llm_bot.cli.config import Subparsers, add_config_option
from messaging_llm_bot.conversation.usage_text import caps_text


def register(subparsers: Subparsers) -> None:
    usage = subparsers.add_parser(
        "usage",
        help="tokens and cost per model runner today and this month (estimated ones marked), and the caps",
    )
    add_config_option(usage)
    usage.add_argument("--workspace", default="workspace", help="workspace folder (default: workspace)")
    usage.add_argument("--json", action="store_true", help="the runners and caps as one JSON object")
    usage.set_defaults(func=cmd_usage)


def cmd_usage(args: argparse.Namespace) -> int:
    if not Path(args.config).exists():
        raise ConfigError(f"{args.config}: config file or directory does not exist (pass --config)")
    settings = Settings.from_config(load_config(args.config))
    workspace = existing_workspace(args.workspace)
    ledger = SpendingLedger(workspace, settings.runtime.timezone)  # reads only: nothing is counted here
    rows = runner_usage(ledger, settings.llm.runners)
    caps = cap_rows(ledger, settings.llm.runners)
    if args.json:
        print(json.dumps({"runners": usage_json(rows), "caps": caps}, indent=2, ensure_ascii=False))
        return 0
    print(usage_text(rows))
    print()
    print(caps_text(caps) if caps else "Spending caps: none (llm.runners[i].limits)")
    return 0
