"""The WhatsApp channel in this process (tests/whatsapp_harness.py: the real service in a thread, the fake Graph
API): without a template, what is due outside the 24-hour window waits in the inbox and goes out, in order,
when the owner writes again, who is told once how to set a template up; the same message posted twice at
once is answered once; a body over the bound is refused before it is read. The real bot process:
tests/test_whatsapp_bot.py."""

from __future__ import annotations

import socket
import threading
import time

from assistant_framework.inbox import Inbox
from messaging_llm_bot.channels.whatsapp.turn import HELD_TEXT
from tests.waiting import wait_until
from tests.whatsapp_harness import OWNER


def test_without_a_template_a_reply_outside_the_window_waits_for_the_owner_and_the_owner_is_told_once(
    start_whatsapp, whatsapp_graph, chat_server, workspace
) -> None:
    graph = whatsapp_graph
    bot = start_whatsapp()
    chat_server.enqueue('{"reply": "Held answer."}', '{"reply": "Fresh answer."}', '{"reply": "Third answer."}')
    graph.user_text(OWNER, "An old question.", timestamp=time.time() - 25 * 3600)
    wait_until(lambda: bot.service.turns.held, 30, "the reply to be held")
    assert graph.messages == [] and len(Inbox(workspace).pending()) == 1  # nothing sent, nothing lost
    graph.user_text(OWNER, "A new question.")  # the window opens: the held reply goes first
    wait_until(lambda: len(graph.texts(OWNER)) >= 3, 30, "the held reply, the notice and the answer")
    texts = graph.texts(OWNER)
    assert texts[0].startswith("Held answer.") and texts[1] == HELD_TEXT and texts[2].startswith("Fresh answer.")
    graph.user_text(OWNER, "A third question.")  # the window is open: answered at once, nothing more said
    wait_until(lambda: any(t.startswith("Third answer.") for t in graph.texts(OWNER)), 30, "the third answer")
    assert graph.texts(OWNER).count(HELD_TEXT) == 1
    assert graph.failed(OWNER) == []  # no free-form message was tried outside the window
    wait_until(lambda: not Inbox(workspace).pending(), 15, "every item completed")


def test_the_same_message_posted_twice_at_once_is_answered_once(start_whatsapp, whatsapp_graph, chat_server) -> None:
    graph = whatsapp_graph
    start_whatsapp()
    chat_server.enqueue('{"reply": "Once."}', '{"reply": "Twice."}')
    payload = graph.message_event(OWNER, graph.inbound(OWNER, "text", {"body": "Hello?"}))
    statuses: list[int] = []
    posts = [threading.Thread(target=lambda: statuses.append(graph.deliver(payload))) for _ in range(2)]
    for post in posts:
        post.start()
    for post in posts:
        post.join(30)
    assert statuses == [200, 200]
    wait_until(lambda: graph.texts(OWNER), 30, "the answer")
    wait_until(
        lambda: (
            len(chat_server.chat_requests) == 1 and not Inbox(start_whatsapp.running[-1].runtime.workspace).pending()
        ),
        15,
        "done",
    )
    assert [t for t in graph.texts(OWNER) if t.startswith(("Once.", "Twice."))] == [graph.texts(OWNER)[0]]
    assert graph.texts(OWNER)[0].startswith("Once.") and len(chat_server.chat_requests) == 1


def test_a_body_over_the_bound_is_refused_before_it_is_read(start_whatsapp, chat_server) -> None:
    bot = start_whatsapp(patch=lambda config: config["whatsapp"]["webhook"].update(max_body_bytes=10_000))
    webhook = bot.service.webhook
    assert webhook is not None
    with socket.create_connection(("127.0.0.1", webhook.port), timeout=10) as conn:
        conn.sendall(
            f"POST {webhook.path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Content-Length: 50000\r\nX-Hub-Signature-256: sha256=00\r\n\r\n".encode()
        )  # the body is never sent: the answer comes from the headers alone
        answer = conn.recv(4096).decode("latin-1")
    assert answer.startswith("HTTP/1.1 413")
    assert chat_server.chat_requests == []


def test_a_notice_and_a_reminder_outside_the_window_go_out_as_the_template(start_whatsapp, whatsapp_graph) -> None:
    import asyncio

    from tests.whatsapp_harness import TEMPLATE

    graph = whatsapp_graph
    bot = start_whatsapp(patch=lambda config: config["whatsapp"].update(template={"name": TEMPLATE}))
    service, loop = bot.service, bot.service._loop
    assert loop is not None  # the owner never wrote: the window is closed

    def on_loop(coro):  # the channel's own loop, as the scheduler and the collectors call it
        return asyncio.run_coroutine_threadsafe(coro, loop).result(30)

    assert on_loop(service.send_notice("The feed has 3 new items.\n\nSee /news.")) is True
    assert on_loop(service.send_reminder(f"wa:{OWNER}", "Call Anna.", f"wa:{OWNER}")) is True
    wait_until(lambda: len(graph.sent(OWNER)) == 2, 30, "both as templates")
    sent = graph.sent(OWNER)
    assert [m["type"] for m in sent] == ["template", "template"] and graph.failed(OWNER) == []
    params = [m["payload"]["template"]["components"][0]["parameters"][0]["text"] for m in sent]
    # the notice goes through the inbox on its own task, the reminder at once: either may be first
    assert sorted(params) == ["Call Anna.", "The feed has 3 new items. See /news."]


def test_more_posts_a_minute_than_the_bound_are_answered_429(start_whatsapp, whatsapp_graph, chat_server) -> None:
    graph = whatsapp_graph
    start_whatsapp(patch=lambda config: config["whatsapp"]["webhook"].update(per_minute=2))
    statuses = [graph.deliver(graph.status_event(f"wamid.S{n}", OWNER, "delivered")) for n in range(3)]
    assert statuses == [200, 200, 429]  # Meta sends the third again later
    assert chat_server.chat_requests == [] and graph.messages == []  # statuses are passed over


def test_a_voice_note_without_transcription_is_fetched_by_its_media_id_and_saved(
    start_whatsapp, whatsapp_graph, chat_server, workspace
) -> None:
    graph = whatsapp_graph
    start_whatsapp()
    chat_server.enqueue('{"reply": "Got your voice note."}')
    voice = b"OggS\x00\x02" + b"\x00" * 200  # the bytes as sent; no transcription server is configured
    graph.user_media(OWNER, "audio", voice, "audio/ogg", voice=True)
    wait_until(lambda: graph.texts(OWNER), 30, "the answer")
    saved = [workspace.path(rel).read_bytes() for rel in workspace.list("inbox/**/*.ogg")]
    assert saved == [voice]  # fetched through GET /<media id> and its short-lived URL, with the token
    downloads = [r for r in graph.requests if r["path"].startswith("/media-download/")]
    assert len(downloads) == 1
