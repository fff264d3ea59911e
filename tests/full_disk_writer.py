"""``python -m tests.full_disk_writer WORKSPACE``: appends a line, then a line the file-size limit cuts like a
full disk (prints ``raised ERRNO``), then a third line (tests/test_workspace.py; a module so that the worker's
zygote forks it: tests/preload.py)."""

from __future__ import annotations

import resource
import signal
import sys

from assistant_framework.workspace import Workspace


def main(root: str) -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    ws = Workspace(root)
    ws.append_line("log.txt", "first")
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (ws.path("log.txt").stat().st_size + 10, hard))
    try:
        ws.append_line("log.txt", "x" * 100)  # the file limit stops it mid-line, like a full disk
    except OSError as exc:
        print("raised", exc.errno)
    resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    ws.append_line("log.txt", "third")


if __name__ == "__main__":
    main(sys.argv[1])
