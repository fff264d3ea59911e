"""The test modules' asserts rewritten once per checkout, by the xdist controller, before its workers start.

pytest rewrites a test module's ``assert`` statements when it imports it and caches the result next to it
(``tests/__pycache__/test_x.cpython-311-pytest-<version>.pyc``). Every xdist worker collects every test file,
so in a fresh checkout (CI, a clean clone) the four workers found no cache and rewrote all ~290 modules each,
at the same moment: 10 % of a whole ``make test``'s CPU in a profile of one (issue 41). The controller
imports no test module, so here it writes the caches the workers then read, with pytest's own functions
(the same code and file a worker's import makes). A cache that is there and matches its source is kept;
a run without workers (``-n 0``) or without rewriting (``--assert=plain``) does nothing here.
"""

from __future__ import annotations

import fnmatch
import sys
from pathlib import Path
from typing import Iterable, Iterator

import pytest
from _pytest.assertion import rewrite


def modules_to_rewrite(args: list[str], patterns: list[str], start: Path) -> Iterator[Path]:
    """The files under ``args`` (relative to ``start``) that pytest takes for test modules (``patterns``:
    ``python_files``)."""
    for arg in args:
        path = start / arg.split("::", 1)[0]  # an absolute arg stays itself
        candidates = [path] if path.is_file() else sorted(path.rglob("*.py")) if path.is_dir() else []
        for candidate in candidates:
            if any(fnmatch.fnmatch(candidate.name, pattern) for pattern in patterns):
                yield candidate


def rewrite_ahead(config: pytest.Config, files: Iterable[Path]) -> int:
    """Write the rewritten-asserts cache of each of ``files`` that has none (or a stale one); how many."""
    state = config.stash[rewrite.assertstate_key]
    written = 0
    for fn in dict.fromkeys(files):
        cache_dir = rewrite.get_cache_dir(fn)
        if not rewrite.try_makedirs(cache_dir):
            continue
        pyc = cache_dir / (fn.name[:-3] + rewrite.PYC_TAIL)
        if rewrite._read_pyc(fn, pyc, state.trace) is not None:
            continue
        source_hash, code = rewrite._rewrite_test(fn, config)
        rewrite._write_pyc(state, code, source_hash, pyc)
        written += 1
    return written


@pytest.hookimpl(tryfirst=True)  # before xdist's (trylast), which starts the workers
def pytest_sessionstart(session: pytest.Session) -> None:
    config = session.config
    if hasattr(config, "workerinput") or not config.getoption("numprocesses", None):
        return
    if config.getoption("assertmode") != "rewrite" or sys.dont_write_bytecode:
        return
    files = modules_to_rewrite(list(config.args), config.getini("python_files"), Path(config.invocation_params.dir))
    rewrite_ahead(config, files)
