"""Mutations of the whatsapp channel (messaging_llm_bot/channels/whatsapp/)."""

from __future__ import annotations

from mutation_list.common import KIT_TELEGRAM_SIGNAL_WHATSAPP, WHATSAPP, WHATSAPP_BOT, Mutation

MUTATIONS: tuple[Mutation, ...] = (
    Mutation(
        "whatsapp-replay-runs-again",
        "messaging_llm_bot/channels/whatsapp/intake.py",
        "        if await self.intake.came_before(msg.message_id):",
        "        if False:",
        "a command (or a yes) in a payload Meta sends again, or a recorded POST replayed, runs again",
        ("test_whatsapp_bot.py",),
    ),
    Mutation(
        "whatsapp-signature-unchecked",
        "messaging_llm_bot/channels/whatsapp/webhook.py",
        "        if not signed(webhook.app_secret(), body, self.request.headers.get(SIGNATURE_HEADER)):",
        "        if False:",
        "anyone who finds the webhook's URL posts messages as the owner: they reach the model with the owner's data",
        WHATSAPP_BOT,
    ),
    Mutation(
        "whatsapp-signature-any",
        "messaging_llm_bot/channels/whatsapp/webhook.py",
        '    return hmac.compare_digest(header.strip().encode("utf-8"), expected)',
        '    return header.startswith("sha256=")',
        "a POST with any signature header passes (the HMAC is never compared)",
        WHATSAPP_BOT,
    ),
    Mutation(
        "whatsapp-handshake-any-token",
        "messaging_llm_bot/channels/whatsapp/webhook.py",
        '    return hmac.compare_digest(token.encode("utf-8"), config.verify_token.encode("utf-8"))',
        "    return True",
        "the handshake answers anyone's verify token: someone else can point a Meta app's webhook at the bot",
        WHATSAPP_BOT,
    ),
    Mutation(
        "whatsapp-window-ignored",
        "messaging_llm_bot/channels/whatsapp/channel.py",
        "        inside = self.window.is_open(number)",
        "        inside = True",
        "a job run outside the 24-hour window goes out free-form: the Cloud API fails it (131047) and it is lost",
        WHATSAPP_BOT,
    ),
    Mutation(
        "whatsapp-held-dropped",
        "messaging_llm_bot/channels/whatsapp/turn.py",
        "            self.held[item.item_id] = item.conversation_id",
        "            return True",
        "a reply outside the window without a template is completed unsent: dropped, never delivered",
        WHATSAPP,
    ),
    Mutation(
        "busy-whatsapp-never-joins",
        "messaging_llm_bot/channels/whatsapp/intake.py",
        "msg.text, msg.message_id, joinable(msg))",
        "msg.text, msg.message_id, False)",
        "busy mode steer does nothing on WhatsApp: a message sent meanwhile waits its turn",
        KIT_TELEGRAM_SIGNAL_WHATSAPP,
    ),
    Mutation(
        "whatsapp-allowlist",
        "messaging_llm_bot/channels/whatsapp/intake.py",
        "        if not config.allows(msg.sender):",
        "        if False:",
        "a stranger's message reaches the model",
        WHATSAPP_BOT,
    ),
    Mutation(
        "whatsapp-command-to-the-model",
        "messaging_llm_bot/channels/whatsapp/intake.py",
        '        if msg.kind == "text" and text.startswith("/") and len(text) > 1:',
        "        if False:",
        "a typed /help, /stop or /new on WhatsApp is a message for the model: no command answers, /stop stops nothing",
        KIT_TELEGRAM_SIGNAL_WHATSAPP,
    ),
    Mutation(
        "whatsapp-same-message-twice",
        "messaging_llm_bot/channels/whatsapp/intake.py",
        "        arrival = Arrival(msg.message_id, chat,",
        "        arrival = Arrival(f\"{msg.message_id}:{__import__('time').time_ns()}\", chat,",
        "a message Meta posts again (a retry of the webhook) is answered a second time",
        KIT_TELEGRAM_SIGNAL_WHATSAPP,
    ),
    Mutation(
        "whatsapp-unstored-answered-200",
        "messaging_llm_bot/channels/whatsapp/webhook.py",
        '            self._answer(503, "the events could not be stored; send them again")',
        '            self._answer(200, "")',
        "a message the inbox could not store is answered 200: Meta never sends it again, it is lost",
        KIT_TELEGRAM_SIGNAL_WHATSAPP,
    ),
    Mutation(
        "whatsapp-guest-owner-commands",
        "messaging_llm_bot/channels/whatsapp/intake.py",
        "say, owner=owner, owner_data=owner, decline=decline)",
        "say, owner=owner, owner_data=True, decline=decline)",
        "an allowed guest's owner-only command (/jobs, /stats, /model) is answered with the owner's data",
        KIT_TELEGRAM_SIGNAL_WHATSAPP,
    ),
)
