"""Outside events start turns (issue 44): ``POST /hooks/<name>`` on the bot's hooks listener.

Through the real bot process (fake Bot API, fake model server): a signed call runs its prompt with the body as
outside content and the answer reaches the owner's chat once, also across a SIGKILL mid-turn; a wrong
signature gets 401 and runs nothing; the same delivery id twice runs once; ``assistant hooks test`` and
``list``. In-process against the real listener (real sockets, Tornado): the bounds and the durable memory
of deliveries."""

from __future__ import annotations

import json
import logging
import socket
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from assistant_framework.config.settings import HooksSettings
from assistant_framework.config.settings.fields import read_record
from assistant_framework.hooks.auth import read_hooks, signature_of
from assistant_framework.hooks.deliveries import Deliveries
from assistant_framework.hooks.listener import HookCall, HookListener, Outcome
from assistant_framework.workspace import Workspace
from tests.cli_inprocess import run_cli
from tests.crash_bot import BotProcess, echo_reply, sent_texts, write_bot_config
from tests.fakes.bot_api import FakeBotAPI
from tests.fakes.feed_server import StaticHTTPServer
from tests.waiting import wait_until

OWNER = 1
SECRET = "build-secret-" + "s" * 24
NOTE_SECRET = "note-secret-" + "n" * 24
PROMPT = "Summarise this build result for me."


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(
        url, body, {"Content-Type": "application/json", "Accept": "application/json", **headers}, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, json.loads(answer.read() or b"{}")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def signed(body: bytes, delivery: str | None = None, secret: str = SECRET) -> dict[str, str]:
    return {"X-Hub-Signature-256": signature_of(secret, body), **({"X-GitHub-Delivery": delivery} if delivery else {})}


def hook_turns(server: Any) -> list[dict]:
    return [r for r in server.chat_requests if "Hook 'build' was called" in json.dumps(r["messages"])]


@pytest.mark.timeout(120)
def test_a_signed_call_runs_its_prompt_once_and_the_answer_reaches_the_owner_once(
    tmp_path: Path, bot_config: dict, chat_server: Any
) -> None:
    slow_once = {"left": 1}

    def model(request: dict) -> Any:
        last = request["messages"][-1]["content"]
        if "Hook 'build' was called" not in last:
            return echo_reply(request)
        status = "slow" if "slow-build" in last else "green" if "green" in last else "other"
        reply = json.dumps({"reply": f"build summary: {status}"})
        if status == "slow" and slow_once["left"]:
            slow_once["left"] -= 1
            return {"content": reply, "delay": 20}  # the bot is killed while this turn waits
        return reply

    chat_server.set_handler(model)
    port = free_port()
    workspace = tmp_path / "workspace"
    hooks = {
        "port": port,
        "endpoints": {
            "build": {"secret_env": "BUILD_SECRET", "prompt": PROMPT},
            "note": {"secret_env": "NOTE_SECRET", "message": "Backup finished."},
            "nightly": {"secret_env": "NOTE_SECRET", "job": "nightly"},
        },
    }
    env = {"BUILD_SECRET": SECRET, "NOTE_SECRET": NOTE_SECRET}
    base = f"http://127.0.0.1:{port}/hooks"
    with FakeBotAPI() as fake:
        config = write_bot_config(tmp_path / "config.json", bot_config, fake, allowed=[OWNER], extra={"hooks": hooks})
        with BotProcess(config, workspace, tmp_path / "bot.log", env=env) as bot:
            bot.start().wait_ready()
            # Runs go to the owner's chat once Telegram has joined the job scheduler (503 before: sent again later).
            wait_until(lambda: "telegram joined the scheduler" in bot.run_log(), what="the hooks' channel")

            # Signed (GitHub's form): accepted, its prompt runs with the body as outside content, answered once.
            body = json.dumps({"status": "green", "sha": "abc123"}).encode()
            status, answer = post(f"{base}/build", body, signed(body, "d-1"))
            assert status == 202, answer
            fake.wait_for(lambda: any("build summary: green" in t for t in sent_texts(fake, OWNER)), timeout=30)
            [turn] = hook_turns(chat_server)
            asked = turn["messages"][-1]["content"]
            tools = turn["messages"][0]["content"]
            assert "\n- file: " in tools and "send_file" not in tools, "a hook's run has no chat to send a file to"
            assert PROMPT in asked and "> " in asked and "abc123" in asked
            assert (
                "the body posted to hook 'build'; outside content" in asked and "[Note] This message carries" in asked
            )

            # The same delivery again: 200, nothing runs, nothing more is sent.
            status, answer = post(f"{base}/build", body, signed(body, "d-1"))
            assert status == 200 and "before" in answer["message"], answer

            # A wrong signature, none at all, another hook's secret: 401, nothing runs.
            other = json.dumps({"status": "red"}).encode()
            for headers in (
                {"X-Hub-Signature-256": "sha256=" + "0" * 64, "X-GitHub-Delivery": "d-2"},
                {"X-GitHub-Delivery": "d-3"},
                signed(other, "d-4", NOTE_SECRET),
                {"Authorization": f"Bearer {NOTE_SECRET}"},
            ):
                status, answer = post(f"{base}/build", other, headers)
                assert status == 401, (headers, status, answer)
            assert len(hook_turns(chat_server)) == 1
            assert [t for t in sent_texts(fake, OWNER) if "build summary" in t] == ["🔔 build\n\nbuild summary: green"]

            # A bearer secret works too; a message hook sends its text as is.
            status, _ = post(f"{base}/note", b"{}", {"Authorization": f"Bearer {NOTE_SECRET}", "X-Delivery-Id": "n-1"})
            assert status == 202
            fake.wait_for(lambda: "🔔 Backup finished." in sent_texts(fake, OWNER), timeout=30)

            # A job hook runs the scheduled job now, through the job's own path.
            added = run_cli(
                "jobs", "add", "nightly", "--at", "2099-01-01 10:00", "--message", "Nightly report ready.",
                "--config", str(config), "--workspace", str(workspace),
            )  # fmt: skip
            assert added.returncode == 0, added.stderr
            status, _ = post(
                f"{base}/nightly", b"{}", {"Authorization": f"Bearer {NOTE_SECRET}", "X-Delivery-Id": "j-1"}
            )
            assert status == 202
            fake.wait_for(lambda: any("Nightly report ready." in t for t in sent_texts(fake, OWNER)), timeout=30)

            # `assistant hooks test` signs and posts as a sender would; `list` never shows a secret.
            tested = run_cli("hooks", "test", "build", "--config", str(config), env=env)
            assert tested.returncode == 0 and tested.stdout.startswith("202:"), (tested.stdout, tested.stderr)
            listed = run_cli("hooks", "list", "--json", "--config", str(config), env=env)
            assert listed.returncode == 0 and SECRET not in listed.stdout and NOTE_SECRET not in listed.stdout
            assert {hook["name"]: hook["kind"] for hook in json.loads(listed.stdout)} == {
                "build": "prompt",
                "note": "message",
                "nightly": "job",
            }
            fake.wait_for(lambda: len(hook_turns(chat_server)) == 2, timeout=30)

            # Killed while the run's turn waits for the model: the next start answers it, and once.
            slow = json.dumps({"status": "slow-build"}).encode()
            assert post(f"{base}/build", slow, signed(slow, "d-slow"))[0] == 202
            wait_until(lambda: any("slow-build" in json.dumps(r["messages"]) for r in hook_turns(chat_server)))
            bot.kill()
            bot.start().wait_ready()
            wait_until(lambda: "telegram joined the scheduler" in bot.run_log(), what="the hooks' channel")
            fake.wait_for(lambda: any("build summary: slow" in t for t in sent_texts(fake, OWNER)), timeout=60)
            # The sender retries after the crash: taken before, not run again.
            assert post(f"{base}/build", slow, signed(slow, "d-slow"))[0] == 200
            assert bot.terminate() == 0
        assert sum("build summary: slow" in t for t in sent_texts(fake, OWNER)) == 1
        assert sum("Backup finished." in t for t in sent_texts(fake, OWNER)) == 1


# -- the listener in-process: bounds and the memory of deliveries ------------------------------------------


@pytest.fixture
def listener(tmp_path: Path):
    """A started listener on loopback (port 0) for hook ``ping`` (bearer or signed), recording its calls."""
    settings = read_record(
        HooksSettings,
        {
            "port": 0,
            "per_minute": 3,
            "max_body_bytes": 1000,
            "endpoints": {"ping": {"secret": SECRET, "message": "hi"}},
        },
    )
    calls: list[HookCall] = []

    def start(call: HookCall) -> Outcome:
        calls.append(call)
        return Outcome(True, 202, "accepted")

    made = HookListener(settings, read_hooks(settings), Deliveries(Workspace(tmp_path / "ws")), start)
    made.start()
    made.calls = calls  # type: ignore[attr-defined]
    yield made
    made.stop()


def test_the_listener_bounds_a_hook_before_anything_runs(listener: HookListener) -> None:
    url = f"http://127.0.0.1:{listener.port}/hooks"
    assert post(f"{url}/nope", b"{}", signed(b"{}", "x"))[0] == 404
    big = b"x" * 1001
    assert post(f"{url}/ping", big, signed(big, "big"))[0] == 413
    assert post(f"{url}/ping", b"{}", signed(b"{}", "y" * 201))[0] == 400
    for n in range(3):
        assert post(f"{url}/ping", b"{}", signed(b"{}", f"ok-{n}"))[0] == 202
    status, answer = post(f"{url}/ping", b"{}", signed(b"{}", "ok-4"))
    assert status == 429 and "hooks.per_minute" in answer["message"]
    assert [call.run_id.split(":")[1] for call in listener.calls] == ["ping"] * 3  # type: ignore[attr-defined]


def test_wrong_signatures_meet_a_bound_and_run_nothing(listener: HookListener) -> None:
    url = f"http://127.0.0.1:{listener.port}/hooks/ping"
    statuses = [post(url, b"{}", {"Authorization": f"Bearer wrong-{n}-" + "w" * 20})[0] for n in range(21)]
    assert statuses[:20] == [401] * 20 and statuses[20] == 429
    assert listener.calls == []  # type: ignore[attr-defined]


def test_unsigned_bodies_sent_a_byte_at_a_time_do_not_starve_a_signed_call(listener: HookListener) -> None:
    """More connections than the listener's cap each send a hook's headers and then its body a byte at a time
    (anyone can: the signature is checked once the body is in). They held every connection for the body timeout
    and a signed call got 503 (fails so without the push-out of slow bodies, checked)."""
    held = []
    try:
        for _ in range(40):
            sock = socket.create_connection(("127.0.0.1", listener.port), timeout=5)
            sock.sendall(b"POST /hooks/ping HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{")
            held.append(sock)
        time.sleep(0.7)  # past the server's PUSH_OUT_AFTER_SECONDS
        status, _ = post(f"http://127.0.0.1:{listener.port}/hooks/ping", b"{}", signed(b"{}", "real"))
        assert status == 202
    finally:
        for sock in held:
            sock.close()
    assert len(listener.calls) == 1  # type: ignore[attr-defined]


def test_a_flood_of_refused_calls_costs_the_log_a_few_lines(listener: HookListener, caplog) -> None:
    """150 calls of hooks that do not exist and 150 wrong signatures each wrote Tornado's access line (and the
    refusal's) to the bot's log, without a bound; each kind of line is now 20 a minute, as the web page's."""
    caplog.set_level(logging.INFO)
    url = f"http://127.0.0.1:{listener.port}/hooks"
    for n in range(150):
        assert post(f"{url}/nope{n}", b"{}", {})[0] == 404
        assert post(f"{url}/ping", b"{}", {"Authorization": f"Bearer wrong-{n}-" + "w" * 20})[0] in (401, 429)
    lines = [r for r in caplog.records if r.name in ("tornado.access", "assistant_framework.hooks.listener")]
    assert len(lines) <= 70, len(lines)
    assert post(f"{url}/ping", b"{}", signed(b"{}", "real"))[0] == 202


def test_a_delivery_is_remembered_across_a_restart_and_a_body_without_an_id_runs_once(tmp_path: Path) -> None:
    workspace = Workspace(tmp_path / "ws")
    settings = read_record(HooksSettings, {"port": 0, "endpoints": {"ping": {"secret": SECRET, "message": "hi"}}})
    calls: list[HookCall] = []
    for _run in range(2):  # the second listener is the bot after a restart: it reads the log
        made = HookListener(
            settings,
            read_hooks(settings),
            Deliveries(workspace),
            lambda c: (calls.append(c), Outcome(True, 202, "ok"))[1],
        )
        made.start()
        try:
            url = f"http://127.0.0.1:{made.port}/hooks/ping"
            for body, delivery in ((b'{"a": 1}', "gh-1"), (b'{"b": 2}', None), (b'{"b": 2}', None)):
                post(url, body, signed(body, delivery))
        finally:
            made.stop()
    assert len(calls) == 2, [c.run_id for c in calls]
    assert (tmp_path / "ws" / "state" / "hooks" / "deliveries.log").read_text().count("\n") == 2


def test_a_hook_without_a_usable_secret_is_a_config_error_naming_it(tmp_path: Path) -> None:
    from assistant_framework.config import ConfigError

    settings = read_record(
        HooksSettings, {"endpoints": {"build": {"secret_env": "NO_SUCH_HOOK_SECRET", "prompt": "p"}}}
    )
    with pytest.raises(ConfigError, match="NO_SUCH_HOOK_SECRET is not set"):
        read_hooks(settings, {})
    short = read_record(HooksSettings, {"endpoints": {"build": {"secret": "short", "prompt": "p"}}})
    with pytest.raises(ConfigError, match="hooks.endpoints.build.secret is shorter"):
        read_hooks(short, {})
    (tmp_path / "config.json").write_text(
        json.dumps({"hooks": {"endpoints": {"build": {"secret": SECRET, "prompt": "p", "message": "m"}}}})
    )
    checked = run_cli("config", "validate", "--config", str(tmp_path / "config.json"))
    assert checked.returncode == 2 and "exactly one of message, prompt or job" in checked.stdout + checked.stderr


def test_doctor_shows_the_listener_and_names_a_hooks_unset_secret(tmp_path: Path) -> None:
    from tests.fakes.chat_server import FakeChatServer

    with FakeBotAPI() as tg, FakeChatServer() as chat:
        root = tmp_path / "config"
        root.mkdir()
        endpoints = {
            "build": {"secret_env": "BUILD_SECRET_T", "prompt": PROMPT},
            "note": {"secret_env": "NOTE_SECRET_T", "message": "hi", "chat": "tg:42"},
        }
        (root / "hooks.json").write_text(json.dumps({"port": 8799, "endpoints": endpoints}))
        (root / "telegram.json").write_text(
            json.dumps({"token": tg.token, "base_url": tg.base_url, "allowed_user_ids": [42]})
        )
        (root / "llm.json").write_text(
            json.dumps({"runners": [{"name": "local", "base_url": chat.base_url, "model": "fake-model"}]})
        )
        env = {"BUILD_SECRET_T": SECRET}
        done = run_cli("doctor", "--json", "--config", str(root), "--workspace", str(tmp_path / "ws"), env=env)
    checks = {c["name"]: c for c in json.loads(done.stdout)}
    assert done.returncode == 1
    assert checks["hooks"]["status"] == "ok" and "127.0.0.1:8799/hooks/" in checks["hooks"]["detail"]
    assert checks["hook build"]["status"] == "ok" and "BUILD_SECRET_T" in checks["hook build"]["detail"]
    failed = checks["hook note"]
    assert failed["status"] == "fail" and "NOTE_SECRET_T is not set" in failed["detail"]
    assert SECRET not in done.stdout


def test_hooks_test_leaves_a_listener_that_drips_at_its_timeout_in_one_sentence(tmp_path: Path) -> None:
    """Something on the hooks port answers a byte now and then (its headers, or its body): no per-read timeout
    ends that, the call's one deadline (``--timeout``) does; the owner reads one sentence and exit 1."""
    with StaticHTTPServer() as server:
        port = int(server.url("/").rsplit(":", 1)[1].split("/")[0])
        config = tmp_path / "config.json"
        hooks = {"listen": "127.0.0.1", "port": port, "endpoints": {"build": {"secret": SECRET, "prompt": PROMPT}}}
        config.write_text(json.dumps({"hooks": hooks}))
        for drip in ({"drip_head": 0.05}, {"drip": 0.05}):
            server.add("/hooks/build", b'{"message": "' + b"x" * 5000 + b'"}', content_type="application/json", **drip)
            tested = run_cli("hooks", "test", "build", "--config", str(config), "--timeout", "1")
            url = f"http://127.0.0.1:{port}/hooks/build"
            assert (tested.returncode, tested.stderr) == (1, ""), (drip, tested)
            assert tested.stdout == (
                f"No whole answer from {url} within 1 s (--timeout): the hook may or may not have run; is the bot "
                "(and not something else) listening there?\n"
            ), drip
        assert [r.method for r in server.requests_to("/hooks/build")] == ["POST", "POST"]
        assert all(r.headers["X-Hub-Signature-256"].startswith("sha256=") for r in server.requests)
