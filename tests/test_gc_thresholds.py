"""The bot's own process collects garbage less often than Python's default (messaging_llm_bot/cli/run.py's
``GC_THRESHOLDS``); a bot started inside another program (the tests' in-process bots) leaves the thresholds alone."""

from __future__ import annotations

import argparse
import gc
from typing import NoReturn

import pytest

from messaging_llm_bot.cli import run


class _Exited(Exception):
    pass


def _exit(code: int) -> NoReturn:
    raise _Exited(code)


@pytest.mark.parametrize("entry", ["python -m messaging_llm_bot", "assistant run"])
def test_the_bots_own_process_sets_the_collectors_thresholds_before_it_starts(monkeypatch, entry):
    seen: list[tuple[int, ...]] = []

    def started(*_args: object) -> int:
        seen.append(gc.get_threshold())
        return 0

    monkeypatch.setattr(run, "main", started)
    monkeypatch.setattr(run, "start", started)
    monkeypatch.setattr(run, "exit_now", _exit)
    before = gc.get_threshold()
    try:
        with pytest.raises(_Exited):
            if entry == "assistant run":
                run.cmd_run(argparse.Namespace())
            else:
                run.run_and_exit([])
    finally:
        gc.set_threshold(*before)
    assert seen == [run.GC_THRESHOLDS] and run.GC_THRESHOLDS[0] > 700


def test_starting_a_bot_inside_another_program_leaves_the_thresholds(monkeypatch):
    monkeypatch.setattr(run, "start", lambda _args: gc.get_threshold())
    before = gc.get_threshold()
    assert run.main([]) == before
