"""The launcher of tests/preload.py's ``command_line``, and the client side of its zygote's start protocol.

``python -S tests/launch.py ZYGOTE_SOCKET MODULE ARGS...`` has the zygote (the run's, in an xdist run) fork
``python -m MODULE ARGS`` in a session of its own on this process's standard files and environment, passes the
signals it gets on to it, and ends as it ended. A command the code under test starts itself (an MCP server in
its config) is this launcher at each start and restart: a script of its own, so that it imports only the few
standard modules it needs (about 17 ms of CPU a start; tests/preload.py's imports made it 35 ms).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import struct
import sys

#: A start request's length, before its JSON (tests/preload.py's zygote reads it so).
HEADER = struct.Struct("!I")


def ask(path: str, request: dict[str, object], fds: list[int]) -> tuple[socket.socket, int, bytes] | None:
    """One start asked of the zygote at ``path``: the connection the exit status will come on, the pid, and
    what came after the pid's line (the status already, if the child ended at once); None if the zygote
    cannot make it (a ``PYTHON*`` variable it cannot apply); OSError as Popen's."""
    body = json.dumps(request).encode()
    channel = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        channel.connect(path)
        socket.send_fds(channel, [HEADER.pack(len(body)) + body], fds)
        received = b""
        while b"\n" not in received:
            data = channel.recv(256)
            if not data:
                raise ConnectionError(f"the tests' zygote closed the start of {request['module']}")
            received += data
        answer, _, after = received.partition(b"\n")
        kind, _, rest = answer.decode().strip().partition(" ")
        if kind == "pid":
            return channel, int(rest), after
    except BaseException:
        channel.close()
        raise
    channel.close()
    if kind == "error":
        number, _, message = rest.partition(" ")
        raise OSError(int(number), message, request["cwd"])
    return None


def launch(path: str, module: str, args: list[str]) -> None:
    """The launcher: the zygote forks ``module`` in a session of its own on this process's standard files and
    environment; this process passes signals on and ends as it did."""
    umask = os.umask(0o022)
    os.umask(umask)
    request: dict[str, object] = {
        "module": module,
        "args": args,
        "env": dict(os.environ),
        "cwd": os.getcwd(),
        "umask": umask,
        "setsid": True,
        "controlling_terminal": False,
        "sigint": False,
    }
    started = ask(path, request, [0, 1, 2])
    if started is None:  # what the zygote cannot make: a real start in this process
        os.execv(sys.executable, [sys.executable, "-m", module, *args])
    channel, pid, answer = started

    def forward(signum: int, _frame: object) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(signum, forward)
    while not answer.endswith(b"\n"):
        data = channel.recv(64)
        if not data:
            answer = b"%d\n" % signal.SIGKILL  # the zygote is gone: it killed its children on the way out
            break
        answer += data
    code = os.waitstatus_to_exitcode(int(answer))
    if code < 0:  # ended by a signal: so does the launcher (SIGKILL's disposition cannot be set, nor need be)
        with contextlib.suppress(OSError):
            signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    sys.exit(code)


if __name__ == "__main__":
    launch(sys.argv[1], sys.argv[2], sys.argv[3:])
