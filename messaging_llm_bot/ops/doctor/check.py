"""The doctor's record: one ``Check`` per line of the report, and the ``Context`` the checks share."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

OK, WARN, FAIL, SKIP = "ok", "warn", "fail", "skip"


@dataclass
class Check:
    """One line of the doctor's report."""

    name: str
    status: str  # ok | warn | fail | skip
    detail: str
    fix: str = ""


@dataclass
class Context:
    """What the checks share: the paths, the loaded config (None when invalid), the mode."""

    config_path: Path
    workspace_path: Path
    quick: bool
    config: dict[str, Any] | None = None
