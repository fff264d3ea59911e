"""How hints name the operator command: ``.venv/bin/assistant`` in a checkout (run from its folder),
``assistant`` where that is this install's command on PATH (the container image, an activated virtualenv),
else this install's full path. One owner, so no hint tells a container user to run a file they do not have."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

CHECKOUT = ".venv/bin/assistant"


def assistant_command(cwd: Path | None = None, path: str | None = None) -> str:
    """The command a hint names for this install (``cwd`` and ``path``: the folder and PATH to judge by)."""
    installed = Path(sys.prefix) / "bin" / "assistant"
    try:
        mine = installed.resolve()
        if ((cwd or Path.cwd()) / CHECKOUT).resolve() == mine:
            return CHECKOUT
        found = shutil.which("assistant", path=path)
        if found and Path(found).resolve() == mine:
            return "assistant"
    except OSError:  # a folder gone or unreadable: the checkout's form, as the docs write it
        return CHECKOUT
    return str(installed) if installed.exists() else CHECKOUT


#: The command hints name, judged once at start (the working folder and PATH do not change while it runs).
CLI = assistant_command()
