"""``assistant doctor``: each check against the real fakes (Bot API, Chat Completions), ok/warn/fail, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assistant_framework.workspace import Workspace
from messaging_llm_bot.cli.main import main
from tests import preload
from tests.certs import make_ca
from tests.cli_inprocess import run_cli
from tests.fakes.bot_api import FakeBotAPI
from tests.fakes.chat_server import FakeChatServer


@pytest.fixture
def servers():
    with FakeBotAPI() as tg, FakeChatServer() as chat:
        chat.set_handler(lambda request: "OK")
        yield tg, chat


def _config(
    root: Path,
    tg: FakeBotAPI,
    chat: FakeChatServer,
    *,
    telegram: dict | None = None,
    llm: dict | None = None,
    runtime: dict | None = None,
) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "telegram.json").write_text(
        json.dumps({"token": tg.token, "base_url": tg.base_url, "allowed_user_ids": [42], **(telegram or {})})
    )
    (root / "llm.json").write_text(
        json.dumps(llm or {"runners": [{"name": "local", "base_url": chat.base_url, "model": "fake-model"}]})
    )
    (root / "runtime.json").write_text(json.dumps(runtime or {"timezone": "UTC"}))
    return root


def _doctor(capsys, config: Path, workspace: Path, *extra: str) -> tuple[int, dict[str, dict]]:
    code = main(["doctor", "--json", "--config", str(config), "--workspace", str(workspace), *extra])
    checks = json.loads(capsys.readouterr().out)
    return code, {c["name"]: c for c in checks}


def test_all_good_exits_0_and_reports_bot_model_and_structured_output(servers, tmp_path: Path, capsys) -> None:
    tg, chat = servers
    config = _config(tmp_path / "config", tg, chat)
    Workspace(tmp_path / "ws")
    code, checks = _doctor(capsys, config, tmp_path / "ws")
    assert code == 0, checks
    assert {c["status"] for c in checks.values()} == {"ok"}, checks
    assert "@testbot" in checks["telegram token"]["detail"]
    model = checks["model local"]["detail"]
    assert "'fake-model' listed" in model and "1-token completion in" in model and "json_object" in model
    assert chat.chat_requests[0]["max_tokens"] == 1
    assert main(["doctor", "--config", str(config), "--workspace", str(tmp_path / "ws")]) == 0
    assert "0 failure(s)" in capsys.readouterr().out


def test_each_failure_is_reported_with_what_to_do(servers, tmp_path: Path, capsys) -> None:
    tg, chat = servers
    skills = tmp_path / "skills" / "broken"
    skills.mkdir(parents=True)
    (skills / "__init__.py").write_text("raise ImportError('no such thing')\n")
    (skills / "README.md").write_text("# broken\n")
    config = _config(
        tmp_path / "config",
        tg,
        chat,
        telegram={
            "token": "999:wrong",
            "allowed_user_ids": [],
            "mode": "webhook",
            "webhook": {"url": "https://example.org/hook", "secret_token": ""},
        },
        llm={
            "runners": [
                {"name": "down", "base_url": "http://127.0.0.1:9/v1", "model": "m"},
                {"name": "nomodel", "base_url": chat.base_url, "model": "qwen3:80b"},
            ]
        },
        runtime={"skills_dirs": [str(tmp_path / "skills")]},
    )
    code, checks = _doctor(capsys, config, tmp_path / "not_a_workspace")
    assert code == 1
    failed = {name for name, c in checks.items() if c["status"] == "fail"}
    assert failed == {
        "telegram token",
        "allowlist",
        "webhook secret",
        "model down",
        "model nomodel",
        "workspace",
        "skills",
    }, checks
    assert "refused the token" in checks["telegram token"]["detail"]
    assert "cannot reach the model server" in checks["model down"]["detail"]
    assert "does not list the model 'qwen3:80b'" in checks["model nomodel"]["detail"]
    assert all(checks[name]["fix"] for name in failed)
    assert not (tmp_path / "not_a_workspace").exists()  # the doctor creates nothing


def _token_check(config: Path, workspace: Path, env: dict[str, str] | None = None) -> tuple[dict, str]:
    """The doctor's "telegram token" line (run as a fresh process logs: a library's log line reaches stderr) and
    everything the command printed."""
    run = run_cli("doctor", "--json", "--quick", "--config", str(config), "--workspace", str(workspace), env=env)
    return {c["name"]: c for c in json.loads(run.stdout)}["telegram token"], run.stdout + run.stderr


def test_the_token_check_says_in_one_line_why_the_bot_api_did_not_answer(servers, tmp_path: Path, monkeypatch) -> None:
    """A page that is not JSON, JSON that is not the Bot API's answer (python-telegram-bot raised a bare KeyError or
    TypeError), the Bot API's description, an answer trickled past the deadline of the whole exchange (a little
    before each read: whitespace before the JSON, or a header line a byte at a time), a refused token, a server that
    is gone: one line each, naming the server, never the token, and nothing else printed (python-telegram-bot logs
    a body that is not JSON with a traceback)."""
    from messaging_llm_bot.ops.channels.telegram import probe

    monkeypatch.setattr(probe, "TIMEOUT_SECONDS", 0.5)
    tg, chat = servers
    config = _config(tmp_path / "config", tg, chat)
    Workspace(tmp_path / "ws")
    late = json.dumps({"ok": True, "result": tg.bot_user}).encode()
    faults = [
        (lambda: tg.answer_next("getMe", b"<html>Bad Gateway</html>", status=502), "answered HTTP 502, not JSON"),
        (lambda: tg.answer_next("getMe", b"<html>Welcome</html>"), "answered HTTP 200, not JSON"),
        # JSON, but not the Bot API's answer (python-telegram-bot's KeyError: 'result', or TypeError, before)
        (
            lambda: tg.answer_next("getMe", b'{"ok": false, "description": "gone"}', content_type="application/json"),
            'answered HTTP 200 with "ok": false (gone), not a result',
        ),
        (
            lambda: tg.answer_next("getMe", b'{"status": "up"}', content_type="application/json"),
            'answered HTTP 200 with JSON that is not a Bot API answer (no "ok": true and "result"): is '
            "telegram.base_url a Bot API server?",
        ),
        (
            lambda: tg.answer_next("getMe", b'{"ok": true, "result": {"id": 1}}', content_type="application/json"),
            "answered with a result not in the Bot API's form: is telegram.base_url a Bot API server?",
        ),
        (
            lambda: tg.fail_next("getMe", 500, "Internal Server Error: restart"),
            "answered: Internal Server Error: restart",
        ),
        (lambda: tg.answer_next("getMe", late, trickle={"every": 0.1, "for": 3}), "did not answer within 0.5 s"),
        (
            lambda: tg.answer_next("getMe", late, trickle={"every": 0.1, "for": 3, "where": "head"}),
            "did not answer within 0.5 s",
        ),
    ]
    for fault, said in faults:
        fault()
        check, printed = _token_check(config, tmp_path / "ws")
        assert check["status"] == "fail" and check["detail"] == f"the Bot API at {tg.base_url} {said}", check
        assert tg.token not in printed and "Traceback" not in printed and "\n" not in check["detail"], printed
    _config(tmp_path / "config", tg, chat, telegram={"token": "999:wrong-token"})
    check, printed = _token_check(config, tmp_path / "ws")
    assert check["detail"] == "the Bot API refused the token: copy it again from @BotFather", check
    assert "999:wrong-token" not in printed
    _config(tmp_path / "config", tg, chat)
    gone = tg.base_url
    tg.stop()
    check, printed = _token_check(config, tmp_path / "ws")
    assert check["detail"] == f"cannot reach the Bot API at {gone} (ConnectError)", check
    assert tg.token not in printed


def test_the_token_check_asks_a_self_hosted_server_written_without_bot(servers, tmp_path: Path) -> None:
    """``telegram.base_url`` as users write it (bot_api_urls): the doctor asks where the bot would, at /bot."""
    tg, chat = servers
    Workspace(tmp_path / "ws")
    for written in (tg.base_url.removesuffix("/bot"), tg.base_url.removesuffix("bot")):
        config = _config(tmp_path / "config", tg, chat, telegram={"base_url": written})
        check, _printed = _token_check(config, tmp_path / "ws")
        assert check["status"] == "ok" and "@testbot" in check["detail"], (written, check)


def test_the_token_check_trusts_the_certificates_the_bot_trusts(tmp_path: Path) -> None:
    """A Bot API server over https with a private CA: trusted through ``SSL_CERT_FILE``, as the running bot's
    client trusts it (assistant_framework/tls.py), and refused without it."""
    import ssl

    (tmp_path / "pki").mkdir()
    ca = make_ca(tmp_path / "pki", "bot api test CA")
    if ca is None:
        pytest.skip("the openssl command is not installed; it makes the test certificates")
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(*ca.issue("bot-api", "IP:127.0.0.1"))
    Workspace(tmp_path / "ws")
    with FakeBotAPI(tls=server) as tg, FakeChatServer() as chat:
        config = _config(tmp_path / "config", tg, chat)
        check, _printed = _token_check(config, tmp_path / "ws", env={"SSL_CERT_FILE": str(ca.cert)})
        assert check["status"] == "ok" and "@testbot" in check["detail"], check
        check, _printed = _token_check(config, tmp_path / "ws", env={"SSL_CERT_FILE": ""})
        assert check["detail"] == f"cannot reach the Bot API at {tg.base_url} (ConnectError)", check


def test_invalid_config_fails_and_skips_what_needs_it(tmp_path: Path, capsys) -> None:
    config = tmp_path / "config"
    config.mkdir()
    (config / "runtime.json").write_text('{"timezone": "Mars/Olympus"}')
    Workspace(tmp_path / "ws")
    code, checks = _doctor(capsys, config, tmp_path / "ws")
    assert code == 1
    assert (
        checks["config"]["status"] == "fail"
        and "runtime.json: timezone: unknown IANA time zone" in checks["config"]["detail"]
    )
    assert checks["chat channels"]["status"] == "skip" and checks["runners"]["status"] == "skip"
    assert checks["workspace"]["status"] == "ok"


def test_no_token_warns_and_a_collector_failing_warns(servers, tmp_path: Path, capsys) -> None:
    tg, chat = servers
    config = _config(tmp_path / "config", tg, chat, telegram={"token": "", "allowed_user_ids": []})
    (config / "collectors").mkdir()
    (config / "collectors" / "rss.json").write_text(json.dumps({"enabled": True, "feeds": []}))
    ws = Workspace(tmp_path / "ws")
    ws.write_json(
        "state/collectors/rss.json",
        {
            "outcome": "error",
            "error": "feed unreachable",
            "consecutive_failures": 3,
            "last_start": "2026-01-01T00:00:00+00:00",
        },
    )
    code, checks = _doctor(capsys, config, ws.root, "--quick")
    assert checks["chat channels"]["status"] == "warn" and "only the terminal chat" in checks["chat channels"]["detail"]
    assert (
        "telegram token" not in checks and "allowlist" not in checks
    )  # Telegram is not used: its empty allowlist is nobody's concern
    assert (
        checks["collector rss"]["status"] == "warn"
        and "3 failed run(s) in a row: feed unreachable" in checks["collector rss"]["detail"]
    )
    assert code == 0, checks
    assert chat.chat_requests == []  # --quick sends no completion
    assert "dependencies" not in checks and "memory index" not in checks


def test_a_damaged_index_is_a_warning_with_the_rebuild_command(servers, tmp_path: Path, capsys) -> None:
    tg, chat = servers
    config = _config(tmp_path / "config", tg, chat)
    ws = Workspace(tmp_path / "ws")
    (ws.root / "memory" / "index.sqlite3").write_bytes(b"SQLite format 3\x00" + b"\x13" * 4096)
    code, checks = _doctor(capsys, config, ws.root)
    assert checks["memory index"]["status"] == "warn" and "memory reindex" in checks["memory index"]["fix"]
    assert code == 0


def test_settings_readable_by_others_are_a_warning(servers, tmp_path: Path, capsys) -> None:
    tg, chat = servers
    config = _config(tmp_path / "config", tg, chat)
    (config / "local").mkdir()
    exposed = config / "local" / "telegram.json"
    exposed.write_text(json.dumps({"token": tg.token}))
    exposed.chmod(0o644)
    Workspace(tmp_path / "ws")
    code, checks = _doctor(capsys, config, tmp_path / "ws", "--quick")
    assert checks["settings files"]["status"] == "warn" and checks["settings files"]["fix"] == f"chmod 600 {exposed}"
    exposed.chmod(0o600)
    code, checks = _doctor(capsys, config, tmp_path / "ws", "--quick")
    assert "settings files" not in checks and code == 0


def test_a_wrong_api_key_is_fixed_at_the_key_of_that_runner(tmp_path: Path, capsys) -> None:
    with FakeBotAPI() as tg, FakeChatServer(api_key="sk-right", models=["m1"]) as chat:
        runners = [
            {"name": "first", "base_url": chat.base_url, "model": "m1", "api_key": "sk-right"},
            {"name": "wrongkey", "base_url": chat.base_url, "model": "m1", "api_key": "sk-wrong"},
            {"name": "nomodel", "base_url": chat.base_url, "model": "m9", "api_key": "sk-right"},
        ]
        config = _config(tmp_path / "config", tg, chat, llm={"runners": runners})
        Workspace(tmp_path / "ws")
        code, checks = _doctor(capsys, config, tmp_path / "ws", "--quick")
    assert code == 1
    wrong = checks["model wrongkey"]
    assert wrong["status"] == "fail" and "refused the API key" in wrong["detail"]
    assert "llm.runners[1].api_key" in wrong["fix"] and "base_url" not in wrong["fix"]
    assert "llm.runners[2].model" in checks["model nomodel"]["fix"]


def test_a_failing_completion_is_a_failure_and_a_missing_v1_is_named(servers, tmp_path: Path, capsys) -> None:
    tg, chat = servers
    base = chat.base_url.removesuffix("/v1")  # the usual slip: the server's address without /v1
    config = _config(
        tmp_path / "config", tg, chat, llm={"runners": [{"name": "local", "base_url": base, "model": "fake-model"}]}
    )
    Workspace(tmp_path / "ws")
    code, checks = _doctor(capsys, config, tmp_path / "ws")
    assert code == 1
    model = checks["model local"]
    assert model["status"] == "fail" and "one-token completion failed" in model["detail"], model
    assert f"{base}/v1" in model["fix"] and "llm.runners[0].base_url" in model["fix"]


def test_a_failing_completion_is_said_once_not_also_as_a_log_line(servers, tmp_path: Path) -> None:
    import sys

    tg, chat = servers
    base = chat.base_url.removesuffix("/v1")
    config = _config(
        tmp_path / "config", tg, chat, llm={"runners": [{"name": "local", "base_url": base, "model": "fake-model"}]}
    )
    Workspace(tmp_path / "ws")
    proc = preload.run(
        [
            sys.executable,
            "-m",
            "messaging_llm_bot.cli",
            "doctor",
            "--config",
            str(config),
            "--workspace",
            str(tmp_path / "ws"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1
    assert "one-token completion failed" in proc.stdout
    assert "model call failed" not in proc.stdout + proc.stderr


def test_doctor_probes_a_vision_runner_with_a_picture(servers, tmp_path: Path, capsys) -> None:
    """The probe sends a real red PNG as an image part; a model that sees it names the colour, one that
    ignores images is a warning, and a server refusing images a failure with its fix."""
    from tests.media_files import decoded, image_parts

    tg, chat = servers
    runners = [
        {"name": "local", "base_url": chat.base_url, "model": "fake-model"},
        {"name": "eyes", "base_url": chat.base_url, "model": "fake-model", "vision": True},
    ]
    config = _config(tmp_path / "config", tg, chat, llm={"runners": runners})
    Workspace(tmp_path / "ws")

    def sees(request):
        parts = image_parts(request)
        if not parts:
            return "OK"
        red, green, blue = decoded(parts[0]).convert("RGB").getpixel((5, 5))
        return "Red." if red > 200 and green < 50 else "Blue."

    chat.set_handler(sees)
    code, checks = _doctor(capsys, config, tmp_path / "ws")
    assert code == 0 and checks["vision eyes"]["status"] == "ok", [c for c in checks.values() if c["status"] != "ok"]
    assert "'Red.'" in checks["vision eyes"]["detail"] and "vision local" not in checks

    chat.set_handler(lambda request: "A picture." if image_parts(request) else "OK")
    code, checks = _doctor(capsys, config, tmp_path / "ws")
    assert checks["vision eyes"]["status"] == "warn" and "may not see images" in checks["vision eyes"]["detail"]

    refused = {"status": 400, "body": {"error": {"message": "image input is not supported", "type": "invalid_request"}}}
    chat.set_handler(lambda request: refused if image_parts(request) else "OK")
    code, checks = _doctor(capsys, config, tmp_path / "ws")
    assert code == 1 and checks["vision eyes"]["status"] == "fail"
    assert "llm.runners[1].vision" in checks["vision eyes"]["fix"]


def test_signal_is_checked_when_enabled_the_daemon_and_the_allowlist(servers, tmp_path: Path, capsys) -> None:
    """With signal.enabled the doctor asks the signal-cli daemon (the fake, with the real HTTP API) for its
    version, and says what to do when it does not answer or no one is allowed."""
    from tests.fakes.signal_daemon import FakeSignalDaemon

    tg, chat = servers
    config = _config(tmp_path / "config", tg, chat)
    Workspace(tmp_path / "ws")
    with FakeSignalDaemon("+15550000000") as daemon:
        signal = {"enabled": True, "base_url": daemon.base_url, "account": "+15550000000", "allowed": ["+15551234567"]}
        (config / "signal.json").write_text(json.dumps(signal))
        code, checks = _doctor(capsys, config, tmp_path / "ws")
        assert code == 0, checks
        assert checks["signal daemon"]["status"] == "ok" and "0.13.99-fake" in checks["signal daemon"]["detail"]
        assert (
            checks["signal allowlist"]["status"] == "ok"
            and "owner +15551234567" in checks["signal allowlist"]["detail"]
        )
        gone = daemon.base_url
    (config / "signal.json").write_text(json.dumps({**signal, "base_url": gone, "allowed": []}))
    code, checks = _doctor(capsys, config, tmp_path / "ws")
    assert code == 1
    assert checks["signal daemon"]["status"] == "fail" and gone in checks["signal daemon"]["detail"]
    assert "signal-cli -a +15550000000 daemon --http" in checks["signal daemon"]["fix"]
    assert (
        checks["signal allowlist"]["status"] == "fail"
        and "config set signal.allowed" in checks["signal allowlist"]["fix"]
    )
    (config / "signal.json").write_text(json.dumps({**signal, "enabled": False}))
    code, checks = _doctor(capsys, config, tmp_path / "ws")
    assert code == 0 and not [name for name in checks if name.startswith("signal")]  # off: not checked


def test_a_bot_on_signal_only_gets_no_telegram_check(servers, tmp_path: Path, capsys) -> None:
    """Quiet when nothing is wrong: Signal enabled, no Telegram token and an empty Telegram allowlist (the
    bot does not use Telegram) is no warning at all; with a token the empty allowlist fails again."""
    from tests.fakes.signal_daemon import FakeSignalDaemon

    tg, chat = servers
    config = _config(tmp_path / "config", tg, chat, telegram={"token": "", "allowed_user_ids": []})
    Workspace(tmp_path / "ws")
    with FakeSignalDaemon("+15550000000") as daemon:
        signal = {"enabled": True, "base_url": daemon.base_url, "account": "+15550000000", "allowed": ["+15551234567"]}
        (config / "signal.json").write_text(json.dumps(signal))
        code, checks = _doctor(capsys, config, tmp_path / "ws", "--quick")
        assert code == 0, checks
        assert {c["status"] for c in checks.values()} == {"ok"}, checks
        assert "allowlist" not in checks and "telegram token" not in checks
        assert checks["signal daemon"]["status"] == "ok"
    _config(tmp_path / "config", tg, chat, telegram={"allowed_user_ids": []})  # a token: Telegram is used
    code, checks = _doctor(capsys, config, tmp_path / "ws", "--quick")
    assert checks["allowlist"]["status"] == "fail" and code == 1


def test_the_web_chat_doctor_lines_say_the_page_its_address_and_the_sign_in(servers, tmp_path: Path, capsys) -> None:
    """The web chat's checks come from its folder (ops/channels/webchat/doctor.py) through the registry: on
    loopback with a generated token all is well; beyond loopback it warns, a short token fails (exit 1), and
    web.chat without web.enabled says there is no page."""
    tg, chat = servers
    config = _config(tmp_path / "config", tg, chat, telegram={"token": "", "allowed_user_ids": []})
    ws = Workspace(tmp_path / "ws")
    web = config / "web.json"
    web.write_text(json.dumps({"enabled": True, "chat": True, "port": 8799}))
    code, checks = _doctor(capsys, config, ws.root, "--quick")
    assert code == 0, checks
    assert checks["chat channels"] == {**checks["chat channels"], "status": "ok", "detail": "webchat"}
    assert checks["webchat"]["detail"] == "the Chat page is http://127.0.0.1:8799/chat, served by the bot"
    assert checks["webchat address"]["status"] == "ok" and "this machine only" in checks["webchat address"]["detail"]
    assert checks["webchat sign-in"]["status"] == "ok" and "generated into" in checks["webchat sign-in"]["detail"]
    web.write_text(json.dumps({"enabled": True, "chat": True, "host": "0.0.0.0", "token": "too-short"}))
    code, checks = _doctor(capsys, config, ws.root, "--quick")
    assert code == 1
    assert (
        checks["webchat address"]["status"] == "warn" and "beyond this machine" in checks["webchat address"]["detail"]
    )
    assert checks["webchat sign-in"]["status"] == "fail" and "9 characters" in checks["webchat sign-in"]["detail"]
    web.write_text(json.dumps({"enabled": False, "chat": True}))
    code, checks = _doctor(capsys, config, ws.root, "--quick")
    assert checks["webchat"]["status"] == "warn" and "web.enabled is off" in checks["webchat"]["detail"]
    assert checks["chat channels"]["status"] == "warn" and "webchat address" not in checks


def test_exit_codes_a_missing_config_is_2_an_invalid_one_1_with_one_line_for_the_channels(tmp_path: Path, capsys):
    """0 nothing failed, 1 a check failed (an invalid config is a finding, in JSON too), 2 a --config that names
    nothing (a typo: no report)."""
    ws = Workspace(tmp_path / "ws")
    assert main(["doctor", "--json", "--quick", "--config", str(tmp_path / "nope"), "--workspace", str(ws.root)]) == 2
    said = capsys.readouterr()
    assert said.out == "" and "--config" in said.err and "no such file or directory" in said.err
    config = tmp_path / "config"
    config.mkdir()
    (config / "llm.json").write_text("{bad")
    code, checks = _doctor(capsys, config, ws.root, "--quick")
    assert code == 1 and checks["config"]["status"] == "fail" and "llm.json" in checks["config"]["detail"]
    assert checks["chat channels"]["status"] == "skip"
    assert not {"telegram", "signal", "email", "matrix", "webchat"} & set(checks)  # said once, by that line


def test_without_the_matrix_library_the_doctor_runs_and_names_it_only_when_matrix_is_on(
    tmp_path: Path, monkeypatch, capsys
) -> None:
    """matrix-nio is an extra: a plain install's doctor must not crash on importing the Matrix channel's checks
    (they are found through the registry for every channel); with Matrix on, that check fails naming the extra."""
    import sys

    from messaging_llm_bot.ops.channels.doctor import Context, channel_checks

    monkeypatch.setitem(sys.modules, "nio", None)  # import nio raises ImportError, as where it is not installed
    # The channel's runtime and its ops part (probe, doctor) alike: another test in this worker may have imported them.
    matrix = ("messaging_llm_bot.channels.matrix.", "messaging_llm_bot.ops.channels.matrix.")
    for name in [m for m in sys.modules if m.startswith(matrix)]:
        monkeypatch.delitem(sys.modules, name)
    checks = dict(channel_checks())
    ctx = Context(tmp_path / "config", tmp_path / "ws", True, {"matrix": {"enabled": False}})
    assert checks["matrix"](ctx) == []
    ctx.config = {"matrix": {"enabled": True, "homeserver": "http://127.0.0.1:9", "user_id": "@a:b", "password": "p"}}
    [*_, line] = checks["matrix"](ctx)
    assert line.status == "fail" and "not installed" in line.detail and ".[matrix]" in line.fix


def test_the_document_readers_memory_is_said_and_too_little_is_a_warning_naming_the_key(
    servers, tmp_path: Path
) -> None:
    """docs/documents.md, *Memory*: two readers at once, one at a time (a warning), or none (a warning); the
    key that sets it is named; a warning is no failure (exit 0); ``--json`` carries the line."""
    tg, chat = servers
    config = _config(tmp_path / "config", tg, chat)
    Workspace(tmp_path / "ws")

    def readers(megabytes: int) -> tuple[int, dict, str]:
        (config / "documents.json").write_text(json.dumps({"reader_memory_mb": megabytes}))
        argv = ("doctor", "--quick", "--config", str(config), "--workspace", str(tmp_path / "ws"))
        run = run_cli(*argv, "--json")
        text = run_cli(*argv)
        assert text.returncode == run.returncode
        return run.returncode, {c["name"]: c for c in json.loads(run.stdout)}["document readers"], text.stdout

    code, line, _ = readers(4000)
    assert (code, line["status"]) == (0, "ok")
    assert line["detail"] == "2 at once, 2000 MB each (of 4000 MB: documents.reader_memory_mb)"
    code, line, text = readers(200)
    assert (code, line["status"]) == (0, "warn")
    assert line["detail"] == "one at a time, 200 MB (of 200 MB: documents.reader_memory_mb); the others wait"
    assert "config set documents.reader_memory_mb 300`" in line["fix"]
    assert "document readers  one at a time" in text and "config set documents.reader_memory_mb 300" in text
    code, line, _ = readers(100)
    assert (code, line["status"]) == (0, "warn")
    assert line["detail"].startswith("no document is read: a document reader needs 150 MB of memory and this")
    assert "spare only 100 MB for it" in line["detail"] and "documents.reader_memory_mb 300" in line["fix"]
