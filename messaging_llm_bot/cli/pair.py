"""``pair``: the pairing codes strangers were given (conversation/pairing.py), approved or revoked from the shell.

``approve`` adds the stranger's id to that channel's allowlist in the config's local layer (``config/local/``);
a running bot applies it when the stranger writes again, without a restart.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from assistant_framework.config import ConfigError
from assistant_framework.workspace import existing_workspace
from messaging_llm_bot.cli.config import Subparsers, add_config_option
from messaging_llm_bot.conversation.pairing import ROLES, PairingStore, approve, pending_json, pending_text


def register(subparsers: Subparsers) -> None:
    group = subparsers.add_parser("pair", help="pairing codes: the strangers waiting, approve or revoke one")
    commands = group.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True
    listing = commands.add_parser("list", help="the codes waiting for approval (channel, sender, expiry)")
    listing.add_argument("--json", action="store_true", help="as a JSON list")
    approving = commands.add_parser("approve", help="let the stranger who has CODE in (their channel's allowlist)")
    approving.add_argument("code", metavar="CODE", help="the code the stranger was given, e.g. K7M-4QX")
    approving.add_argument("--as", dest="role", choices=ROLES, default="guest", help="guest (default) or owner")
    revoking = commands.add_parser("revoke", help="drop a waiting code (by the code or the sender's id)")
    revoking.add_argument("what", metavar="CODE_OR_ID")
    for parser in (listing, approving, revoking):
        add_config_option(parser)
        parser.add_argument("--workspace", default="workspace", help="workspace folder (default: workspace)")
    listing.set_defaults(func=cmd_list)
    approving.set_defaults(func=cmd_approve)
    revoking.set_defaults(func=cmd_revoke)


def cmd_list(args: argparse.Namespace) -> int:
    pending = PairingStore(existing_workspace(args.workspace)).pending()
    print(pending_json(pending) if args.json else pending_text(pending).replace("/pair CODE", "pair approve CODE"))
    return 0


def cmd_approve(args: argparse.Namespace) -> int:
    root = Path(args.config)
    if not root.exists():
        raise ConfigError(f"{args.config}: config file or directory does not exist (pass --config)")
    store = PairingStore(existing_workspace(args.workspace))
    entry, text = approve(store, root, args.code, args.role)
    print(text)
    if entry is None:
        return 1
    store.note_approved(entry.channel, entry.sender)  # a running bot reloads at the stranger's next message
    return 0


def cmd_revoke(args: argparse.Namespace) -> int:
    removed = PairingStore(existing_workspace(args.workspace)).revoke(args.what)
    print(f"Revoked {removed} waiting code(s)." if removed else "No waiting code matches that; nothing changed.")
    return 0 if removed else 1
