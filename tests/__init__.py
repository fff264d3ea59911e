"""The suite's package. Imported before tests/conftest.py and before any test module, so it is where the
suite turns bytecode caching back on.

Some machines (this project's Dockerfile, the shared test machine) set ``PYTHONDONTWRITEBYTECODE=1``. Under
it no ``.pyc`` is ever written: every pytest worker compiled the whole project and rewrote the asserts of all
250 test modules again at each run (about 10 s of CPU a worker, half of collecting), and every ``assistant``
or bot process a test starts compiled the project once more. The suite writes the caches (``__pycache__/``,
git-ignored) as an ordinary Python does, and so do the processes it starts (the variable is dropped from
the environment they inherit)."""

from __future__ import annotations

import os
import sys

sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
