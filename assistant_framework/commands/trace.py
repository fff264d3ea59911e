"""``trace last-prompt|list|show``: what the model received, from the workspace traces.

Room is left for ``trace replay`` / ``trace export-cases`` (another module may register
more sub-commands on the same group through ``register_more``).
"""

from __future__ import annotations

import argparse
import json

from ..traces import TraceStore
from ..workspace import Workspace


def add_workspace_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workspace", default="workspace", help="workspace folder (default: workspace)")


def register(subparsers: argparse._SubParsersAction) -> argparse._SubParsersAction:
    """Add the ``trace`` group; returns its sub-parsers so later commands can join it."""
    group = subparsers.add_parser("trace", help="inspect what the model received and answered")
    commands = group.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True

    last = commands.add_parser("last-prompt", help="print the last request sent to the model, with section sizes")
    add_workspace_option(last)
    last.set_defaults(func=cmd_last_prompt)

    list_ = commands.add_parser("list", help="list recent traces (id, time, conversation, model, tokens, rounds)")
    add_workspace_option(list_)
    list_.add_argument("-n", "--limit", type=int, default=20, help="how many (default 20)")
    list_.set_defaults(func=cmd_list)

    show = commands.add_parser("show", help="print one trace as JSON (an id or a unique id prefix)")
    add_workspace_option(show)
    show.add_argument("id")
    show.set_defaults(func=cmd_show)
    return commands


def _store(args: argparse.Namespace) -> TraceStore:
    # create=False: inspecting must not lay out a workspace in a mistyped folder.
    return TraceStore(Workspace(args.workspace, create=False))


def format_messages(messages: list[dict]) -> str:
    """Messages with ``=== role ===`` headers, contents verbatim."""
    parts = []
    for message in messages:
        content = message.get("content")
        if not isinstance(content, str):
            content = json.dumps(content, ensure_ascii=False, indent=2)
        parts.append(f"=== {message.get('role', '?')} ===\n{content}")
    return "\n\n".join(parts)


def format_section_sizes(sizes: dict) -> str:
    """A small table of prompt sections: characters and estimated tokens."""
    if not sizes:
        return "(no section sizes recorded)"
    width = max(len(name) for name in sizes)
    lines = [f"{'section'.ljust(width)}  {'chars':>8}  {'~tokens':>8}"]
    for name, size in sizes.items():
        lines.append(f"{name.ljust(width)}  {size.get('chars', 0):>8}  {size.get('tokens', 0):>8}")
    return "\n".join(lines)


def cmd_last_prompt(args: argparse.Namespace) -> int:
    trace = _store(args).last()
    if trace is None or not trace.get("requests"):
        print(f"no traces in {args.workspace}/traces yet: send the bot a message first")
        return 1
    request = trace["requests"][-1]
    print(format_messages(request.get("messages") or []))
    print()
    print(f"--- prompt sections (trace {trace['id']}, model {request.get('model', '?')}) ---")
    print(format_section_sizes(trace.get("section_sizes") or {}))
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    rows = _store(args).summaries(limit=args.limit)
    if not rows:
        print(f"no traces in {args.workspace}/traces yet")
        return 0
    for row in rows:
        tokens = f"{row.prompt_tokens if row.prompt_tokens is not None else '?'}/{row.completion_tokens if row.completion_tokens is not None else '?'}"
        status = "" if row.ok else "  FAILED"
        print(f"{row.id}  {row.time[:19]}  {row.conversation}  {row.model}  tokens {tokens}  rounds {row.rounds}{status}")
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    store = _store(args)
    try:
        trace = store.load(store.find(args.id))
    except KeyError as exc:
        print(f"error: {exc.args[0]}")
        return 1
    print(json.dumps(trace, indent=2, ensure_ascii=False))
    return 0
