"""``python -m tests.torn_writer WORKSPACE``: writes state/big.json again and again, each version large and
self-checking (a torn file would fail to parse or mismatch), until it is killed (tests/test_workspace.py's
SIGKILL test; a module so that the worker's zygote forks it: tests/preload.py)."""

from __future__ import annotations

import sys

from assistant_framework.workspace import Workspace


def main(root: str) -> None:
    ws = Workspace(root, create=False)
    n = 0
    print("ready", flush=True)
    while True:
        n += 1
        ws.write_json("state/big.json", {"n": n, "body": [n] * 20000})


if __name__ == "__main__":
    main(sys.argv[1])
