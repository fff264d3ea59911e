"""``backup`` and ``restore``: the workspace as a dated .tar.gz, and back."""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from assistant_framework.backup import BackupError, backup, restore
from assistant_framework.hints import CLI
from messaging_llm_bot.cli.config import Subparsers

_UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}


def byte_size(text: str) -> int:
    """An argparse ``type``: ``500M``, ``4G``, ``2.5G`` or a number of bytes."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?\s*", text, re.IGNORECASE)
    if not match:
        raise argparse.ArgumentTypeError(f"invalid size: {text!r} (write e.g. 500M or 4G)")
    value = int(float(match.group(1)) * _UNITS[match.group(2).upper()])
    if value <= 0:
        raise argparse.ArgumentTypeError(f"invalid size: {text!r} (must be more than 0)")
    return value


def shown(path: Path) -> str:
    """A path as the user reads it: relative to the current folder when inside it, else absolute."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def register(subparsers: Subparsers) -> None:
    save = subparsers.add_parser("backup", help="write the workspace as a dated .tar.gz (no index, caches or traces)")
    save.add_argument("--workspace", default="workspace", help="workspace folder (default: workspace)")
    save.add_argument(
        "--out",
        default=None,
        help="folder for assistant-backup-<date>.tar.gz, or a file name (default: backups/ beside the workspace)",
    )
    save.add_argument("--include-traces", action="store_true", help="also the model-request traces")
    save.add_argument("--json", action="store_true", help="print {path, files, bytes} as JSON")
    save.set_defaults(func=cmd_backup)

    back = subparsers.add_parser("restore", help="restore a workspace from a backup archive")
    back.add_argument("archive")
    back.add_argument("--workspace", default="workspace", help="workspace folder to restore into (default: workspace)")
    back.add_argument(
        "--force",
        action="store_true",
        help="keep an existing workspace aside (backups/<name>.before-restore-<time> beside it) and restore",
    )
    back.add_argument(
        "--max-size",
        type=byte_size,
        default=None,
        help="the most the archive may unpack to, e.g. 20G (default: 100 times the archive's size, at least 256M)",
    )
    back.add_argument("--json", action="store_true", help="print {workspace, previous} as JSON")
    back.set_defaults(func=cmd_restore)


def cmd_backup(args: argparse.Namespace) -> int:
    try:
        result = backup(args.workspace, args.out, include_traces=args.include_traces)
    except BackupError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    if args.json:
        print(
            json.dumps(
                {
                    "path": str(result.path),
                    "files": result.files,
                    "bytes": result.bytes,
                    "links_left_out": result.links,
                    "secrets_left_out": result.secrets,
                }
            )
        )
    else:
        print(f"{shown(result.path)}: {result.files} files, {result.bytes / 1024:.0f} KiB (readable only by you)")
    if result.secrets:
        print(
            f"note: left out {', '.join(result.secrets)} (secrets; the bot makes new ones at its next start)",
            file=sys.stderr,
        )
    for rel in result.links:  # said, so a linked note is not missed after a restore
        print(
            f"note: {rel} is a symbolic link and is not in the backup (copy what it points to if you need it)",
            file=sys.stderr,
        )
    return 0


def cmd_restore(args: argparse.Namespace) -> int:
    try:
        kept = restore(args.archive, args.workspace, force=args.force, max_bytes=args.max_size)
    except BackupError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    if args.json:
        workspace = Path(args.workspace).expanduser().absolute()
        print(json.dumps({"workspace": str(workspace), "previous": str(kept) if kept else None}))
        return 0
    print(
        f"restored {args.archive} into {args.workspace}"
        + (f"; the previous workspace is in {shown(kept)}" if kept else "")
    )
    print(f"the search index is rebuilt on first use (or now: {CLI} memory reindex)")
    return 0
