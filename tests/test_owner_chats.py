"""The owner's chats on every channel (conversation/routes.py): what a served client may search and where the
owner's home conversation is. Email threads of the owner's address, the Matrix room the owner wrote in (learned
while the channel runs) and the web chat are the owner's; a guest's thread or another room never is."""

from __future__ import annotations

from assistant_framework.config.settings import Settings
from assistant_framework.workspace import Workspace
from messaging_llm_bot.channels.matrix.state import StateFile
from messaging_llm_bot.conversation.routes import home_conversation, is_owner_conversation, owner_conversation_ids
from messaging_llm_bot.serve.memory import memory_tools

OWNER, GUEST = "owner@example.org", "guest@example.org"
ROOM, OTHER_ROOM = "!direct:example.org", "!group:example.org"

CONFIG = {
    "email": {"allowed": [OWNER, GUEST]},
    "matrix": {"allowed": ["@owner:example.org"]},
    "web": {"enabled": True, "chat": True},
}


def test_the_registry_names_the_owners_chats_on_every_channel(ws: Workspace) -> None:
    settings = Settings.from_config(CONFIG)
    assert {f"mail:{OWNER}", "web:owner", "console"} <= owner_conversation_ids(settings)
    assert not any(one.startswith("mx:") for one in owner_conversation_ids(settings, ws))  # not learned yet
    StateFile(ws).update(owner_room=ROOM)  # the owner wrote in a direct room (channels/matrix/events.py)
    assert f"mx:{ROOM}" in owner_conversation_ids(settings, ws)
    owner = is_owner_conversation(settings, ws)
    assert owner(f"mail:{OWNER}:0123456789ab") and owner(f"mx:{ROOM}|$thread-root") and owner("web:owner")
    assert not owner(f"mail:{GUEST}:0123456789ab") and not owner(f"mail:{OWNER}.evil.org:0123456789ab")
    assert not owner(f"mx:{OTHER_ROOM}") and not owner(f"mx:{OTHER_ROOM}|$thread-root") and not owner("tg:5")


def test_home_conversation_is_the_owners_chat_on_the_home_channel(ws: Workspace) -> None:
    """With email the first configured channel, the owner's chat there (it was the terminal's)."""
    assert home_conversation(Settings.from_config({"email": {**CONFIG["email"], "enabled": True}})) == f"mail:{OWNER}"
    matrix_only = Settings.from_config({"matrix": {**CONFIG["matrix"], "enabled": True}})
    assert home_conversation(matrix_only, ws) == "console"  # the room is not known yet
    StateFile(ws).update(owner_room=ROOM)
    assert home_conversation(matrix_only, ws) == f"mx:{ROOM}"


def test_a_served_search_finds_the_owners_email_thread_matrix_thread_and_web_chat_not_a_guests(
    ws: Workspace, service
) -> None:
    """Through the served memory tools (what /mcp answers) over real logs and the real index: the owner's
    threads are found although their folder names are hashed; a guest's thread and another room are not."""
    settings = Settings.from_config(CONFIG)
    StateFile(ws).update(owner_room=ROOM)
    chats = {
        f"mail:{OWNER}:0123456789ab": "owner-mail",
        f"mail:{GUEST}:0123456789ab": "guest-mail",
        f"mx:{ROOM}|$root-event": "owner-room",
        f"mx:{OTHER_ROOM}": "group-room",
        "web:owner": "owner-web",
    }
    for conversation, word in chats.items():
        service.log_turn(conversation, "user", f"the albatross code is {word}")
    found = memory_tools(settings, ws, service).search("albatross", limit=20)["results"]
    words = {word for hit in found for word in chats.values() if word in str(hit)}
    assert words == {"owner-mail", "owner-room", "owner-web"}


def test_a_dm_learned_for_one_owner_is_not_the_owners_once_the_config_names_another(ws: Workspace) -> None:
    """Slack's and Discord's DM is noted with the owner it was opened for (conversation/owner_dm.py): once the
    config names another owner it is no longer the owner's chat (a job run queued for it is dropped, a served
    client does not search it), until the DM of the new owner is noted; a note without an owner (Matrix's, an
    older version's) counts as before. A forum topic of the Telegram owner's chat is the owner's, a group's not."""
    from messaging_llm_bot.conversation.owner_chats import note_owner_chat

    first = Settings.from_config({"slack": {"allowed": ["U0FIRST"]}, "telegram": {"allowed_user_ids": [7]}})
    second = Settings.from_config({"slack": {"allowed": ["U0SECOND"]}, "telegram": {"allowed_user_ids": [7]}})
    note_owner_chat(ws, "slack", "sl:D0FIRST", "U0FIRST")
    assert "sl:D0FIRST" in owner_conversation_ids(first, ws)
    assert not is_owner_conversation(second, ws)("sl:D0FIRST")
    assert not is_owner_conversation(second, ws)("sl:D0FIRST|1712345678.000100")
    note_owner_chat(ws, "slack", "sl:D0SECOND", "U0SECOND")
    assert is_owner_conversation(second, ws)("sl:D0SECOND") and not is_owner_conversation(first, ws)("sl:D0SECOND")
    StateFile(ws).update(owner_room=ROOM)  # noted without an owner: the room the owner wrote in
    assert f"mx:{ROOM}" in owner_conversation_ids(second, ws)
    owner = is_owner_conversation(second, ws)
    assert owner("tg:7") and owner("tg:7:12") and not owner("tg:-1005:12") and not owner("tg:8:7")


def test_the_matrix_room_the_old_owner_wrote_in_is_not_the_new_owners(ws: Workspace) -> None:
    """The direct room is kept with the owner who wrote in it (channels/matrix/events.py): once the config names
    another owner it is neither the owner's chat nor where jobs, notices and questions go, until the new owner
    writes in a direct room of theirs."""
    old, new = "@owner:example.org", "@new:example.org"
    StateFile(ws).update(owner_room=ROOM, owner=old)
    state = StateFile(ws)  # as the next start reads it
    assert state.owner_room_of(old) == ROOM and state.owner_room_of(new) is None
    changed = Settings.from_config({"matrix": {"allowed": [new]}})
    assert not is_owner_conversation(changed, ws)(f"mx:{ROOM}")
    state.update(owner_room=OTHER_ROOM, owner=new)
    assert state.owner_room_of(new) == OTHER_ROOM and is_owner_conversation(changed, ws)(f"mx:{OTHER_ROOM}")
