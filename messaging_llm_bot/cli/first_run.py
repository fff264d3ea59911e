"""The first minutes of ``make run`` / ``make chat`` at a terminal: no dead end.

- A workspace that does not exist yet is created only on a documented first-run path (the default
  ``workspace/``, a service's first start) and said; at a terminal any other path is asked about first,
  so ``make chat WORKSPACE=<typo>`` never starts on a new, empty memory without a word.
- Before the first prompt the model runners are probed; when none answers, the user is told what was
  tried and offered ``make setup``, which runs right there when they say yes.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from assistant_framework.json_types import JsonObject
from assistant_framework.workspace import is_workspace as workspace_exists

if TYPE_CHECKING:
    from messaging_llm_bot.runtime import BotRuntime

#: The workspace ``make run`` and ``assistant run`` use unless told otherwise: its first run is documented.
DEFAULT_WORKSPACE = "workspace"


def is_workspace(path: str | Path) -> bool:
    """Whether ``path`` holds a workspace already (the bot's ``state/`` folder is in it)."""
    return workspace_exists(path)


def is_default_workspace(path: str | Path) -> bool:
    """Whether ``path`` is the default ``workspace/`` of the current folder (the checkout's)."""
    return Path(path).expanduser().resolve() == Path(DEFAULT_WORKSPACE).resolve()


def confirm_new_workspace(path: str, ask: Callable[[str], str] = input) -> bool:
    """At a terminal: whether to create the workspace ``path`` that does not exist (default: no)."""
    where = Path(path).expanduser().resolve()
    print(
        f"There is no workspace at {where} (memory, notes and settings live in one).\n"
        "If you meant an existing one, answer n and check --workspace (WORKSPACE= for make).",
        file=sys.stderr,
        flush=True,
    )
    try:
        reply = ask("Create a new, empty workspace there? [y/N] ").strip().lower()
    except EOFError:
        return False
    return reply in ("y", "yes")


def say_new_workspace(root: Path) -> None:
    """Said whenever the bot created a workspace (first run), so a typo is seen at once."""
    print(f"Created a new, empty workspace at {root} (first run).", file=sys.stderr, flush=True)


def unreachable_runners(runners: list[JsonObject], *, timeout: float = 3.0) -> list[str] | None:
    """One line per runner that cannot be used, or None when one of them answers and lists its model."""
    from messaging_llm_bot.llm.probe import check_runner

    problems = []
    for runner in runners:
        problem = check_runner(runner, timeout=timeout)
        if problem is None:
            return None
        problems.append(problem)
    return problems


def no_model_server_text(problems: list[str], config: str = "config", workspace: str = "workspace") -> str:
    """What was tried, what else answers on this machine, and what to run (for these folders)."""
    from messaging_llm_bot.llm.probe import LOCAL_SERVERS, find_local_servers
    from messaging_llm_bot.ops.setup.answers import make_paths

    lines = ["No model server answered, so messages would get no answer. Tried:"]
    lines += [f"  {problem}" for problem in problems] or ["  (no model runner is configured: llm.runners)"]
    found = find_local_servers()
    if found:
        for name, result in found:
            models = ", ".join((result.models or [])[:5]) or "models not listed"
            lines.append(f"A model server does answer: {name} at {result.base_url} ({models}).")
    else:
        ports = ", ".join(f"{name} {url.rsplit(':', 1)[1].split('/')[0]}" for name, url in LOCAL_SERVERS)
        lines.append(f"Nothing answers on the usual local ports either ({ports}).")
        lines.append("Start one (e.g. `ollama serve`, then `ollama pull qwen3:8b`), or use a hosted one.")
    lines.append(
        f"`make setup{make_paths(config, workspace)}` finds your model server (or takes its address and key), checks "
        f"it with a test turn and writes it to {Path(config) / 'local'}/."
    )
    return "\n".join(lines)


def cooked_terminal(stream: TextIO) -> bool:
    """A terminal left in raw mode put back in cooked mode (these flags as `stty sane` sets them): a chat killed with
    SIGKILL cannot restore it, and the next start then hung at its first question (Enter is a bare CR there, no line
    ends) and gave the raw mode back to the shell at its end. True when it was raw."""
    try:
        import termios
    except ImportError:  # not POSIX
        return False
    try:
        fd = stream.fileno()
        attrs = termios.tcgetattr(fd)
        if attrs[3] & termios.ICANON:
            return False
        attrs[0] |= termios.ICRNL
        attrs[1] |= termios.OPOST | termios.ONLCR
        attrs[3] |= termios.ICANON | termios.ECHO | termios.ECHOE | termios.ECHOK | termios.ISIG | termios.IEXTEN
        termios.tcsetattr(fd, termios.TCSANOW, attrs)
    except (AttributeError, OSError, ValueError, termios.error):  # no terminal
        return False
    return True


def busy_text(problems: list[str]) -> str:
    """What is said when every runner's server took the connection but did not answer in time."""
    lines = [f"  {problem}" for problem in problems]
    return "\n".join(
        [
            "The model server has not answered yet:",
            *lines,
            "The chat starts; your messages wait for it (a server still working on an answer nobody waits for any "
            "more, e.g. of a chat that was killed, finishes it first).",
        ]
    )


def setup_ran_and_passed(runtime: BotRuntime, args: argparse.Namespace) -> bool:
    """Before the terminal chat's first prompt: when no runner answers, say what was tried and offer the
    setup; True when it ran and passed (the caller starts again with the new settings)."""
    llm = runtime.config.get("llm")
    listed = llm.get("runners") if isinstance(llm, dict) else None
    runners = [r for r in listed if isinstance(r, dict)] if isinstance(listed, list) else []
    from messaging_llm_bot.llm.probe import BUSY

    problems = unreachable_runners(runners)
    if problems is None:
        return False
    if problems and all(BUSY in problem for problem in problems):  # there, but busy: the setup would not help
        print(busy_text(problems), file=sys.stderr, flush=True)
        return False
    print(no_model_server_text(problems, args.config, args.workspace), file=sys.stderr, flush=True)
    if not Path(args.config).is_dir():  # setup writes the local layer of a config directory
        print(f"(setup needs a config directory; {args.config} is a file)", file=sys.stderr)
        return False
    return offer_setup(args.config, args.workspace) == 0


def offer_setup(config: str, workspace: str, ask: Callable[[str], str] = input) -> int | None:
    """Ask to run the setup now; its exit status when it ran, None when the user declined."""
    try:
        reply = ask("Run the setup now? [Y/n] ").strip().lower()
    except EOFError:
        return None
    from messaging_llm_bot.ops.setup.answers import Answers, make_paths

    if reply not in ("", "y", "yes"):
        later = f"make setup{make_paths(config, workspace)}"
        print(f"The chat starts anyway; run `{later}` when the model server is ready.", file=sys.stderr)
        return None
    from messaging_llm_bot.ops.setup.dialog import SetupError
    from messaging_llm_bot.ops.setup.wizard import Wizard

    try:
        return Wizard(Answers(config=Path(config), workspace=Path(workspace))).run()
    except SetupError as exc:
        print(f"error: {exc}\nNothing was written.", file=sys.stderr)
        return 2
    except (EOFError, KeyboardInterrupt):
        print("\nsetup cancelled; nothing was written", file=sys.stderr)
        return 2
