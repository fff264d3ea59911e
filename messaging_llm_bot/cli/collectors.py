"""``collectors list|run|status|run-loop|setup``."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import sys
from collections.abc import Iterator
from zoneinfo import ZoneInfo

from assistant_framework.collectors import CollectorManager, CollectorRunner
from assistant_framework.collectors.check import unchecked_manager
from assistant_framework.config import load_config_detailed, validate_config
from assistant_framework.config.settings import Settings
from assistant_framework.json_types import JsonObject
from assistant_framework.schedules import from_iso, zone
from assistant_framework.workspace import existing_workspace
from messaging_llm_bot.cli.config import Subparsers


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", default="config", help="config file or directory (default: config)")
    parser.add_argument("--workspace", default="workspace", help="workspace folder (default: workspace)")


def register(subparsers: Subparsers) -> None:
    group = subparsers.add_parser("collectors", help="list, run and inspect background collectors")
    commands = group.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True

    list_ = commands.add_parser("list", help="every collector found, enabled or not, with load errors")
    _common(list_)
    list_.add_argument("--json", action="store_true", help="collectors, load errors and config problems as JSON")
    list_.set_defaults(func=cmd_list)

    run = commands.add_parser("run", help="run one collector now and print what it wrote")
    _common(run)
    run.add_argument("name")
    run.set_defaults(func=cmd_run)

    status = commands.add_parser(
        "status", help="last run, outcome, next run and failures per collector (and per source)"
    )
    _common(status)
    status.add_argument("name", nargs="?", help="one collector: also list its failing sources with their last error")
    status.add_argument("--json", action="store_true", help="print everything as JSON")
    status.set_defaults(func=cmd_status)

    loop = commands.add_parser("run-loop", help="run the scheduler in the foreground (Ctrl-C stops)")
    _common(loop)
    loop.set_defaults(func=cmd_run_loop)

    setup = commands.add_parser("setup", help="interactive setup of one collector (logins, folders)")
    _common(setup)
    setup.add_argument("name")
    setup.set_defaults(func=cmd_setup)


def _open(args: argparse.Namespace) -> tuple[JsonObject, CollectorManager, list[str]]:
    """The config, a loaded manager, and config problems that name their file."""
    loaded = load_config_detailed(args.config)
    workspace = existing_workspace(args.workspace)
    manager = unchecked_manager(loaded.data, workspace)
    problems = validate_config(loaded, extra_schemas=manager.schemas())
    return loaded.data, manager, problems


def _timezone(config: JsonObject) -> str:
    return Settings.from_config(config).runtime.timezone


@contextlib.contextmanager
def _runner(config: JsonObject, manager: CollectorManager) -> Iterator[CollectorRunner]:
    """A runner that hands what each run wrote to the memory index (unless memory is off), so
    ``memory search`` and the running bot find the new items as soon as the run ends."""
    from assistant_framework.memory.index import MemoryIndex

    index = MemoryIndex(manager.workspace) if Settings.from_config(config).memory.enabled else None
    try:
        yield CollectorRunner(manager, manager.workspace, timezone=_timezone(config), indexer=index)
    finally:
        if index is not None:
            index.close()


def cmd_list(args: argparse.Namespace) -> int:
    _, manager, problems = _open(args)
    failed = 1 if manager.errors or problems else 0
    if args.json:
        print(
            json.dumps(
                {
                    "collectors": [
                        {
                            "name": c.name,
                            "enabled": c.enabled,
                            "cron": c.cron,
                            "interval_seconds": c.interval_seconds,
                            "description": c.description,
                            "folder": str(c.folder),
                        }
                        for c in sorted(manager.collectors.values(), key=lambda c: c.name)
                    ],
                    "errors": [{"name": e.name, "error": e.error, "folder": str(e.folder)} for e in manager.errors],
                    "config_problems": problems,
                },
                indent=2,
                ensure_ascii=False,
            )
        )
        return failed
    for collector in sorted(manager.collectors.values(), key=lambda c: c.name):
        mark = "enabled " if collector.enabled else "disabled"
        schedule = f"cron {collector.cron}" if collector.cron else f"every {collector.interval_seconds:g}s"
        print(f"{collector.name:<12} {mark}  {schedule:<22} {collector.description}")
        print(f"{'':<12} folder: {collector.folder}")
    for error in sorted(manager.errors, key=lambda e: e.name):
        print(f"{error.name:<12} FAILED    {error.error}")
        print(f"{'':<12} folder: {error.folder}")
    for problem in problems:
        print(f"config: {problem}")
    if not manager.collectors and not manager.errors:
        print("no collectors found")
    return failed


def cmd_run(args: argparse.Namespace) -> int:
    config, manager, _ = _open(args)
    try:
        collector = manager.get(args.name)
    except KeyError as exc:
        print(f"error: {exc.args[0]}", file=sys.stderr)
        # A collector that exists but failed to load is a failure found; an unknown name is a usage error.
        return 1 if any(error.name == args.name for error in manager.errors) else 2
    if not collector.enabled:
        print(
            f"note: {collector.name} is disabled in config (collectors.{collector.name}.enabled); running it once "
            "anyway"
        )
    with _runner(config, manager) as runner:
        outcome = runner.run_once(args.name)
    print(f"{outcome.name}: {outcome.outcome} in {outcome.duration_s:.2f}s, {len(outcome.new_items)} new item(s)")
    if outcome.error:
        print(f"error: {outcome.error}")
    for problem in outcome.errors:
        print(f"warning: {problem}")
    if outcome.summary:
        print(outcome.summary)
    if outcome.written:
        print("wrote:")
        for rel in outcome.written:
            print(f"  {rel}")
    for item in outcome.new_items[:20]:
        print(f"  + {item.get('title') or item.get('subject') or item.get('summary') or item}")
    if len(outcome.new_items) > 20:
        print(f"  ... and {len(outcome.new_items) - 20} more (see collectors/{outcome.name}/new.json)")
    return 0 if outcome.outcome == "ok" else 1


def cmd_status(args: argparse.Namespace) -> int:
    config, manager, _ = _open(args)
    tz = zone(_timezone(config))
    rows = manager.status()
    if args.name:
        rows = [row for row in rows if row["name"] == args.name]
        if not rows:
            print(f"error: no collector named {args.name!r}", file=sys.stderr)
            return 2
    if args.json:
        print(json.dumps(rows[0] if args.name else rows, indent=2, ensure_ascii=False, default=str))
        return 0
    if not rows:
        print("no collectors found")
        return 0
    header = [
        "name",
        "enabled",
        "outcome",
        "last start",
        "duration",
        "next run",
        "failures",
        "sources failing",
        "error",
    ]
    table = [header]
    for row in rows:
        sources = row.get("sources") or {}
        table.append(
            [
                row["name"],
                "yes" if row["enabled"] else "no",
                row["outcome"] or "never run",
                _local(row["last_start"], tz),
                "-" if row["duration_s"] is None else f"{row['duration_s']:.2f}s",
                _local(row["next_run"], tz),
                str(row["consecutive_failures"]),
                f"{row.get('failing_sources', 0)}/{len(sources)}" if sources else "-",
                (row["error"] or "")[:80],
            ]
        )
    widths = [max(len(r[i]) for r in table) for i in range(len(header) - 1)]
    for line in table:
        print("  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=False)) + "  " + line[-1])
    if args.name:
        _print_sources(rows[0].get("sources") or {}, tz)
    return 0


def _print_sources(sources: JsonObject, tz: ZoneInfo) -> None:
    """The failing sources with their last error, then sources that skipped items."""
    failing = {k: v for k, v in sources.items() if not v.get("ok")}
    print()
    print(f"{len(failing)} of {len(sources)} source(s) failing" if sources else "no per-source results yet")
    for name, row in sorted(failing.items()):
        since = f", last ok {_local(row.get('last_ok'), tz)}" if row.get("last_ok") else ", never ok"
        print(f"  {name}: failed {row.get('failures', 1)} run(s) in a row{since}")
        print(f"    {row.get('last_error')}")
    for name, row in sorted(sources.items()):
        skipped = row.get("skipped") or []
        if row.get("ok") and skipped:
            print(f"  {name}: ok, {len(skipped)} item(s) skipped")
            for item in skipped[:10]:
                print(f"    {item.get('uid') or '(no UID)'}: {item.get('reason')}")


def _local(iso: str | None, tz: ZoneInfo) -> str:
    moment = from_iso(iso)
    return "-" if moment is None else moment.astimezone(tz).strftime("%Y-%m-%d %H:%M")


def cmd_run_loop(args: argparse.Namespace) -> int:
    config, manager, problems = _open(args)
    for problem in problems:
        print(f"config: {problem}")
    enabled = [c.name for c in manager.enabled()]
    if not enabled:
        print("no collector is enabled; set collectors.<name>.enabled to true")
        return 1
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    print(f"running collectors {', '.join(enabled)} (timezone {_timezone(config)}); Ctrl-C stops")
    with _runner(config, manager) as runner:
        try:
            runner.run_forever()
        except KeyboardInterrupt:
            print("stopped")
    return 0


def cmd_setup(args: argparse.Namespace) -> int:
    _, manager, _ = _open(args)
    try:
        collector = manager.get(args.name)
    except KeyError as exc:
        print(f"error: {exc.args[0]}", file=sys.stderr)
        return 2
    if collector.setup is None:
        print(f"{collector.name} needs no interactive setup; edit config/collectors/{collector.name}.json")
        return 0
    return int(collector.setup(collector.config, manager.workspace) or 0)
