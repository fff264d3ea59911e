"""Telegram albums (photos or files sent together, one update each sharing a ``media_group_id``) are one turn
with all their parts, through the real bot and the fake Bot API; a stop mid-album loses no photo.

An album's turn waits until no part came for a quiet while (conversation/albums.py: 1 s). Here the parts go
out in one ``getUpdates`` answer (``FakeBotAPI.together``): the bot stores them in one batch and notes each part
as it hands it on, a millisecond apart with no network call or file write between them (no longer a poll's round
trip and a store apart), so the quiet while is 0.3 s here (``_quick_albums``): the same wait for the same end,
far longer than what it must hold even on a loaded machine, instead of a second of each test spent idle."""

from __future__ import annotations

from assistant_framework.inbox import Inbox
from messaging_llm_bot.conversation.pool import GIVEN_UP
from tests.media_files import image_parts, png_bytes
from tests.telegram_harness import OWNER, RunningBot, texts
from tests.test_photos import with_vision
from tests.waiting import wait_until


def _quick_albums(bot: RunningBot) -> RunningBot:
    """The running bot's album wait after the last part: 0.3 s instead of 1 s (the parts sent ``together``)."""
    bot.service.turns.albums.quiet = 0.3
    return bot


def _user_text(request: dict) -> str:
    content = [m for m in request["messages"] if m["role"] == "user"][-1]["content"]
    return content if isinstance(content, str) else "\n".join(p.get("text", "") for p in content)


def test_an_album_of_photos_is_one_turn_with_all_its_photos(fake, start_bot, chat_server, workspace):
    _quick_albums(start_bot(config_patch=with_vision(chat_server)))
    chat_server.enqueue('{"reply": "Three red squares."}')
    with fake.together():
        fake.send_photo(OWNER, png_bytes(64, 48), caption="what are these?", media_group_id="A1")
        fake.send_photo(OWNER, png_bytes(60, 40), media_group_id="A1")
        fake.send_photo(OWNER, png_bytes(50, 30), media_group_id="A1")
    fake.wait_for(lambda: "Three red squares." in texts(fake))
    chat_server.enqueue('{"reply": "Noted."}')
    fake.send_message("thanks")  # the next message: its own turn, after the album's
    fake.wait_for(lambda: len(texts(fake)) == 2)
    first, second = texts(fake)  # one answer for the album, none per photo
    assert first == "Three red squares." and second.startswith("Noted.")
    album_turn = chat_server.chat_requests[0]
    assert len(image_parts(album_turn)) == 3
    saved = sorted(workspace.list("inbox/**/*.jpg"))
    assert len(saved) == 3
    text = _user_text(album_turn)
    assert all(f"[photo: {path}," in text for path in saved) and "what are these?" in text
    assert len(chat_server.chat_requests) == 2
    wait_until(lambda: Inbox(workspace).pending() == [])  # every part answered (completed after delivery)


def test_an_album_of_files_is_one_turn_and_a_photo_alone_stays_its_own(fake, start_bot, chat_server, workspace):
    """No runner sees images here: the album's files are named to the model, in one turn."""
    _quick_albums(start_bot())
    chat_server.enqueue('{"reply": "Filed both."}', '{"reply": "A photo."}')
    with fake.together():
        fake.send_document(OWNER, "a.pdf", b"%PDF-1.4 a", caption="file these", media_group_id="D1")
        fake.send_document(OWNER, "b.pdf", b"%PDF-1.4 b", media_group_id="D1")
    fake.wait_for(lambda: "Filed both." in texts(fake))
    fake.send_photo(OWNER, png_bytes(), caption="and this")  # no album: a turn of its own
    fake.wait_for(lambda: "A photo." in "".join(texts(fake)))
    assert len(chat_server.chat_requests) == 2
    first, second = (_user_text(r) for r in chat_server.chat_requests)
    assert "a.pdf" in first and "b.pdf" in first and "file these" in first
    assert "and this" in second and ".pdf" not in second


def test_a_stop_mid_album_loses_no_photo_and_the_next_start_answers_the_album_once(
    fake, start_bot, chat_server, workspace
):
    def slow_stop(config):
        with_vision(chat_server)(config)
        config.setdefault("runtime", {})["shutdown_timeout_seconds"] = 0.2  # the model answers after 4 s: cut off

    bot = _quick_albums(start_bot(config_patch=slow_stop))
    chat_server.enqueue({"content": '{"reply": "too late"}', "delay": 4})
    with fake.together():
        for side in (64, 60, 50):
            fake.send_photo(OWNER, png_bytes(side, side), media_group_id="S1")
    assert chat_server.wait_for_requests(1, timeout=15, path="/chat/completions")
    assert bot.stop() == 0  # the turn is cut off: nothing was answered
    # Its model call with it: when the stop returns the turn has ended (hung up on, traced as stopped), no thread
    # of it is left to answer later into the bot's closed loop ("Event loop is closed" at the end of the run)
    # or to fail its model call once the fakes are gone.
    traces = bot.runtime.agent.traces
    # Traced as the bot's stop, not the owner's: no one sent /stop.
    assert [traces.load(one).get("error") for one in traces.ids()] == [GIVEN_UP]
    assert bot.service.shutdown.turns.pool.running == 0
    assert [t for t in texts(fake) if t] == []
    assert len(Inbox(workspace).pending("tg:")) == 3  # every part kept for the next start
    chat_server.enqueue('{"reply": "All three, at last."}')
    start_bot(config_patch=slow_stop)
    fake.wait_for(lambda: "All three, at last." in texts(fake), timeout=15)
    assert texts(fake) == ["All three, at last."]
    replayed = [r for r in chat_server.chat_requests if image_parts(r)][-1]
    assert len(image_parts(replayed)) == 3
    wait_until(lambda: Inbox(workspace).pending() == [])
