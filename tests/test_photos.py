"""Photos the model can see: through the real Telegram bot and the fake Bot API, to a vision runner."""

from __future__ import annotations

import json

from messaging_llm_bot.conversation.images import VISION_MISSING
from tests.media_files import HEIC_HEAD, decoded, has_metadata, image_parts, jpeg_with_gps, png_bytes
from tests.telegram_harness import OWNER, texts
from tests.waiting import wait_until

FRIEND = 2
MAX_SIDE = 800


def with_vision(chat_server, *, named: bool = False, max_side: int = MAX_SIDE):
    """A config patch adding a runner that takes images (``vision: true``, or named by ``llm.vision_runner``)."""

    def patch(config):
        eyes = {"name": "eyes", "base_url": chat_server.base_url, "model": "vision-model", "timeout_seconds": 10}
        if named:
            config["llm"]["vision_runner"] = "eyes"
        else:
            eyes["vision"] = True
        config["llm"]["runners"].append(eyes)
        config["llm"]["image_max_side"] = max_side

    return patch


def test_a_photo_reaches_the_vision_runner_downscaled_without_exif_and_later_turns_carry_a_placeholder(
    fake, start_bot, chat_server, workspace
):
    start_bot(config_patch=with_vision(chat_server))
    original = jpeg_with_gps(3000, 2000)
    chat_server.enqueue('{"reply": "A green field with yellow stripes."}')
    fake.send_photo(OWNER, original, caption="what is this?", width=3000, height=2000)
    fake.wait_for(lambda: "A green field with yellow stripes." in texts(fake))
    first = chat_server.chat_requests[0]
    assert first["model"] == "vision-model"  # the vision runner answered, not the first runner
    (part,) = image_parts(first)
    seen = decoded(part)
    assert seen.format == "JPEG" and max(seen.size) <= MAX_SIDE and seen.size == (MAX_SIDE, 533)
    assert not has_metadata(seen)  # no EXIF at all: no GPS position, no camera
    saved = workspace.list("inbox/**/*.jpg")
    assert len(saved) == 1 and workspace.path(saved[0]).read_bytes() == original  # the original is kept as sent
    text = first["messages"][-1]["content"][0]["text"]
    assert f"[photo: {saved[0]}, 800x533]" in text and "what is this?" in text and "untrusted" in text

    chat_server.enqueue('{"reply": "Anything else?"}')
    fake.send_message("and the stripes?")
    fake.wait_for(lambda: "Anything else?" in texts(fake))
    second = chat_server.chat_requests[1]
    assert second["model"] == "fake-model"  # the usual runner again
    body = json.dumps(second["messages"])
    assert f"[photo: {saved[0]}, 800x533]" in body  # the placeholder in the history...
    assert "image_url" not in body and "base64" not in body and len(body) < 20_000  # ...never the bytes
    history = workspace.read_text(workspace.list("conversations/*/history.json")[0])
    assert "base64" not in history and f"[photo: {saved[0]}, 800x533]" in history

    def photo_traces() -> list[dict]:  # written in the background once no reply is in progress (background.py)
        traces = [json.loads(workspace.read_text(t)) for t in workspace.list("traces/**/*.json")]
        return [t for t in traces if t["reply"].startswith("A green field")]

    wait_until(photo_traces, what="the photo turn's trace")
    (photo_trace,) = photo_traces()
    raw = json.dumps(photo_trace)
    assert "base64" not in raw and "image omitted from the trace: image/jpeg" in raw  # sizes, not pixels
    assert photo_trace["section_sizes"]["images"][0]["width"] == MAX_SIDE


def test_a_runner_named_by_vision_runner_sees_an_image_document(fake, start_bot, chat_server, workspace):
    """An image sent as a file (full resolution, no Telegram recompression) goes the same way."""
    start_bot(config_patch=with_vision(chat_server, named=True, max_side=1568))
    chat_server.enqueue('{"reply": "A scan."}')
    fake.send_document(OWNER, "scan.jpg", jpeg_with_gps(4000, 3000, orientation=6), mime_type="image/jpeg")
    fake.wait_for(lambda: "A scan." in texts(fake))
    request = chat_server.chat_requests[0]
    assert request["model"] == "vision-model"
    seen = decoded(image_parts(request)[0])
    # Orientation 6: the phone was held upright, so the model sees it portrait, as the owner did.
    assert seen.size == (1176, 1568) and not has_metadata(seen)
    assert "[image: inbox/" in request["messages"][-1]["content"][0]["text"]


def test_without_a_vision_runner_the_chat_is_told_once_and_the_model_gets_path_and_caption(
    fake, start_bot, chat_server, workspace
):
    start_bot()
    chat_server.enqueue('{"reply": "Saved it."}', '{"reply": "Saved that too."}')
    fake.send_photo(OWNER, jpeg_with_gps(300, 200), caption="my plant")
    fake.wait_for(lambda: any(t.startswith("Saved it.") for t in texts(fake)))
    fake.send_photo(OWNER, jpeg_with_gps(300, 200), caption="again")
    fake.wait_for(lambda: any(t.startswith("Saved that too.") for t in texts(fake)))
    shown = "\n".join(texts(fake))
    assert shown.count(VISION_MISSING.split(":")[0]) == 1, shown  # once per chat, not per photo
    for request in chat_server.chat_requests:
        content = request["messages"][-1]["content"]
        assert isinstance(content, str) and "inbox/" in content  # today's behaviour: path and caption
    assert "my plant" in chat_server.chat_requests[0]["messages"][-1]["content"]


def test_a_heic_image_is_refused_in_one_sentence_without_a_model_call(fake, start_bot, chat_server):
    start_bot(config_patch=with_vision(chat_server))
    fake.send_document(OWNER, "IMG_0001.HEIC", HEIC_HEAD, mime_type="image/heic")
    fake.wait_for(lambda: texts(fake))
    assert texts(fake) == ["That image is HEIC, which I cannot read; please send it as a JPEG (or as a photo)."]
    assert chat_server.chat_requests == []


def test_a_guests_photo_goes_to_their_own_area_not_the_owners_inbox(fake, start_bot, chat_server, workspace):
    from assistant_framework.access import guest_area

    start_bot(config_patch=with_vision(chat_server), allowed_user_ids=[OWNER, FRIEND], owner_id=OWNER)
    chat_server.enqueue('{"reply": "Nice cat."}')
    fake.send_photo(FRIEND, jpeg_with_gps(600, 400), caption="my cat")
    fake.wait_for(lambda: "Nice cat." in texts(fake, FRIEND))
    assert workspace.list("inbox/**/*") == []
    area = guest_area(f"tg:{FRIEND}")
    saved = workspace.list(f"{area}/inbox/**/*.jpg")
    assert len(saved) == 1
    text = chat_server.chat_requests[0]["messages"][-1]["content"][0]["text"]
    # The path the guest's skills understand: inside their own area.
    assert saved[0].removeprefix(area + "/") in text and area not in text and "untrusted" in text


# -- Signal: one message may carry several photos (an album) and files ------------------------------------


def test_a_signal_album_reaches_the_vision_runner_as_several_images_and_a_heic_is_named_not_sent(
    start, daemon, chat_server, workspace
):
    from tests.signal_harness import OWNER as SIGNAL_OWNER

    one = daemon.add_attachment(jpeg_with_gps(3000, 2000), "image/jpeg", filename="one.jpg")
    two = daemon.add_attachment(png_bytes(2000, 1000), "image/png", filename="two.png")
    heic = daemon.add_attachment(HEIC_HEAD, "image/heic", filename="three.heic")
    menu = daemon.add_attachment(b"%PDF-1.4 menu", "application/pdf", filename="menu.pdf")
    chat_server.enqueue('{"reply": "Two pictures and a menu."}')
    start(patch=with_vision(chat_server))
    daemon.message(SIGNAL_OWNER, "from the holiday", attachments=[one, two, heic, menu])
    [sent] = daemon.wait_sent(1)
    assert sent["message"] == "Two pictures and a menu."
    request = chat_server.chat_requests[0]
    assert request["model"] == "vision-model"
    seen = [decoded(part) for part in image_parts(request)]
    assert [(image.format, image.size) for image in seen] == [("JPEG", (800, 533)), ("PNG", (800, 400))]
    assert not any(has_metadata(image) for image in seen)
    text = request["messages"][-1]["content"][0]["text"]
    assert "[photo: inbox/" in text and "one.jpg, 800x533]" in text and "two.png, 800x400]" in text
    assert "three.heic" in text and "It is not shown to you: That image is HEIC" in text  # named, not sent
    assert "menu.pdf" in text and "Caption: from the holiday" in text
    assert len(workspace.list("inbox/**/*")) == 4  # every file kept as sent
    wait_until(lambda: workspace.list("traces/**/*.json"), what="the turn's trace")
    trace = workspace.read_text(workspace.list("traces/**/*.json")[0])
    assert "base64" not in trace and trace.count("image omitted from the trace") == 2  # sizes, not pixels


def test_a_signal_guests_photo_goes_to_their_own_area(start, daemon, chat_server, workspace):
    from assistant_framework.access import guest_area
    from tests.signal_harness import FRIEND as SIGNAL_FRIEND

    photo = daemon.add_attachment(jpeg_with_gps(600, 400), "image/jpeg")
    chat_server.enqueue('{"reply": "Nice view."}')
    start(patch=with_vision(chat_server))
    daemon.message(SIGNAL_FRIEND, None, attachments=[photo])
    [sent] = daemon.wait_sent(1)
    assert sent["message"] == "Nice view."
    assert workspace.list("inbox/**/*") == []
    area = guest_area(f"sig:{SIGNAL_FRIEND}")
    [saved] = workspace.list(f"{area}/inbox/**/*.jpg")
    request = chat_server.chat_requests[0]
    assert request["model"] == "vision-model" and not has_metadata(decoded(image_parts(request)[0]))
    assert saved.removeprefix(area + "/") in request["messages"][-1]["content"][0]["text"]


def test_a_photo_is_found_by_its_caption_and_by_the_models_description(bot_config, workspace, make_agent, chat_server):
    """Memory search finds the picture's file through what the owner wrote and what the model said it shows."""
    from assistant_framework.media.images import prepare_image
    from assistant_framework.memory import MemoryService
    from messaging_llm_bot.agent.images import ImageInput
    from messaging_llm_bot.agent.incoming import AgentMessage

    config = dict(bot_config, memory={"recall": {"enabled": False}})
    with_vision(chat_server)(config)
    memory = MemoryService(workspace, config, start_worker=False)
    try:
        agent = make_agent(config, workspace, memory=memory)
        path = "inbox/2026-12-01/photo-7.jpg"
        seen = ImageInput(path, prepare_image(jpeg_with_gps(600, 400), MAX_SIDE))
        chat_server.enqueue('{"reply": "A monstera with three yellowing leaves."}')
        text = f"[photo: {path}, 600x400]\nCaption: my office plant"
        result = agent.handle(AgentMessage("tg:1", text, chat_id=1, untrusted=True, images=(seen,)))
        assert result.ok and chat_server.chat_requests[0]["model"] == "vision-model"
        by_description = memory.search("monstera yellowing")
        by_caption = memory.search("office plant")
        assert by_description and path in by_description[0].snippet
        assert by_caption and path in by_caption[0].snippet
    finally:
        memory.close()
