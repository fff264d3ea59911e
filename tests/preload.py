"""A preloader for the Python processes the tests start (issue 41): ``python -m MODULE args`` without the
interpreter's start and the project's imports each time.

A pytest process starts, on its first use, one *zygote*: a single-threaded ``python -m tests.preload`` that
imports the project's modules once (the bot, its channels and CLI, the framework, httpx, python-telegram-bot
...) and then waits on a Unix socket. In an xdist run the workers share one, the run's: xdist's controller
names a folder to each worker (``give_to_worker``, ``take_from_controller``) and starts the zygote there when
a worker first asks (``_Starter``: a thread of the controller), so it is the controller's child, and its CPU
and its children's count in the run's as a worker's own did. A start (``popen``, ``run``)
sends it the module, the arguments, the environment, the working folder and the three standard file
descriptors (``SCM_RIGHTS``); the zygote forks, and the child becomes the requested run: its 0/1/2 are the
caller's files, ``os.environ`` is the requested environment exactly (``TZ`` applied with ``tzset``,
``tempfile``'s cached folder forgotten), the folder and umask are the caller's, its signal dispositions are
those a fresh interpreter has, ``sys.stdin``/``stdout``/``stderr`` are made again as a start makes them
(``PYTHONUNBUFFERED``, ``PYTHONIOENCODING``, line buffering on a terminal), ``sys.path`` starts with the
folder and ``PYTHONPATH``, and ``runpy.run_module(MODULE, run_name="__main__", alter_sys=True)`` runs it.
Non-daemon threads are joined and ``atexit`` handlers run, as at an interpreter's exit, then the child
ends with the exit code (``SystemExit``'s, 1 after an uncaught exception, SIGINT's after an uncaught
KeyboardInterrupt). The zygote reaps it and sends the wait status on the start's connection.

Why a test through it still tests a process: the child is a real process with its own pid, memory, files
and signals. ``send_signal``/``terminate``/``kill`` go to that pid with ``os.kill``, a SIGKILL is a SIGKILL,
and the exit code is the kernel's wait status, so ``returncode`` is negative for a signal as with
``subprocess``. ``PreloadedProcess`` is a ``subprocess.Popen`` (pipes, ``communicate``, ``wait(timeout)``,
the context manager are Popen's own code); only the start and the wait go through the zygote. What it does
not test is the interpreter's start: the imports, ``sys.flags``, the entry scripts. The tests of those
keep a real ``subprocess.Popen`` and say so (tests/test_console.py's entry-point runs, the start-up bench,
``make install``, missing-dependency and import-order checks). What else differs from a fresh start: the
project's modules are imported before the module runs (their import-time code ran once, in the zygote), and
so are the built-in skills and collectors (kept by plugin_import for reuse while their files are unchanged, as
in a process that started a bot before: ``_warm_plugins``) with the libraries they import, and those the
project imports at first use (``LAZY_IMPORTS``), the TLS contexts are the zygote's (``_warm_tls``), the
children of one zygote share its hash seed, and ``sys.flags``/``sys.orig_argv`` are the zygote's.

A process the code under test starts itself from a command line (an MCP server in its config) goes through
``command_line``: a bare launcher (``python -S tests/launch.py ...``, a few standard modules only)
hands its own 0/1/2 and environment to the zygote, which forks the server in a session of its own; the
launcher passes the signals it gets on to it and ends as it ended, and if the launcher is killed the
zygote kills the server's process group.

The zygote never starts a thread or an event loop, opens no database, configures no logging and keeps no
environment in module state before it forks (the project reads ``os.environ`` where it uses it:
tests/test_preload.py checks; ``_preload`` checks the threads, logging and ``tempfile``; ``random`` reseeds
itself in a fork, ``uuid4`` reads ``os.urandom``). It ends when its pytest process ends (it watches that
pid through a pidfd: the run's zygote, the controller's) or on SIGTERM (at that process's exit; the run's, at
the controller's clean-up), and kills its running children then; a child whose start's connection closes
before it ended (its caller killed, its worker ended) is killed too. A zygote that ended anyway is started
again on the same socket, and the next start says so on stderr with its log.

``ASSISTANT_TEST_PRELOAD=0`` turns it off: every start is then a real ``subprocess.Popen``. A start the
zygote cannot reproduce is a real spawn too: a command that is not ``[sys.executable, "-m", MODULE, ...]``,
``pass_fds``, ``preexec_fn``, another user or group, or a ``PYTHON*`` variable the zygote cannot apply after
its start (``PYTHONWARNINGS``, ``PYTHONHASHSEED``, ...).
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tests.launch import HEADER as _HEADER
from tests.launch import ask, launch

REPO = Path(__file__).resolve().parents[1]
#: ``0`` turns the preloader off: every start is a real ``subprocess.Popen``.
SWITCH = "ASSISTANT_TEST_PRELOAD"
#: What the child applies itself when the request's environment has it; another ``PYTHON*`` variable that
#: differs from the zygote's makes the start a real spawn.
APPLIED_PYTHON_VARIABLES = frozenset({"PYTHONUNBUFFERED", "PYTHONPATH", "PYTHONIOENCODING", "PYTHONDONTWRITEBYTECODE"})
#: Seconds the zygote may take to import everything and listen (a loaded machine: load 20 on 2 cores).
START_TIMEOUT = 120.0


def enabled() -> bool:
    return os.environ.get(SWITCH, "1") != "0"


# -- the caller's side ------------------------------------------------------------------------------


class PreloadedProcess(subprocess.Popen):
    """A ``subprocess.Popen`` whose child is forked by the worker's zygote. Everything but the start and the
    wait is Popen's own code; ``tests/tiers.py`` counts it as it counts every Popen."""

    def __init__(
        self, args: Sequence[str], *, controlling_terminal: bool = False, takes_sigint: bool = False, **kwargs: Any
    ) -> None:
        self._controlling_terminal = controlling_terminal
        self._takes_sigint = takes_sigint or controlling_terminal
        self._status_channel: socket.socket | None = None
        self._received = b""
        super().__init__(args, **kwargs)

    def _execute_child(  # Popen's private signature (POSIX, Python 3.11+)
        self,
        args: Sequence[str],
        executable: Any,
        preexec_fn: Any,
        close_fds: bool,
        pass_fds: Sequence[int],
        cwd: Any,
        env: Mapping[str, str] | None,
        startupinfo: Any,
        creationflags: int,
        shell: bool,
        p2cread: int,
        p2cwrite: int,
        c2pread: int,
        c2pwrite: int,
        errread: int,
        errwrite: int,
        *rest: Any,
    ) -> None:
        start_new_session, process_group = rest[-2], rest[-1]
        umask = rest[-3]
        if process_group not in (None, -1):
            raise ValueError("PreloadedProcess: process_group is not supported (use start_new_session)")
        if umask is None or umask < 0:
            umask = os.umask(0o022)  # read it: the only way is to set it and put it back
            os.umask(umask)
        request = {
            "module": args[2],
            "args": [str(a) for a in args[3:]],
            "env": dict(os.environ if env is None else env),
            "cwd": os.path.abspath(os.fspath(cwd)) if cwd is not None else os.getcwd(),
            "umask": umask,
            "setsid": bool(start_new_session or self._controlling_terminal),
            "controlling_terminal": self._controlling_terminal,
            "sigint": self._takes_sigint,
        }
        fds = [p2cread if p2cread != -1 else 0, c2pwrite if c2pwrite != -1 else 1, errwrite if errwrite != -1 else 2]
        self._status_channel, self.pid, self._received = _zygote().start(request, fds)
        self._child_created = True
        self._close_pipe_fds(p2cread, p2cwrite, c2pread, c2pwrite, errread, errwrite)

    def _status(self, timeout: float | None) -> int | None:
        """The child's wait status from the zygote, or None while it runs after ``timeout`` seconds (0: a look;
        None: until it ends)."""
        channel = self._status_channel
        while b"\n" not in self._received:
            if channel is None:
                return signal.SIGKILL  # the zygote is gone: it killed its children on the way out
            channel.settimeout(timeout)
            try:
                data = channel.recv(64)
            except (BlockingIOError, TimeoutError):
                return None
            except OSError:
                data = b""
            if not data:
                channel.close()
                self._status_channel = channel = None
                continue
            self._received += data
        if self._status_channel is not None:
            self._status_channel.close()
            self._status_channel = None
        return int(self._received.split(b"\n", 1)[0])

    def _try_wait(self, wait_flags: int) -> tuple[int, int]:
        status = self._status(0 if wait_flags & os.WNOHANG else None)
        return (0, 0) if status is None else (self.pid, status)

    def _internal_poll(self, _deadstate: Any = None, *_unused: Any) -> int | None:
        if self.returncode is None:
            if not self._waitpid_lock.acquire(False):
                return None
            try:
                if self.returncode is None:
                    pid, status = self._try_wait(os.WNOHANG)
                    if pid == self.pid:
                        self._handle_exitstatus(status)
            finally:
                self._waitpid_lock.release()
        return self.returncode

    def _wait(self, timeout: float | None) -> int:
        """Popen's wait, on the status connection rather than by polling ``waitpid``."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.returncode is None:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not self._waitpid_lock.acquire(timeout=-1 if left is None else left):
                raise subprocess.TimeoutExpired(self.args, timeout)
            try:
                if self.returncode is None:
                    status = self._status(left)
                    if status is None:
                        raise subprocess.TimeoutExpired(self.args, timeout)
                    self._handle_exitstatus(status)
            finally:
                self._waitpid_lock.release()
        return self.returncode


def preloadable(args: Any, kwargs: Mapping[str, Any]) -> bool:
    """Whether the zygote can make this start: ``[sys.executable, "-m", MODULE, ...]`` with nothing it cannot
    apply after its own start."""
    if not enabled() or not isinstance(args, (list, tuple)) or len(args) < 3:
        return False
    if os.fspath(args[0]) != sys.executable or args[1] != "-m":
        return False
    if any(kwargs.get(k) for k in ("shell", "executable", "preexec_fn", "pass_fds", "user", "group", "extra_groups")):
        return False
    if kwargs.get("close_fds") is False or kwargs.get("process_group") not in (None, -1):
        return False
    env = kwargs.get("env")
    return env is None or _python_variables(env) == _python_variables(os.environ)


def _python_variables(env: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k.startswith("PYTHON") and k not in APPLIED_PYTHON_VARIABLES}


def popen(
    args: Sequence[Any], *, controlling_terminal: bool = False, takes_sigint: bool = False, **kwargs: Any
) -> subprocess.Popen:
    """``subprocess.Popen(args, **kwargs)``, forked by the zygote when it can make the start (else a real
    spawn). ``controlling_terminal``: a session of its own with stdin (a pty's slave) as its controlling
    terminal, so Ctrl-C typed there is a SIGINT to it, as in a real terminal. ``takes_sigint``: SIGINT is
    a KeyboardInterrupt in the child, as after a terminal's Ctrl-C, though the xdist worker ignores it
    (implied by ``controlling_terminal``)."""
    if preloadable(args, kwargs):
        return PreloadedProcess(args, controlling_terminal=controlling_terminal, takes_sigint=takes_sigint, **kwargs)
    if controlling_terminal:
        kwargs["preexec_fn"] = _own_terminal
    elif takes_sigint:
        kwargs["preexec_fn"] = _default_sigint
    return subprocess.Popen(args, **kwargs)


def _own_terminal() -> None:
    """A real spawn's ``controlling_terminal`` (in the child, before exec)."""
    import fcntl
    import termios

    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)
    _default_sigint()


def _default_sigint() -> None:
    """A real spawn's ``takes_sigint``: the interpreter then installs its KeyboardInterrupt handler."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def run(
    args: Sequence[Any],
    *,
    input: str | bytes | None = None,
    capture_output: bool = False,
    timeout: float | None = None,
    check: bool = False,
    **kwargs: Any,
) -> subprocess.CompletedProcess:
    """``subprocess.run`` over ``popen``: the same arguments, the same result and errors."""
    if input is not None:
        kwargs["stdin"] = subprocess.PIPE
    if capture_output:
        kwargs["stdout"] = kwargs["stderr"] = subprocess.PIPE
    with popen(args, **kwargs) as process:
        try:
            stdout, stderr = process.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            process.kill()
            exc.stdout, exc.stderr = process.communicate()
            raise
        except BaseException:
            process.kill()
            raise
        code = process.poll()
        assert code is not None
        if check and code:
            raise subprocess.CalledProcessError(code, process.args, output=stdout, stderr=stderr)
    return subprocess.CompletedProcess(process.args, code, stdout, stderr)


class _Zygote:
    """This process's zygote: started on first use, ended with this process (or started again, on the same
    socket, if it ended before). ``folder``: the run's (``_Starter``), else one of its own."""

    def __init__(self, folder: str | None = None) -> None:
        self.folder = folder or tempfile.mkdtemp(prefix="zygote-")
        self.path = os.path.join(self.folder, "socket")
        self.log = os.path.join(self.folder, "zygote.log")
        self.process = self._spawn()

    @property
    def pid(self) -> int:
        return self.process.pid

    def _spawn(self) -> subprocess.Popen:
        """The zygote, once it listens. It watches this process's pid (a pidfd: no descriptor here that
        other code could close by mistake) and ends with it."""
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
        with open(self.log, "ab") as log:
            # The zygote itself is a real process: its start is what the children save.
            process = subprocess.Popen(
                [sys.executable, "-m", "tests.preload", self.path, str(os.getpid())],
                cwd=REPO,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=log,
            )
        assert process.stdout is not None
        with process.stdout as ready:  # one line once it listens, end of file if it failed
            answer = _read_line(ready.fileno(), START_TIMEOUT)
        if answer != b"ready":
            process.kill()
            process.wait()
            raise RuntimeError(f"the tests' zygote did not start ({answer!r}):\n{self.log_text()}")
        return process

    def ensure(self) -> None:
        """Start another if the zygote ended (a bug of its own, a signal from a test), saying so."""
        if self.process.poll() is not None:
            print(
                f"tests/preload.py: the zygote ended ({self.process.returncode}); starting another. Its log:\n"
                + self.log_text(),
                file=sys.stderr,
            )
            self.process = self._spawn()

    def log_text(self) -> str:
        try:
            return Path(self.log).read_text(encoding="utf-8", errors="replace")[-3000:]
        except OSError:
            return ""

    def start(self, request: dict[str, Any], fds: list[int]) -> tuple[socket.socket, int, bytes]:
        """Ask for one child: the connection its exit status will come on, and its pid."""
        started = _ask(self.path, request, fds)
        if started is None:
            raise RuntimeError(f"the tests' zygote refused the start of {request['module']}:\n{self.log_text()}")
        return started

    def stop(self) -> None:
        """SIGTERM: the zygote kills its children that still run, and ends."""
        if self.process.poll() is None:
            self.process.terminate()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


class _RunZygote:
    """An xdist worker's view of the run's zygote (``_Starter``, in the controller): asked for through the
    starter's socket, watched through a pidfd, asked for again if it ended (the starter starts another)."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self.path = os.path.join(folder, "socket")
        self.log = os.path.join(folder, "zygote.log")
        self.pid, self._pidfd = 0, -1
        self._attach()

    def _attach(self) -> None:
        for _ in range(3):  # a zygote that ended between the answer and the pidfd: ask again
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as starter:
                starter.connect(os.path.join(self.folder, "starter"))
                answer = _read_line(starter.fileno(), START_TIMEOUT).decode(errors="replace")
            kind, _, pid = answer.partition(" ")
            if kind not in ("ready", "restarted") or not pid.isdigit():
                raise RuntimeError(f"the tests' zygote did not start ({answer!r}):\n{self.log_text()}")
            if kind == "restarted":
                print(
                    f"tests/preload.py: the run's zygote ended; starting another. Its log:\n{self.log_text()}",
                    file=sys.stderr,
                )
            try:
                self._pidfd = os.pidfd_open(int(pid))
            except ProcessLookupError:
                continue
            self.pid = int(pid)
            return
        raise RuntimeError(f"the tests' zygote keeps ending:\n{self.log_text()}")

    def ensure(self) -> None:
        """Ask for it again if it ended (a bug of its own, a signal from a test)."""
        import select

        if select.select([self._pidfd], [], [], 0)[0]:  # readable: it ended
            os.close(self._pidfd)
            self._attach()

    log_text = _Zygote.log_text
    start = _Zygote.start

    def stop(self) -> None:
        """Nothing to end here: the run's zygote is the controller's; this process's children end as its
        connections close."""
        os.close(self._pidfd)


class _Starter:
    """In xdist's controller: the run's zygote, started when a worker first asks (a connection to the
    ``starter`` socket of the run's folder, answered ``ready PID``), started again when one asks after it
    ended (``restarted PID``), ended at the controller's clean-up (``stop``). A thread: the controller's own
    loop stays xdist's."""

    def __init__(self) -> None:
        self.folder = tempfile.mkdtemp(prefix="zygote-run-")
        self.zygote: _Zygote | None = None
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(os.path.join(self.folder, "starter"))
        self.listener.listen(16)
        threading.Thread(target=self._serve, name="tests-zygote-starter", daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                worker, _ = self.listener.accept()
            except OSError:
                return  # stopped
            with worker:
                try:
                    answer = self._answer()
                except Exception as err:  # noqa: BLE001 - said to the worker, whose test fails with it
                    answer = f"failed {err}"
                with contextlib.suppress(OSError):
                    worker.sendall(answer.encode() + b"\n")

    def _answer(self) -> str:
        if self.zygote is None:
            self.zygote = _Zygote(self.folder)
            return f"ready {self.zygote.pid}"
        if self.zygote.process.poll() is None:
            return f"ready {self.zygote.pid}"
        self.zygote.process = self.zygote._spawn()
        return f"restarted {self.zygote.pid}"

    def stop(self) -> None:
        """SIGTERM to the zygote (it kills its children still running), waited for; the folder removed."""
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)  # wakes the thread's accept
        self.listener.close()
        if self.zygote is not None:
            self.zygote.stop()
        shutil.rmtree(self.folder, ignore_errors=True)


#: xdist's ``workerinput`` key that names the run's zygote folder to a worker.
WORKERINPUT_KEY = "assistant_test_zygote"
_starter: list[_Starter] = []
_run_folder: list[str] = []  # an xdist worker's: the run's zygote folder (take_from_controller)


def give_to_worker(workerinput: dict[str, Any], add_cleanup: Any) -> None:
    """In xdist's controller, for each worker it starts: the run's zygote folder (with its starter, made at the
    first worker; ``add_cleanup`` is given its end). One zygote for the run instead of one per worker: its
    imports (about a second of CPU) are paid once."""
    if not _starter:
        _starter.append(_Starter())
        add_cleanup(lambda: _starter.pop().stop())
    workerinput[WORKERINPUT_KEY] = _starter[0].folder


def take_from_controller(workerinput: Mapping[str, Any]) -> None:
    """In an xdist worker, at its start: its starts go through the run's zygote (``give_to_worker``)."""
    folder = workerinput.get(WORKERINPUT_KEY)
    if folder:
        with _lock:
            _run_folder[:] = [str(folder)]


def _ask(path: str, request: dict[str, Any], fds: list[int]) -> tuple[socket.socket, int, bytes] | None:
    """One start asked of the zygote at ``path``: the connection the exit status will come on, the pid, and
    what came after the pid's line (the status already, if the child ended at once); None if the zygote
    cannot make it (a ``PYTHON*`` variable it cannot apply); OSError as Popen's."""
    return ask(path, request, fds)  # the launcher's own (tests/launch.py)


def command_line(argv: list[str]) -> list[str]:
    """A command line for a process the code under test starts itself (an MCP server, from its config):
    ``[sys.executable, "-m", MODULE, ...]`` becomes a launcher that has this worker's zygote fork the
    module, and stands for it: its 0/1/2 are the child's, signals sent to it are passed on, and it exits
    as the child did. The launcher is a bare interpreter (``-S``: no site-packages) running tests/launch.py,
    which imports a few standard modules only. Another command, or the preloader off: as is."""
    if not preloadable(argv, {}):
        return argv
    return [sys.executable, "-S", str(Path(__file__).resolve().with_name("launch.py")), _zygote().path, *argv[2:]]


def server_entry(argv: list[str]) -> dict[str, Any]:
    """An ``mcp.servers`` entry's ``command`` and ``args`` for ``argv``, through ``command_line``."""
    executable, *args = command_line(argv)
    return {"command": executable, "args": args}


def _read_line(fd: int, timeout: float) -> bytes:
    import select

    line = b""
    while not line.endswith(b"\n"):
        ready, _, _ = select.select([fd], [], [], timeout)
        data = os.read(fd, 256) if ready else b""
        if not data:
            break
        line += data
    return line.strip()


_lock = threading.Lock()
_current: list[_Zygote | _RunZygote] = []


def _zygote() -> _Zygote | _RunZygote:
    with _lock:
        if not _current:
            _current.append(_RunZygote(_run_folder[0]) if _run_folder else _Zygote())
            atexit.register(_stop)
        else:
            _current[0].ensure()
        return _current[0]


def _stop() -> None:
    with _lock:
        while _current:
            _current.pop().stop()


def _forget_after_fork() -> None:
    """A forked copy of this process (pty.fork, multiprocessing) starts its own zygote if it needs one."""
    _current.clear()


os.register_at_fork(after_in_child=_forget_after_fork)


# -- the zygote -------------------------------------------------------------------------------------


#: What the zygote imports before it serves: every module of the project's two packages (which import
#: their libraries: httpx, python-telegram-bot, the MCP SDK, ...). ``__main__`` modules are not imported:
#: they are what a start runs.
PRELOADED_PACKAGES = ("assistant_framework", "messaging_llm_bot")
#: Libraries the project imports at first use, not at import, which every bot start in a child used to import
#: again: httpx's transport (httpcore, and trio through it: about 45 ms of CPU at each start, with anyio's
#: asyncio backend). Imported by the zygote with the project's packages.
LAZY_IMPORTS = ("httpcore", "anyio._backends._asyncio")
#: Other packages for the zygote to import, comma-separated (empty: none), read by the zygote at its start:
#: tests/test_preload.py's worker processes start zygotes whose imports are not what they test.
PACKAGES_ENV = "ASSISTANT_TEST_PRELOAD_PACKAGES"


def _preload() -> None:
    """Import the project once, and check the zygote is still fit to fork: one thread, no logging set up."""
    import gc
    import importlib
    import logging
    import pkgutil

    gc.disable()  # the imports make objects that all stay: a collection in between would free none
    names = os.environ.get(PACKAGES_ENV)
    for name in PRELOADED_PACKAGES if names is None else [n for n in names.split(",") if n]:
        package = importlib.import_module(name)
        for module in pkgutil.walk_packages(package.__path__, name + "."):
            if module.name.rsplit(".", 1)[-1] != "__main__":
                importlib.import_module(module.name)
    if names is None:
        for name in LAZY_IMPORTS:
            importlib.import_module(name)
        _warm_plugins()
        _warm_tls()
    # What the imports left is kept out of every later collection, the children's included: their collections
    # no longer walk (and so copy, page by page) the modules they share with the zygote.
    gc.freeze()
    gc.enable()
    if threading.active_count() != 1:
        raise RuntimeError(f"an import started a thread: {threading.enumerate()}; a fork would lose it")
    if logging.getLogger().handlers:
        raise RuntimeError("an import configured logging; a child would log through the zygote's handlers")
    if tempfile.tempdir is not None:
        raise RuntimeError("an import fixed tempfile.tempdir from the zygote's environment")


def _warm_plugins() -> None:
    """Load the built-in skills and collectors once, as a bot's start does (``reuse``: plugin_import keeps the
    modules of the folders the framework ships while their files are unchanged), and take their modules out of
    ``sys.modules``: a bot start in a child finds them kept, as a second start in one process does, and puts
    them back, instead of importing them, and what they import (icalendar, feedparser, ...), at each start
    (about 80 ms of CPU each)."""
    from assistant_framework.collectors.loader import import_folder, is_collector_folder
    from assistant_framework.collectors.manager import BUILTIN_DIR
    from assistant_framework.skills.loading import Loading, load_directory
    from assistant_framework.skills.manager import BUILTIN_SKILLS_DIR

    found = Loading()
    load_directory(BUILTIN_SKILLS_DIR, found, reuse=True)  # a folder that fails is left out, and fails at a start
    names = list(found.module_names)
    for folder in sorted(BUILTIN_DIR.iterdir()):
        if is_collector_folder(folder):
            with contextlib.suppress(ImportError):
                names.append(import_folder(folder, reuse=True).__name__)
    roots = {name.split(".")[0] for name in names}  # the plugins, their submodules, the placeholders above them
    for name in [name for name in sys.modules if name.split(".")[0] in roots]:
        del sys.modules[name]


def _warm_tls() -> None:
    """The TLS contexts of assistant_framework/tls.py (one per process and setting) made once here: certifi's
    bundle, and the one ``SSL_CERT_FILE`` or ``SSL_CERT_DIR`` name when this environment sets them (as this
    machine's does); every bot start in a child made them again for its HTTP clients (about 30 ms of CPU). The
    setting is read from the child's environment when a client is made, and is the cache's key: a child given
    another ``SSL_CERT_FILE`` makes its own context, as a fresh process does."""
    from assistant_framework.tls import shared_context

    shared_context(trust_env=False)
    shared_context(trust_env=True)


class _Child:
    def __init__(self, pid: int, channel: socket.socket, session: bool) -> None:
        self.pid, self.channel, self.session = pid, channel, session
        self.pidfd = os.pidfd_open(pid)

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            (os.killpg if self.session else os.kill)(self.pid, signal.SIGKILL)


def serve(path: str, alive: int) -> None:
    """Fork a child per request until the pytest process that started the zygote ends (``alive``, its
    pidfd, is readable) or SIGTERM; then kill the children that still run."""
    import selectors

    initial = {s: signal.getsignal(s) for s in signal.valid_signals() if signal.getsignal(s) is not None}
    signal.signal(signal.SIGTERM, _terminated)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ, "start")
    selector.register(alive, selectors.EVENT_READ, "alive")
    children: dict[int, _Child] = {}
    os.write(1, b"ready\n")
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 1)
    os.close(null)
    try:
        while True:
            for key, _ in selector.select():
                if key.data == "alive":  # its pytest process ended (without its atexit, if it was killed)
                    shutil.rmtree(os.path.dirname(path), ignore_errors=True)
                    return
                # SIGTERM waits for the event's end: a child whose pid was sent is in ``children`` (killed below)
                signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
                try:
                    _event(key.data, listener, selector, children, alive, initial)
                except Exception:  # noqa: BLE001 - one start's trouble (a caller gone, fork refused) ends no other
                    import traceback

                    traceback.print_exc(file=sys.stderr)
                    sys.stderr.flush()
                finally:
                    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
    finally:
        for child in children.values():
            child.kill()
        for pid in children:
            with contextlib.suppress(OSError):
                os.waitpid(pid, 0)


def _terminated(_signum: int, _frame: object) -> None:
    raise SystemExit(0)


def _event(
    what: Any, listener: socket.socket, selector: Any, children: dict[int, _Child], alive: int, initial: dict
) -> None:
    """A start asked for, a child ended, or a caller that hung up."""
    import selectors

    if what == "start":
        child = _fork(listener, selector, children, alive, initial)
        if child is not None:
            children[child.pid] = child
            selector.register(child.pidfd, selectors.EVENT_READ, ("ended", child.pid))
            selector.register(child.channel, selectors.EVENT_READ, ("caller", child.pid))
        return
    kind, pid = what
    child = children.get(pid)
    if child is None:  # ended earlier in the same round of events
        return
    if kind == "caller":  # the caller hung up (or sent something: no protocol has it)
        selector.unregister(child.channel)
        child.kill()
        return
    _, status = os.waitpid(pid, 0)
    del children[pid]
    selector.unregister(child.pidfd)
    os.close(child.pidfd)
    with contextlib.suppress(OSError):
        child.channel.sendall(b"%d\n" % status)
    with contextlib.suppress(KeyError):
        selector.unregister(child.channel)
    child.channel.close()


def _fork(
    listener: socket.socket, selector: Any, children: dict[int, _Child], alive: int, initial: dict
) -> _Child | None:
    """Take one request and fork its child; None when the request was refused (the caller was told why)."""
    channel, _ = listener.accept()
    fds: list[int] = []
    try:
        channel.settimeout(10)
        data, fds, _, _ = socket.recv_fds(channel, 1 << 20, 3)
        while len(data) < _HEADER.size or len(data) < _HEADER.size + _HEADER.unpack_from(data)[0]:
            more = channel.recv(1 << 20)
            if not more:
                raise ConnectionError("the request ended early")
            data += more
        request = json.loads(data[_HEADER.size :])
        if len(fds) != 3:
            raise ConnectionError(f"{len(fds)} file descriptors instead of 3")
    except (OSError, ValueError) as err:
        print(f"zygote: a bad request: {err}", file=sys.stderr, flush=True)
        channel.close()
        for fd in fds:
            os.close(fd)
        return None
    refusal = b""
    if _python_variables(request["env"]) != _ZYGOTE_PYTHON:
        refusal = b"refused\n"
    elif not os.path.isdir(request["cwd"]):
        refusal = b"error %d %s\n" % (errno.ENOENT, os.strerror(errno.ENOENT).encode())
    else:
        sys.stdout.flush()
        sys.stderr.flush()
        try:
            pid = os.fork()
        except OSError as err:  # the machine's process limit: the start fails as Popen's would
            refusal = b"error %d %s\n" % (err.errno or errno.EAGAIN, (err.strerror or "fork failed").encode())
    if refusal:
        with contextlib.suppress(OSError):
            channel.sendall(refusal)
        channel.close()
        for fd in fds:
            os.close(fd)
        return None
    if pid == 0:
        try:
            for child in children.values():
                os.close(child.pidfd)
                child.channel.close()
            selector.close()
            listener.close()
            channel.close()
            os.close(alive)
            _become(request, fds, initial)
        except BaseException:  # noqa: BLE001 - the child's own start failed: say so on its stderr
            import traceback

            with contextlib.suppress(BaseException):
                os.write(2, traceback.format_exc().encode())
            os._exit(1)
    for fd in fds:
        os.close(fd)
    channel.settimeout(None)
    child = _Child(pid, channel, bool(request["setsid"]))
    try:
        channel.sendall(b"pid %d\n" % pid)
    except OSError:  # the caller is gone already: so is its child
        child.kill()
    return child


def _become(request: dict[str, Any], fds: list[int], initial: dict) -> None:
    """In the forked child: turn into ``python -m MODULE args`` as a fresh start would be, run it, exit."""
    if request["setsid"]:
        os.setsid()
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
    for fd in {int(name) for name in os.listdir("/proc/self/fd")} - {0, 1, 2}:
        with contextlib.suppress(OSError):
            os.close(fd)  # the received descriptors; the zygote's own ones were closed by their objects
    if request["controlling_terminal"]:
        import fcntl
        import termios

        fcntl.ioctl(0, termios.TIOCSCTTY, 0)
    for signum, handler in initial.items():
        with contextlib.suppress(OSError, ValueError):
            signal.signal(signum, handler)
    if request["sigint"]:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    env = request["env"]
    os.environ.clear()
    os.environ.update(env)
    time.tzset()
    tempfile.tempdir = None
    sys.dont_write_bytecode = bool(env.get("PYTHONDONTWRITEBYTECODE"))
    os.umask(request["umask"])
    os.chdir(request["cwd"])
    python_path = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    sys.path[:] = [request["cwd"], *python_path, *_BASE_PATH]
    for name in [n for n in sys.modules if n == "tests" or n.startswith("tests.")]:
        del sys.modules[name]  # the zygote's own package, imported from its folder: the child's path decides
    _standard_streams(env)
    sys.argv[:] = [request["module"], *request["args"]]
    os._exit(_run_module(request["module"]))


def _standard_streams(env: Mapping[str, str]) -> None:
    """``sys.stdin``/``stdout``/``stderr`` on the new 0/1/2, made as the interpreter's start makes them."""
    import io

    unbuffered = bool(env.get("PYTHONUNBUFFERED"))
    encoding, _, errors = env.get("PYTHONIOENCODING", "").partition(":")
    for fd, name in enumerate(("stdin", "stdout", "stderr")):
        write = fd > 0
        buffering = 0 if unbuffered and write else -1
        binary = open(fd, "wb" if write else "rb", buffering=buffering, closefd=False)  # noqa: SIM115
        raw = binary if buffering == 0 else binary.raw
        raw.name = f"<{name}>"
        line_buffering = not unbuffered and (raw.isatty() or fd == 2)
        stream = io.TextIOWrapper(
            binary,
            encoding=encoding or _ENCODING,
            errors="backslashreplace" if fd == 2 else (errors or _ERRORS),
            newline="\n",
            line_buffering=line_buffering,
            write_through=unbuffered,
        )
        stream.mode = "w" if write else "r"
        setattr(sys, name, stream)
        setattr(sys, f"__{name}__", stream)


def _run_module(module: str) -> int:
    """Run the module as ``__main__``, then end as the interpreter does: the code of ``SystemExit``, 1 after
    an uncaught exception; non-daemon threads joined, ``atexit`` handlers run, the streams flushed."""
    import atexit as exits
    import runpy

    code, interrupted = 0, False
    package = sys.modules.get(module)
    if package is not None and not hasattr(package, "__path__"):
        del sys.modules[module]  # a fresh start has not imported it (runpy would warn that it had)
    try:
        runpy._get_module_details(module)  # what ``python -m`` checks first
    except ImportError as err:
        print(f"{sys.executable}: {err}", file=sys.stderr)
        return 1
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit as exit:
        code = _exit_code(exit.code)
    except KeyboardInterrupt:
        sys.excepthook(*sys.exc_info())
        interrupted = True
    except BaseException:  # noqa: BLE001 - what the interpreter does with it: the traceback, exit 1
        sys.excepthook(*sys.exc_info())
        code = 1
    threading._shutdown()  # the interpreter's own wait for non-daemon threads
    exits._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None and not stream.closed:
                stream.flush()
        except (OSError, ValueError):
            code = code or 120
    if interrupted:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    return code


def _exit_code(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


_BASE_PATH: list[str] = []
#: The zygote's own ``PYTHON*`` variables that it cannot apply to a child: a start with others is refused.
_ZYGOTE_PYTHON: dict[str, str] = {}
_ENCODING, _ERRORS = "utf-8", "strict"


def main(argv: list[str]) -> None:
    """``python -m tests.preload SOCKET PARENT_PID``: import, then serve until that process ends."""
    global _ENCODING, _ERRORS
    path, parent = argv[0], int(argv[1])
    alive = os.pidfd_open(parent)  # readable once the pytest process has ended
    if os.getppid() != parent:
        return  # it ended already
    python_path = {p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p}
    _BASE_PATH[:] = [p for p in sys.path[1:] if p not in python_path]
    _ENCODING, _ERRORS = sys.stdout.encoding, sys.stdout.errors or "strict"
    _ZYGOTE_PYTHON.update(_python_variables(os.environ))
    _preload()
    serve(path, alive)


if __name__ == "__main__":
    if sys.argv[1] == "launch":
        launch(sys.argv[2], sys.argv[3], sys.argv[4:])
    else:
        main(sys.argv[1:])
