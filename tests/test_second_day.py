"""A user's second day, through the real processes: memory files edited by hand, a reminder due while the bot was
down, /stats after a stopped answer, Ctrl-C in the terminal chat, and ``assistant setup`` run again."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from assistant_framework.workspace import Workspace
from tests.cli_inprocess import run_cli
from tests.console_harness import Terminal, write_config
from tests.waiting import wait_until

pytest.importorskip("pty", reason="needs a POSIX pseudo-terminal")


def _chat(config: Path, workspace: Path) -> Terminal:
    """The terminal chat on a pty, on an existing workspace (a new one would be asked about)."""
    root = Workspace(workspace).root
    argv = [sys.executable, "-m", "messaging_llm_bot", "--frontend", "console", "--config", str(config)]
    return Terminal([*argv, "--workspace", str(root)])


def test_ctrl_c_while_the_model_thinks_leaves_no_prompt_behind_and_stats_name_the_model(
    tmp_path: Path, chat_server, test_skills_dir
) -> None:
    """Ctrl-C before the answer's first word: the screen showed an empty ``you>`` line above "… stopping", and
    /stats then listed the stopped call under the model "unknown" (not the configured one's)."""
    config = write_config(tmp_path / "config", chat_server.base_url, test_skills_dir)
    llm = json.loads((config / "llm.json").read_text())
    (config / "llm.json").write_text(json.dumps({**llm, "stream": True}))  # as the shipped config/llm.json
    chat_server.enqueue({"content": '{"reply": "never finished"}', "delay": 8}, '{"reply": "here again"}')
    term = _chat(config, tmp_path / "ws")
    try:
        term.wait_for("you> ")
        term.type("tell me a long story\r")
        assert chat_server.wait_for_requests(1, timeout=30, path="/chat/completions")
        term.wait_for("thinking")
        term.type("\x03")  # Ctrl-C
        term.wait_for("⏹ Stopped.")
        mark = term.output.index("⏹ Stopped.")
        term.wait_for("you> ", start=mark)
        term.type("hello\r")
        term.wait_for("here again", start=mark)
        mark = term.output.index("here again", mark)
        term.wait_for("you> ", start=mark)
        term.type("/stats\r")
        term.wait_for("Per day:", start=mark)
        term.wait_for("you> ", start=term.output.index("Per day:", mark))
        shown = term.lines_shown()
    finally:
        term.close()
    stopping = next(i for i, line in enumerate(shown) if line.startswith("… stopping"))
    # What the screen shows from the message to the stop: no empty prompt left between them.
    asked = max(i for i, line in enumerate(shown[:stopping]) if line.startswith("you> tell me"))
    assert [line for line in shown[asked + 1 : stopping] if line.strip() in ("you>", "")] == [], "\n".join(shown)
    stats = shown[shown.index("you> /stats") :]
    assert not any("unknown" in line for line in stats), stats
    assert any(line.startswith("- fake-model: 2 msgs") for line in stats), stats


def _facts(*rows: tuple[str, str, str, str]) -> list[dict]:
    return [
        {"id": fid, "subject": subject, "attribute": attribute, "value": value, "source": "user", "status": "current"}
        for fid, subject, attribute, value in rows
    ]


def test_memory_files_edited_by_hand_are_what_the_next_turn_recalls(tmp_path: Path, chat_server, test_skills_dir):
    """The owner edits facts/facts.json the way an editor saves (a new file written beside it, renamed over it),
    changes a note in place and deletes another while the chat runs: the next turn recalled the old texts (the
    index caught up only at its idle refresh, a minute without background work, never in a busy chat)."""
    config = write_config(tmp_path / "config", chat_server.base_url, test_skills_dir)
    (config / "memory.json").write_text(json.dumps({"enabled": True, "extract_facts": False}))
    ws = Workspace(tmp_path / "ws")
    ws.write_json("facts/facts.json", _facts(("f1", "user", "favourite drink", "green tea")))
    ws.write_text("notes/packing.md", "# Packing list\n\nPassport, charger, the blue umbrella.\n")
    ws.write_text("notes/wifi.md", "# Wifi\n\nThe guest wifi password is sunflower.\n")
    assert run_cli("memory", "reindex", "--config", str(config), "--workspace", str(ws.root)).returncode == 0
    chat_server.enqueue('{"reply": "Noted."}', '{"reply": "Coffee."}')
    term = _chat(config, ws.root)
    try:
        term.wait_for("you> ")
        term.type("favourite drink packing umbrella wifi password\r")
        term.wait_for("Noted.")
        first = chat_server.chat_requests[-1]["messages"][-1]["content"]
        facts = ws.path("facts/facts.json")
        edited = facts.with_name(".facts.json.swp")
        edited.write_text(json.dumps(_facts(("f1", "user", "favourite drink", "black coffee with oat milk"))))
        edited.replace(facts)
        ws.path("notes/packing.md").write_text("# Packing list\n\nPassport, charger, the red raincoat.\n")
        ws.path("notes/wifi.md").unlink()
        mark = len(term.output)
        term.type("favourite drink packing umbrella raincoat wifi password\r")
        term.wait_for("Coffee.", start=mark)
        term.type("/quit\r")
        assert term.proc.wait(30) == 0
    finally:
        term.close()
    assert "green tea" in first and "blue umbrella" in first and "sunflower" in first  # recalled as they were
    recalled = chat_server.chat_requests[-1]["messages"][-1]["content"].split("[Recalled memory", 1)[-1]
    assert "black coffee with oat milk" in recalled and "red raincoat" in recalled, recalled
    assert "green tea" not in recalled and "blue umbrella" not in recalled and "sunflower" not in recalled, recalled


def test_a_facts_file_broken_by_hand_is_named_on_the_web_page_not_shown_as_no_facts(tmp_path: Path) -> None:
    """A comma deleted in facts/facts.json: the memory page's Facts said "No facts yet." (as if they were lost);
    it names the file and where it is broken, and the file stays as the owner left it."""
    import requests

    from tests.web_site import WEB_TOKEN, start_site

    site = start_site(tmp_path)
    try:
        broken = site.workspace.read_text("facts/facts.json").replace('",', '"', 1)
        site.workspace.path("facts/facts.json").write_text(broken)
        bearer = {"Authorization": f"Bearer {WEB_TOKEN}"}
        shown = requests.get(f"{site.base}/api/memory/facts", headers=bearer, timeout=10).json()
        page = requests.get(f"{site.base}/memory/facts", headers=bearer, timeout=10).text
    finally:
        site.close()
    [problem] = shown["problems"]
    assert problem.startswith("workspace file 'facts/facts.json' is not valid JSON: line "), problem
    assert "is not valid JSON: line " in page and "No facts yet." not in page
    assert site.workspace.read_text("facts/facts.json") == broken


def test_make_doctor_names_a_memory_file_broken_by_hand(tmp_path: Path, chat_server, test_skills_dir) -> None:
    """The bot answers on with a broken facts.json and only its log said why no fact was stored any more; `make
    doctor` ("checks everything") said all was well."""
    config = write_config(tmp_path / "config", chat_server.base_url, test_skills_dir)
    ws = Workspace(tmp_path / "ws")
    ws.write_json("tasks/tasks.json", [{"id": "t1", "text": "buy stamps"}])
    broken = '[{"id": "f1", "subject": "user", "attribute": "drink", "value": "tea" "source": "user"}]'
    ws.write_text("facts/facts.json", broken)
    doctor = ["doctor", "--quick", "--json", "--config", str(config), "--workspace", str(ws.root)]
    done = run_cli(*doctor)
    checks = {check["name"]: check for check in json.loads(done.stdout)}
    assert checks["memory files"]["status"] == "warn", checks
    assert checks["memory files"]["detail"] == (
        "not valid JSON: facts/facts.json (line 1 column 71: Expecting ',' delimiter)"
    )
    assert "nothing in it was changed" in checks["memory files"]["fix"]
    assert ws.read_text("facts/facts.json") == broken
    ws.write_text("facts/facts.json", broken.replace('"tea"', '"tea",'))  # fixed
    checks = {check["name"]: check for check in json.loads(run_cli(*doctor).stdout)}
    assert checks["memory files"] == {**checks["memory files"], "status": "ok", "detail": "2 JSON file(s) read"}


def test_a_note_saved_by_an_editor_is_made_private_without_a_warning_on_the_screen(
    tmp_path, chat_server, test_skills_dir
):
    """An editor that saves by writing a new file and renaming it leaves the umask's 0644: every start of the
    chat after such an edit began with a timestamped WARNING that other users could read the files. The file is
    still made private; a file elsewhere in the workspace (copied in) is still warned about."""
    import os
    import stat

    from tests.console_harness import run_bot

    config = write_config(tmp_path / "config", chat_server.base_url, test_skills_dir)
    ws = Workspace(tmp_path / "ws")
    note, facts = ws.root / "notes" / "garden.md", ws.root / "facts" / "facts.json"
    note.parent.mkdir(parents=True, exist_ok=True)
    facts.parent.mkdir(parents=True, exist_ok=True)
    note.write_text("# Garden\n\nWater the tomatoes.\n")
    facts.write_text("[]")
    os.chmod(note, 0o644)
    os.chmod(facts, 0o644)
    args = ["--frontend", "console", "--config", str(config), "--workspace", str(ws.root)]
    proc = run_bot(args, "")
    assert proc.returncode == 0, proc.stderr
    assert "WARNING" not in proc.stderr and "private" not in proc.stderr, proc.stderr
    assert stat.S_IMODE(note.stat().st_mode) == 0o600 and stat.S_IMODE(facts.stat().st_mode) == 0o600
    copied = ws.root / "collectors" / "rss" / "items.jsonl"
    copied.parent.mkdir(parents=True)
    copied.write_text("")
    os.chmod(copied, 0o644)
    again = run_bot(args, "")
    assert f"workspace {ws.root}: made 2 files and folders private" in again.stderr  # rss/ and its file


def test_a_fact_the_model_copied_from_the_prompts_example_is_not_stored(tmp_path, chat_server, test_skills_dir):
    """SmolLM2-135M answered the extraction with the prompt's own example, and {"subject": "...", "attribute":
    "...", "value": "..."} was stored as a fact (then recalled and listed on the web page)."""
    from tests.console_harness import run_bot

    config = write_config(tmp_path / "config", chat_server.base_url, test_skills_dir)
    (config / "memory.json").write_text(json.dumps({"enabled": True, "extract_idle_seconds": 0.1}))
    placeholder = {"subject": "...", "attribute": "...", "value": "..."}
    ladder = {"subject": "Karl", "attribute": "lends", "value": "his ladder on Saturday"}

    def answer(request: dict) -> dict:
        if "extract durable facts" in request["messages"][0]["content"]:
            return {"content": json.dumps({"facts": [placeholder, ladder]})}
        return {"content": '{"reply": "Good to know."}'}

    chat_server.set_handler(answer)
    args = ["--frontend", "console", "--config", str(config), "--workspace", str(tmp_path / "ws")]
    proc = run_bot(args, "My neighbour Karl lends me his ladder on Saturday\n")
    assert proc.returncode == 0, proc.stderr
    facts = Workspace(tmp_path / "ws").read_json("facts/facts.json")
    assert [(f["subject"], f["attribute"], f["value"]) for f in facts] == [("Karl", "lends", "his ladder on Saturday")]


def test_a_reminder_due_while_the_terminal_chat_was_closed_arrives_once_late_and_says_so(
    tmp_path, chat_server, test_skills_dir
):
    """Day two in the terminal chat: the reminder came due while the chat was closed; the next start prints it
    once, with "(late: was due HH:MM)" in its own time zone, and marks it delivered."""
    from datetime import datetime, timedelta
    from zoneinfo import ZoneInfo

    from assistant_framework.stores.reminders import ReminderStore

    config = write_config(tmp_path / "config", chat_server.base_url, test_skills_dir)
    ws = Workspace(tmp_path / "ws")
    berlin = ZoneInfo("Europe/Berlin")
    now = datetime.now(berlin).replace(microsecond=0)
    due = now - timedelta(minutes=7)
    late = f"(late: was due {due:%H:%M})" if due.date() == now.date() else f"(late: was due {due:%Y-%m-%d %H:%M})"
    ReminderStore(ws).add("console", "take out the bins", due, "Europe/Berlin")
    term = _chat(config, ws.root)
    try:
        term.wait_for(late)
        term.type("/quit\r")
        assert term.proc.wait(30) == 0
    finally:
        term.close()
    shown = term.lines_shown()
    assert shown.count("⏰ take out the bins") == 1, shown
    assert shown[shown.index("⏰ take out the bins") + 1] == late
    [row] = ws.read_json("reminders/reminders.json")
    assert row["status"] == "delivered"


def test_a_facts_file_broken_by_hand_is_told_in_the_chat_once_and_the_bot_answers_on(
    tmp_path, chat_server, test_skills_dir
):
    """A comma deleted in facts/facts.json: the chat answered on and no new fact was stored, which only the log
    said. The owner is told in the chat, naming the file and where it breaks; the file is left as it was."""
    config = write_config(tmp_path / "config", chat_server.base_url, test_skills_dir)
    (config / "memory.json").write_text(json.dumps({"enabled": True, "extract_idle_seconds": 0.1}))
    ws = Workspace(tmp_path / "ws")
    broken = '[{"id": "f1", "subject": "user", "attribute": "drink", "value": "tea" "source": "user"}]'
    ws.write_text("facts/facts.json", broken)
    chat_server.set_handler(lambda request: {"content": '{"reply": "Noted."}'})
    term = _chat(config, ws.root)
    try:
        term.wait_for("you> ")
        term.type("my sister Anna lives in Lisbon\r")
        term.wait_for("Noted.")
        term.wait_for("📬 memory: workspace file 'facts/facts.json' is not valid JSON: line 1 column 71")
        term.type("/quit\r")
        assert term.proc.wait(30) == 0
    finally:
        term.close()
    assert term.output.count("📬 memory:") == 1, term.output
    assert "no new fact is stored until it is fixed" in term.output
    assert ws.read_text("facts/facts.json") == broken
    assert not [r for r in chat_server.chat_requests if "extract durable facts" in r["messages"][0]["content"]]


def test_ctrl_c_at_the_prompt_clears_the_line_and_says_how_to_leave_a_second_one_leaves(
    tmp_path: Path, chat_server, test_skills_dir
) -> None:
    """A Ctrl-C meant for an answer that had just ended (SmolLM2 writes fast) left the chat at once, though the chat
    says "Ctrl-C stops an answer, /quit or Ctrl-D to leave". At the prompt it now clears the line typed and says how
    to leave; the chat goes on; a second Ctrl-C in a row leaves."""
    config = write_config(tmp_path / "config", chat_server.base_url, test_skills_dir)
    chat_server.enqueue('{"reply": "first answer"}', '{"reply": "still here"}')
    term = _chat(config, tmp_path / "ws")
    try:
        term.wait_for("you> ")
        term.type("hello\r")
        term.wait_for("first answer")
        term.wait_for("you> ", start=term.output.index("first answer"))
        inbox = Workspace(tmp_path / "ws").root / "state" / "inbox" / "pending"
        wait_until(lambda: not any(path.is_file() for path in inbox.rglob("*")), what="the answered message completed")
        term.type("half a line")
        term.wait_for("half a line")
        term.type("\x03")  # the answer is over: nothing to stop
        term.wait_for("(Ctrl-C again, /quit or Ctrl-D to leave the chat)")
        mark = term.output.index("(Ctrl-C again")
        term.wait_for("you> ", start=mark)
        term.type("are you there?\r")
        term.wait_for("still here", start=mark)
        assert term.proc.poll() is None
        term.wait_for("you> ", start=term.output.index("still here", mark))
        term.type("\x03")
        term.wait_for("(Ctrl-C again", start=term.output.index("still here", mark))
        term.type("\x03")  # the second in a row
        assert term.proc.wait(30) == 0
    finally:
        term.close()
    asked = chat_server.chat_requests[-1]["messages"][-1]["content"]
    assert asked.startswith("are you there?") and "half a line" not in asked  # the line Ctrl-C cleared is gone


def test_a_model_server_busy_at_the_chats_start_is_not_reported_as_missing(
    tmp_path: Path, chat_server, test_skills_dir
) -> None:
    """After the chat was killed in mid-answer, the one-slot llama.cpp server was still writing that answer: the
    next `make chat` said "cannot reach the model server ... Nothing answers on the usual local ports either ...
    Start one (e.g. `ollama serve`)" and offered the setup. A server that takes the connection is there: the chat
    says it is busy and starts; the message is answered once the server is free."""
    config = write_config(tmp_path / "config", chat_server.base_url, test_skills_dir)
    chat_server.models_trickle = {"every": 0.1, "for": 20, "where": "head"}  # GET /models held: the server is busy
    chat_server.enqueue('{"reply": "here now"}')
    root = Workspace(tmp_path / "ws").root
    argv = [sys.executable, "-m", "messaging_llm_bot.cli", "run", "--frontend", "console", "--config", str(config)]
    term = Terminal([*argv, "--workspace", str(root)])
    try:
        term.wait_for("The model server has not answered yet:")
        term.wait_for("you> ")
        term.type("hello\r")
        term.wait_for("here now")
        term.type("\x04")
        assert term.proc.wait(30) == 0
    finally:
        term.close()
    assert f"the model server at {chat_server.base_url} accepted the connection but gave no answer within 3 s" in (
        term.output
    )
    assert "Run the setup now?" not in term.output and "Nothing answers" not in term.output


def test_a_terminal_left_raw_by_a_killed_chat_is_put_back_and_its_question_answered(
    tmp_path: Path, test_skills_dir
) -> None:
    """A chat killed with SIGKILL leaves the terminal in raw mode (no echo, Enter a bare CR). The next `make chat`
    with no model server hung at "Run the setup now? [Y/n]" (no line ever ended) and, once the chat ended, gave the
    raw mode back to the shell. The chat puts the terminal back in cooked mode first."""
    import shlex
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed = sock.getsockname()[1]  # nothing listens here once it is closed
    config = write_config(tmp_path / "config", f"http://127.0.0.1:{closed}/v1", test_skills_dir)
    root = Workspace(tmp_path / "ws").root
    argv = [sys.executable, "-m", "messaging_llm_bot.cli", "run", "--frontend", "console", "--config", str(config)]
    command = "stty raw -echo; exec " + shlex.join([*argv, "--workspace", str(root)])
    term = Terminal(["/bin/sh", "-c", command])
    try:
        term.wait_for("Run the setup now? [Y/n] ")
        term.type("n\r")
        term.wait_for("The chat starts anyway")
        term.wait_for("you> ", start=term.output.index("The chat starts anyway"))
        term.type("\x04")
        assert term.proc.wait(30) == 0
        assert term.cooked()  # what the shell gets back
    finally:
        term.close()
