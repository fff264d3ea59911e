"""A slow document reader for the tests (a fixture every test may ask for): a ``sitecustomize`` on the worker's
``PYTHONPATH`` (the one variable besides ``PATH`` it is given) notes how many readers run as it starts, then
sleeps, only in the reader's process."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

SLOW_READER = """\
import os, sys, time
if "assistant_framework.media.document_text" in sys.orig_argv:
    _mine = os.path.join({running!r}, str(os.getpid()))
    open(_mine, "w").close()
    with open({seen!r}, "a") as _log:
        _log.write(f"{{len(os.listdir({running!r}))}}\\n")
    time.sleep({seconds})
    os.remove(_mine)
"""


class ReaderWatch:
    """The slow reader's notes: how many readers ran at each reader's start."""

    def __init__(self, folder: Path) -> None:
        self.running = folder / "running"
        self.seen = folder / "seen.log"
        self.running.mkdir()

    def counts(self) -> list[int]:
        if not self.seen.exists():
            return []
        return [int(line) for line in self.seen.read_text().split()]


@pytest.fixture
def slow_reader(tmp_path, monkeypatch):
    """Factory: ``slow_reader(seconds)`` makes every document reader process started from now sleep that long
    first; returns its ``ReaderWatch``."""

    def install(seconds: float) -> ReaderWatch:
        site = tmp_path / "site"
        site.mkdir()
        watch = ReaderWatch(tmp_path)
        (site / "sitecustomize.py").write_text(
            SLOW_READER.format(running=str(watch.running), seen=str(watch.seen), seconds=seconds)
        )
        monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")])))
        return watch

    return install
