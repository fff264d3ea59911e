"""The framework CLI: ``python -m assistant_framework.cli <group> <command>``.

Each command group lives in ``assistant_framework/commands/<group>.py`` and
exposes ``register(subparsers)``; its handlers return an exit status.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Sequence

from assistant_framework.config import ConfigError
from assistant_framework.workspace import WorkspacePathError

#: Command groups in help order; a group whose module is absent is skipped.
COMMAND_GROUPS = ("config", "skills", "collectors", "memory", "trace", "eval", "web")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="assistant",
        description="Manage the assistant's config, skills, collectors, memory, traces and evals.",
    )
    subparsers = parser.add_subparsers(dest="group", metavar="GROUP")
    subparsers.required = True
    for group in COMMAND_GROUPS:
        try:
            module = importlib.import_module(f"assistant_framework.commands.{group}")
        except ModuleNotFoundError as exc:
            if exc.name == f"assistant_framework.commands.{group}":
                continue
            raise
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one CLI command; returns the exit status (2 for usage and config errors)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "func", None)
    if handler is None:
        parser.parse_args([*(argv or sys.argv[1:]), "--help"])
        return 2
    try:
        return int(handler(args) or 0)
    except ConfigError as exc:
        print(f"config error: {exc}", file=sys.stderr)
        return 2
    except WorkspacePathError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
