"""The Chat page's streamed answer: its event stream carries the answer as it grows, and a secret the model
writes never reaches it, even split over the stream's deltas (in-process: tests/webchat_harness.py)."""

from __future__ import annotations

import json
import threading

from assistant_framework.redaction import secret_spans
from tests.webchat_harness import start_webchat  # noqa: F401 - the fixture

KEY = "sk-stream-secret-0123456789abcdef"


def test_a_secret_streamed_over_many_deltas_never_reaches_the_pages_events(start_webchat, chat_server) -> None:  # noqa: F811
    """Each live event is the answer so far, redacted whole: a key arriving five characters a delta is never
    there, not even the part of it that arrived before the rest (a delta redacted on its own would show it)."""

    def keyed(config: dict) -> None:
        config["llm"] = {**config["llm"], "stream": True}
        config["llm"]["runners"] = [{**config["llm"]["runners"][0], "api_key": KEY}]

    chat = start_webchat(patch=keyed)
    answer = f"Your key is {KEY}, keep it safe."
    chat_server.enqueue({"content": answer, "stream_chunks": [answer[i : i + 5] for i in range(0, len(answer), 5)]})
    events: list[dict] = []
    listening = threading.Event()

    def listen() -> None:
        assert chat.client is not None
        with chat.client.stream("GET", "/chat/events", timeout=30) as stream:
            listening.set()
            for line in stream.iter_lines():
                if line.startswith("data: "):
                    events.append(json.loads(line[len("data: ") :]))
                    if events[-1].get("type") == "message" and events[-1]["message"]["role"] != "owner":
                        return

    listener = threading.Thread(target=listen, daemon=True)
    listener.start()
    assert listening.wait(10)
    chat.send("what is my key?")
    listener.join(30)
    live = [event["text"] for event in events if event.get("type") == "live"]
    assert len(live) > 3, events  # the answer streamed: shown as it grew, delta by delta
    assert live[-1] == "Your key is ***, keep it safe.", live
    for event in events:
        assert not secret_spans(json.dumps(event), [KEY]), event  # no run of 8 of its characters, anywhere
    assert chat.replies()[-1] == "Your key is ***, keep it safe."
