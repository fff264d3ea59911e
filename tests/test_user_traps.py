"""The traps users of comparable assistants fall into (what-users-ask.md: "Asked most in 2026" and the traps
measured in BUDUCCA and nanobot), each through the real bot: the Telegram channel against the fake Bot API and
the fake model server, with the real inbox, ledger, scheduler and workspace, or the bot process.

The other items of those lists have their own tests elsewhere (named in each neighbour's docstring where they
meet): the forum topics (test_sessions.py), the photo the model sees (test_photos.py), the spending caps
(test_spending_caps.py), voice replies (test_voice_replies.py), restarts (test_crash.py, test_jobs_crash.py),
16 chats at once (test_telegram_latency.py).
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

from assistant_framework.inbox import Inbox
from assistant_framework.jobs import JOBS_FILE, RUNS_FILE
from assistant_framework.tokens import CHARS_PER_TOKEN
from assistant_framework.workspace import Workspace
from messaging_llm_bot.conversation.progress import FIRST_MESSAGE_GRACE_SECONDS
from tests.crash_bot import BotProcess, echo_reply, sent_texts, write_bot_config
from tests.fixtures.collectors.helpers import write_collector
from tests.setup_runs import example_config
from tests.telegram_harness import OWNER, RunningBot, all_bot_texts, busy_queue, texts

#: The context window a small local model is served with by default (Ollama's ``num_ctx``), in tokens.
SMALL_CONTEXT = 4096
#: Characters a token in the worst case of the prompt's text: JSON schemas tokenize denser than prose.
DENSE_CHARS_PER_TOKEN = 3
TELEGRAM_LIMIT = 4096


def test_hi_with_the_shipped_config_leaves_room_for_the_answer_in_a_small_context(
    fake, chat_server, workspace, tmp_path
):
    """hermes-agent#43900, nanobot's 9,671 + 28,096 characters for "hi": the request the model server gets for
    "hi" with the repository's config/ (its runner pointed at the fake) fits a 4,096-token context together
    with the ``max_tokens`` the answer may take, even at 3 characters a token; no tool specs ride along.
    Also offline: nothing in the turn (memory, recall, fact extraction) reaches past loopback
    (tests/loopback_only.py fails the test naming the address), so nothing can stall on a download."""
    from messaging_llm_bot.runtime import build_runtime

    config = example_config(tmp_path)
    shipped = json.loads((config / "llm.json").read_text())
    runner = {**shipped["runners"][0], "base_url": chat_server.base_url}
    telegram = {"token": fake.token, "allowed_user_ids": [OWNER], "base_url": fake.base_url}
    chat_server.set_handler(lambda request: '{"reply": "Hello!"}')
    runtime = build_runtime(config, workspace.root, overrides={"llm": {"runners": [runner]}, "telegram": telegram})
    with RunningBot(runtime):
        fake.send_message("hi")
        fake.wait_for(lambda: "Hello!" in texts(fake), timeout=20)
    asked = chat_server.chat_requests[0]
    prompt = "".join(str(message["content"]) for message in asked["messages"])
    assert asked["messages"][-1]["content"].startswith("hi\n") and "tools" not in asked
    assert asked["max_tokens"] == shipped["max_tokens"]
    assert len(prompt) / DENSE_CHARS_PER_TOKEN + asked["max_tokens"] <= SMALL_CONTEXT, len(prompt)
    # The framework's own estimate, as docs/benchmarks.md "Prompt size" counts it: under half the window.
    assert len(prompt) / CHARS_PER_TOKEN <= SMALL_CONTEXT / 2, len(prompt)


def test_messages_sent_before_and_while_the_bot_starts_are_each_answered_once(fake, start_bot, chat_server):
    """BUDUCCA dropped a first message that came while it started. One sent before the start, one while the
    Bot API has not yet answered the start's getMe, one while the first getUpdates is under way: each is
    answered once, in order."""
    chat_server.set_handler(echo_reply)
    fake.send_message("before the start")
    getme = fake.hold_next("getMe")
    poll = fake.hold_next("getUpdates")
    start_bot(config_patch=busy_queue, wait_ready=False)
    fake.wait_for(lambda: fake.arrived("getme") == 1)
    fake.send_message("while it starts")
    getme.set()
    fake.wait_for(lambda: fake.arrived("getupdates") == 1)
    fake.send_message("at the first poll")
    poll.set()
    expected = ["re: before the start", "re: while it starts", "re: at the first poll"]
    fake.wait_for(lambda: len(texts(fake)) >= 3, timeout=20)
    assert texts(fake) == expected and sent_texts(fake, OWNER) == expected


def said_in(fake, topic: int | None, text: str, n: int) -> str:
    """``text`` sent in ``topic`` of the owner's chat; the bot's ``n``-th message there, once it is there."""
    fake.send_message(text, topic=topic)
    return fake.wait_for(lambda: fake.topic_messages(OWNER, topic)[n - 1 :], timeout=15)[0]["text"]


def test_topics_and_new_keep_their_own_history_and_forget_nothing_saved(fake, start_bot, chat_server):
    """openclaw#79005, hermes-agent#34819: a forum topic is a session of its own and /new starts a new one, yet
    neither forgets what the owner had saved. A note saved in topic 10, then /new there: topic 20 and the new
    session of topic 10 each get it recalled, and neither request carries topic 10's earlier turns."""

    def memory_on(config: dict) -> None:
        config["memory"] = {"enabled": True, "extract_facts": False}

    start_bot(config_patch=memory_on, progress=False)
    saved = {"name": "anna", "text": "Anna birthday fourteenth of March"}
    chat_server.enqueue(json.dumps({"skill": "save_note", "args": saved}), '{"reply": "Saved."}')
    assert said_in(fake, 10, "remember: Anna birthday fourteenth of March", 1).startswith("Saved.")
    assert "Started a new conversation (#2)" in said_in(fake, 10, "/new", 2)
    for topic, n in ((20, 1), (10, 3)):
        chat_server.enqueue('{"reply": "On the fourteenth of March."}')
        assert said_in(fake, topic, "when is Anna birthday?", n) == "On the fourteenth of March."
        *earlier, asked = chat_server.chat_requests[-1]["messages"]
        assert [m["role"] for m in earlier] == ["system"], earlier  # no turn of topic 10's first session
        assert asked["content"].startswith("when is Anna birthday?")
        recalled = asked["content"].split("[Recalled memory", 1)[1]
        assert "(notes, " in recalled and "fourteenth of March" in recalled, recalled


def long_paragraph(chars: int) -> str:
    """One paragraph of words of 3 to 11 letters, no line break, at least ``chars`` long: a cut at a fixed
    length lands inside a word."""
    words, size, n = [], 0, 0
    while size < chars:
        word = "w" + str(n) + "x" * (n % 9)
        words.append(word)
        size += len(word) + 1
        n += 1
    return " ".join(words)


@pytest.mark.parametrize("stream", [False, True], ids=["one answer", "streamed"])
def test_a_ten_thousand_character_paragraph_arrives_in_parts_cut_between_words(fake, start_bot, chat_server, stream):
    """BUDUCCA cut a 10,000-character reply into 4096/4096/1808 characters in the middle of words. One paragraph
    without a line break, streamed into the live message or sent as one answer: every part fits and ends at a
    word, and the words arrive whole and in order."""
    reply = long_paragraph(10_000)
    chat_server.enqueue({"content": json.dumps({"reply": reply})})
    start_bot(stream=stream, progress=stream)
    fake.send_message("write a lot")
    fake.wait_for(lambda: " ".join(texts(fake)).split() == reply.split(), timeout=30)
    parts = texts(fake)
    assert len(parts) == 3 and all(len(part) <= TELEGRAM_LIMIT for part in parts), [len(p) for p in parts]
    assert [word for part in parts for word in part.split()] == reply.split()  # no word cut in two


#: How local models write a call as text (hermes-agent#107125, openclaw#122224): Hermes/Qwen's tag, Qwen3-Coder's
#: XML parameters, and the bare object of an Ollama model without tool support.
TEXT_CALLS = {
    "hermes tag": '<tool_call>\n{"name": "save_note", "arguments": {"name": "milk", "text": "buy oat milk"}}\n'
    "</tool_call>",
    "qwen xml": "<tool_call>\n<function=save_note>\n<parameter=name>\nmilk\n</parameter>\n"
    "<parameter=text>\nbuy oat milk\n</parameter>\n</function>\n</tool_call>",
    "bare object": '{"name": "save_note", "arguments": {"name": "milk", "text": "buy oat milk"}}',
}


@pytest.mark.parametrize("call", TEXT_CALLS.values(), ids=TEXT_CALLS.keys())
def test_a_call_a_local_model_writes_as_text_runs_and_none_of_it_is_shown(
    fake, start_bot, chat_server, workspace, call
):
    """The call comes back as text, streamed seven characters at a time for longer than the live message waits
    to show what streams (nanobot showed the raw ``<tool_call>`` while streaming): the skill runs, the answer
    after it arrives, and no message the bot sent or edited ever showed any of the call."""
    pieces = [call[i : i + 7] for i in range(0, len(call), 7)]
    delay = 3 * FIRST_MESSAGE_GRACE_SECONDS / len(pieces)
    chat_server.enqueue(
        {"content": call, "stream_chunks": pieces, "chunk_delay": delay}, {"content": '{"reply": "Noted: oat milk."}'}
    )
    start_bot(stream=True)
    fake.send_message("note that I need to buy oat milk")
    reply = "Noted: oat milk.\n\n(saved to notes/milk.md)"
    fake.wait_for(lambda: reply in texts(fake), timeout=20)
    assert texts(fake) == [reply] and workspace.read_text("notes/milk.md") == "buy oat milk"
    assert all(request.get("stream") is True for request in chat_server.chat_requests)
    shown = all_bot_texts(fake)  # the status line names the skill ("🔎 save_note…"), never the call's text
    assert not [t for t in shown if any(mark in t for mark in ("tool_call", "{", "<", "arguments", "buy oat milk"))], (
        shown
    )


IMPORTED = """
import pathlib
with open({marker!r}, "a") as marks:
    marks.write("imported\\n")
"""


def test_skills_and_collectors_are_imported_once_not_at_every_message(fake, start_bot, chat_server, tmp_path):
    """BUDUCCA spent 82 % of a turn's framework time importing every skill module (twice) and every collector
    module at every message. A skill and a collector of the owner's, each counting its imports: three
    messages (one calls the skill) import neither again."""
    skill_mark, collector_mark = tmp_path / "skill-imports", tmp_path / "collector-imports"
    skills = tmp_path / "my-skills" / "shopping"
    skills.mkdir(parents=True)
    run = '\nDESCRIPTION = "The shopping list"\n\ndef run(workspace, args, context=None):\n    return "eggs, milk"\n'
    (skills / "__init__.py").write_text(IMPORTED.format(marker=str(skill_mark)) + run)
    (skills / "README.md").write_text("# shopping\n\nThe shopping list.\n")
    collector = IMPORTED.format(marker=str(collector_mark)) + (
        '\nDESCRIPTION = "Counts."\nFILE_STRUCTURE = "nothing"\nGENERATED_FILES = []\nINTERVAL_SECONDS = 3600\n\n'
        "def run(workspace):\n    return {}\n"
    )
    write_collector(tmp_path / "my-collectors", "counter", collector)

    def dirs(config: dict) -> None:
        config["runtime"]["skills_dirs"].append(str(skills.parent))
        config["runtime"]["collectors_dirs"] = [str(tmp_path / "my-collectors")]
        config["collectors"] = {"counter": {"enabled": True}}

    start_bot(config_patch=dirs)
    chat_server.enqueue(
        '{"skill": "shopping", "args": {}}', '{"reply": "eggs, milk"}', '{"reply": "b"}', '{"reply": "c"}'
    )
    loaded = (skill_mark.read_text(), collector_mark.read_text())
    assert loaded == ("imported\n", "imported\n")
    for n, text in enumerate(["what is on my shopping list?", "thanks", "and now?"], start=1):
        fake.send_message(text)
        fake.wait_for(lambda n=n: len(texts(fake)) == n, timeout=15)
    assert texts(fake) == ["eggs, milk", "b", "c"]
    assert (skill_mark.read_text(), collector_mark.read_text()) == loaded


def ago(**delta: float) -> str:
    return (datetime.now(timezone.utc) - timedelta(**delta)).isoformat(timespec="seconds")


@pytest.mark.timeout(90)
def test_a_job_whose_send_reached_telegram_just_before_a_kill_is_sent_again_at_most_once(
    tmp_path, bot_config, fake, chat_server
):
    """A job's message reached Telegram, and the bot process was SIGKILLed before the ledger recorded it (the
    Bot API's answer never read). The Bot API has no idempotency key and no way for a bot to read its chat,
    so the next start cannot know: it sends the message again, once (docs/reliability.md, "Not guaranteed":
    a send in flight at a kill may be repeated). Never lost, never a third copy, one line in runs.jsonl, and a
    later start sends nothing."""
    ws = Workspace(tmp_path / "ws")
    job = {"id": "j1", "name": "water", "every_minutes": 60, "message": "Water the plants"}
    ws.write_json(JOBS_FILE, [{**job, "created_at": ago(minutes=60, seconds=10)}])
    config = write_bot_config(
        tmp_path / "config.json",
        bot_config,
        fake,
        runtime={"shutdown_timeout_seconds": 5},
        extra={"jobs": {"poll_seconds": 0.2}},
    )
    reached = fake.hold_next("sendMessage")
    with BotProcess(config, ws.root, tmp_path / "bot.log") as bot:
        bot.start().wait_ready()
        fake.wait_for(lambda: fake.arrived("sendmessage") == 1, timeout=20)
        bot.kill()
        reached.set()  # the send the killed process made is taken by the Bot API: shown in the chat
        fake.wait_for(lambda: len(fake.messages(OWNER)) == 1)
        [left] = Inbox(ws).pending()
        assert left.source_id.startswith("job:j1:") and ws.read_jsonl(RUNS_FILE) == []
        bot.start().wait_ready()
        fake.wait_for(lambda: len(ws.read_jsonl(RUNS_FILE)) == 1, timeout=20)
        assert bot.terminate() == 0
        bot.start().wait_ready()
        fake.wait_for(lambda: "jobs: first look" in bot.run_log(), timeout=20)
        assert bot.terminate() == 0
    assert sent_texts(fake, OWNER) == ["🗓 Water the plants"] * 2
    [line] = ws.read_jsonl(RUNS_FILE)
    assert line["outcome"] == "delivered" and Inbox(ws).pending() == []


@pytest.mark.timeout(90)
def test_a_job_after_the_owner_was_changed_goes_to_the_new_owners_chat_and_never_the_old(
    tmp_path, bot_config, fake, chat_server
):
    """The owner is changed in the config and taken by ``/reload``: a job due after it goes to the new owner's
    chat, the old owner's gets nothing of it. A run queued for the old owner's chat and left in the inbox (a
    crash, a held send) is dropped at the next start with one log line (conversation/item_turns.py's
    ``run_job``): it ran there as the new owner's turn, the old owner reading the new one's data."""
    new_owner = 2
    ws = Workspace(tmp_path / "ws")
    path = tmp_path / "config.json"
    jobs = {"jobs": {"poll_seconds": 0.2}}
    config = write_bot_config(path, bot_config, fake, runtime={"shutdown_timeout_seconds": 5}, extra=jobs)
    with BotProcess(config, ws.root, tmp_path / "bot.log") as bot:
        bot.start().wait_ready()
        write_bot_config(
            path, bot_config, fake, allowed=[new_owner], runtime={"shutdown_timeout_seconds": 5}, extra=jobs
        )
        fake.send_message("/reload")
        fake.wait_for(lambda: fake.messages(OWNER), timeout=20)  # answered (a stop racing the start failed it)
        job = {"id": "j1", "name": "water", "every_minutes": 60, "message": "Water the plants"}
        ws.write_json(JOBS_FILE, [{**job, "created_at": ago(minutes=60, seconds=10)}])
        fake.wait_for(lambda: sent_texts(fake, new_owner), timeout=20)
        assert bot.terminate() == 0
        planned = "2026-03-02T07:30:00+00:00"
        run = {"run_id": f"j0:{planned}", "job_id": "j0", "name": "notes", "kind": "prompt", "text": "My notes?"}
        run |= {"planned": planned, "late": False, "timezone": "UTC"}
        Inbox(ws).accept(f"job:j0:{planned}", f"tg:{OWNER}", {"job_run": run})
        bot.start().wait_ready()
        fake.wait_for(lambda: Inbox(ws).pending() == [], timeout=20)
        assert bot.terminate() == 0
    assert sent_texts(fake, new_owner) == ["🗓 Water the plants"]
    assert [m["text"] for m in fake.messages(OWNER)][1:] == [] and chat_server.chat_requests == []
    log = bot.log_text()
    assert "cannot run (its chat is not the chat of the owner the config names now); dropped" in log
