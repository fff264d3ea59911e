"""``backup`` and ``restore``: the workspace as a dated .tar.gz, and back."""

from __future__ import annotations

import argparse
import json
import sys

from ..backup import BackupError, backup, restore


def register(subparsers: argparse._SubParsersAction) -> None:
    save = subparsers.add_parser("backup", help="write the workspace as a dated .tar.gz (no index, caches or traces)")
    save.add_argument("--workspace", default="workspace", help="workspace folder (default: workspace)")
    save.add_argument(
        "--out", default=".", help="folder for assistant-backup-<date>.tar.gz, or a file name (default: .)"
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
        help="keep an existing workspace aside (<name>.before-restore-<time>) and restore",
    )
    back.set_defaults(func=cmd_restore)


def cmd_backup(args: argparse.Namespace) -> int:
    try:
        result = backup(args.workspace, args.out, include_traces=args.include_traces)
    except BackupError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(
            json.dumps(
                {"path": str(result.path), "files": result.files, "bytes": result.bytes, "links_left_out": result.links}
            )
        )
    else:
        print(f"{result.path}: {result.files} files, {result.bytes / 1024:.0f} KiB")
    for rel in result.links:  # said, so a linked note is not missed after a restore
        print(
            f"note: {rel} is a symbolic link and is not in the backup (copy what it points to if you need it)",
            file=sys.stderr,
        )
    return 0


def cmd_restore(args: argparse.Namespace) -> int:
    try:
        kept = restore(args.archive, args.workspace, force=args.force)
    except BackupError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"restored {args.archive} into {args.workspace}" + (f"; the previous workspace is in {kept}" if kept else ""))
    print("the search index is rebuilt on first use (or now: assistant memory reindex)")
    return 0
