"""The OpenAI-compatible endpoint (issue 48), through the real bot process: the official ``openai`` client,
streamed and not, against ``/v1/`` on the bot's web server, with the fake model server behind the agent and
a Telegram owner beside it (fake Bot API)."""

from __future__ import annotations

import concurrent.futures
import json
import re
import weakref
from pathlib import Path
from typing import Any

import pytest

from messaging_llm_bot.serve.openai_api import BadRequest, message_text, turn_text
from tests.crash_bot import BotProcess, echo_reply, sent_texts, write_bot_config
from tests.fakes.bot_api import FakeBotAPI
from tests.telegram_harness import approval_question
from tests.waiting import wait_until

OWNER = 1
DESK_TOKEN = "desk-token-" + "d" * 24
BARE_TOKEN = "bare-token-" + "b" * 24
ASKER_TOKEN = "asker-token-" + "a" * 24
FILER_TOKEN = "filer-token-" + "f" * 24
CLIENTS = {
    "clients": [
        {"name": "desk", "token_env": "DESK_TOKEN", "skills": ["add", "save_note"]},
        {"name": "bare", "token_env": "BARE_TOKEN"},
        {"name": "asker", "token_env": "ASKER_TOKEN", "skills": ["save_note"], "approve_in_chat": True},
        {"name": "filer", "token_env": "FILER_TOKEN", "skills": ["add", "send_file"]},
    ],
    "per_minute": 3,
}


def offered(request: dict) -> list[str]:
    """The skill names one model request offers (the answer schema's call options)."""
    schema = ((request.get("response_format") or {}).get("json_schema") or {}).get("schema") or {}
    return sorted(o["properties"]["skill"]["enum"][0] for o in schema.get("anyOf", []) if "skill" in o["properties"])


def extracting(request: dict) -> bool:
    return request["messages"][0]["content"].startswith("You extract durable facts")


def model(request: dict) -> str:
    """The fake model: a call for 'add A and B' or 'save a note', the fed-back result in its reply; no facts."""
    if extracting(request):
        return json.dumps({"facts": []})
    last = request["messages"][-1]["content"]
    if last.startswith(("Result of skill", "Skill call")):
        return json.dumps({"reply": "after the call: " + " ".join(last.split("\n")[:2])})
    if found := re.match(r"add (\d+) and (\d+)", last):
        return json.dumps({"skill": "add", "args": {"a": int(found[1]), "b": int(found[2])}})
    if last.startswith("send me the list"):
        return json.dumps({"skill": "send_file", "args": {"path": "list.csv"}})
    if last.startswith("save a note"):
        return json.dumps({"skill": "save_note", "args": {"name": "intruder", "text": "x"}})
    return echo_reply(request)


def turns(server: Any) -> list[dict]:
    """The model requests of chat turns (fact extraction's left out)."""
    return [request for request in server.chat_requests if not extracting(request)]


def traces(workspace: Path) -> list[dict[str, Any]]:
    return [json.loads(path.read_text(encoding="utf-8")) for path in sorted(workspace.glob("traces/*/*.json"))]


def mentions(request: dict, text: str) -> bool:
    return text in json.dumps(request["messages"])


@pytest.mark.timeout(120)
def test_openai_client_gets_the_assistant_with_its_skills_in_its_own_conversation(
    tmp_path: Path, bot_config: dict, chat_server: Any
) -> None:
    import openai  # here, not at the top: its types cost every worker's collection half a second of CPU

    from assistant_framework.tls import shared_httpx2_context

    def client(token: str, timeout: float = 30) -> openai.OpenAI:
        """The official client, as a caller makes it, with the TLS context its ``verify=True`` makes, made once
        for the five clients here (each made it again: certifi's bundle read, about 35 ms of CPU apiece)."""
        http = openai.DefaultHttpxClient(verify=shared_httpx2_context())
        made = openai.OpenAI(base_url=base, api_key=token, max_retries=0, timeout=timeout, http_client=http)
        weakref.finalize(made, http.close)  # as the client closes its own when it goes (a given one it leaves open)
        return made

    chat_server.set_handler(model)
    workspace = tmp_path / "workspace"
    with FakeBotAPI() as fake:
        config = write_bot_config(
            tmp_path / "config.json",
            {**bot_config, "policy": {"skills": {"save_note": "ask"}}},
            fake,
            allowed=[OWNER],
            extra={
                "memory": {
                    "enabled": True,
                    "extract_idle_seconds": 0,
                    "episodes": False,
                    "profile": {"enabled": False},
                },
                "web": {"enabled": True, "port": 0},
                "serve": CLIENTS,
            },
        )
        env = {
            "DESK_TOKEN": DESK_TOKEN,
            "BARE_TOKEN": BARE_TOKEN,
            "ASKER_TOKEN": ASKER_TOKEN,
            "FILER_TOKEN": FILER_TOKEN,
        }
        with BotProcess(config, workspace, tmp_path / "bot.log", env=env) as bot:
            bot.start().wait_ready()
            port = re.search(r"web page: http://127\.0\.0\.1:(\d+)/", bot.run_log())
            assert port, bot.run_log()[-2000:]
            base = f"http://127.0.0.1:{port.group(1)}/v1"
            desk = client(DESK_TOKEN)
            assert [m.id for m in desk.models.list()] == ["assistant"]

            # Not streamed: the answer used the skill; the turn is traced in the client's own conversation.
            answer = desk.chat.completions.create(
                model="assistant", messages=[{"role": "user", "content": "add 2 and 3"}]
            )
            content = answer.choices[0].message.content or ""
            assert "Result of skill 'add'" in content and '"sum": 5' in content, content
            asked = turns(chat_server)[0]
            assert offered(asked) == ["add", "save_note"], "only the client's skills are offered"
            wait_until(lambda: traces(workspace), what="the client's trace")
            [trace] = traces(workspace)
            assert trace["conversation"] == "api:desk"
            assert [call["skill"] for call in trace["skill_calls"]] == ["add"] and trace["skill_calls"][0]["ok"]

            # Streamed: the reply arrives in pieces; the client's history holds its first turn.
            before = len(turns(chat_server))
            stream = desk.chat.completions.create(
                model="assistant", messages=[{"role": "user", "content": "add 4 and 5"}], stream=True
            )
            pieces = [
                chunk.choices[0].delta.content for chunk in stream if chunk.choices and chunk.choices[0].delta.content
            ]
            streamed = "".join(pieces)
            assert '"sum": 9' in streamed and len(pieces) > 1, pieces
            assert mentions(turns(chat_server)[before], "add 2 and 3"), "its own history is kept"

            # A call the policy marks ``ask``: refused in a sentence (no one here can confirm); nothing written.
            before = len(turns(chat_server))
            refused = desk.chat.completions.create(
                model="assistant", messages=[{"role": "user", "content": "save a note please"}]
            )
            assert "owner's confirmation" in (refused.choices[0].message.content or "")
            assert not (workspace / "notes" / "intruder.md").exists()

            # Its fourth request this minute is one too many (serve.per_minute: 3): 429, nothing runs.
            before = len(turns(chat_server))
            with pytest.raises(openai.RateLimitError):
                desk.chat.completions.create(model="assistant", messages=[{"role": "user", "content": "add 8 and 8"}])
            assert len(turns(chat_server)) == before

            # A client without skills is offered none, and a call it names anyway does not run.
            bare = client(BARE_TOKEN)
            before = len(turns(chat_server))
            refused = bare.chat.completions.create(
                model="assistant", messages=[{"role": "user", "content": "add 1 and 1"}]
            )
            assert offered(turns(chat_server)[before]) == []
            assert "no skill named 'add'" in (refused.choices[0].message.content or "")
            assert not mentions(turns(chat_server)[before], "add 2 and 3"), "each client its own history"

            # send_file among its skills: not offered (no chat to send a file to), and a call of it is refused.
            filer = client(FILER_TOKEN)
            before = len(turns(chat_server))
            refused = filer.chat.completions.create(
                model="assistant", messages=[{"role": "user", "content": "send me the list"}]
            )
            asked = turns(chat_server)[before]
            assert offered(asked) == ["add"] and "send_file" not in asked["messages"][0]["content"]
            assert "send_file cannot be used here: this turn has no chat to send a file to" in (
                refused.choices[0].message.content or ""
            )

            # With approve_in_chat the `ask` call is asked in the owner's Telegram chat, naming the client; confirmed,
            # it runs and the client gets the answer.
            asker = client(ASKER_TOKEN, timeout=60)
            with concurrent.futures.ThreadPoolExecutor(1) as pool:
                pending = pool.submit(
                    asker.chat.completions.create,
                    model="assistant",
                    messages=[{"role": "user", "content": "save a note please"}],
                )
                question, buttons = approval_question(fake)
                assert "save_note" in question["text"] and "served client 'asker'" in question["text"]
                assert not (workspace / "notes" / "intruder.md").exists()
                fake.callback_query(OWNER, next(b for b in buttons if b.endswith(":yes")), question["message_id"])
                confirmed = pending.result(timeout=60)
            assert "Result of skill 'save_note'" in (confirmed.choices[0].message.content or "")
            assert (workspace / "notes" / "intruder.md").exists()

            # A wrong token: 401, and nothing runs (no model request).
            before = len(turns(chat_server))
            stranger = client("x" * 40)
            with pytest.raises(openai.AuthenticationError):
                stranger.chat.completions.create(
                    model="assistant", messages=[{"role": "user", "content": "add 7 and 7"}]
                )
            with pytest.raises(openai.AuthenticationError):
                stranger.chat.completions.create(
                    model="assistant", messages=[{"role": "user", "content": "add 7 and 7"}], stream=True
                )
            assert len(turns(chat_server)) == before

            # The owner's Telegram chat: none of the clients' turns in its history or its recall.
            before = len(turns(chat_server))
            fake.send_message("what did we add today?", user_id=OWNER)
            fake.wait_for(lambda: any("what did we add today" in t for t in sent_texts(fake, OWNER)), timeout=30)
            owner_turn = turns(chat_server)[before]
            assert mentions(owner_turn, "what did we add today?")
            for text in ("add 2 and 3", "add 4 and 5", "add 1 and 1", "after the call"):
                assert not mentions(owner_turn, text), text
            # Facts are taken from the owner's turn, never from a client's (its words are not the owner's).
            wait_until(
                lambda: any(mentions(r, "what did we add today?") for r in chat_server.chat_requests if extracting(r)),
                timeout=30,
                what="the owner's turn's fact extraction",
            )
            extractions = [request for request in chat_server.chat_requests if extracting(request)]
            assert not any(mentions(request, "add 2 and 3") for request in extractions)
            assert bot.terminate() == 0


def test_a_request_without_a_users_last_message_is_refused_in_one_sentence() -> None:
    assert turn_text({"messages": [{"role": "system", "content": "x"}, {"role": "user", "content": " hi "}]}) == "hi"
    parts = [{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": "data:"}}]
    assert message_text(parts) == "look"
    for body, status, said in (
        ([], 400, "JSON object"),
        ({"messages": []}, 400, "non-empty"),
        ({"messages": [{"role": "assistant", "content": "x"}]}, 400, "the user's"),
        ({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]}, 400, "no text"),
        ({"messages": [{"role": "user", "content": "x" * 64_001}]}, 413, "longer than"),
    ):
        with pytest.raises(BadRequest, match=said) as raised:
            turn_text(body)
        assert raised.value.status == status


def test_a_turns_skill_limit_hides_and_refuses_the_other_skills(bot_config, workspace, chat_server, make_agent) -> None:
    """``AgentMessage.skills`` (a served client's list): [Tools] and the answer schema name only those; a call of
    another skill is refused and does not run. Without a limit the owner's turn offers every skill."""
    from messaging_llm_bot.agent.incoming import AgentMessage

    agent = make_agent(bot_config, workspace)
    save = json.dumps({"skill": "save_note", "args": {"name": "limited", "text": "x"}})
    chat_server.enqueue(save, '{"reply": "could not"}')
    result = agent.handle(AgentMessage("api:desk", "save it", skills=frozenset({"add"})))
    first, second = chat_server.chat_requests
    assert offered(first) == ["add"]
    system = first["messages"][0]["content"]
    assert "- add:" in system and "save_note" not in system
    assert "no skill named 'save_note' in this chat" in second["messages"][-1]["content"]
    assert result.skill_calls[0].error_kind == "unknown_skill" and not workspace.exists("notes/limited.md")

    chat_server.enqueue(save, '{"reply": "saved"}')
    agent.handle(AgentMessage("owner", "save it"))
    assert {"add", "save_note"} <= set(offered(chat_server.chat_requests[2]))
    assert workspace.exists("notes/limited.md")
