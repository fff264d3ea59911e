"""The operator CLI: ``assistant <group> <command>`` (also ``python -m messaging_llm_bot.cli``).

Each command group lives in ``messaging_llm_bot/cli/<group>.py`` and exposes
``register(subparsers)``; its handlers return an exit status. It sits beside the runtime, above
every part of the bot, so ``setup``, ``doctor``, ``eval``, ``trace replay`` and ``run`` use the bot
directly and the framework never imports the bot.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import os
import sys
from collections.abc import Sequence

from assistant_framework import version
from assistant_framework.config import ConfigError
from assistant_framework.workspace import WorkspacePathError
from assistant_framework.workspace.private import private_umask
from messaging_llm_bot.cli import REGISTRATION_ERRORS, UsageError, registration_refused

#: Command groups in help order; a group whose module is absent is skipped.
COMMAND_GROUPS = (
    "run",
    "setup",
    "doctor",
    "config",
    "skills",
    "mcp",
    "collectors",
    "jobs",
    "hooks",
    "usage",
    "pair",
    "memory",
    "trace",
    "eval",
    "backup",
    "web",
)

#: Set to 1 to see the Python traceback of an unexpected error.
DEBUG_ENV = "ASSISTANT_DEBUG"


@functools.cache
def build_parser() -> argparse.ArgumentParser:
    """The command line's parser, built once per process: nothing in it depends on the call (each command's
    handler reads its config when it runs), and building it costs about 20 ms of CPU (argparse asks gettext
    for every help text) that the tests' hundreds of in-process CLI calls paid again each time."""
    parser = argparse.ArgumentParser(
        prog="assistant",
        description=(
            "Run the assistant and manage its config, skills, MCP servers, collectors, jobs, memory, traces and evals."
        ),
        epilog="Exit status: 0 all good, 1 the command ran and found failures, 2 usage or config error.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    subparsers = parser.add_subparsers(dest="group", metavar="GROUP")
    subparsers.required = True
    for group in COMMAND_GROUPS:
        try:
            module = importlib.import_module(f"messaging_llm_bot.cli.{group}")
        except ModuleNotFoundError as exc:
            if exc.name == f"messaging_llm_bot.cli.{group}":
                continue
            raise
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one CLI command; returns the exit status (2 for usage and config errors)."""
    try:
        parser = build_parser()  # reads every channel's setup flags: a wrong registration is said in one line
    except REGISTRATION_ERRORS as exc:
        return registration_refused(exc)
    except Exception as exc:  # noqa: BLE001 - a bug: one line, the traceback on request
        return _internal_error(exc)
    args = parser.parse_args(argv)
    handler = getattr(args, "func", None)
    if handler is None:
        parser.parse_args([*(argv or sys.argv[1:]), "--help"])
        return 2
    try:
        # Files a command creates (the index, a restored workspace, an archive, a plugin's output) are
        # the owner's alone, whatever the umask; the caller's umask comes back after.
        with private_umask():
            return int(handler(args) or 0)
    except ConfigError as exc:
        print(f"config error: {exc}", file=sys.stderr)
        return 2
    except (WorkspacePathError, UsageError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except REGISTRATION_ERRORS as exc:
        return registration_refused(exc)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except OSError as exc:  # a file or folder the user named: no traceback, say which
        where = f" {exc.filename}" if exc.filename else ""
        print(f"error:{where}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # a bug: one line, the traceback on request
        return _internal_error(exc)


def _internal_error(exc: Exception) -> int:
    """A bug's one line on stderr (exit status 1); with ``ASSISTANT_DEBUG`` set, its traceback instead."""
    if os.environ.get(DEBUG_ENV):
        raise exc
    print(f"internal error: {type(exc).__name__}: {exc} (run with {DEBUG_ENV}=1 for the traceback)", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
