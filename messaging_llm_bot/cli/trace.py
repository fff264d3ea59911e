"""``trace last-prompt|list|show``: what the model received, from the workspace traces.

Room is left for ``trace replay`` / ``trace export-cases`` (another module may register
more sub-commands on the same group through ``register_more``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

from assistant_framework.hints import CLI
from assistant_framework.json_types import JsonObject
from assistant_framework.traces import TraceRecord, TraceStore, collect_secrets, redact_secrets
from assistant_framework.workspace import atomic_write_bytes, existing_workspace
from messaging_llm_bot.cli import int_range, refused_by_caps
from messaging_llm_bot.cli.config import Subparsers


def add_workspace_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workspace", default="workspace", help="workspace folder (default: workspace)")


def add_config_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config",
        default="config",
        help="config whose secrets are masked in the output (default: config; skipped when absent)",
    )


def config_secrets(path: str) -> list[str]:
    """The secrets of the config at ``path``, to mask in what is printed: a trace written before a
    key was configured may hold it. [] when there is no readable config."""
    from assistant_framework.config import ConfigError, load_config

    try:
        return collect_secrets(load_config(path))
    except (ConfigError, OSError, ValueError):
        return []


def register(
    subparsers: Subparsers,
) -> Subparsers:
    """Add the ``trace`` group; returns its sub-parsers so later commands can join it."""
    group = subparsers.add_parser("trace", help="inspect what the model received and answered")
    commands = group.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True

    last = commands.add_parser("last-prompt", help="print the last request sent to the model, with section sizes")
    add_workspace_option(last)
    last.add_argument("--json", action="store_true", help="the request (messages, model) and section sizes as JSON")
    add_config_option(last)
    last.set_defaults(func=cmd_last_prompt)

    list_ = commands.add_parser("list", help="list recent traces (id, time, conversation, model, tokens, rounds)")
    add_workspace_option(list_)
    list_.add_argument("-n", "--limit", type=int_range(1), default=20, help="how many (default 20)")
    list_.add_argument("--json", action="store_true", help="one JSON list of the summaries")
    list_.set_defaults(func=cmd_list)

    show = commands.add_parser("show", help="print one trace as JSON (an id or a unique id prefix)")
    add_workspace_option(show)
    show.add_argument("id")
    show.add_argument("--json", action="store_true", help="(the trace is always printed as JSON)")
    add_config_option(show)
    show.set_defaults(func=cmd_show)

    replay = commands.add_parser(
        "replay",
        help="re-send recorded prompts to the current model: does it pick the same skill and args?",
        description="Re-send the recorded requests of chosen traces to the current runner and show, per trace, "
        "whether the model now picks the same skill with the same arguments.",
    )
    _add_selection(replay)
    replay.add_argument("--config", default="config", help="config file or directory (default: config)")
    replay.add_argument("--runner", help="use this runner from llm.runners")
    replay.add_argument("--base-url", help="an OpenAI-compatible base URL instead of the configured runner")
    replay.add_argument("--model", help="the model name to send")
    replay.add_argument(
        "--current-prompt",
        action="store_true",
        help="replace the recorded system prompt with the one the current skills and workspace give",
    )
    replay.add_argument(
        "--all-rounds", action="store_true", help="replay every skill round, not only each trace's first request"
    )
    replay.set_defaults(func=cmd_replay)

    export = commands.add_parser(
        "export-cases", help=f"turn chosen traces into eval cases (YAML) for `{CLI} eval skills --cases`"
    )
    _add_selection(export)
    export.add_argument("--out", required=True, help="the YAML file to write")
    export.add_argument("--category", default="from_traces", help="category of the cases (default: from_traces)")
    export.set_defaults(func=cmd_export_cases)
    return commands


def _add_selection(parser: argparse.ArgumentParser) -> None:
    add_workspace_option(parser)
    parser.add_argument("ids", nargs="*", metavar="ID", help="trace ids or unique prefixes")
    parser.add_argument(
        "--last", type=int_range(1), metavar="N", help="the last N traces (default: the last one when no ID is given)"
    )


def _selected(args: argparse.Namespace) -> list[TraceRecord]:
    store = _store(args)
    ids = [store.find(i) for i in args.ids]
    if args.last or not ids:
        ids += store.ids()[-(args.last or 1) :]
    traces = []
    for trace_id in dict.fromkeys(ids):
        try:
            traces.append(store.load(trace_id))
        except ValueError as exc:
            _skipped([str(exc)])
    return traces


def _skipped(damaged: list[str]) -> None:
    """Name each damaged trace file that was left out (on stderr: stdout may be JSON for a script)."""
    for problem in damaged:
        print(f"skipped a damaged trace: {problem}", file=sys.stderr)


def _store(args: argparse.Namespace) -> TraceStore:
    # Inspecting must not lay out a workspace in a mistyped folder.
    return TraceStore(existing_workspace(args.workspace))


def format_messages(messages: list[JsonObject]) -> str:
    """Messages with ``=== role ===`` headers, contents verbatim."""
    parts = []
    for message in messages:
        content = message.get("content")
        if not isinstance(content, str):
            content = json.dumps(content, ensure_ascii=False, indent=2)
        parts.append(f"=== {message.get('role', '?')} ===\n{content}")
    return "\n\n".join(parts)


def format_section_sizes(sizes: JsonObject) -> str:
    """A small table of prompt sections: characters and estimated tokens."""
    if not sizes:
        return "(no section sizes recorded)"
    width = max(len(name) for name in sizes)
    lines = [f"{'section'.ljust(width)}  {'chars':>8}  {'~tokens':>8}"]
    for name, size in sizes.items():
        lines.append(f"{name.ljust(width)}  {size.get('chars', 0):>8}  {size.get('tokens', 0):>8}")
    return "\n".join(lines)


def cmd_last_prompt(args: argparse.Namespace) -> int:
    damaged: list[str] = []
    trace = _store(args).last(damaged)
    _skipped(damaged)
    if trace is None or not trace.get("requests"):
        # With --json, stdout stays for JSON only (a script pipes it): the sentence goes to stderr.
        print(
            f"no traces in {args.workspace}/traces yet: send the bot a message first",
            file=sys.stderr if args.json else sys.stdout,
        )
        return 1
    trace = redact_secrets(trace, config_secrets(args.config))
    request = trace["requests"][-1]
    if args.json:
        print(
            json.dumps(
                {"trace": trace["id"], "request": request, "section_sizes": trace.get("section_sizes") or {}},
                indent=2,
                ensure_ascii=False,
            )
        )
        return 0
    print(format_messages(request.get("messages") or []))
    print()
    print(f"--- prompt sections (trace {trace['id']}, model {request.get('model', '?')}) ---")
    print(format_section_sizes(trace.get("section_sizes") or {}))
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    damaged: list[str] = []
    rows = _store(args).summaries(limit=args.limit, damaged=damaged)
    _skipped(damaged)
    if args.json:
        print(json.dumps([dataclasses.asdict(row) for row in rows], indent=2, ensure_ascii=False))
        return 0
    if not rows:
        print(f"no traces in {args.workspace}/traces yet")
        return 0
    for row in rows:
        prompt_tokens = "?" if row.prompt_tokens is None else row.prompt_tokens
        completion_tokens = "?" if row.completion_tokens is None else row.completion_tokens
        tokens = f"{prompt_tokens}/{completion_tokens}"
        status = "" if row.ok else "  FAILED"
        print(
            f"{row.id}  {row.time[:19]}  {row.conversation}  {row.model}  tokens {tokens}  rounds {row.rounds}{status}"
        )
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    store = _store(args)
    try:
        trace = store.load(store.find(args.id))
    except KeyError as exc:
        print(f"error: {exc.args[0]}", file=sys.stderr)
        return 2
    except ValueError as exc:  # found, but its file is cut short or not JSON
        print(f"error: the trace is damaged: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(redact_secrets(trace, config_secrets(args.config)), indent=2, ensure_ascii=False))
    return 0


def cmd_replay(args: argparse.Namespace) -> int:
    # Imported here: replay talks to model servers, which the rest of this CLI never does.
    from assistant_framework.config import load_config
    from messaging_llm_bot.evals.replay import format_replay, replay_trace
    from messaging_llm_bot.evals.runner import counted_client, eval_llm_config
    from messaging_llm_bot.llm.probe import check_runner
    from messaging_llm_bot.runtime import build_runtime

    try:
        traces = _selected(args)
    except KeyError as exc:
        print(f"error: {exc.args[0]}", file=sys.stderr)
        return 2
    if not traces:
        print(f"no traces in {args.workspace}/traces yet")
        return 1
    config = load_config(args.config)
    try:
        llm_config = eval_llm_config(
            config.get("llm") or {}, runner=args.runner, base_url=args.base_url, model=args.model
        )
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    problem = check_runner(llm_config["runners"][0])
    if problem:  # one clear error instead of one per trace
        print(f"error: {problem}", file=sys.stderr)
        return 2
    runtime = build_runtime(args.config, args.workspace)
    try:
        names = runtime.skills.names()
        system = runtime.agent.prompt.system_prompt().text if args.current_prompt else None
    finally:
        runtime.shutdown(timeout=5)
    llm = counted_client(llm_config, config, args.workspace)  # counted against the caps, as the bot's calls
    try:
        if refused_by_caps(llm):
            return 1
        outcomes = [
            o
            for trace in traces
            for o in replay_trace(trace, llm, names, system_prompt=system, all_rounds=args.all_rounds)
        ]
    finally:
        llm.close()
    print(format_replay(outcomes))
    # 1 when the model now errs or chooses differently: the replay found something to look at.
    return 0 if outcomes and all(o.verdict == "same" for o in outcomes) else 1


def cmd_export_cases(args: argparse.Namespace) -> int:
    import yaml

    from messaging_llm_bot.evals.replay import export_cases

    try:
        traces = _selected(args)
    except KeyError as exc:
        print(f"error: {exc.args[0]}", file=sys.stderr)
        return 2
    out = Path(args.out)
    if not out.resolve().parent.is_dir():
        print(f"error: --out {args.out}: the folder {out.parent} does not exist", file=sys.stderr)
        return 2
    cases = export_cases(traces, category=args.category)
    if not cases:
        print("no usable traces (failed turns and traces without a model request are skipped)")
        return 1
    text = yaml.safe_dump({"cases": cases}, sort_keys=False, allow_unicode=True)
    try:
        atomic_write_bytes(out, text.encode("utf-8"))
    except OSError as exc:
        print(f"error: cannot write {args.out}: {exc.strerror}", file=sys.stderr)
        return 2
    print(
        f"{len(cases)} case(s) written to {args.out}; review the expectations, then run: "
        f"{CLI} eval skills --cases {args.out}"
    )
    return 0
