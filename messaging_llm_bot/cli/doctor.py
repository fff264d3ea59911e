"""``doctor``: checks the config, each chat channel, model servers, workspace, plugins and Python; says what to
do. Exit 0 when nothing failed (warnings pass), 1 when a check failed, 2 when ``--config`` names nothing."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from messaging_llm_bot.cli.config import Subparsers


def register(subparsers: Subparsers) -> None:
    doctor = subparsers.add_parser(
        "doctor",
        help="check everything the bot needs; ok / warn / fail with what to do (exit 1 on a failure)",
        description="Check the config, each chat channel the config turns on (its server, login and allowlist), "
        "each model runner, the workspace, skills and collectors, Python and the dependencies. Exit 0 when "
        "nothing failed (warnings pass), 1 when a check failed, 2 when --config names no file or directory.",
    )
    doctor.add_argument("--config", default="config", help="config file or directory (default: config)")
    doctor.add_argument("--workspace", default="workspace", help="workspace folder (default: workspace)")
    doctor.add_argument(
        "--quick",
        action="store_true",
        help="skip model completions, the index check and dependency versions (for health checks)",
    )
    doctor.add_argument("--json", action="store_true", help="the checks as a JSON list")
    doctor.set_defaults(func=cmd_doctor)


def cmd_doctor(args: argparse.Namespace) -> int:
    if not Path(args.config).exists():  # a typo, not a finding: nothing to check
        print(f"error: --config {args.config}: no such file or directory", file=sys.stderr)
        return 2
    # Imported here: the doctor talks to chat platforms and to model servers (the bot's side).
    from messaging_llm_bot.ops.doctor.report import as_json, exit_code, format_report
    from messaging_llm_bot.ops.doctor.run import run_checks

    checks = run_checks(args.config, args.workspace, quick=args.quick)
    if args.json:
        print(json.dumps(as_json(checks), indent=2, ensure_ascii=False))
    else:
        print(format_report(checks))
    return exit_code(checks)
