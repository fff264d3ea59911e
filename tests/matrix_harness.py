"""A real Matrix homeserver for the Matrix channel's tests: Synapse on loopback, started once per test run.

Synapse lives in its own venv (``make synapse``: .cache/synapse-venv, git-ignored; its Twisted stack is not
the bot's). The session fixture ``synapse`` writes a small homeserver.yaml (SQLite in /dev/shm, loopback,
registration by shared secret, rate limits out of the way, cheap password hashes, no federation sender), starts it
and waits for ``/_matrix/client/versions``. Under pytest-xdist the run's workers share one Synapse (a start costs
seconds of CPU, paid once a run instead of once a worker): the first worker that needs it starts it under a file lock in
the folder all workers' temporary folders are made in and writes its address there, the others attach to it,
and the controller stops it when the run ends (``pytest_sessionfinish``). Each test registers users of its own
(``matrix`` fixture): a bot, the owner, a friend and, when the test names one, a stranger, with fresh names (the
worker's id in them), so tests share the server but no rooms, no sync tokens, no devices. People are driven
through the client-server API (``MatrixUser``); the bot is the code under test.
"""

from __future__ import annotations

import base64
import copy
import functools
import hashlib
import hmac
import itertools
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import filelock
import pytest
import requests

from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parent.parent
SYNAPSE_PYTHON = ROOT / ".cache" / "synapse-venv" / "bin" / "python"
SHARED_SECRET = "matrix-tests-shared-secret"
PASSWORD = "correct horse battery staple"
START_TIMEOUT = 60.0
#: In the folder the run's xdist workers share: the Synapse they all use (its url, port, pid, folder).
SHARED_STATE = "synapse.json"
#: Where Synapse's SQLite database goes when there is one: a memory-backed folder. Each commit's fsync on the disk
#: cost a fifth of Synapse's CPU in the tests' calls (40 rounds of four users, a room, a join, six messages: 9.2-9.8 s
#: on the disk, 7.3-7.7 s here), and a test server's data need not outlive it.
MEMORY_FOLDER = Path("/dev/shm")
#: A database folder there not written for this long is a killed run's (its cleanup never ran): removed at the next
#: start, so that memory is not held for good. A run's Synapse lives minutes.
STALE_AFTER_SECONDS = 6 * 3600
_DATABASE_PREFIX = "assistant-tests-synapse-"
#: The shared Synapse this worker started, kept for the worker's life: it outlives this worker's session (other
#: workers may still use it), and its Popen collected while it runs would warn (warnings are errors here).
_started_here: list[Synapse] = []

_CONFIG = """\
server_name: "localhost"
pid_file: {dir}/homeserver.pid
listeners:
  - port: {port}
    bind_addresses: ['127.0.0.1']
    type: http
    tls: false
    x_forwarded: false
    resources:
      - names: [client]
        compress: false
database:
  name: sqlite3
  args:
    database: {database}/homeserver.db
log_config: {dir}/log.yaml
media_store_path: {dir}/media
registration_shared_secret: "{secret}"
report_stats: false
signing_key_path: {dir}/signing.key
trusted_key_servers: []
suppress_key_server_warning: true
bcrypt_rounds: 4
enable_metrics: false
presence:
  enabled: false
url_preview_enabled: false
# No other server to send to (no federation listener, server_name localhost): no federation sender working out
# the hosts of each new event's room (a tenth of a room creation's CPU).
federation_sender_instances: []
rc_message: {{per_second: 10000, burst_count: 10000}}
rc_login:
  address: {{per_second: 10000, burst_count: 10000}}
  account: {{per_second: 10000, burst_count: 10000}}
  failed_attempts: {{per_second: 10000, burst_count: 10000}}
rc_joins:
  local: {{per_second: 10000, burst_count: 10000}}
  remote: {{per_second: 10000, burst_count: 10000}}
rc_invites:
  per_room: {{per_second: 10000, burst_count: 10000}}
  per_user: {{per_second: 10000, burst_count: 10000}}
  per_issuer: {{per_second: 10000, burst_count: 10000}}
rc_registration: {{per_second: 10000, burst_count: 10000}}
rc_room_creation: {{per_second: 10000, burst_count: 10000}}
"""

_LOG = """\
version: 1
formatters:
  precise:
    format: '%(asctime)s - %(name)s - %(levelname)s - %(message)s'
handlers:
  file:
    class: logging.FileHandler
    formatter: precise
    filename: {dir}/homeserver.log
root:
  level: WARNING
  handlers: [file]
disable_existing_loggers: false
"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _database_folder(folder: Path) -> Path:
    """A new folder's name in ``MEMORY_FOLDER`` for a Synapse's database, else ``folder`` (no such folder here)."""
    if MEMORY_FOLDER.is_dir() and os.access(MEMORY_FOLDER, os.W_OK):
        return MEMORY_FOLDER / f"{_DATABASE_PREFIX}{os.getpid()}-{secrets.token_hex(4)}"
    return folder


def _remove_stale_databases(now: float) -> None:
    """Remove the database folders in ``MEMORY_FOLDER`` that no file was written in for ``STALE_AFTER_SECONDS``."""
    for database in MEMORY_FOLDER.glob(f"{_DATABASE_PREFIX}*"):
        try:
            written = max([database.stat().st_mtime, *(path.stat().st_mtime for path in database.iterdir())])
        except OSError:  # removed meanwhile
            continue
        if now - written > STALE_AFTER_SECONDS:
            shutil.rmtree(database, ignore_errors=True)


def _remove_database(database: Path) -> None:
    """Remove a stopped Synapse's database folder when it is one of ``_database_folder``'s in memory."""
    if database.parent == MEMORY_FOLDER:
        shutil.rmtree(database, ignore_errors=True)


class _PortTaken(AssertionError):
    """Synapse could not bind its port: another process took it after ``_free_port`` chose it."""


class Synapse:
    """One Synapse process on loopback with a data folder of its own."""

    def __init__(self, folder: Path, port: int | None = None) -> None:
        self.folder = folder
        self.database = _database_folder(folder)
        self.port = port or _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None
        self.started_in = 0.0
        self._names = itertools.count(1)
        # Users are named apart across the workers that share this server, as well as within one.
        self._prefix = os.environ.get("PYTEST_XDIST_WORKER", "")
        self._lock = threading.Lock()

    @classmethod
    def attach(cls, state: dict[str, Any]) -> Synapse:
        """The Synapse another worker of this run started (``state``: what ``shared_state`` wrote)."""
        server = cls(Path(state["folder"]), int(state["port"]))
        server.database = Path(state["database"])
        if not server.answers():
            raise AssertionError(f"the run's shared Synapse at {server.url} (pid {state['pid']}) does not answer")
        return server

    def shared_state(self) -> dict[str, Any]:
        assert self.process is not None
        return {"folder": str(self.folder), "database": str(self.database), "port": self.port, "pid": self.process.pid}

    def start(self) -> Synapse:
        # The port was free when chosen, but another process of the run may bind it before Synapse does (a
        # whole run lost every Matrix test so): then start again on another port.
        for _ in range(3):
            try:
                return self._start_once()
            except _PortTaken:
                self.port = _free_port()
                self.url = f"http://127.0.0.1:{self.port}"
        return self._start_once()

    def _start_once(self) -> Synapse:
        if not SYNAPSE_PYTHON.exists():
            pytest.fail("Synapse is not installed for the tests: run `make synapse` (make test does)")
        self.folder.mkdir(parents=True, exist_ok=True)
        config = self.folder / "homeserver.yaml"
        if self.database.parent == MEMORY_FOLDER:
            _remove_stale_databases(time.time())
        self.database.mkdir(parents=True, exist_ok=True)
        values = {"dir": self.folder, "database": self.database, "port": self.port, "secret": SHARED_SECRET}
        config.write_text(_CONFIG.format(**values), encoding="utf-8")
        (self.folder / "log.yaml").write_text(_LOG.format(dir=self.folder), encoding="utf-8")
        # Synapse's key format ("ed25519 <version> <unpadded base64 seed>"), written here: its own
        # --generate-keys run costs a second start-up.
        seed = base64.b64encode(os.urandom(32)).decode("ascii").rstrip("=")
        (self.folder / "signing.key").write_text(f"ed25519 a_test {seed}\n", encoding="utf-8")
        began = time.monotonic()
        with open(self.folder / "stdout.log", "wb") as out:
            self.process = subprocess.Popen(
                [str(SYNAPSE_PYTHON), "-m", "synapse.app.homeserver", "-c", str(config)],
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=self.folder,
            )
        wait_until(self._answers, timeout=START_TIMEOUT, what=f"Synapse to answer on {self.url}")
        self.started_in = time.monotonic() - began
        return self

    def _answers(self) -> bool:
        assert self.process is not None
        if self.process.poll() is not None:
            log = (self.folder / "stdout.log").read_text(errors="replace")[-3000:]
            if "Address already in use" in log:
                raise _PortTaken(log)
            raise AssertionError(f"Synapse exited with {self.process.returncode}:\n{log}")
        return self.answers()

    def answers(self) -> bool:
        try:
            return requests.get(f"{self.url}/_matrix/client/versions", timeout=1).ok
        except requests.RequestException:
            return False

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        _remove_database(self.database)

    def register(self, name: str) -> MatrixUser:
        """A new user ``@<name>-<n>:localhost`` (unique in the session), registered by the shared secret."""
        with self._lock:
            localpart = f"{name}-{self._prefix}{next(self._names)}-{secrets.token_hex(2)}"
        endpoint = f"{self.url}/_synapse/admin/v1/register"
        nonce = requests.get(endpoint, timeout=10).json()["nonce"]
        mac = hmac.new(SHARED_SECRET.encode(), digestmod=hashlib.sha1)
        mac.update(f"{nonce}\x00{localpart}\x00{PASSWORD}\x00notadmin".encode())
        body = {"nonce": nonce, "username": localpart, "password": PASSWORD, "admin": False, "mac": mac.hexdigest()}
        answer = requests.post(endpoint, json=body, timeout=10)
        answer.raise_for_status()
        data = answer.json()
        return MatrixUser(self.url, data["user_id"], data["access_token"])


class MatrixUser:
    """A person on the homeserver, through the client-server API."""

    def __init__(self, url: str, user_id: str, token: str) -> None:
        self.url = url
        self.user_id = user_id
        self.token = token
        self._txn = itertools.count(1)

    def _call(self, method: str, path: str, body: Any = None, **params: Any) -> Any:
        answer = requests.request(
            method,
            f"{self.url}/_matrix/client/v3{path}",
            json=body,
            params=params or None,
            headers={"Authorization": f"Bearer {self.token}"},
            timeout=30,
        )
        if not answer.ok:
            raise AssertionError(f"{method} {path}: {answer.status_code} {answer.text[:300]}")
        return answer.json()

    def create_room(
        self, invite: list[str] = (), *, direct: bool = False, encrypted: bool = False, name: str = ""
    ) -> str:
        body: dict[str, Any] = {"invite": list(invite), "is_direct": direct, "preset": "private_chat"}
        if name:
            body["name"] = name
        if encrypted:
            body["initial_state"] = [
                {"type": "m.room.encryption", "state_key": "", "content": {"algorithm": "m.megolm.v1.aes-sha2"}}
            ]
        return str(self._call("POST", "/createRoom", body)["room_id"])

    def join(self, room: str) -> None:
        self._call("POST", f"/join/{quote(room)}", {})

    def invite(self, room: str, user_id: str) -> None:
        self._call("POST", f"/rooms/{quote(room)}/invite", {"user_id": user_id})

    def send(self, room: str, text: str = "", **content: Any) -> str:
        body = {"msgtype": "m.text", "body": text, **content}
        path = f"/rooms/{quote(room)}/send/m.room.message/t{next(self._txn)}-{secrets.token_hex(4)}"
        return str(self._call("PUT", path, body)["event_id"])

    def send_event(self, room: str, event_type: str, content: dict[str, Any]) -> str:
        path = f"/rooms/{quote(room)}/send/{event_type}/t{next(self._txn)}-{secrets.token_hex(4)}"
        return str(self._call("PUT", path, content)["event_id"])

    def leave(self, room: str) -> None:
        self._call("POST", f"/rooms/{quote(room)}/leave", {})

    def upload(self, data: bytes, mime: str, name: str) -> str:
        answer = requests.post(
            f"{self.url}/_matrix/media/v3/upload",
            params={"filename": name},
            data=data,
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": mime},
            timeout=30,
        )
        answer.raise_for_status()
        return str(answer.json()["content_uri"])

    def download(self, mxc: str) -> bytes:
        server, media = mxc.removeprefix("mxc://").split("/", 1)
        answer = requests.get(
            f"{self.url}/_matrix/client/v1/media/download/{server}/{media}",
            headers={"Authorization": f"Bearer {self.token}"},
            timeout=30,
        )
        answer.raise_for_status()
        return answer.content

    def members(self, room: str) -> dict[str, str]:
        """user id -> membership ("join", "invite", "leave") of everyone in ``room``."""
        events = self._call("GET", f"/rooms/{quote(room)}/members")["chunk"]
        return {event["state_key"]: event["content"]["membership"] for event in events}

    def invites(self) -> dict[str, dict[str, Any]]:
        """Rooms this person is invited to now: room id -> the content of their invite (``is_direct``)."""
        # a filter of its own each time: Synapse answers the same first sync from a cache for two minutes
        once = json.dumps({"room": {"timeline": {"limit": next(self._txn)}}})
        rooms = self._call("GET", "/sync", timeout=0, filter=once).get("rooms", {}).get("invite", {})
        return {
            room: next((e["content"] for e in info["invite_state"]["events"] if e.get("state_key") == self.user_id), {})
            for room, info in rooms.items()
        }

    def account_data(self, kind: str) -> dict[str, Any]:
        """This person's account data of ``kind`` (``m.direct``)."""
        got: dict[str, Any] = self._call("GET", f"/user/{quote(self.user_id)}/account_data/{kind}")
        return got

    def membership(self, room: str, user_id: str) -> dict[str, Any]:
        """The content of ``user_id``'s member event in ``room`` (``membership``, a refusal's ``reason``)."""
        got: dict[str, Any] = self._call("GET", f"/rooms/{quote(room)}/state/m.room.member/{quote(user_id)}")
        return got

    def events(self, room: str) -> list[dict[str, Any]]:
        """The room's m.room.message events, oldest first (edits included as their own events)."""
        found = self._call("GET", f"/rooms/{quote(room)}/messages", dir="b", limit=1000)["chunk"]
        return [e for e in reversed(found) if e.get("type") == "m.room.message"]

    def shown(self, room: str, sender: str) -> list[dict[str, Any]]:
        """What ``sender``'s messages in ``room`` read as now: each original with its newest edit applied."""
        events = [e for e in self.events(room) if e["sender"] == sender]
        latest: dict[str, dict[str, Any]] = {}
        originals = []
        for event in events:
            relation = event["content"].get("m.relates_to") or {}
            if relation.get("rel_type") == "m.replace":
                latest[relation["event_id"]] = event["content"].get("m.new_content") or {}
            else:
                originals.append(event)
        out = []
        for event in originals:
            content = copy.deepcopy(event["content"])
            content.update(latest.get(event["event_id"], {}))
            out.append({**event, "content": content})
        return out

    def texts(self, room: str, sender: str) -> list[str]:
        return [str(e["content"].get("body", "")) for e in self.shown(room, sender)]

    def edits(self, room: str, sender: str) -> list[str]:
        """The texts ``sender``'s edits in ``room`` set, in order."""
        out = []
        for event in self.events(room):
            relation = event["content"].get("m.relates_to") or {}
            if event["sender"] == sender and relation.get("rel_type") == "m.replace":
                out.append(str((event["content"].get("m.new_content") or {}).get("body", "")))
        return out


@dataclass
class MatrixWorld:
    """One test's people on the session's homeserver; the stranger is registered when the test first names them
    (most tests never do: a registration is two requests, each test's four were a fifth of its own)."""

    server: Synapse
    bot: MatrixUser
    owner: MatrixUser
    friend: MatrixUser

    @classmethod
    def registered(cls, server: Synapse) -> MatrixWorld:
        """New people on ``server``: the bot's account, the owner and a friend (allowed)."""
        return cls(server, server.register("bot"), server.register("owner"), server.register("friend"))

    @functools.cached_property
    def stranger(self) -> MatrixUser:
        """Someone not allowed, registered at the first use."""
        return self.server.register("stranger")

    def config(self, base: dict[str, Any], **overrides: Any) -> dict[str, Any]:
        """``base`` (the conftest bot_config) plus a matrix section for this world's bot."""
        config = copy.deepcopy(base)
        config["matrix"] = {
            "enabled": True,
            "homeserver": self.server.url,
            "user_id": self.bot.user_id,
            "password": PASSWORD,
            "allowed": [self.owner.user_id, self.friend.user_id],
            **overrides,
        }
        config.setdefault("memory", {"enabled": False})
        return config

    def direct_room(self) -> str:
        """A direct room the owner made and the bot was invited to (the bot joins it when it runs)."""
        return self.owner.create_room([self.bot.user_id], direct=True)

    def joined(self, room: str) -> bool:
        return self.owner.members(room).get(self.bot.user_id) == "join"


@pytest.fixture(scope="session")
def synapse(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Synapse]:
    """The run's Synapse (import it into a test module to use it): one for all xdist workers, else the session's."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        server = Synapse(tmp_path_factory.mktemp("synapse")).start()
        try:
            yield server
        finally:
            server.stop()
        return
    shared = tmp_path_factory.getbasetemp().parent  # the run's folder, the workers' folders made in it
    with filelock.FileLock(str(shared / "synapse.lock")):
        state = shared / SHARED_STATE
        if state.exists():
            server = Synapse.attach(json.loads(state.read_text(encoding="utf-8")))
        else:
            server = Synapse(shared / "synapse").start()
            _started_here.append(server)
            state.write_text(json.dumps(server.shared_state()), encoding="utf-8")
    yield server  # the controller stops it once every worker is done (pytest_sessionfinish below)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """In xdist's controller (after all workers ended): stop the Synapse the run's workers shared, if any."""
    config = session.config
    if hasattr(config, "workerinput") or not config.pluginmanager.hasplugin("dsession"):
        return
    state = config._tmp_path_factory.getbasetemp() / SHARED_STATE
    if state.exists():
        shared = json.loads(state.read_text(encoding="utf-8"))
        stop_pid(int(shared["pid"]))
        _remove_database(Path(shared["database"]))


def pytest_unconfigure(config: pytest.Config) -> None:
    """In the worker that started the run's shared Synapse: its process outlives this worker by design (the
    controller stops it once every worker is done, above), so the Popen collected when this interpreter ends
    says nothing. Without this, a run with warnings shown ended on "ResourceWarning: subprocess N is still
    running" after its last test (PYTHONWARNINGS=default, tests/test_matrix_bot.py -n 2)."""
    for server in _started_here:
        if server.process is not None and server.process.poll() is None:
            # Handed over: Popen's __del__ warns about a child it created that still runs, and no warning filter
            # set here reliably outlives pytest's at this interpreter's end (a whole run still printed it as an
            # unraisable ResourceWarning); the Popen is told the child is no longer its own to wait for.
            server.process._child_created = False  # type: ignore[attr-defined]


def stop_pid(pid: int, timeout: float = 15.0) -> None:
    """SIGTERM ``pid`` (not this process's child: the worker that started it has ended), SIGKILL after ``timeout``."""
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 5.0)):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.05)


@pytest.fixture
def matrix(synapse: Synapse) -> MatrixWorld:
    """Fresh users for one test: the bot's account, the owner, a friend (allowed) and, when named, a stranger."""
    assert isinstance(synapse, Synapse)  # named here: the test starts the Synapse process (tests/tiers.py)
    return MatrixWorld.registered(synapse)


class RunningMatrix:
    """A MatrixService running in a thread; use as a context manager."""

    def __init__(self, runtime: Any, **kwargs: Any) -> None:
        from messaging_llm_bot.channels.matrix.service import MatrixService

        kwargs.setdefault("reminder_poll_seconds", 0.3)
        kwargs.setdefault("backoff_max", 0.5)
        self.service = MatrixService(runtime, stop_signals=None, **kwargs)
        self.exit_code: int | None = None
        self._thread = threading.Thread(target=self._run, name="matrix-bot-under-test", daemon=True)

    def _run(self) -> None:
        self.exit_code = self.service.run()

    def start(self) -> RunningMatrix:
        self._thread.start()
        if not self.service.ready.wait(30):
            raise TimeoutError(f"the Matrix bot did not become ready (exit code {self.exit_code})")
        return self

    def stop(self, timeout: float = 20) -> int | None:
        self.service.stop()
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise TimeoutError("the Matrix bot's thread did not stop")
        return self.exit_code

    def __enter__(self) -> RunningMatrix:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        if self._thread.is_alive():
            self.stop()


@pytest.fixture
def start_matrix(bot_config, matrix, workspace, tmp_path):
    """Factory: ``start_matrix(patch=None, **matrix_overrides)`` runs the bot in-process against the session's
    Synapse; all stop after the test. ``patch(config)`` may change the config before the bot is built."""
    from tests.telegram_harness import make_runtime

    bots: list[RunningMatrix] = []

    def run(patch=None, **overrides: Any) -> RunningMatrix:
        config = matrix.config(bot_config, **overrides)
        if patch:
            patch(config)
        bot = RunningMatrix(make_runtime(config, workspace, tmp_path)).start()
        bots.append(bot)
        return bot

    run.running = bots  # type: ignore[attr-defined]  # the bots started, newest last
    yield run
    for bot in bots:
        bot.__exit__()
