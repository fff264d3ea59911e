"""Helpers shared by the collector tests: plugin folders on disk and a settable clock."""

from __future__ import annotations

import textwrap
from datetime import datetime, timedelta, timezone
from pathlib import Path


class FakeClock:
    """A clock the test moves by hand, so schedules need no sleeping."""

    def __init__(self, start: datetime) -> None:
        self.now = start if start.tzinfo else start.replace(tzinfo=timezone.utc)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **kwargs: float) -> None:
        self.now = self.now + timedelta(**kwargs)

    def set(self, moment: datetime) -> None:
        self.now = moment


def write_collector(base: Path, name: str, source: str, readme: str | None = "# test collector\n") -> Path:
    """Create ``base/name/__init__.py`` (dedented ``source``) and a README."""
    folder = base / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "__init__.py").write_text(textwrap.dedent(source), encoding="utf-8")
    if readme is not None:
        (folder / "README.md").write_text(readme, encoding="utf-8")
    return folder
