"""``python -m tests.append_writer WORKSPACE WORKER COUNT``: appends COUNT JSON lines to shared.jsonl, each
long enough that unlocked writes could interleave (tests/test_workspace.py's four-process test; a module so
that the worker's zygote forks it: tests/preload.py)."""

from __future__ import annotations

import sys

from assistant_framework.workspace import Workspace


def main(root: str, worker: int, count: int) -> None:
    ws = Workspace(root, create=False)
    payload = "x" * 300  # long enough that unlocked writes could interleave
    for i in range(count):
        ws.append_jsonl("shared.jsonl", {"worker": worker, "i": i, "pad": payload})


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
