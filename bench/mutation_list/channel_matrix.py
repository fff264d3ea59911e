"""Mutations of the matrix channel (messaging_llm_bot/channels/matrix/)."""

from __future__ import annotations

from mutation_list.common import BOT, KIT_MATRIX, MATRIX, MATRIX_BOT, Mutation

MUTATIONS: tuple[Mutation, ...] = (
    # -- the Matrix channel (channels/matrix/, docs/matrix.md) -----------------------------------------------
    Mutation(
        "matrix-invite-any",
        "messaging_llm_bot/channels/matrix/events.py",
        "        if isinstance(inviter, str) and host.config.allows(inviter):",
        "        if isinstance(inviter, str):",
        "the bot joins any room anyone invites it to",
        MATRIX_BOT,
    ),
    Mutation(
        "matrix-no-relogin",
        "messaging_llm_bot/channels/matrix/events.py",
        '                if "M_UNKNOWN_TOKEN" in str(err) and await self.login_again(err):',
        "                if False:",
        "a session the homeserver ended leaves the bot retrying a dead token forever: nothing is answered",
        MATRIX,
    ),
    Mutation(
        "matrix-allowlist-message",
        "messaging_llm_bot/channels/matrix/events.py",
        "        if not config.allows(sender):",
        "        if False:",
        "a stranger's message in a room the bot is in is stored and reaches the model",
        MATRIX,
    ),
    Mutation(
        "matrix-stranger-told-always",
        "messaging_llm_bot/channels/matrix/events.py",
        '        return await asyncio.to_thread(self.state.tell_once, f"stranger:{who}")',
        "        return True",
        "a stranger is answered at every message (the bot talks to anyone who writes)",
        MATRIX,
    ),
    Mutation(
        "matrix-owner-chat-in-groups",
        "messaging_llm_bot/channels/matrix/turn.py",
        "        owner_chat = msg.direct and from_owner  # only the owner's own direct room sees the owner's data",
        "        owner_chat = from_owner",
        "the owner's data is used in a room with other people (a group shows the reply to them)",
        MATRIX,
    ),
    Mutation(
        "matrix-html-unescaped",
        "messaging_llm_bot/channels/matrix/format.py",
        '        out.append("<br>" if ch == "\\n" and not in_pre else html.escape(ch, quote=False))',
        '        out.append("<br>" if ch == "\\n" and not in_pre else ch)',
        "markup in the model's answer reaches the room as HTML",
        MATRIX,
    ),
    Mutation(
        "matrix-link-any-scheme",
        "messaging_llm_bot/channels/matrix/format.py",
        "        if not url.lower().startswith(_SAFE_SCHEMES):",
        "        if False:",
        "a javascript: link in a reply becomes a live link",
        MATRIX,
    ),
    Mutation(
        "matrix-txn-random",
        "messaging_llm_bot/channels/matrix/channel.py",
        "            return await self.client.send(to.chat_id, content, txn_id(text.key, index))",
        '            return await self.client.send(to.chat_id, content, txn_id("", index))',
        "a reply part sent again after a crash (out, not yet in the ledger) is a second message",
        MATRIX,
    ),
    Mutation(
        "matrix-no-replay",
        "messaging_llm_bot/channels/matrix/service.py",
        "        reader.intake.replay(PREFIX, self.turns.sent_by_owner)",
        "        pass",
        "a message a crash left unanswered in the inbox is never answered",
        MATRIX_BOT,
    ),
    Mutation(
        "matrix-e2ee-told-always",
        "messaging_llm_bot/channels/matrix/events.py",
        'and await asyncio.to_thread(host.state.tell_once, f"e2ee:{room_id}")',
        "and True",
        "an encrypted room is told at every message that the bot cannot read it",
        MATRIX,
    ),
    Mutation(
        "matrix-notices-never-reach-the-owner",
        f"{BOT}/channels/matrix/service.py",
        "lambda chat, text, conversation: self.turns.send_to(chat, text, conversation), self._owner_conversation",
        "lambda chat, text, conversation: self.turns.send_to(chat, text, conversation), lambda: None",
        "Matrix's collector notices and morning digest reach no one: the owner's direct room is never asked",
        KIT_MATRIX,
    ),
    Mutation(
        "matrix-pairing-code-not-in-refusal",
        f"{BOT}/channels/matrix/events.py",
        '                reason = f"{INVITE_REFUSED} {said}"',
        "                pass",
        "a Matrix stranger who invites the bot is refused without a pairing code (they cannot ask the owner)",
        ("test_matrix.py",),
    ),
    Mutation(
        "busy-matrix-never-joins",
        f"{BOT}/channels/matrix/events.py",
        "msg.text, msg.event_id, joinable(msg))",
        "msg.text, msg.event_id, False)",
        "busy mode steer does nothing on Matrix: a message sent meanwhile waits its turn",
        KIT_MATRIX,
    ),
)
