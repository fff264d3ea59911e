"""Waiting on a condition, never on a sleep: the one poll loop the tests share."""

from __future__ import annotations

import os
import time
from typing import Any, Callable


def wait_until(predicate: Callable[[], Any], timeout: float = 10.0, what: str = "condition") -> None:
    """Poll ``predicate`` until true; AssertionError naming ``what`` when ``timeout`` seconds pass first."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def for_load(seconds: float) -> float:
    """``seconds`` of a slow machine's real work (a bot process starting: imports, the workspace, the model
    check), grown with the load average per CPU as tests/tiers.py grows its per-test bound: at load 20 on 2
    cores a start of 2 s idle took over 30 s. Never for a wait on an event a race may lose."""
    return seconds * max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))
