"""No test reads the user's own settings (issue 34.12: the second test of conftest's ``_outside_the_checkout``):
every test starts in an empty folder outside the checkout, so a command run with its default
``--config config`` and ``--workspace`` finds neither the checkout's ``config/local/`` (the owner's
token and model key) nor a workspace, and says so instead of reading them."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.crash_bot import REPO


def test_each_test_starts_in_an_empty_folder_outside_the_checkout() -> None:
    here = Path.cwd().resolve()
    assert here != REPO.resolve() and REPO.resolve() not in here.parents
    assert list(here.iterdir()) == []


def test_a_command_with_its_default_config_reads_nothing_of_the_checkout() -> None:
    result = subprocess.run(
        [str(REPO / ".venv" / "bin" / "assistant"), "config", "show"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2, result.stdout
    assert "config file or directory does not exist" in result.stderr
    assert result.stdout == "" and list(Path.cwd().iterdir()) == []  # nothing read, nothing created
