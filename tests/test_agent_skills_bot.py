"""Published ``SKILL.md`` skills through the real bot (Telegram: FakeBotAPI and FakeChatServer): three
skills of ``github:anthropics/skills`` (tests/data/agent_skills, Apache-2.0) in ``runtime.skills_dirs``.

``skills list --json`` lists them with their descriptions; the prompt lists them in [Skills]; a model that
asks for one with ``skill_doc`` gets its body (labelled as its author's) in the next request, and a file it
references on demand. ``run_script`` runs a skill's script only after the owner confirmed (``exec`` asks),
never in a guest chat, and a script that runs past its limit is ended, what it started too, with one
sentence. One bot for the file; the tests run in order on it.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
from pathlib import Path
from types import SimpleNamespace

import pytest

from assistant_framework.workspace import Workspace
from tests.cli_inprocess import run_cli
from tests.fakes.bot_api import FakeBotAPI
from tests.fakes.chat_server import FakeChatServer
from tests.telegram_harness import OWNER, RunningBot, make_runtime, texts

#: The skills' scripts are processes the bot starts (run_script), which tests/tiers.py cannot see from here.
pytestmark = pytest.mark.subprocess

PUBLISHED = Path(__file__).parent / "data" / "agent_skills"
GUEST = 7
#: The script's limit is run_script's timeout less a second (assistant_framework/agentskills/tools.py).
SCRIPT_TIMEOUT = 3


def _call(skill: str, args: dict) -> str:
    return json.dumps({"skill": skill, "args": args})


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("agent-skills-bot")
    skills_dir = tmp / "skills"
    shutil.copytree(PUBLISHED, skills_dir, ignore=shutil.ignore_patterns("README.md"))
    with FakeChatServer() as chat, FakeBotAPI() as api:
        config = {
            "llm": {
                "runners": [{"name": "fake", "base_url": chat.base_url, "model": "fake-model", "timeout_seconds": 30}],
                "max_skill_rounds": 3,
                "retries_per_runner": 0,
            },
            "runtime": {
                "timezone": "Europe/Berlin",
                "skills_dirs": [str(skills_dir)],
                "skill_timeouts": {"run_script": SCRIPT_TIMEOUT},
            },
            "telegram": {
                "token": api.token,
                "allowed_user_ids": [OWNER, GUEST],
                "base_url": api.base_url,
                "base_file_url": api.base_file_url,
                "stream": False,
                "progress": False,
            },
            "memory": {"enabled": False},
            # The guest is offered both tools, so the gate itself is what refuses a script there.
            "policy": {"guest_skills": ["time", "skill_doc", "run_script"]},
        }
        workspace = Workspace(tmp / "workspace")
        bot = RunningBot(make_runtime(config, workspace, tmp)).start()
        yield SimpleNamespace(chat=chat, api=api, bot=bot, workspace=workspace, tmp=tmp, config=config)
        bot.stop()


def _turn(env, *answers: str, text: str, expect: str, user: int = OWNER) -> None:
    env.chat.enqueue(*answers)
    env.api.send_message(text, user_id=user, chat_id=user)
    try:
        env.api.wait_for(lambda: any(expect in t for t in texts(env.api, user)), timeout=60)
    except TimeoutError as exc:
        raise AssertionError(f"no {expect!r} in the chat; its last messages: {texts(env.api, user)[-3:]}") from exc


def _fed_back(env, back: int = 1) -> str:
    """What the model was given after its call (the last message of a later request)."""
    return str(env.chat.chat_requests[-back]["messages"][-1]["content"])


def _answer_question(env, answer: str) -> dict:
    """Wait for the Confirm question to the owner and press ``yes`` or ``no``; return its message (an answered
    question's text is replaced, so the one that still asks is the new one)."""

    def question():
        return next((m for m in env.api.messages(OWNER) if m.get("text", "").startswith("Confirm this action?")), None)

    try:
        message = env.api.wait_for(question, timeout=30)
    except TimeoutError as exc:
        raise AssertionError(
            f"no question; the chat: {texts(env.api)[-3:]}; requests {len(env.chat.chat_requests)}"
        ) from exc
    buttons = [b["callback_data"] for row in message["reply_markup"]["inline_keyboard"] for b in row]
    env.api.callback_query(OWNER, next(b for b in buttons if b.endswith(f":{answer}")), message["message_id"])
    return message


def _questions(env) -> int:
    """How many Confirm questions the owner was ever sent."""
    return sum(1 for c in env.api.calls("sendMessage") if str(c["params"].get("text", "")).startswith("Confirm this"))


def test_skills_list_shows_the_published_skills_with_their_descriptions(env) -> None:
    config = env.tmp / "list-config.json"
    config.write_text(json.dumps(env.config), encoding="utf-8")
    done = run_cli("skills", "list", "--json", "--config", str(config), "--workspace", str(env.workspace.root))
    assert done.returncode == 0, done.stdout + done.stderr
    rows = {row["name"]: row for row in json.loads(done.stdout)}
    comms = rows["internal-comms"]
    assert comms["loaded"] and comms["form"] == "SKILL.md"
    assert comms["description"].startswith("A set of resources to help me write all kinds of internal communications")
    assert {"brand-guidelines", "webapp-testing", "skill_doc", "run_script"} <= set(rows)


def test_the_model_that_asks_for_a_skill_gets_its_body_in_the_next_request(env) -> None:
    _turn(
        env,
        _call("skill_doc", {"name": "internal-comms"}),
        _call("skill_doc", {"name": "internal-comms", "file": "examples/3p-updates.md"}),
        '{"reply": "Here is your 3P update."}',
        text="write my weekly 3P update",
        expect="Here is your 3P update.",
    )
    first = env.chat.chat_requests[-3]
    system = first["messages"][0]["content"]
    assert "[Skills]" in system and "- internal-comms: A set of resources" in system
    assert "Load the appropriate guideline file" not in system  # the body only when asked for
    body = _fed_back(env, 2)
    assert "[Instructions of skill 'internal-comms', written by its author (not the owner)" in body
    assert "Load the appropriate guideline file" in body
    assert "3P" in _fed_back(env) and "Progress" in _fed_back(env)  # the referenced file, on demand


def test_a_referenced_path_out_of_the_skills_folder_is_refused(env) -> None:
    _turn(
        env,
        _call("skill_doc", {"name": "internal-comms", "file": "../brand-guidelines/SKILL.md"}),
        '{"reply": "Could not read it."}',
        text="read that file",
        expect="Could not read it.",
    )
    fed = _fed_back(env)
    assert "is not a path inside the skill's folder" in fed and "Anthropic" not in fed


def test_a_script_runs_only_after_the_owner_confirmed(env) -> None:
    call = _call("run_script", {"skill": "webapp-testing", "script": "with_server.py", "args": ["--help"]})
    env.chat.enqueue(call, '{"reply": "Not run."}')
    env.api.send_message("show the server helper's usage", user_id=OWNER)
    question = _answer_question(env, "no")
    assert "run_script" in question["text"] and "exec" in question["text"]
    env.api.wait_for(lambda: "Not run." in texts(env.api), timeout=30)
    assert "did not confirm" in _fed_back(env) and "usage:" not in _fed_back(env)

    env.chat.enqueue(call, '{"reply": "It ran."}')
    env.api.send_message("show it again", user_id=OWNER)
    _answer_question(env, "yes")
    env.api.wait_for(lambda: "It ran." in texts(env.api), timeout=30)
    fed = _fed_back(env)
    assert "exit code 0" in fed and "usage: with_server.py" in fed


def test_a_guest_never_runs_a_script(env) -> None:
    asked = _questions(env)
    _turn(
        env,
        _call("run_script", {"skill": "webapp-testing", "script": "with_server.py", "args": ["--help"]}),
        '{"reply": "No scripts here."}',
        text="run the helper",
        expect="No scripts here.",
        user=GUEST,
    )
    fed = _fed_back(env)
    assert "may not run programs" in fed and "usage:" not in fed
    assert _questions(env) == asked  # the owner is not even asked


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _processes_with(marker: str) -> list[int]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmdline:
            found.append(int(pid))
    return found


def test_a_script_past_its_limit_is_ended_with_one_sentence(env, monkeypatch) -> None:
    from assistant_framework.agentskills import tools

    # A limit of 1 s here (run_script's timeout less 2 s, read at the call), not the bot's 2 s: the script below
    # only runs into it, and what must happen first (a Python helper starting its "server") takes milliseconds.
    monkeypatch.setattr(tools, "LIMIT_MARGIN_SECONDS", SCRIPT_TIMEOUT - 1.0)
    # The published helper waits for a server that never listens; the "server" it starts is ended too.
    marker = "41.0%d" % os.getpid()
    args = ["--server", f"sleep {marker}", "--port", str(_free_port()), "--timeout", "60", "--", "true"]
    env.chat.enqueue(
        _call("run_script", {"skill": "webapp-testing", "script": "scripts/with_server.py", "args": args}),
        '{"reply": "The helper took too long."}',
    )
    env.api.send_message("start the server and test", user_id=OWNER)
    _answer_question(env, "yes")
    env.api.wait_for(lambda: "The helper took too long." in texts(env.api), timeout=30)
    fed = _fed_back(env)
    assert (
        "The script scripts/with_server.py of skill 'webapp-testing' ran past its time limit of 1 s and was stopped."
        in fed
    )
    assert _processes_with(marker) == []


def test_a_drafted_skill_is_not_loaded_until_approved_and_is_after_without_a_restart(env) -> None:
    draft = {
        "name": "weekly-report",
        "description": "Writes the owner's weekly report from the week's done tasks.",
        "instructions": "1. List the tasks done this week.\n2. Group them by project.\n3. End with next week's plan.",
    }
    _turn(
        env,
        _call("skill_draft", draft),
        '{"reply": "Drafted it."}',
        text="make a skill for my weekly report",
        expect="Drafted it.",
    )
    assert "/drafts approve weekly-report" in _fed_back(env)
    assert (env.workspace.root / "skills-drafts" / "weekly-report" / "SKILL.md").is_file()

    _turn(
        env,
        _call("skill_doc", {"name": "weekly-report"}),
        '{"reply": "Not yet."}',
        text="weekly report",
        expect="Not yet.",
    )
    assert "no SKILL.md skill named 'weekly-report'" in _fed_back(env)
    assert "- weekly-report:" not in env.chat.chat_requests[-2]["messages"][0]["content"]

    env.api.send_message("/drafts", user_id=GUEST, chat_id=GUEST)
    env.api.wait_for(lambda: any("/drafts is only for the owner" in t for t in texts(env.api, GUEST)), timeout=30)
    env.api.send_message("/drafts", user_id=OWNER)
    env.api.wait_for(lambda: any("waiting for you" in t and "weekly-report" in t for t in texts(env.api)), timeout=30)
    env.api.send_message("/drafts approve weekly-report", user_id=OWNER)
    env.api.wait_for(lambda: any("Approved: weekly-report" in t for t in texts(env.api)), timeout=30)

    _turn(
        env,
        _call("skill_doc", {"name": "weekly-report"}),
        '{"reply": "Report."}',
        text="weekly report",
        expect="Report.",
    )
    assert "- weekly-report: Writes the owner's weekly report" in env.chat.chat_requests[-2]["messages"][0]["content"]
    assert "Group them by project." in _fed_back(env)
    assert not (env.workspace.root / "skills-drafts" / "weekly-report").exists()


def test_allowed_tools_narrow_the_calls_while_the_skill_is_active(env) -> None:
    folder = env.tmp / "skills" / "clock-only"
    folder.mkdir()
    (folder / "SKILL.md").write_text(
        "---\nname: clock-only\ndescription: Says the time.\nallowed-tools: time Bash(git:*)\n---\nCall time.\n",
        encoding="utf-8",
    )
    _turn(
        env,
        _call("notes", {"action": "list"}),  # before any skill is active: runs
        _call("skill_doc", {"name": "clock-only"}),
        _call("notes", {"action": "list"}),
        '{"reply": "Narrowed."}',
        text="what time is it",
        expect="Narrowed.",
    )
    assert "allowed-tools do not include" not in _fed_back(env, 3)
    refused = _fed_back(env)
    assert "skill 'clock-only' is active and its allowed-tools do not include 'notes'" in refused
    assert "it allows: run_script, skill_doc, time" in refused
