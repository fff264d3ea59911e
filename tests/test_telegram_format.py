"""Rendering and splitting of model Markdown, and delivery through the fake Bot API server."""

from __future__ import annotations

import asyncio
import random
import re

import pytest
import telegram
from telegramify_markdown import convert

from messaging_llm_bot.channels.telegram import send as send_module
from messaging_llm_bot.channels.telegram.format import plain_parts, render_markdown
from messaging_llm_bot.channels.telegram.progress import TelegramLive
from messaging_llm_bot.channels.telegram.send import TelegramDeliveryError, TelegramOut, edit_text_safely
from messaging_llm_bot.conversation.markup import EMPTY_PLACEHOLDER, MessagePart, utf16_len
from messaging_llm_bot.conversation.outgoing import Address, PartSent, TextOut
from tests.fakes.bot_api import FakeBotAPI

#: A flood wait the fake asks for: Telegram's are whole seconds, and the code waits out whatever it is told.
FLOOD_WAIT = 0.05

WORDS = ["alpha", "beta", "gamma", "delta", "Grüße", "naïve", "😀smile", "日本語", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "end."]


def entity_text(part: MessagePart, ent: dict) -> str:
    raw = part.text.encode("utf-16-le", "surrogatepass")
    return raw[2 * ent["offset"] : 2 * (ent["offset"] + ent["length"])].decode("utf-16-le", "surrogatepass")


def assert_valid_entities(part: MessagePart) -> None:
    total = utf16_len(part.text)
    for ent in part.entities:
        assert ent["offset"] >= 0 and ent["length"] > 0, ent
        assert ent["offset"] + ent["length"] <= total, (ent, total)
        entity_text(part, ent)  # decodes: no entity edge falls inside a surrogate pair


def long_markdown(seed: int, chars: int) -> str:
    rng = random.Random(seed)
    paragraphs, size = [], 0
    while size < chars:
        words = []
        for _ in range(rng.randint(5, 120)):
            w = rng.choice(WORDS)
            words.append(rng.choice([w, w, w, f"**{w}**", f"_{w}_", f"`{w}`", f"[{w}](https://example.com/{w})"]))
        lines = [" ".join(words[i : i + 15]) for i in range(0, len(words), 15)]
        paragraphs.append("\n".join(lines))
        size += sum(len(x) for x in lines)
    return "\n\n".join(paragraphs)


def test_ten_thousand_chars_split_on_boundaries_without_losing_text() -> None:
    markdown = long_markdown(1, 10_000)
    rendered, _ = convert(markdown)
    assert len(markdown) >= 10_000
    parts = render_markdown(markdown)
    assert len(parts) >= 2
    for part in parts:
        assert 0 < utf16_len(part.text) <= 4096
        assert part.text == part.text.strip()
        assert_valid_entities(part)
    # Every word survives whole and in order: no part boundary cuts a word.
    assert [w for p in parts for w in p.text.split()] == rendered.split()
    # Formatting survives the cut: every bold entity still covers exactly a whole word.
    bolds = [entity_text(p, e) for p in parts for e in p.entities if e["type"] == "bold"]
    assert bolds and all(b in WORDS for b in bolds)


def test_split_prefers_paragraphs_then_lines() -> None:
    para = ("word " * 150).strip()  # 749 chars
    parts = render_markdown("\n\n".join([para] * 4), limit=1600)
    assert [p.text for p in parts] == [f"{para}\n\n{para}", f"{para}\n\n{para}"]
    lines = "\n".join(["line of text number %03d" % i for i in range(100)])
    parts = render_markdown(lines, limit=500)
    for part in parts:
        assert all(re.fullmatch(r"line of text number \d{3}", ln) for ln in part.text.split("\n"))


def test_smaller_code_block_is_kept_whole() -> None:
    code = "\n".join(f"value_{i} = compute({i})  # step" for i in range(30))  # ~1000 chars
    markdown = ("intro sentence " * 40).strip() + "\n\n```python\n" + code + "\n```\n\nAfter the code."
    parts = render_markdown(markdown, limit=1200)
    pre_parts = [p for p in parts if any(e["type"] == "pre" for e in p.entities)]
    assert len(pre_parts) == 1
    (pre,) = [e for e in pre_parts[0].entities if e["type"] == "pre"]
    assert entity_text(pre_parts[0], pre) == code and pre["language"] == "python"


def test_oversized_code_block_becomes_several_closed_blocks() -> None:
    code_lines = [f"    row_{i:04d} = [{i}, {i * 2}, '😀']" for i in range(400)]
    markdown = "Here is the dump:\n\n```python\n" + "\n".join(code_lines) + "\n```\n\nDone."
    parts = render_markdown(markdown)
    code_chunks = []
    for part in parts:
        assert utf16_len(part.text) <= 4096
        assert_valid_entities(part)
        pres = [e for e in part.entities if e["type"] == "pre"]
        assert len(pres) <= 1
        if pres:
            assert pres[0]["language"] == "python"
            code_chunks.append(entity_text(part, pres[0]))
    assert len(code_chunks) >= 3
    # Cut only between lines; indentation is kept; joined back it is the original code.
    assert "\n".join(code_chunks) == "\n".join(code_lines)
    assert parts[-1].text.endswith("Done.")


def test_entities_with_emoji_and_non_bmp_text() -> None:
    markdown = "😀😀 **bold 𝔘𝔫𝔦** then _ital 日本_ and [link 🎉](https://x.example/a) `code 😀`"
    (part,) = render_markdown(markdown)
    assert_valid_entities(part)
    texts = {e["type"]: entity_text(part, e) for e in part.entities}
    assert texts == {"bold": "bold 𝔘𝔫𝔦", "italic": "ital 日本", "text_link": "link 🎉", "code": "code 😀"}
    # Splitting emoji-heavy text: the limit counts UTF-16 units, not code points.
    parts = render_markdown(" ".join(["😀**𝔘𝔫**"] * 3000), limit=4096)
    assert len(parts) >= 4
    for part in parts:
        assert utf16_len(part.text) <= 4096
        assert_valid_entities(part)
        assert all(entity_text(part, e) == "𝔘𝔫" for e in part.entities)


def test_empty_and_whitespace_input_give_a_placeholder() -> None:
    # Invisible format characters alone (a zero-width space, a word joiner, a BOM) show nothing either.
    for markdown in ("", "   \n\n  ", "\n", "\u200b", " \u200b\u2060\n\ufeff "):
        assert render_markdown(markdown) == [MessagePart(EMPTY_PLACEHOLDER, [])]
    assert plain_parts("") == [EMPTY_PLACEHOLDER]
    assert render_markdown("a\u200bb") == [MessagePart("a\u200bb", [])]  # inside text they stay


def test_single_overlong_token_is_cut_hard_but_fits() -> None:
    parts = render_markdown("x" * 5000 + " tail", limit=4096)
    assert [utf16_len(p.text) for p in parts] == [4096, 904 + 5]
    assert plain_parts("😀" * 100, limit=50) == ["😀" * 25] * 4


def test_plain_parts_same_rules_and_fences_are_reopened() -> None:
    text = "\n\n".join(("lorem ipsum " * 60).strip() for _ in range(10))
    parts = plain_parts(text, limit=1000)
    assert all(utf16_len(p) <= 1000 for p in parts)
    assert [w for p in parts for w in p.split()] == text.split()
    code = "\n".join(f"  x{i} = {i}" for i in range(300))
    parts = plain_parts(f"intro\n\n```py\n{code}\n```\nend", limit=500)
    assert all(utf16_len(p) <= 500 for p in parts)
    assert parts[0] == "intro" and parts[-1].endswith("\n```\nend")
    for part in parts[1:]:
        assert part.startswith("```py\n") and part.removesuffix("\nend").endswith("\n```"), part[:20]
    inner = [p.removeprefix("```py\n").split("\n```")[0] for p in parts[1:]]
    assert "\n".join(inner) == code


def test_the_live_message_fits_in_utf16_units() -> None:
    live = TelegramLive(None, 1)  # type: ignore[arg-type]  # fit makes no call
    assert live.fit("short") == "short"
    cut = live.fit("😀" * 3000)
    assert utf16_len(cut) <= 4096 and cut.endswith("…")


# ----- delivery through the fake Bot API ---------------------------------------------------------


@pytest.fixture
def fake() -> FakeBotAPI:
    with FakeBotAPI() as server:
        yield server


async def send_markdown(
    bot: telegram.Bot,
    chat: int,
    markdown: str,
    reply_to: int | None = None,
    skip: int = 0,
    on_part_sent: PartSent | None = None,
) -> list[int]:
    """The channel's send of a reply (TelegramOut.send_text) to ``chat``: the ids of the parts it sent."""
    text = TextOut(markdown, None if reply_to is None else str(reply_to), skip, on_part_sent)
    return [int(one) for one in (await TelegramOut(bot).send_text(Address(str(chat)), text)).message_ids]


def run_with_bot(fake: FakeBotAPI, body):
    async def main():
        async with telegram.Bot(fake.token, base_url=fake.base_url, base_file_url=fake.base_file_url) as bot:
            return await body(bot)

    return asyncio.run(main())


def test_markdownv2_breaking_replies_are_delivered(fake: FakeBotAPI) -> None:
    replies = [
        "Price: 3.50 (approx) - ok!",
        "*bold",
        "_snake_case_names_ and a_b_c",
        "1 + 1 = 2 #math {x} |y| ~z",
        "<b>not html</b> & <3",
        "**Bold** with `code_here()` and [link](https://e.com/a_(b))",
    ]

    async def body(bot):
        return [await send_markdown(bot, 42, r) for r in replies]

    ids = run_with_bot(fake, body)
    assert all(len(x) == 1 for x in ids)
    messages = fake.messages(42)
    assert [m["text"] for m in messages] == [render_markdown(r)[0].text for r in replies]
    assert messages[0]["text"] == "Price: 3.50 (approx) - ok!"
    assert messages[4]["text"] == "not html & <3"  # inline HTML tags are dropped by the converter
    assert [e["type"] for e in messages[5]["entities"]] == ["bold", "code", "text_link"]
    assert all(c["status"] == 200 for c in fake.calls("sendMessage"))


def test_long_reply_arrives_in_order_and_replies_once(fake: FakeBotAPI) -> None:
    markdown = long_markdown(7, 14_000)
    fake.send_message("question", user_id=42)
    ids = run_with_bot(fake, lambda bot: send_markdown(bot, 42, markdown, reply_to=1))
    messages = fake.messages(42)
    assert [m["message_id"] for m in messages] == ids and len(ids) >= 3
    assert [m["text"] for m in messages] == [p.text for p in render_markdown(markdown)]
    assert messages[0]["reply_to_message"]["text"] == "question"
    assert all("reply_to_message" not in m for m in messages[1:])


def test_plain_fallback_when_entities_are_rejected(fake: FakeBotAPI) -> None:
    fake.fail_next("sendMessage", status=400, description="Bad Request: can't parse entities: Unsupported entity")
    ids = run_with_bot(fake, lambda bot: send_markdown(bot, 5, "Some **bold** text"))
    calls = fake.calls("sendMessage")
    assert [c["status"] for c in calls] == [400, 200]
    assert "entities" in calls[0]["params"] and "entities" not in calls[1]["params"]
    (message,) = fake.messages(5)
    assert message["message_id"] == ids[0] and message["text"] == "Some bold text" and message["entities"] == []


def test_retry_after_is_waited_out_then_delivered(fake: FakeBotAPI) -> None:
    fake.fail_next("sendMessage", status=429, retry_after=FLOOD_WAIT)  # Telegram says whole seconds: a short one
    ids = run_with_bot(fake, lambda bot: send_markdown(bot, 5, "hello"))
    calls = fake.calls("sendMessage")
    assert [c["status"] for c in calls] == [429, 200]
    assert calls[1]["at"] - calls[0]["at"] >= FLOOD_WAIT  # the wait it was told, not a retry at once
    assert [m["text"] for m in fake.messages(5)] == ["hello"] and len(ids) == 1


def test_network_errors_are_retried_then_reported(fake: FakeBotAPI, short_send_backoff: None) -> None:
    # The first wait 10 ms (the product's is 0.25 s): the same tries, the same doubling, a 25th of the waiting.
    fake.fail_next("sendMessage", status=502, times=2)
    run_with_bot(fake, lambda bot: send_markdown(bot, 5, "survives"))
    assert [m["text"] for m in fake.messages(5)] == ["survives"]

    fake.fail_next("sendMessage", status=502, times=10)
    markdown = "first part\n\n" + ("filler words here " * 300)
    with pytest.raises(TelegramDeliveryError, match="chat 6") as info:
        run_with_bot(fake, lambda bot: send_markdown(bot, 6, markdown))
    assert info.value.chat_id == 6 and info.value.part_index == 0
    tries = [c for c in fake.calls("sendMessage") if c["params"].get("chat_id") in (6, "6")]
    assert len(tries) == send_module.NETWORK_TRIES
    gaps = [later["at"] - earlier["at"] for earlier, later in zip(tries, tries[1:], strict=False)]
    assert all(gap >= wait for gap, wait in zip(gaps, (0.01, 0.02, 0.04), strict=True)), gaps  # each twice the last
    assert "chat 6" in str(info.value) and "index 0" in str(info.value)


def test_non_formatting_bad_request_is_not_retried(fake: FakeBotAPI) -> None:
    fake.fail_next("sendMessage", status=400, description="Bad Request: chat not found")
    with pytest.raises(TelegramDeliveryError, match="chat 77") as info:
        run_with_bot(fake, lambda bot: send_markdown(bot, 77, "**hi**"))
    assert "chat not found" in str(info.value).lower()
    assert len(fake.calls("sendMessage")) == 1


def test_skip_parts_and_on_part_sent(fake: FakeBotAPI) -> None:
    markdown = "\n\n".join(("part text " * 300).strip() for _ in range(3))
    expected = render_markdown(markdown)
    assert len(expected) == 3
    seen: list[tuple[int, int]] = []

    async def ledger(index: int, message_id: str) -> None:
        seen.append((index, int(message_id)))

    ids = run_with_bot(fake, lambda bot: send_markdown(bot, 8, markdown, skip=1, on_part_sent=ledger))
    assert [i for i, _ in seen] == [1, 2] and [m for _, m in seen] == ids
    assert [m["text"] for m in fake.messages(8)] == [p.text for p in expected[1:]]

    seen.clear()
    run_with_bot(fake, lambda bot: send_markdown(bot, 9, markdown, on_part_sent=ledger))
    assert [i for i, _ in seen] == [0, 1, 2]
    assert run_with_bot(fake, lambda bot: send_markdown(bot, 9, markdown, skip=3)) == []


def test_edit_text_safely(fake: FakeBotAPI) -> None:
    async def body(bot):
        msg = await bot.send_message(chat_id=3, text="thinking")
        results = [await edit_text_safely(bot, 3, msg.message_id, "step 1")]
        results.append(await edit_text_safely(bot, 3, msg.message_id, "step 1"))  # not modified
        fake.fail_next("editMessageText", status=429, retry_after=FLOOD_WAIT)
        results.append(await edit_text_safely(bot, 3, msg.message_id, "step 2"))
        results.append(await edit_text_safely(bot, 3, 999, "nowhere"))  # message to edit not found
        fake.fail_next("editMessageText", status=429, retry_after=FLOOD_WAIT, times=2)
        results.append(await edit_text_safely(bot, 3, msg.message_id, "step 3"))  # flood twice: give up
        results.append(await edit_text_safely(bot, 3, msg.message_id, "😀" * 5000))  # too long: shortened
        return results

    assert run_with_bot(fake, body) == [True, True, True, False, False, True]
    (message,) = fake.messages(3)
    assert message["text"].endswith("…") and utf16_len(message["text"]) <= 4096
