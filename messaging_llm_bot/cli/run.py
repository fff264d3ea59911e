"""Start the bot: ``assistant run [--config config] [--workspace workspace] [--frontend NAME]`` (a channel of the
registry, conversation/routes.py: telegram, signal, console, ...).

``assistant-bot`` and ``python -m messaging_llm_bot`` are the same command with the same options.
"""

from __future__ import annotations

import argparse
import gc
import logging
import logging.handlers
import os
import sys
import threading
from collections.abc import Sequence
from io import TextIOWrapper
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, cast

from assistant_framework import version
from assistant_framework.config import ConfigError
from assistant_framework.hints import CLI
from assistant_framework.redaction import redact_text
from assistant_framework.traces import collect_secrets
from assistant_framework.workspace import WorkspacePathError
from assistant_framework.workspace.inuse import InUse, hold_in_use
from assistant_framework.workspace.private import make_private_dirs, use_private_umask
from messaging_llm_bot.cli import REGISTRATION_ERRORS, registration_refused
from messaging_llm_bot.cli.config import Subparsers
from messaging_llm_bot.conversation.routes import channel_names

if TYPE_CHECKING:
    from messaging_llm_bot.runtime import BotRuntime

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
CONSOLE_LOG = "state/logs/console.log"
BOT_LOG = "state/logs/bot.log"
#: How long leaving the terminal chat (/quit, Ctrl-D) waits for background work: memory work left over is
#: in the extraction journal and resumes at the next start, so the user need not wait for a model call.
CONSOLE_EXIT_SECONDS = 1.0
LEFT_FOR_NEXT_START = "Memory work still under way continues at the next start."
_LIBRARY_LOGGERS = ("telegram", "httpx", "httpcore")
NO_TOKEN = (
    "No Telegram bot token is configured (set telegram.token in the config, "
    "or the TELEGRAM_BOT_TOKEN environment variable; `make setup` asks for it and checks it). "
    "To chat in this terminal instead: `make chat`."
)
#: At a terminal the bot goes on as the terminal chat: said once, without telling to start what is starting.
NO_TOKEN_TERMINAL_CHAT = (
    "No Telegram bot token is configured, so this is the terminal chat (`make chat` starts it without this line; "
    "`make setup` adds Telegram: it asks for the token and checks it)."
)


class OneLineRedactingFormatter(logging.Formatter):
    """One line per record (tracebacks folded with ' | '), secrets replaced by ***."""

    def __init__(self, secrets: list[str] | None = None) -> None:
        super().__init__(LOG_FORMAT)
        self.secrets = sorted(set(secrets or []), key=len, reverse=True)

    def format(self, record: logging.LogRecord) -> str:
        if (
            record.exc_info
            and record.name.startswith(_LIBRARY_LOGGERS)
            and not logging.getLogger().isEnabledFor(logging.DEBUG)
        ):
            # A library's network retries (no connection to Telegram, say) need their cause, not
            # 80 frames of httpx; LOG_LEVEL=DEBUG keeps the full traceback.
            exc = record.exc_info[1]
            record = logging.makeLogRecord(
                {
                    **record.__dict__,
                    "exc_info": None,
                    "exc_text": None,
                    "msg": f"{record.getMessage()} ({type(exc).__name__}: {exc})",
                    "args": None,
                }
            )
        text = super().format(record)
        text = redact_text(text, self.secrets)
        return " | ".join(line for line in text.splitlines() if line.strip())


class PrivateRotatingFileHandler(logging.handlers.RotatingFileHandler):
    """The bot's log in the workspace, created 0600 (at every rollover too) whatever the umask."""

    def _open(self) -> TextIOWrapper:
        # A text mode ("a" or "w"): open gives a TextIOWrapper, which mypy cannot tell from a variable mode.
        stream = open(  # noqa: SIM115 - the handler owns and closes the stream
            self.baseFilename, self.mode, encoding=self.encoding, errors=self.errors, opener=_private_opener
        )
        return cast(TextIOWrapper, stream)


def _private_opener(path: str, flags: int) -> int:
    return os.open(path, flags, 0o600)


def setup_logging(
    level: str = "INFO", secrets: list[str] | None = None, *, log_file: Path | None = None, quiet_terminal: bool = True
) -> None:
    """Log to stderr, one line per record; chatty HTTP libraries at WARNING.

    With ``log_file`` records also go to that rotating file; ``quiet_terminal`` (the interactive
    terminal chat) lets only errors reach the terminal, so warnings do not break into the conversation.
    """
    formatter = OneLineRedactingFormatter(secrets)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(formatter)
    handlers: list[logging.Handler] = [handler]
    if log_file is not None:
        make_private_dirs(log_file.parent)
        to_file = PrivateRotatingFileHandler(log_file, maxBytes=2_000_000, backupCount=2, encoding="utf-8")
        to_file.setFormatter(formatter)
        handlers.append(to_file)
        if quiet_terminal:
            handler.setLevel(logging.ERROR)
    root = logging.getLogger()
    root.handlers[:] = handlers
    root.setLevel(level)
    for name in ("httpx", "httpcore", "urllib3", "telegram"):
        logging.getLogger(name).setLevel(logging.WARNING)


RUN_DESCRIPTION = """Start the bot: every enabled chat frontend (Telegram when telegram.token is set,
Signal with signal.enabled; side by side), or the terminal chat with --frontend console.
The same as assistant-bot and python -m messaging_llm_bot."""
RUN_EXAMPLES = f"""examples:
  {CLI} run                       # what make run does
  {CLI} run --frontend console    # the terminal chat (make chat)
  {CLI} run --config /opt/assistant/config --workspace /opt/assistant/workspace

first run: {CLI} setup (make setup) asks for the Telegram token and the model server;
{CLI} doctor (make doctor) checks everything the bot needs.
exit status: 2 for a config error (a service manager should not restart it)."""


def add_run_options(parser: argparse.ArgumentParser) -> None:
    """The options of every way to start the bot (``assistant run``, ``assistant-bot``, ``python -m``)."""
    parser.add_argument("--config", default="config", help="config file or directory (default: config)")
    parser.add_argument("--workspace", default="workspace", help="workspace folder (default: workspace)")
    parser.add_argument(
        "--frontend",
        choices=channel_names(),
        default=None,
        help="default: every enabled chat frontend (telegram with a token, signal with "
        "signal.enabled; both run side by side), else telegram",
    )


def build_parser() -> argparse.ArgumentParser:
    """``assistant-bot``'s parser: the options of ``assistant run``."""
    parser = argparse.ArgumentParser(
        prog="assistant-bot",
        description=RUN_DESCRIPTION,
        epilog=RUN_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_run_options(parser)
    parser.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    return parser


def register(subparsers: Subparsers) -> None:
    run = subparsers.add_parser(
        "run",
        help="start the bot (every enabled chat frontend, or --frontend console for the terminal chat)",
        description=RUN_DESCRIPTION,
        epilog=RUN_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_run_options(run)
    run.set_defaults(func=cmd_run)


#: The garbage collector's thresholds in the bot's own process (``python -m messaging_llm_bot``, ``assistant run``;
#: not a bot started inside another program). With Python's 700 a turn's allocations ran 2-3 collections, each
#: promoting the turn's live objects, so a full collection over start-up's 110,000 objects (tens of ms, one turn
#: slow) came every few hundred turns; at 7000, measured through bench/e2e.py's bot: 0.43 -> 0.1 ms of collection
#: a turn, none full in 300 turns. Nearly everything a turn makes is freed by reference counting anyway.
GC_THRESHOLDS = (7000, 10, 10)


def cmd_run(args: argparse.Namespace) -> NoReturn:
    """``assistant run``: start the bot; ends the process as ``python -m messaging_llm_bot`` does."""
    gc.set_threshold(*GC_THRESHOLDS)
    exit_now(start(args))


def main(argv: Sequence[str] | None = None) -> int:
    """Start the bot from ``assistant-bot``'s arguments; returns the exit status (2 for config problems)."""
    return start(build_parser().parse_args(argv))


def run_and_exit(argv: Sequence[str] | None = None) -> NoReturn:
    """``assistant-bot`` and ``python -m messaging_llm_bot``: start the bot, then end the process (``exit_now``)."""
    gc.set_threshold(*GC_THRESHOLDS)
    exit_now(main(argv))


def start(args: argparse.Namespace) -> int:
    """Start the bot with parsed run options; returns the exit status when it stops (2 for config problems)."""
    # Whatever the umask the bot was started with (022 is usual): nothing it or a plugin creates is
    # readable by other users of the machine.
    use_private_umask()
    setup_logging("WARNING")
    from messaging_llm_bot.cli import first_run  # after logging: import-time warnings formatted

    new_workspace = not first_run.is_workspace(args.workspace)
    opened = _open_runtime(args, new_workspace)
    if isinstance(opened, int):
        return opened
    runtime, in_use = opened
    try:
        return _run_opened(args, runtime, in_use, new_workspace)
    except REGISTRATION_ERRORS as exc:  # a channel's file the registry names, looked up before anything started
        runtime.shutdown(timeout=5)
        return registration_refused(exc)


def _run_opened(args: argparse.Namespace, runtime: BotRuntime, in_use: InUse, new_workspace: bool) -> int:
    """``start`` once the runtime is open: the listeners and the channels, until they stop."""
    from messaging_llm_bot.cli import first_run
    from messaging_llm_bot.runtime import runner_secrets

    configured = runtime.settings.runtime
    # The terminal chat keeps stderr for progress; only warnings and errors go there by default.
    default_level = "WARNING" if args.frontend == "console" else "INFO"
    secrets = collect_secrets(runtime.config, runner_secrets(runtime.config))
    setup_logging(configured.log_level or default_level, secrets)
    if not _start_listeners(runtime):
        return 2

    from messaging_llm_bot.channels.run import enabled_frontends, run_chat_frontends

    chats = enabled_frontends(runtime.settings) if args.frontend is None else [args.frontend]
    frontend = _frontend(args.frontend or ("chat" if chats else "telegram"), runtime)
    if frontend is None:
        return 2
    if new_workspace:  # said once the bot goes on with it (not before an exit for a missing token)
        first_run.say_new_workspace(runtime.workspace.root)
    if frontend == "console":
        return _run_console(args, runtime, in_use, secrets)
    # Also a rotating file in the workspace, as the terminal chat has: a service's stderr may go nowhere.
    setup_logging(
        configured.log_level or default_level,
        secrets,
        log_file=runtime.workspace.path(BOT_LOG),
        quiet_terminal=False,
    )
    return run_chat_frontends(runtime, chats or ["telegram"])


def _open_runtime(args: argparse.Namespace, new_workspace: bool) -> tuple[BotRuntime, InUse] | int:
    """The runtime of the config and workspace asked, held in use; or the exit status when it cannot start."""
    from messaging_llm_bot.cli import first_run
    from messaging_llm_bot.runtime import build_runtime

    # Only the first run's default path is created unasked: a typo must not start on an empty memory.
    if (
        new_workspace
        and sys.stdin.isatty()
        and not first_run.is_default_workspace(args.workspace)
        and not first_run.confirm_new_workspace(args.workspace)
    ):
        print("Nothing was created.", file=sys.stderr)
        return 2
    try:
        # The parts are built once the frontend is up (Telegram: beside its first poll; terminal: first use).
        runtime = build_runtime(args.config, args.workspace, defer=True)
        # Held until the process ends: `assistant restore` refuses a workspace a bot is running on.
        return runtime, hold_in_use(runtime.workspace.root)  # kept for the process's lifetime
    except ConfigError as exc:
        print(f"config error: {exc}", file=sys.stderr)
        return 2
    except REGISTRATION_ERRORS as exc:  # the config's reading finds each registered channel's section
        return registration_refused(exc)
    except (WorkspacePathError, OSError) as exc:
        print(f"error: cannot open workspace {args.workspace!r}: {exc}", file=sys.stderr)
        return 2


def _start_listeners(runtime: BotRuntime) -> bool:
    """The web page and the hooks' listener when the config turns them on; False (said, runtime shut down)
    when a hook's config is refused."""
    from messaging_llm_bot.runtime import runner_secrets

    if runtime.settings.web.enabled:  # the page in the same process; Tornado only then
        from assistant_framework.web import start_if_enabled
        from messaging_llm_bot.channels.run import web_mounts
        from messaging_llm_bot.serve.control_page import control_mount
        from messaging_llm_bot.serve.mounts import served_mounts

        mounts = served_mounts(runtime.settings, runtime.workspace, runtime.memory, runtime=runtime)
        mounts.append(control_mount(runtime.config_path, runtime))  # the Control section: /model, /pair
        mounts += web_mounts(runtime)  # the configured channels' pages (the web chat's: docs/web.md#chat)
        start_if_enabled(runtime, runner_secrets(runtime.config), mounts)

    if runtime.settings.hooks.endpoints:  # outside events start turns (docs/actions.md); Tornado only then
        from messaging_llm_bot.conversation.hook_runs import start_hooks

        try:
            start_hooks(runtime)
        except ConfigError as exc:
            print(f"config error: {exc}", file=sys.stderr)
            runtime.shutdown(timeout=5)
            return False
    return True


def _frontend(frontend: str, runtime: BotRuntime) -> str | None:
    """The frontend to run: Telegram without a token is the terminal chat at a terminal; None (said, runtime
    shut down) when there is none."""
    if frontend == "telegram" and not runtime.settings.telegram.token:
        if not sys.stdin.isatty():
            print(NO_TOKEN, file=sys.stderr)
            runtime.shutdown(timeout=5)
            return None
        print(NO_TOKEN_TERMINAL_CHAT, file=sys.stderr)
        return "console"
    return frontend


def _run_console(args: argparse.Namespace, runtime: BotRuntime, in_use: InUse, secrets: list[str]) -> int:
    """The terminal chat until it ends; at a terminal the log goes to a file, and a setup run when no model
    server answered starts the bot again with the new settings."""
    from messaging_llm_bot.channels.contract import RunOptions
    from messaging_llm_bot.channels.run import runner_factory
    from messaging_llm_bot.cli import first_run

    configured = runtime.settings.runtime
    if sys.stdin.isatty():
        first_run.cooked_terminal(sys.stdin)  # left raw by a chat killed before it could restore it
        log_file = runtime.workspace.path(CONSOLE_LOG)
        setup_logging(configured.log_level or "INFO", secrets, log_file=log_file)
        print(f"(the log goes to {log_file})", file=sys.stderr)
        if first_run.setup_ran_and_passed(runtime, args):  # no model server answered; the user ran setup
            runtime.shutdown(timeout=5)
            in_use.release()
            print("Setup done; starting with the new settings.", file=sys.stderr, flush=True)
            return start(args)

    runner = runner_factory("console")  # looked up first: a wrong registration is refused before the finally
    try:
        return runner(runtime, RunOptions()).run()
    finally:
        if not runtime.shutdown(timeout=min(configured.shutdown_timeout_seconds, CONSOLE_EXIT_SECONDS)):
            print(LEFT_FOR_NEXT_START, file=sys.stderr, flush=True)


def exit_now(code: int) -> NoReturn:
    """Exit with ``code`` without waiting for worker threads still blocked in a model call.

    Shutdown already waited its bound; whatever such a thread was doing is either in an atomic file
    or still in the inbox, so nothing is lost by not waiting for its HTTP timeout.
    """
    lingering = [t.name for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon]
    # Idle executor workers are among them too, so this is no warning.
    logging.getLogger(__name__).debug("exiting with code %d; not waiting for threads %s", code, lingering)
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
