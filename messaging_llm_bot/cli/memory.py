"""``memory search|reindex|stats|purge``: the long-term memory index from the command line."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from assistant_framework.config import load_config
from assistant_framework.workspace import existing_workspace
from messaging_llm_bot.cli import UsageError, int_range
from messaging_llm_bot.cli.config import Subparsers, add_config_option

if TYPE_CHECKING:
    from assistant_framework.memory.service import MemoryService


def _common(parser: argparse.ArgumentParser) -> None:
    add_config_option(parser)
    parser.add_argument("--workspace", default="workspace", help="workspace folder (default: workspace)")


def register(subparsers: Subparsers) -> None:
    group = subparsers.add_parser("memory", help="search and maintain long-term memory")
    commands = group.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True

    search = commands.add_parser("search", help="search memory (conversations, notes, facts, collectors...)")
    _common(search)
    search.add_argument("query")
    search.add_argument("--source", default=None, help="only this source, e.g. notes, conversation, collector:rss")
    search.add_argument("--conversation", default=None, help="only this conversation's turns and episodes")
    search.add_argument("--limit", type=int_range(1), default=10)
    search.add_argument("--json", action="store_true", help="print the hits as JSON")
    search.set_defaults(func=cmd_search)

    reindex = commands.add_parser("reindex", help="rebuild the index from the workspace files")
    _common(reindex)
    reindex.set_defaults(func=cmd_reindex)

    stats = commands.add_parser("stats", help="files and entries in the index, per source")
    _common(stats)
    stats.add_argument("--json", action="store_true", help="the figures as JSON")
    stats.set_defaults(func=cmd_stats)

    purge = commands.add_parser("purge", help="delete a collector's files and their index rows")
    _common(purge)
    purge.add_argument("--source", required=True, help="collector:NAME")
    purge.set_defaults(func=cmd_purge)


def _service(args: argparse.Namespace) -> MemoryService:
    from assistant_framework.memory.service import MemoryService

    config = load_config(args.config) if Path(args.config).exists() else {}
    return MemoryService(existing_workspace(args.workspace), config, start_worker=False)


def _check_source(source: str | None) -> None:
    """A typo in ``--source`` is a usage error, not "no memory matches"."""
    from assistant_framework.memory.sources import DEFAULT_SOURCES

    if source is None:
        return
    names = [name for _, name in DEFAULT_SOURCES if "{" not in name]
    kind, colon, name = source.partition(":")
    if source in names or (colon and kind in ("collector", "skill") and name.strip()):
        return
    raise UsageError(
        f"--source {source!r} is not a memory source: use one of {', '.join(names)}, "
        "collector:NAME (collector:* for all collectors) or skill:NAME"
    )


def cmd_search(args: argparse.Namespace) -> int:
    if args.conversation is not None and not args.conversation.strip():
        raise UsageError("--conversation is empty: give a conversation id, or leave the option out")
    if not args.query.strip():
        raise UsageError("the query is empty: give the words to search for")
    _check_source(args.source)
    service = _service(args)
    try:
        service.refresh()
        hits = service.search(args.query, limit=args.limit, source=args.source, conversation=args.conversation)
    finally:
        service.close()
    if args.json:
        print(json.dumps([hit.__dict__ for hit in hits], ensure_ascii=False, indent=2))
        return 0 if hits else 1  # as in text mode (and grep): the exit code does not depend on the format
    if not hits:
        shown = args.query if len(args.query) <= 80 else args.query[:80] + "…"  # a pasted page is not echoed whole
        print(f"no memory matches {shown!r}")
        return 1
    for hit in hits:
        date = (hit.time or "")[:10]
        print(f"{hit.score:6.3f}  {hit.source:<14} {date:<10}  {hit.path} {hit.ref}")
        print(f"        {hit.snippet}")
    return 0


def cmd_reindex(args: argparse.Namespace) -> int:
    service = _service(args)
    try:
        count = service.reindex()
        stats = service.index.stats()
    finally:
        service.close()
    print(f"reindexed {count} entries from {stats.files} files")
    return 0


def cmd_stats(args: argparse.Namespace) -> int:
    service = _service(args)
    try:
        service.refresh()
        stats = service.index.stats()
    finally:
        service.close()
    if args.json:
        print(
            json.dumps(
                {
                    "index": str(service.index.db_path),
                    "bytes": stats.bytes,
                    "files": stats.files,
                    "entries": stats.entries,
                    "by_source": stats.by_source,
                },
                indent=2,
                ensure_ascii=False,
            )
        )
        return 0
    print(f"index: {service.index.db_path} ({stats.bytes / 1024:.0f} KiB)")
    print(f"files: {stats.files}  entries: {stats.entries}")
    for source, count in stats.by_source.items():
        print(f"  {source:<20} {count}")
    return 0


def cmd_purge(args: argparse.Namespace) -> int:
    from assistant_framework.collectors.loader import NAME_PATTERN

    source = args.source
    name = source.split(":", 1)[1] if source.startswith("collector:") else ""
    # A collector's name only: '.', '*' or '[rm]*' would glob other collectors' folders and delete their files.
    if not NAME_PATTERN.fullmatch(name):
        print(
            f"error: purge --source must be collector:NAME (a collector's name: a-z, 0-9, _ and -), got {source!r}",
            file=sys.stderr,
        )
        return 2
    workspace = existing_workspace(args.workspace)
    files = workspace.list(f"collectors/{name}/**/*")
    for rel in files:
        workspace.delete(rel)
    service = _service(args)
    try:
        rows = service.index.purge_source(source)
    finally:
        service.close()
    print(f"purged {source}: {len(files)} files, {rows} index entries")
    return 0
