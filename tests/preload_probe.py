"""``python -m tests.preload_probe [exit CODE | raise | interrupt | wait | echo | thread | modules]``: a process that
says what it was started with, for tests/test_preload.py to compare a preloaded start with a real one.

It prints one JSON line (its environment, folder, umask, arguments, ``sys.path[0]``, signal dispositions,
stream set-up, time zone) on stdout, then does what the first argument says: exits with CODE, raises an
error, raises KeyboardInterrupt, waits for a line on stdin and exits 0, copies stdin to stdout and stderr
until end of file, leaves a non-daemon thread that writes a file at exit time, or prints a second JSON line:
the names in ``sys.modules`` that are plugins (``assistant_skills.*``, ``assistant_collectors.*``) or libraries
the built-in plugins import (``icalendar``, ``feedparser``) or httpx's transport (``httpcore``), and how many
TLS contexts ``assistant_framework.tls`` holds.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
import threading
import time


def _state() -> dict[str, object]:
    umask = os.umask(0)
    os.umask(umask)
    streams = {
        name: {
            "line_buffering": getattr(sys, name).line_buffering,
            "write_through": getattr(sys, name).write_through,
            "encoding": getattr(sys, name).encoding,
            "errors": getattr(sys, name).errors,
            "isatty": getattr(sys, name).isatty(),
        }
        for name in ("stdin", "stdout", "stderr")
    }
    dispositions = {
        signal.Signals(s).name: str(signal.getsignal(s))
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGPIPE, signal.SIGHUP, signal.SIGCHLD, signal.SIGUSR1)
    }
    return {
        "pid": os.getpid(),
        "env": dict(os.environ),
        "cwd": os.getcwd(),
        "umask": umask,
        "argv": sys.argv,
        "path0": sys.path[0],
        "signals": dispositions,
        "streams": streams,
        "tzname": list(time.tzname),
        "tempdir": tempfile.gettempdir(),
        "main": __name__,
        "session_leader": os.getsid(0) == os.getpid(),
        "threads": threading.active_count(),
    }


def main(argv: list[str]) -> int:
    print(json.dumps(_state()), flush=True)
    what = argv[0] if argv else ""
    if what == "exit":
        return int(argv[1])
    if what == "raise":
        raise RuntimeError("the probe's own error")
    if what == "interrupt":
        raise KeyboardInterrupt
    if what == "wait":
        sys.stdin.readline()
    elif what == "echo":
        for line in sys.stdin:
            sys.stdout.write("out: " + line)
            sys.stderr.write("err: " + line)
    elif what == "thread":
        target = argv[1]

        def late() -> None:
            time.sleep(0.2)
            with open(target, "w", encoding="utf-8") as done:
                done.write("the thread ran to its end")

        threading.Thread(target=late).start()
    elif what == "modules":
        plugins = sorted(
            name for name in list(sys.modules) if name.startswith(("assistant_skills", "assistant_collectors"))
        )
        libraries = [name for name in ("icalendar", "feedparser", "httpcore") if name in sys.modules]
        tls = sys.modules.get("assistant_framework.tls")
        contexts = tls._context.cache_info().currsize if tls is not None else 0  # type: ignore[attr-defined]
        print(json.dumps({"plugins": plugins, "libraries": libraries, "tls_contexts": contexts}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
