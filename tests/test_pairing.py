"""Pairing codes (issue 45): a stranger gets a code once; the owner's /pair CODE (or `assistant pair approve`)
lets them in without a restart; a wrong, reused or expired code does nothing; the allowlist change lands in
the config's local layer, never in a tracked file. Real bots against the fake Bot API and the fake Signal
daemon, the WhatsApp channel against the fake Graph API, the Slack channel against the fake Web API, a config
directory as `make run` has it."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import requests

from assistant_framework.workspace import Workspace
from messaging_llm_bot.conversation.pairing import PAIRING_FILE, PairingRefused, PairingStore, allow
from messaging_llm_bot.runtime import build_runtime
from tests.cli_inprocess import run_cli
from tests.fakes.signal_daemon import FakeSignalDaemon
from tests.signal_harness import BOT, RunningSignal, signal_config
from tests.signal_harness import OWNER as SIGNAL_OWNER
from tests.signal_harness import STRANGER as SIGNAL_STRANGER
from tests.slack_harness import OWNER as SL_OWNER
from tests.slack_harness import SECRET as SL_SECRET
from tests.slack_harness import STRANGER as SL_STRANGER
from tests.slack_harness import RunningSlack, slack_config
from tests.telegram_harness import OWNER, STRANGER, RunningBot, telegram_config, texts
from tests.waiting import wait_until
from tests.whatsapp_harness import OWNER as WA_OWNER
from tests.whatsapp_harness import SECRET, RunningWhatsApp, whatsapp_config
from tests.whatsapp_harness import STRANGER as WA_STRANGER

CODE = re.compile(r"approve code ([A-Z0-9]{3}-[A-Z0-9]{3})")
OTHER_STRANGER = 777


def config_dir(root: Path, config: dict) -> Path:
    """``config`` as a config directory, one tracked file per section (as config/ in the checkout)."""
    root.mkdir()
    for section, value in config.items():
        (root / f"{section}.json").write_text(json.dumps(value), encoding="utf-8")
    return root


def tracked(root: Path) -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(root.glob("*.json"))}


def code_in(messages: list[str]) -> str:
    return next(m.group(1) for m in map(CODE.search, messages) if m)


def test_a_stranger_gets_a_code_once_and_the_owners_pair_lets_them_in_without_a_restart(
    fake, bot_config, chat_server, workspace, tmp_path
):
    root = config_dir(tmp_path / "config", telegram_config(bot_config, fake))
    before = tracked(root)
    with RunningBot(build_runtime(root, workspace.root)):
        fake.send_message("hello?", user_id=STRANGER)
        fake.wait_for(lambda: any(CODE.search(t) for t in texts(fake, STRANGER)), timeout=10)
        code = code_in(texts(fake, STRANGER))
        fake.send_message("hello again?", user_id=STRANGER)  # no second code within the hour
        fake.send_message("/pair AAA-AAA")
        fake.wait_for(lambda: any("No waiting code matches" in t for t in texts(fake)), timeout=10)
        fake.send_message(f"/pair {code.lower().replace('-', ' ')}")  # as typed on a phone: the same code
        fake.wait_for(lambda: any("Approved: telegram user 666" in t for t in texts(fake)), timeout=10)
        assert len(texts(fake, STRANGER)) == 1 and chat_server.chat_requests == []
        local = json.loads((root / "local" / "telegram.json").read_text(encoding="utf-8"))
        assert local["allowed_user_ids"] == [OWNER, STRANGER]
        assert tracked(root) == before  # nothing written into a tracked file

        chat_server.enqueue('{"reply": "welcome aboard"}')
        fake.send_message("now?", user_id=STRANGER)  # in, without a restart
        fake.wait_for(lambda: "welcome aboard" in texts(fake, STRANGER), timeout=10)

        fake.send_message(f"/pair {code}")  # used once
        fake.wait_for(lambda: sum("No waiting code matches" in t for t in texts(fake)) == 2, timeout=10)

        fake.send_message("let me in", user_id=OTHER_STRANGER)  # an expired code does nothing
        fake.wait_for(lambda: any(CODE.search(t) for t in texts(fake, OTHER_STRANGER)), timeout=10)
        late = code_in(texts(fake, OTHER_STRANGER))
        state = workspace.read_json(PAIRING_FILE)
        assert late.replace("-", "") not in json.dumps(state)  # kept hashed only
        for row in state["pending"]:
            row["expires"] = (datetime.now(timezone.utc) - timedelta(minutes=1)).isoformat(timespec="seconds")
        workspace.write_json(PAIRING_FILE, state)
        fake.send_message(f"/pair {late}")
        fake.wait_for(lambda: sum("No waiting code matches" in t for t in texts(fake)) == 3, timeout=10)
        local = json.loads((root / "local" / "telegram.json").read_text(encoding="utf-8"))
        assert local["allowed_user_ids"] == [OWNER, STRANGER]


def test_a_code_approved_with_the_cli_lets_a_signal_stranger_in_at_their_next_message(
    bot_config, chat_server, workspace, tmp_path
):
    with FakeSignalDaemon(BOT) as daemon:
        root = config_dir(tmp_path / "config", signal_config(bot_config, daemon, allowed=[SIGNAL_OWNER]))
        before = tracked(root)
        with RunningSignal(build_runtime(root, workspace.root)):
            daemon.wait_connected()
            daemon.message(SIGNAL_STRANGER, "hi, who is this?")
            daemon.wait_sent(1)
            code = code_in([s["message"] for s in daemon.sent_to(SIGNAL_STRANGER)])
            args = ("--config", str(root), "--workspace", str(workspace.root))
            listed = run_cli("pair", "list", "--json", *args)
            assert listed.returncode == 0
            assert [(r["channel"], r["sender"]) for r in json.loads(listed.stdout)] == [("signal", SIGNAL_STRANGER)]
            assert run_cli("pair", "approve", "ZZZ-ZZZ", *args).returncode == 1  # wrong: nothing changes
            assert not (root / "local").exists()
            done = run_cli("pair", "approve", code, *args)
            assert done.returncode == 0, done.stdout + done.stderr
            assert json.loads((root / "local" / "signal.json").read_text(encoding="utf-8"))["allowed"] == [
                SIGNAL_OWNER,
                SIGNAL_STRANGER,
            ]
            assert tracked(root) == before
            assert run_cli("pair", "approve", code, *args).returncode == 1  # used once

            daemon.message(SIGNAL_STRANGER, "and now?")  # the bot reloads and says so
            daemon.wait_sent(2)
            assert "let you in" in daemon.sent_to(SIGNAL_STRANGER)[-1]["message"]
            chat_server.enqueue('{"reply": "hello, friend"}')
            daemon.message(SIGNAL_STRANGER, "what can you do?")
            wait_until(lambda: any(s["message"] == "hello, friend" for s in daemon.sent_to(SIGNAL_STRANGER)))


def test_codes_expire_are_bounded_per_sender_and_in_all_and_revoke(tmp_path):
    now = [datetime(2026, 12, 2, 9, 0, tzinfo=timezone.utc)]
    store = PairingStore(Workspace(tmp_path / "ws"), clock=lambda: now[0])
    first = store.issue("telegram", "5", minutes=60)
    assert first and store.issue("telegram", "5", minutes=60) is None  # once an hour per sender
    now[0] += timedelta(minutes=61)
    assert store.take(first) is None  # expired
    second = store.issue("telegram", "5", minutes=60)  # a new hour: a new code
    assert second and store.revoke(second) == 1 and store.take(second) is None
    given = [store.issue("signal", f"+4915{i:06d}", minutes=60) for i in range(30)]
    assert sum(1 for code in given if code) == 19  # 20 an hour in all, the second code above included
    assert store.take("") is None and store.take("A" * 500) is None


def test_an_approval_never_makes_a_guest_the_owner_nor_replaces_the_owner(tmp_path):
    root = config_dir(tmp_path / "config", {"telegram": {"token": "x", "allowed_user_ids": []}})
    # With no owner the first allowed id would be the owner: a guest must not be let in first.
    with pytest.raises(PairingRefused, match="no owner yet"):
        allow(root, "telegram", "5", "guest")
    allow(root, "telegram", "5", "owner")
    local = json.loads((root / "local" / "telegram.json").read_text(encoding="utf-8"))
    assert local["allowed_user_ids"] == [5] and local["owner_id"] == 5
    with pytest.raises(PairingRefused, match="already has an owner"):
        allow(root, "telegram", "6", "owner")
    allow(root, "telegram", "6", "guest")
    local = json.loads((root / "local" / "telegram.json").read_text(encoding="utf-8"))
    assert local["allowed_user_ids"] == [5, 6] and local["owner_id"] == 5


def test_a_code_approved_on_the_bots_web_page_lets_the_stranger_in_without_a_restart(
    fake, bot_config, chat_server, workspace, tmp_path
):
    from assistant_framework.web import WebServer
    from messaging_llm_bot.serve.control_page import control_mount
    from tests.web_site import WEB_TOKEN

    root = config_dir(tmp_path / "config", {**telegram_config(bot_config, fake), "web": {"token": WEB_TOKEN}})
    before = tracked(root)
    runtime = build_runtime(root, workspace.root)
    server = WebServer(runtime, host="127.0.0.1", port=0, mounts=[control_mount(root, runtime)])
    server.start()
    try:
        with RunningBot(runtime):
            fake.send_message("hello?", user_id=STRANGER)
            fake.wait_for(lambda: any(CODE.search(t) for t in texts(fake, STRANGER)), timeout=10)
            code = code_in(texts(fake, STRANGER))
            auth = {"Authorization": f"Bearer {WEB_TOKEN}"}
            waiting = requests.get(f"{server.url}api/control", headers=auth).json()["pairing"]
            assert [(p["channel"], p["sender"]) for p in waiting] == [("telegram", str(STRANGER))]
            said = requests.post(f"{server.url}api/control/approve", data={"code": code}, headers=auth).json()["said"]
            assert said.startswith(f"Approved: telegram user {STRANGER}")
            local = json.loads((root / "local" / "telegram.json").read_text(encoding="utf-8"))
            assert local["allowed_user_ids"] == [OWNER, STRANGER] and tracked(root) == before

            chat_server.enqueue('{"reply": "welcome aboard"}')
            fake.send_message("now?", user_id=STRANGER)  # in at once: the page's approval reloaded the bot
            fake.wait_for(lambda: "welcome aboard" in texts(fake, STRANGER), timeout=10)
    finally:
        server.stop()


def test_a_proven_email_stranger_gets_a_code_once_a_forged_one_nothing_and_an_approval_lets_them_in(
    bot_config, email_imap, email_smtp, chat_server, workspace, tmp_path
):
    """By mail a code goes only to a stranger whose own provider proves them (never to a forged From:
    backscatter), in their thread, once an hour; the approval (no commands by mail: the shell or the page) is
    applied at their next mail, which the welcome answers; then they are answered as a guest."""
    from tests.email_harness import OWNER as MAIL_OWNER
    from tests.email_harness import STRANGER as MAIL_STRANGER
    from tests.email_harness import RunningEmail, body, email_config, mail, wait_mails

    proven = "mx.example.org; dkim=pass header.d=evil.example"
    config = email_config(bot_config, email_imap, email_smtp)
    root = config_dir(tmp_path / "config", config)
    before = tracked(root)
    bot = RunningEmail(build_runtime(root, workspace.root), workspace).start()
    try:
        for n in range(2):
            email_imap.append(
                "INBOX", mail(f"let me in {n}", sender=MAIL_STRANGER, message_id=f"<in-{n}@evil>", auth=proven)
            )
        email_imap.append("INBOX", mail("me too", sender="eve@forged.example", message_id="<eve@forged>", auth=None))
        chat_server.enqueue('{"reply": "pong"}')
        email_imap.append("INBOX", mail("ping", message_id="<ping@example.org>"))  # after theirs: all judged
        coded, pong = wait_mails(email_smtp, 2)
        assert email_smtp.recipients == [[MAIL_STRANGER], [MAIL_OWNER]] and "pong" in body(pong)
        assert coded["In-Reply-To"] == "<in-0@evil>" and len(chat_server.chat_requests) == 1
        code = code_in([body(coded)])
        args = ("--config", str(root), "--workspace", str(workspace.root))
        done = run_cli("pair", "approve", code, *args)
        assert done.returncode == 0, done.stdout + done.stderr
        local = json.loads((root / "local" / "email.json").read_text(encoding="utf-8"))
        assert local["allowed"] == [*config["email"]["allowed"], MAIL_STRANGER] and tracked(root) == before

        email_imap.append("INBOX", mail("and now?", sender=MAIL_STRANGER, message_id="<in-2@evil>", auth=proven))
        assert "let you in" in body(wait_mails(email_smtp, 3)[-1])
        chat_server.enqueue('{"reply": "hello, friend"}')
        email_imap.append(
            "INBOX", mail("what can you do?", sender=MAIL_STRANGER, message_id="<in-3@evil>", auth=proven)
        )
        assert "hello, friend" in body(wait_mails(email_smtp, 4)[-1])
    finally:
        bot.stop()


def test_a_whatsapp_stranger_gets_a_code_once_and_the_owners_pair_or_the_cli_lets_them_in(
    whatsapp_graph, bot_config, chat_server, workspace, tmp_path, monkeypatch
):
    graph, other = whatsapp_graph, "447700900123"
    monkeypatch.setenv("WA_KIT_APP_SECRET", SECRET)
    root = config_dir(tmp_path / "config", whatsapp_config(bot_config, graph))
    before = tracked(root)
    bot = RunningWhatsApp(build_runtime(root, workspace.root), graph).start()
    try:
        graph.user_text(WA_STRANGER, "hello?")
        wait_until(lambda: any(CODE.search(t) for t in graph.texts(WA_STRANGER)), 15, "the stranger's code")
        code = code_in(graph.texts(WA_STRANGER))
        graph.user_text(WA_STRANGER, "hello again?")  # no second code within the hour
        graph.user_text(WA_OWNER, "/pair AAA-AAA")
        wait_until(lambda: any("No waiting code matches" in t for t in graph.texts(WA_OWNER)), 15, "the refusal")
        graph.user_text(WA_OWNER, f"/pair {code}")
        wait_until(lambda: any(f"whatsapp user {WA_STRANGER}" in t for t in graph.texts(WA_OWNER)), 15, "approved")
        assert len(graph.texts(WA_STRANGER)) == 1 and chat_server.chat_requests == []
        local = json.loads((root / "local" / "whatsapp.json").read_text(encoding="utf-8"))
        assert local["allowed"] == [f"+{WA_OWNER}", f"+{WA_STRANGER}"] and tracked(root) == before

        chat_server.enqueue('{"reply": "welcome aboard"}')
        graph.user_text(WA_STRANGER, "now?")  # in, without a restart
        wait_until(lambda: any(t.startswith("welcome aboard") for t in graph.texts(WA_STRANGER)), 15, "the answer")

        graph.user_text(other, "let me in")  # approved from the shell: let in at their next message
        wait_until(lambda: any(CODE.search(t) for t in graph.texts(other)), 15, "the second stranger's code")
        args = ("--config", str(root), "--workspace", str(workspace.root))
        done = run_cli("pair", "approve", code_in(graph.texts(other)), *args)
        assert done.returncode == 0, done.stdout + done.stderr
        graph.user_text(other, "and now?")
        wait_until(lambda: any("let you in" in t for t in graph.texts(other)), 15, "the welcome")
        assert len(chat_server.chat_requests) == 1  # none of the strangers' messages reached the model
    finally:
        bot.stop()


def test_a_slack_stranger_gets_a_code_once_and_an_approval_outside_lets_them_in_without_a_restart(
    slack_api, bot_config, chat_server, workspace, tmp_path, monkeypatch
):
    """Slack has no commands (docs/slack.md): the owner approves from another channel's /pair, the shell or the
    web page, each outside the Slack process, so the running channel applies it at the stranger's next message."""
    slack = slack_api
    monkeypatch.setenv("SLACK_KIT_SECRET", SL_SECRET)
    root = config_dir(tmp_path / "config", slack_config(bot_config, slack))
    before = tracked(root)
    args = ("--config", str(root), "--workspace", str(workspace.root))

    def says(user: str, text: str) -> None:
        assert slack.deliver(slack.dm(user, text)).status_code == 200

    def told() -> list[str]:
        return [m["text"] for m in slack.posted(slack.add_user(SL_STRANGER))]

    bot = RunningSlack(build_runtime(root, workspace.root), slack).start()
    try:
        says(SL_STRANGER, "hello?")
        wait_until(lambda: any(CODE.search(t) for t in told()), 15, "the stranger's code")
        says(SL_STRANGER, "hello again?")  # no second code within the hour
        assert run_cli("pair", "approve", "AAA-AAA", *args).returncode != 0  # a wrong code changes nothing
        done = run_cli("pair", "approve", code_in(told()), *args)
        assert done.returncode == 0, done.stdout + done.stderr
        local = json.loads((root / "local" / "slack.json").read_text(encoding="utf-8"))
        assert local["allowed"] == [SL_OWNER, SL_STRANGER] and tracked(root) == before
        assert len(told()) == 1 and chat_server.chat_requests == []

        says(SL_STRANGER, "and now?")  # the running channel reloads: welcomed, not a restart
        wait_until(lambda: any("let you in" in t for t in told()), 15, "the welcome")
        chat_server.enqueue('{"reply": "welcome aboard"}')
        says(SL_STRANGER, "now?")
        wait_until(lambda: any(t.startswith("welcome aboard") for t in told()), 15, "the answer")
        assert len(chat_server.chat_requests) == 1  # none of the stranger's messages before reached the model
    finally:
        bot.stop()
