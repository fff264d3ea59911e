"""The Matrix channel against a real Synapse (tests/matrix_harness.py), in-process: invites, strangers,
encrypted rooms, threads, the HTML of replies. The real bot process: tests/test_matrix_bot.py; the channel
contract kit: tests/channel_kit.py (tests/test_channel_kit_matrix.py)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from assistant_framework.inbox import Inbox
from messaging_llm_bot.channels.matrix.format import html_of, render_matrix
from messaging_llm_bot.conversation.progress import STREAM_CURSOR
from tests.matrix_harness import MatrixWorld
from tests.waiting import wait_until

if TYPE_CHECKING:
    from assistant_framework.config.settings import MatrixSettings


def _bot_texts(world: MatrixWorld, room: str) -> list[str]:
    return world.owner.texts(room, world.bot.user_id)


def _answers(world: MatrixWorld, room: str) -> list[str]:
    """The bot's texts once none is a live message still growing (a loaded machine's reply takes longer than the
    live message's grace, so the draft with its cursor is shown first and edited into the answer): [] till then."""
    texts = _bot_texts(world, room)
    return [] if any(text.endswith(STREAM_CURSOR) for text in texts) else texts


def test_an_invite_from_an_allowed_friend_is_joined_and_a_strangers_group_invite_is_not(
    matrix: MatrixWorld, start_matrix
) -> None:
    bot = matrix.bot.user_id
    start_matrix()
    friends = matrix.friend.create_room([bot], name="friends")
    strangers = matrix.stranger.create_room([bot, matrix.owner.user_id], name="not yours")
    wait_until(lambda: matrix.friend.members(friends).get(bot) == "join", timeout=20, what="the friend's room joined")
    wait_until(lambda: matrix.stranger.members(strangers).get(bot) == "leave", timeout=20, what="the refusal")


def test_without_pairing_a_strangers_message_in_a_direct_room_is_refused_once_and_stored_nowhere(
    matrix: MatrixWorld, start_matrix, chat_server, workspace
) -> None:
    room = matrix.owner.create_room([matrix.bot.user_id, matrix.stranger.user_id])
    matrix.stranger.join(room)
    start_matrix(patch=lambda config: config.setdefault("runtime", {}).update(pairing=False))  # told their id
    wait_until(lambda: matrix.joined(room), timeout=20, what="the bot to join")
    matrix.owner.leave(room)  # the bot and the stranger alone: a direct room with someone not allowed
    for n in range(3):
        matrix.stranger.send(room, f"hello {n}")
    bot = matrix.bot.user_id
    wait_until(lambda: matrix.stranger.texts(room, bot), timeout=20, what="the refusal")
    matrix.stranger.send(room, "are you there?")
    # the fourth message is handled after the third: the bot's state file has it as told, nothing more said
    wait_until(lambda: "stranger:" in workspace.read_text("state/matrix/state.json", default=""), what="told")
    [told] = matrix.stranger.texts(room, bot)
    assert matrix.stranger.user_id in told and "not authorised" in told
    assert chat_server.chat_requests == [] and Inbox(workspace).pending() == []
    assert not workspace.list("conversations/**/*")


def test_a_strangers_invite_gets_a_pairing_code_once_and_the_owners_pair_lets_them_in(
    matrix: MatrixWorld, bot_config, chat_server, workspace, tmp_path
) -> None:
    """A stranger asks for a private chat by inviting the bot: the refusal's reason carries their code (once an
    hour: a second invite is refused without one); the owner's /pair in their room adds them to matrix.allowed
    in config/local/ and reloads, so the next invite is joined and answered, without a restart."""
    import json

    from messaging_llm_bot.runtime import build_runtime
    from tests.matrix_harness import RunningMatrix
    from tests.test_pairing import CODE, config_dir, tracked

    bot, stranger = matrix.bot.user_id, matrix.stranger
    root = config_dir(tmp_path / "config", matrix.config(bot_config))
    before = tracked(root)
    owner_room = matrix.direct_room()
    with RunningMatrix(build_runtime(root, workspace.root)):
        wait_until(lambda: matrix.joined(owner_room), timeout=20, what="the bot to join the owner's room")
        asked = stranger.create_room([bot], direct=True)
        wait_until(lambda: stranger.members(asked).get(bot) == "leave", timeout=20, what="the refusal")
        found = CODE.search(stranger.membership(asked, bot).get("reason", ""))
        assert found, stranger.membership(asked, bot)
        again = stranger.create_room([bot], direct=True)  # no second code within the hour
        wait_until(lambda: stranger.members(again).get(bot) == "leave", timeout=20, what="the second refusal")
        assert not CODE.search(stranger.membership(again, bot).get("reason", ""))

        matrix.owner.send(owner_room, f"/pair {found.group(1)}")
        wait_until(lambda: any("Approved: matrix user" in t for t in _bot_texts(matrix, owner_room)), timeout=20)
        local = json.loads((root / "local" / "matrix.json").read_text(encoding="utf-8"))
        assert local["allowed"] == [matrix.owner.user_id, matrix.friend.user_id, stranger.user_id]
        assert tracked(root) == before  # nothing written into a tracked file

        chat_server.enqueue('{"reply": "hello, friend"}')
        room = stranger.create_room([bot], direct=True)
        wait_until(lambda: stranger.members(room).get(bot) == "join", timeout=20, what="the new friend's room joined")
        stranger.send(room, "what can you do?")
        wait_until(lambda: "hello, friend" in stranger.texts(room, bot), timeout=20, what="the answer")


def test_an_encrypted_room_is_told_once_that_the_bot_cannot_read_it(
    matrix: MatrixWorld, start_matrix, workspace
) -> None:
    room = matrix.owner.create_room([matrix.bot.user_id], direct=True, encrypted=True)
    start_matrix()
    wait_until(lambda: matrix.joined(room), timeout=20, what="the bot to join")
    sealed = {
        "algorithm": "m.megolm.v1.aes-sha2",
        "ciphertext": "AwgA",
        "sender_key": "k",
        "session_id": "s",
        "device_id": "D",
    }
    matrix.owner.send_event(room, "m.room.encrypted", sealed)
    matrix.owner.send_event(room, "m.room.encrypted", sealed)
    matrix.owner.send_event(room, "m.room.encrypted", sealed)
    wait_until(lambda: _bot_texts(matrix, room), timeout=20, what="the sentence")
    wait_until(lambda: "e2ee:" in workspace.read_text("state/matrix/state.json", default=""), what="told")
    # Imported here, not at the top: matrix-nio costs every xdist worker 0.2 s of CPU at collection, and only the
    # worker that runs this file's tests needs it.
    from messaging_llm_bot.channels.matrix.events import ENCRYPTED_TEXT

    assert _bot_texts(matrix, room) == [ENCRYPTED_TEXT]


def test_a_message_in_a_thread_is_answered_in_that_thread_as_its_own_conversation(
    matrix: MatrixWorld, start_matrix, chat_server, workspace
) -> None:
    room = matrix.direct_room()
    chat_server.enqueue('{"reply": "in the room"}', '{"reply": "in the thread"}')
    start_matrix()
    wait_until(lambda: matrix.joined(room), timeout=20, what="the bot to join")
    root = matrix.owner.send(room, "first")
    wait_until(lambda: _answers(matrix, room), timeout=20, what="the first answer")
    matrix.owner.send(room, "second", **{"m.relates_to": {"rel_type": "m.thread", "event_id": root}})
    wait_until(lambda: len(_answers(matrix, room)) == 2, timeout=20, what="the answer in the thread")
    answer = matrix.owner.shown(room, matrix.bot.user_id)[-1]
    assert answer["content"]["body"] == "in the thread"
    assert answer["content"]["m.relates_to"]["rel_type"] == "m.thread"
    assert answer["content"]["m.relates_to"]["event_id"] == root
    folders = workspace.list("conversations/*", files_only=False)
    assert len({f.split("/")[1] for f in folders}) == 2  # the room's conversation and the thread's


def test_a_reminder_set_in_a_thread_arrives_in_that_thread(
    matrix: MatrixWorld, start_matrix, chat_server, workspace
) -> None:
    """As a reminder set in a Telegram forum topic arrives in that topic (conversation/chat_turns.py's
    ``send_to``); it went to the room's main timeline."""
    from datetime import datetime, timedelta, timezone

    from assistant_framework.stores.reminders import ReminderStore

    room = matrix.direct_room()
    chat_server.enqueue('{"reply": "noted"}')
    start_matrix()
    wait_until(lambda: matrix.joined(room), timeout=20, what="the bot to join")
    root = matrix.owner.send(room, "the garden")
    wait_until(lambda: _answers(matrix, room), timeout=20, what="the answer")
    due = datetime.now(timezone.utc) - timedelta(seconds=5)  # due, not late (a late one says so)
    ReminderStore(workspace).add(
        f"mx:{room}", "water the plants", due, "Europe/Berlin", conversation_id=f"mx:{room}|{root}"
    )
    wait_until(lambda: len(_bot_texts(matrix, room)) == 2, timeout=20, what="the reminder")
    reminder = matrix.owner.shown(room, matrix.bot.user_id)[-1]
    assert "water the plants" in reminder["content"]["body"]
    assert reminder["content"]["m.relates_to"]["rel_type"] == "m.thread"
    assert reminder["content"]["m.relates_to"]["event_id"] == root


def test_an_owner_without_a_direct_room_is_invited_to_one_at_the_first_start_and_only_once(
    matrix: MatrixWorld, start_matrix, chat_server
) -> None:
    """The owner never wrote to the bot nor invited it: at the first start the bot makes a direct room and invites
    them (``is_direct``); after a restart that room is still theirs (kept in the state file): no second invite,
    and their message there is answered as the owner's."""
    owner = matrix.owner
    start_matrix().stop()
    invited = owner.invites()
    assert [content.get("is_direct") for content in invited.values()] == [True], invited
    [room] = invited
    owner.join(room)
    chat_server.enqueue('{"reply": "here I am"}')
    start_matrix()
    owner.send(room, "hello")
    wait_until(lambda: _answers(matrix, room), timeout=20, what="the answer")
    assert _answers(matrix, room) == ["here I am"]
    assert not owner.invites()


def test_markup_in_a_reply_arrives_escaped(matrix: MatrixWorld, start_matrix, chat_server) -> None:
    room = matrix.direct_room()
    hostile = "**bold** <img src=x onerror=alert(1)> [x](javascript:alert(1)) & `<b>code</b>`"
    chat_server.enqueue({"content": '{"reply": ' + __import__("json").dumps(hostile) + "}"})
    start_matrix()
    wait_until(lambda: matrix.joined(room), timeout=20, what="the bot to join")
    matrix.owner.send(room, "say something")
    # The answer, not the live draft or a status line a loaded machine may show first (then edited into the answer).
    wait_until(lambda: "bold" in (_answers(matrix, room) or [""])[-1], timeout=20, what="the answer")
    content = matrix.owner.shown(room, matrix.bot.user_id)[-1]["content"]
    html = content["formatted_body"]
    assert content["format"] == "org.matrix.custom.html"
    assert "<strong>bold</strong>" in html and "<code>&lt;b&gt;code&lt;/b&gt;</code>" in html
    assert "<img" not in html and "javascript:" not in html and "<b>" not in html
    assert set(re.findall(r"<(/?[a-z]+)", html)) <= {"strong", "/strong", "code", "/code"}


def test_the_formatted_body_has_only_the_tags_of_the_styles() -> None:
    text = "b i u s sp c pre q l bad\nnext"
    entities = [
        {"type": "bold", "offset": 0, "length": 1},
        {"type": "italic", "offset": 2, "length": 1},
        {"type": "underline", "offset": 4, "length": 1},
        {"type": "strikethrough", "offset": 6, "length": 1},
        {"type": "spoiler", "offset": 8, "length": 2},
        {"type": "code", "offset": 11, "length": 1},
        {"type": "pre", "offset": 13, "length": 3, "language": 'py"><script>'},
        {"type": "blockquote", "offset": 17, "length": 1},
        {"type": "text_link", "offset": 19, "length": 1, "url": 'https://example.org/?a="1"&b=<2>'},
        {"type": "text_link", "offset": 21, "length": 3, "url": "javascript:alert(1)"},
        {"type": "custom_emoji", "offset": 0, "length": 1, "custom_emoji_id": "1"},
    ]
    html = html_of(text, entities)
    assert html is not None
    tags = set(re.findall(r"</?([a-z]+)", html))
    assert tags <= {"strong", "em", "u", "del", "span", "code", "pre", "blockquote", "a", "br"}
    assert '<pre><code class="language-pyscript">' in html  # only letters, digits and +-_ of a language
    assert 'href="https://example.org/?a=&quot;1&quot;&amp;b=&lt;2&gt;"' in html
    assert "javascript" not in html and "bad" in html
    assert html_of("plain", []) is None and render_matrix("plain")[0].html is None


DELETE = '{"skill": "file", "args": {"action": "delete", "path": "notes/important.md"}}'


def test_the_owner_in_a_group_room_gets_a_guest_turn_that_asks_nothing(
    matrix: MatrixWorld, start_matrix, chat_server, workspace
) -> None:
    workspace.write_text("notes/important.md", "# Important\n")
    group = matrix.owner.create_room([matrix.bot.user_id, matrix.friend.user_id], name="family")
    matrix.friend.join(group)
    chat_server.enqueue(DELETE, '{"reply": "Handled."}')
    start_matrix()
    wait_until(lambda: matrix.joined(group), timeout=20, what="the bot to join the group")
    bot = matrix.bot.user_id
    matrix.owner.send(group, f"{bot} delete notes/important.md", **{"m.mentions": {"user_ids": [bot]}})
    wait_until(lambda: "Handled." in matrix.owner.texts(group, bot), timeout=30, what="the answer")
    assert not [t for t in matrix.owner.texts(group, bot) if t.startswith("Confirm")]  # nothing asked in a group
    assert workspace.exists("notes/important.md")  # a guest turn cannot reach the owner's files


def _bot_in_a_direct_room(matrix: MatrixWorld) -> tuple[str, MatrixSettings]:
    """The owner's direct room with the bot joined, and the bot's settings to log in with the password."""
    from assistant_framework.config.settings import MatrixSettings
    from tests.matrix_harness import PASSWORD

    room = matrix.direct_room()
    matrix.bot.join(room)
    config = MatrixSettings(
        homeserver=matrix.server.url,
        user_id=matrix.bot.user_id,
        password=PASSWORD,
        device_name="test",
        allowed=(matrix.owner.user_id,),
        typing=False,
    )
    return room, config


def test_a_part_sent_again_with_the_same_key_is_one_message(matrix: MatrixWorld) -> None:
    """What a crash between a send and its ledger record does: the part goes again with the same key, and the
    homeserver keeps one event (the transaction id is the item's and the part's)."""
    import asyncio

    from messaging_llm_bot.channels.contract import Address, TextOut
    from messaging_llm_bot.channels.matrix.channel import MatrixChannel
    from messaging_llm_bot.channels.matrix.client import MatrixClient

    room, config = _bot_in_a_direct_room(matrix)

    async def twice() -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
        channel = MatrixChannel(MatrixClient(config, None))
        await channel.start()
        try:
            reply = "first part " * 900 + "\n\nsecond part"  # two parts
            first = await channel.send_text(Address(room), TextOut(reply, key="mx_room/000001"))
            again = await channel.send_text(Address(room), TextOut(reply, key="mx_room/000001", skip_parts=1))
            other = await channel.send_text(Address(room), TextOut("another reply", key="mx_room/000002"))
            return first.message_ids, again.message_ids, other.message_ids
        finally:
            await channel.stop(5)

    first, again, other = asyncio.run(twice())
    assert len(first) == 2 and again == first[1:] and other[0] not in first
    assert len(matrix.owner.texts(room, matrix.bot.user_id)) == 3


def test_a_part_a_restarted_bot_sends_again_on_its_kept_device_is_one_message(matrix: MatrixWorld) -> None:
    """What a kill between a send and its ledger record does across processes: the next start logs in again
    with the password on the device it kept (a new access token) and sends the part again with the same
    transaction id; the homeserver (Synapse, which scopes transaction ids to the device) gives back the event it
    made. A new device would be a second message (it is: the last send here)."""
    import asyncio

    from messaging_llm_bot.channels.contract import Address, TextOut
    from messaging_llm_bot.channels.matrix.channel import MatrixChannel
    from messaging_llm_bot.channels.matrix.client import MatrixClient

    room, config = _bot_in_a_direct_room(matrix)
    reply = TextOut("The part that was out when the bot was killed.", key="mx_room/000003")

    async def send(device_id: str | None) -> tuple[str, str, str]:
        channel = MatrixChannel(MatrixClient(config, device_id))
        await channel.start()
        try:
            sent = await channel.send_text(Address(room), reply)
            return sent.message_ids[0], channel.client.device_id, str(channel.client.nio.access_token)
        finally:
            await channel.stop(5)

    before = len(matrix.owner.texts(room, matrix.bot.user_id))
    first, device, token = asyncio.run(send(None))
    again, same_device, new_token = asyncio.run(send(device))  # the restart: a new login on the kept device
    assert same_device == device and new_token != token
    assert again == first
    assert len(matrix.owner.texts(room, matrix.bot.user_id)) == before + 1
    elsewhere, _, _ = asyncio.run(send(None))  # another device: the transaction id is not known there
    assert elsewhere != first


def test_doctor_checks_the_homeserver_the_login_and_names_encrypted_rooms(matrix: MatrixWorld, tmp_path) -> None:
    from messaging_llm_bot.ops.channels.doctor import Context
    from messaging_llm_bot.ops.channels.matrix.doctor import checks as check_matrix
    from tests.matrix_harness import PASSWORD

    def doctor(**matrix_keys: object) -> dict[str, tuple[str, str]]:
        section = {"enabled": True, "homeserver": matrix.server.url, "user_id": matrix.bot.user_id}
        config = {"matrix": {**section, "password": PASSWORD, "allowed": [matrix.owner.user_id], **matrix_keys}}
        checks = check_matrix(Context(tmp_path / "config", tmp_path / "workspace", False, config))
        return {check.name: (check.status, check.detail) for check in checks}

    plain = matrix.owner.create_room([matrix.bot.user_id], direct=True)
    matrix.bot.join(plain)
    found = doctor()
    assert [found[n][0] for n in ("matrix allowlist", "matrix homeserver", "matrix login", "matrix encryption")] == [
        "ok",
        "ok",
        "ok",
        "ok",
    ]
    sealed = matrix.owner.create_room([matrix.bot.user_id], direct=True, encrypted=True)
    matrix.bot.join(sealed)
    status, detail = doctor()["matrix encryption"]
    assert status == "warn" and sealed in detail and "cannot read" in detail
    assert matrix.bot.members(plain)  # the bot's own session still works: the doctor logged in on its own device
    assert doctor(password="wrong")["matrix login"][0] == "fail"
    assert doctor(allowed=[])["matrix allowlist"][0] == "fail"
    unreachable = doctor(homeserver="http://127.0.0.1:9")
    assert unreachable["matrix homeserver"][0] == "fail" and "matrix login" not in unreachable
    missing = doctor(password="", password_env="MATRIX_DOCTOR_TEST_UNSET")
    assert missing["matrix login"] == ("fail", "matrix.password_env names MATRIX_DOCTOR_TEST_UNSET, which is not set")


def test_the_send_file_skill_sends_a_workspace_file_into_the_room(
    matrix: MatrixWorld, start_matrix, chat_server, workspace
) -> None:
    import json

    csv = b"date,amount,what\n2026-11-02,12.50,bread\n"
    workspace.path("exports").mkdir()
    workspace.path("exports/expenses.csv").write_bytes(csv)
    call = json.dumps({"skill": "send_file", "args": {"path": "exports/expenses.csv", "caption": "November"}})
    chat_server.enqueue(call, '{"reply": "Sent."}')
    room = matrix.direct_room()
    start_matrix()
    wait_until(lambda: matrix.joined(room), timeout=20, what="the bot to join")
    matrix.owner.send(room, "send me November's expenses")
    wait_until(lambda: "Sent." in _bot_texts(matrix, room), timeout=30, what="the answer")
    [upload] = [e for e in matrix.owner.shown(room, matrix.bot.user_id) if e["content"]["msgtype"] == "m.file"]
    content = upload["content"]
    assert content["body"] == "November" and content["filename"] == "expenses.csv"
    assert content["info"] == {"mimetype": "text/csv", "size": len(csv)}
    assert matrix.owner.download(content["url"]) == csv


def test_a_voice_message_is_transcribed_and_answered_as_text(
    matrix: MatrixWorld, start_matrix, chat_server, workspace
) -> None:
    def with_transcription(config: dict) -> None:
        config["llm"]["transcription"] = {"base_url": chat_server.base_url, "model": "whisper-1"}

    chat_server.set_transcription("what is the capital of France")
    chat_server.enqueue('{"reply": "Paris."}')
    room = matrix.direct_room()
    start_matrix(patch=with_transcription)
    wait_until(lambda: matrix.joined(room), timeout=20, what="the bot to join")
    audio = b"OggS fake voice"
    url = matrix.owner.upload(audio, "audio/ogg", "voice.ogg")
    info = {"mimetype": "audio/ogg", "size": len(audio), "duration": 1200}
    matrix.owner.send(room, "voice.ogg", msgtype="m.audio", url=url, info=info, **{"org.matrix.msc3245.voice": {}})
    wait_until(lambda: _answers(matrix, room), timeout=30, what="the answer")
    assert _bot_texts(matrix, room) == ["Paris."]
    assert "what is the capital of France" in str(chat_server.chat_requests[0]["messages"][-1])
    assert not workspace.list("inbox/**/*")  # transcribed, not saved as a file


def test_setup_writes_the_matrix_channel_and_doctor_logs_in(tmp_path, capsys, monkeypatch, matrix: MatrixWorld) -> None:
    """``assistant setup --matrix`` by flags: the login tried with the password from the named variable (never
    written), nothing written when refused, ``enabled`` last; ``doctor`` then logs in."""
    import json

    from messaging_llm_bot.cli.main import main
    from tests.fakes.chat_server import FakeChatServer
    from tests.matrix_harness import PASSWORD
    from tests.setup_runs import channel_setup, example_config

    config = example_config(tmp_path)

    def setup() -> int:
        return channel_setup(
            config,
            tmp_path,
            chat,
            *("--matrix", matrix.bot.user_id, "--matrix-homeserver", matrix.server.url),
            *("--matrix-password-env", "ASSISTANT_TEST_MATRIX_PASSWORD", "--matrix-owner", matrix.owner.user_id),
        )

    with FakeChatServer() as chat:
        chat.set_handler(lambda request: "OK")
        monkeypatch.setenv("ASSISTANT_TEST_MATRIX_PASSWORD", PASSWORD + "-wrong")
        assert setup() == 2
        assert "refused the login" in capsys.readouterr().err and not (config / "local" / "matrix.json").exists()

        monkeypatch.setenv("ASSISTANT_TEST_MATRIX_PASSWORD", PASSWORD)
        assert setup() == 0, capsys.readouterr()
        out = capsys.readouterr().out
        assert "takes the login" in out and f"joins the rooms {matrix.owner.user_id} invites it to" in out
        written = json.loads((config / "local" / "matrix.json").read_text())
        assert written == {
            "homeserver": matrix.server.url,
            "user_id": matrix.bot.user_id,
            "password_env": "ASSISTANT_TEST_MATRIX_PASSWORD",
            "allowed": [matrix.owner.user_id],
            "enabled": True,
        }
        assert PASSWORD not in (config / "local" / "matrix.json").read_text()
        main(["doctor", "--json", "--quick", "--config", str(config), "--workspace", str(tmp_path / "ws")])
        checks = {c["name"]: c for c in json.loads(capsys.readouterr().out)}
    assert checks["matrix login"]["status"] == "ok" and matrix.bot.user_id in checks["matrix login"]["detail"]
    assert checks["matrix homeserver"]["status"] == "ok" and checks["matrix allowlist"]["status"] == "ok"


def test_a_session_ended_elsewhere_is_logged_in_again_and_the_owner_still_answered(
    matrix: MatrixWorld, start_matrix, chat_server
) -> None:
    import requests

    room = matrix.direct_room()
    chat_server.enqueue('{"reply": "still here"}')
    start_matrix()
    wait_until(lambda: matrix.joined(room), timeout=20, what="the bot to join")
    # Every session of the bot's account ends (as "sign out all devices" does): the running bot's too.
    ended = requests.post(
        f"{matrix.server.url}/_matrix/client/v3/logout/all",
        json={},
        headers={"Authorization": f"Bearer {matrix.bot.token}"},
        timeout=10,
    )
    assert ended.ok
    matrix.owner.send(room, "are you there?")
    wait_until(lambda: _answers(matrix, room), timeout=40, what="the answer after the new login")
    assert _bot_texts(matrix, room) == ["still here"]


def test_a_killed_runs_synapse_database_in_memory_is_removed_at_the_next_start(tmp_path, monkeypatch) -> None:
    """The harness's Synapse keeps its database in /dev/shm and removes it when it stops; a run killed before
    that leaves it, and the next start removes such folders once nothing was written in them for hours."""
    import os
    import time

    from tests import matrix_harness

    monkeypatch.setattr(matrix_harness, "MEMORY_FOLDER", tmp_path)
    killed, running = tmp_path / "assistant-tests-synapse-1-aaaa", tmp_path / "assistant-tests-synapse-2-bbbb"
    other = tmp_path / "not-a-synapse-database"
    for folder in (killed, running, other):
        folder.mkdir()
        (folder / "homeserver.db").write_bytes(b"SQLite format 3")
    long_ago = time.time() - matrix_harness.STALE_AFTER_SECONDS - 60
    for path in (killed, killed / "homeserver.db", running, other, other / "homeserver.db"):
        os.utime(path, (long_ago, long_ago))
    matrix_harness._remove_stale_databases(time.time())
    assert not killed.exists()
    assert running.exists() and other.exists()  # a file written lately; not the harness's
    database = matrix_harness._database_folder(tmp_path / "run")
    assert database.parent == tmp_path and database.name.startswith("assistant-tests-synapse-")
