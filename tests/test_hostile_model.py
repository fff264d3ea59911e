"""A model server that is hostile or broken, through the real bot: it floods a stream (endless deltas, endless
reasoning, one line that never ends), answers with thousands of tool calls. Each costs the user one sentence within
the runner's deadline, the bot stays up and small and answers the next message, and the key is nowhere."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from assistant_framework.workspace import Workspace
from tests.console_harness import Terminal as PseudoTerminal
from tests.console_harness import console_argv, run_bot, write_config
from tests.crash_bot import BotProcess, write_bot_config
from tests.fakes.chat_server import FakeChatServer
from tests.telegram_harness import OWNER, all_bot_texts, texts
from tests.waiting import wait_until

KEY = "sk-hostile-test-key-0123456789"


def _peak_rss_mb(pid: int) -> float:
    """The process's peak resident memory (VmHWM) in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM in /proc status")


@pytest.fixture
def keyed_server():
    """The fake model server that wants the runner's key, as a hosted API does."""
    with FakeChatServer(api_key=KEY) as server:
        yield server


@pytest.mark.parametrize("what", ["content", "reasoning", "line"])
def test_a_flooding_stream_is_cut_at_its_size_and_the_bot_process_stays_small(
    fake, keyed_server, bot_config, workspace, tmp_path, what
):
    """64 KB deltas as fast as the bot reads them (about 1 GB a second here), or one line that never ends: the bot
    kept all of it (4-5 GB in 8 s, measured) and told the user of a timeout long after the deadline. Now the
    answer is cut at 32 MB in one sentence, the process stays far below that many times over."""
    config = dict(bot_config)
    config["llm"] = {
        **config["llm"],
        "runners": [
            {**config["llm"]["runners"][0], "base_url": keyed_server.base_url, "api_key": KEY, "timeout_seconds": 6}
        ],
    }
    path = write_bot_config(tmp_path / "config.json", config, fake, telegram={"stream": True})
    keyed_server.enqueue({"content": "", "flood": {"what": what, "for": 8}})
    with BotProcess(path, workspace.root, tmp_path / "bot.log") as bot:
        bot.start().wait_ready()
        assert bot.proc is not None
        sent = time.monotonic()
        fake.send_message("hello?", user_id=OWNER)
        fake.wait_for(lambda: any("model server" in t for t in texts(fake)), timeout=20)
        took = time.monotonic() - sent
        peak = _peak_rss_mb(bot.proc.pid)
        reply = texts(fake)[-1]
        assert keyed_server.chat_requests[0]["stream"] is True
        # Content deltas are shown as they come: the bot reads them slower than the server sends, so the runner's
        # 6 s may pass before 32 MB have arrived; either sentence, within the deadline.
        cut = "larger than 32 MB" in reply or (what == "content" and "not finished within 6 s" in reply)
        assert cut and len(reply) < 300, reply
        assert took < 6 + 3, f"the user was told after {took:.1f} s"
        assert peak < 400, f"the bot's peak memory was {peak:.0f} MB"
        keyed_server.enqueue('{"reply": "fine now"}')
        fake.send_message("and now?", user_id=OWNER)
        fake.wait_for(lambda: texts(fake)[-1] == "fine now", timeout=20)
        log = bot.run_log()
        assert "Traceback" not in log and KEY not in log
    assert not any(KEY in t for t in all_bot_texts(fake))


def _note_calls(count: int) -> list[dict]:
    """``count`` save_note calls, each to a note of its own (na, nb, ..., naa, ...)."""
    return [{"name": "n" + "abcdefghij"[i % 10] * (1 + i // 10), "text": "x"} for i in range(count)]


@pytest.mark.parametrize("transport", ["native", "json"])
def test_an_answer_of_two_thousand_calls_runs_twenty_and_the_model_is_told(
    fake, start_bot, chat_server, workspace, transport
):
    """A broken or hostile server's answer of 2,000 tool calls ran 2,000 skills (2,000 notes written, a 0.9 MB
    next request); now the first 20 run, the model is told of the rest, and its answer reaches the user."""
    start_bot(progress=False)
    args = _note_calls(2000)
    if transport == "native":
        answer: dict | str = {
            "tool_calls": [{"id": f"c{i}", "name": "save_note", "arguments": a} for i, a in enumerate(args)]
        }
    else:
        calls = json.dumps({"calls": [{"skill": "save_note", "args": a} for a in args]})
        answer = {"content": calls, "stream_chunks": [calls]}  # one piece: a word a delta costs the guard a square
    chat_server.enqueue(answer, json.dumps({"reply": "done"}))
    fake.send_message("save my notes", user_id=OWNER)
    fake.wait_for_messages(OWNER, 1, timeout=30)
    assert texts(fake)[0].startswith("done")
    assert len(list((workspace.root / "notes").glob("*.md"))) == 20
    told = json.dumps(chat_server.chat_requests[1]["messages"][-1])
    assert "1980 more skill calls of your answer were not run: at most 20 run per answer" in told
    chat_server.enqueue('{"reply": "fine now"}')
    fake.send_message("and now?", user_id=OWNER)
    fake.wait_for(lambda: texts(fake)[-1] == "fine now", timeout=20)


@pytest.mark.parametrize("transport", ["native", "json"])
def test_a_call_of_twenty_megabytes_is_not_run_and_the_model_is_told(
    fake, chat_server, bot_config, workspace, tmp_path, transport
):
    """A model (or a hostile model server) answered a note of 20 MB and the skill wrote it, and the next request
    carried the 20 MB back. Now a call whose arguments are over 256 KiB of JSON is not run: the model is told in
    one sentence and the next request is small, the note beside it within the bound is written, the trace and the
    log say so once, and the model's answer reaches the user."""
    huge = {"name": "huge", "text": "x" * 20_000_000}
    small = {"name": "small", "text": "y" * 200_000}  # within the bound: written
    if transport == "native":
        answer: dict | str = {
            "tool_calls": [{"id": f"c{i}", "name": "save_note", "arguments": a} for i, a in enumerate((huge, small))]
        }
    else:
        calls = json.dumps({"calls": [{"skill": "save_note", "args": a} for a in (huge, small)]})
        answer = {"content": calls, "stream_chunks": [calls]}
    chat_server.enqueue(answer, json.dumps({"reply": "done"}))
    path = write_bot_config(tmp_path / "config.json", bot_config, fake, telegram={"progress": False})
    with BotProcess(path, workspace.root, tmp_path / "bot.log") as bot:
        bot.start().wait_ready()
        fake.send_message("save my notes", user_id=OWNER)
        fake.wait_for_messages(OWNER, 1, timeout=60)
        assert texts(fake)[0].startswith("done")
        wait_until(lambda: workspace.list("traces/**/*.json"), what="the turn's trace")
        log = bot.run_log()
    assert sorted(p.name for p in (workspace.root / "notes").glob("*.md")) == ["small.md"]
    second = json.dumps(chat_server.chat_requests[1], ensure_ascii=False)
    assert len(second) < 400_000, f"the next request carried {len(second):,} characters"
    told = "its arguments are 20,000,028 characters of JSON, more than the 262,144 one call may have; nothing was done"
    assert second.count(told) == 1, second[second.find("its arguments") - 100 :][:600]
    [trace] = [json.loads(workspace.read_text(t)) for t in workspace.list("traces/**/*.json")]
    kinds = [call.get("error_kind") for call in trace["skill_calls"]]
    assert kinds == ["too_long", None], kinds
    assert log.count("characters of arguments (at most 262144): not run") == 1, log
    assert "Traceback" not in log


ESCAPES = "\x1b]52;c;cm0gLXJmIH4K\x07\x1b]0;owned\x07\x1b[2J\x1b[8mhidden\x1b[0m\rover\x00\x9b31m"


def test_the_terminal_chat_prints_no_control_sequence_of_the_model(tmp_path, chat_server, test_skills_dir):
    """An answer holding escape sequences (OSC 52 sets the clipboard, OSC 0 the window's title, clear screen, hidden
    text, a carriage return writing over the line) reached the terminal as sent; the chat prints its text without
    them, and the next message is answered."""
    config = write_config(tmp_path / "config", chat_server.base_url, test_skills_dir)
    chat_server.enqueue(json.dumps({"reply": f"before {ESCAPES} after"}), '{"reply": "fine now"}')
    proc = run_bot(
        ["--frontend", "console", "--config", str(config), "--workspace", str(tmp_path / "ws")], "hello\nand now?\n"
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "before hiddenover31m after\n\nfine now\n\n"
    assert not any(ch in proc.stdout + proc.stderr for ch in "\x1b\x07\r\x00\x9b")


def test_a_streamed_answer_reaches_a_real_terminal_without_its_control_sequences(
    tmp_path, chat_server, test_skills_dir
):
    """The same answer streamed to the interactive chat on a pseudo-terminal, in pieces (the live line and the
    block): none of its sequences reach the terminal; its text does."""
    pytest.importorskip("pty", reason="needs a POSIX pseudo-terminal")
    config = write_config(tmp_path / "config", chat_server.base_url, test_skills_dir)
    Workspace(tmp_path / "ws")  # an existing workspace: no question before the chat
    reply = json.dumps({"reply": f"before {ESCAPES} after"})
    chat_server.enqueue({"content": reply, "stream_chunks": [reply[:20], reply[20:60], reply[60:]]})
    term = PseudoTerminal(console_argv(config, tmp_path / "ws"))
    try:
        term.wait_for("you> ")
        term.type("hello\r")
        term.wait_for(" after")
        term.wait_for("you> ", start=term.output.index(" after"))
        for sequence in (b"\x1b]52", b"\x1b]0;owned", b"\x1b[2J", b"\x1b[8m", b"\x07", b"\x00", b"\xc2\x9b"):
            assert sequence not in term.raw
        assert "hiddenover31m" in term.output
        term.type("\x04")  # Ctrl-D
        assert term.proc.wait(30) == 0
    finally:
        term.close()


def test_a_redirect_to_another_server_is_not_followed_and_the_conversation_stays(fake, start_bot, chat_server):
    """A model server that answers 307 to another address: the bot re-sent the whole prompt (the conversation, the
    memory recalled into it) there, without the key but with everything else, and showed that server's answer.
    Now nothing reaches the other server, the user is told where it pointed in one sentence, and the next message
    is answered."""
    with FakeChatServer() as elsewhere:
        elsewhere.enqueue('{"reply": "the other server answered"}')
        start_bot(progress=False)
        target = f"{elsewhere.base_url}/chat/completions"
        chat_server.enqueue({"status": 307, "headers": {"Location": target}})
        fake.send_message("my private question", user_id=OWNER)
        fake.wait_for_messages(OWNER, 1, timeout=20)
        reply = texts(fake)[0]
        assert f"redirects to {target}, which is not followed" in reply and len(reply) < 400, reply
        assert elsewhere.chat_requests == []
        chat_server.enqueue('{"reply": "fine now"}')
        fake.send_message("and now?", user_id=OWNER)
        fake.wait_for(lambda: texts(fake)[-1] == "fine now", timeout=20)


def test_a_megabyte_reply_reaches_the_chat_cut_to_a_few_messages(fake, start_bot, chat_server):
    """A reply of a million characters on one line (a model looping, a server ignoring max_tokens) came as 245
    Telegram messages; now its first 32,000 characters come, saying how much more there was, and the next message
    is answered."""
    start_bot(progress=False)
    chat_server.enqueue(json.dumps({"reply": "a" * 1_000_000}))
    fake.send_message("hello?", user_id=OWNER)
    fake.wait_for(lambda: any("cut here" in t for t in texts(fake)), timeout=30)
    shown = texts(fake)
    assert len(shown) <= 9 and shown[-1].endswith(
        "[… the model's answer went on for 968,000 more characters: cut here]"
    )
    chat_server.enqueue('{"reply": "fine now"}')
    fake.send_message("and now?", user_id=OWNER)
    fake.wait_for(lambda: texts(fake)[-1] == "fine now", timeout=20)
    assert len(texts(fake)) == len(shown) + 1
