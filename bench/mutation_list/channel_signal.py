"""Mutations of the signal channel (messaging_llm_bot/channels/signal/)."""

from __future__ import annotations

from mutation_list.common import BOT, BUSY, KIT_TELEGRAM_SIGNAL_WHATSAPP, SIGNAL, Mutation

MUTATIONS: tuple[Mutation, ...] = (
    # -- Signal: allowlist and identity (channels/signal/) --------------------------------------------
    Mutation(
        "signal-number-without-account",
        f"{BOT}/channels/signal/identity.py",
        "if pinned is not None and pinned != uuid:",
        "if pinned is not None and uuid and pinned != uuid:",
        "a message with a pinned number and no account passes as that number",
        SIGNAL,
    ),
    Mutation(
        "signal-group-is-owner",
        f"{BOT}/channels/signal/identity.py",
        "return sees_owner_data(self.owner, msg.group_id is None)",
        "return sees_owner_data(self.owner, True)",
        "the owner's Signal groups see the owner's data",
        SIGNAL,
    ),
    Mutation(
        "signal-repin",
        f"{BOT}/channels/signal/identity.py",
        "if number in self._pins:\n                return",
        "if False:\n                return",
        "a number is pinned again to another account",
        SIGNAL,
        equivalent="pin runs only for a number with no pin on record (the service checks pinned() first) "
        "and judge has already refused a number whose pin disagrees",
    ),
    Mutation(
        "signal-allowed-any-id",
        f"{BOT}/channels/signal/identity.py",
        "allowed = any(settings.allows(one) for one in ids)",
        "allowed = bool(ids)",
        "every sender is allowed",
        SIGNAL,
    ),
    Mutation(
        "signal-owner-unchecked",
        f"{BOT}/channels/signal/identity.py",
        "owner = allowed and settings.owner_id in ids",
        "owner = allowed",
        "every allowed sender is the owner",
        SIGNAL,
    ),
    Mutation(
        "serve-chat-approver-only-telegram",
        f"{BOT}/channels/signal/service.py",
        "            ask_owner=self.approvals.owner_approver(lambda: self.settings.owner_id, loop),",
        "            ask_owner=None,",
        "with Signal the home channel, a client's ask call with approve_in_chat is refused instead of asked there",
        ("test_serve_approve_home.py",),
    ),
    Mutation(
        "busy-signal-never-joins",
        f"{BOT}/channels/signal/service.py",
        "            joinable(msg),\n            queue=msg.chat,",
        "            False,\n            queue=msg.chat,",
        "busy mode steer does nothing on Signal",
        BUSY,
    ),
    Mutation(
        "signal-own-uuid-unknown",
        f"{BOT}/channels/signal/service.py",
        "        self.account_uuid = self.turns.account_uuid = signal_id(uuid) if uuid else None",
        "        self.account_uuid = self.turns.account_uuid = None",
        "the bot never learns its own UUID: in a group a mention of it by UUID only (number hidden) is ignored",
        ("test_signal.py",),
    ),
    Mutation(
        "signal-mention-by-uuid-unseen",
        f"{BOT}/channels/signal/service.py",
        "        if not addressed_to_bot(msg, self.settings, self.account_uuid):",
        "        if not addressed_to_bot(msg, self.settings):",
        "a group message that mentions the bot by its UUID only counts as not addressed to it and is not answered",
        ("test_signal.py",),
    ),
    Mutation(
        "signal-command-to-the-model",
        f"{BOT}/channels/signal/service.py",
        '        command = msg.kind() == "text" and msg.text.startswith("/")',
        "        command = False",
        "a typed /help, /stop or /new on Signal is a message for the model: no command answers, /stop stops nothing",
        KIT_TELEGRAM_SIGNAL_WHATSAPP,
    ),
    Mutation(
        "signal-refusal-not-for-good",
        f"{BOT}/channels/signal/client.py",
        "super().__init__(text, for_good=not self.transient)",
        "super().__init__(text, for_good=False)",
        "a reminder to someone who is not a Signal user is tried again at every poll instead of marked failed",
        ("test_reminders_refused.py",),
    ),
    Mutation(
        "signal-transient-refusal-given-up",
        f"{BOT}/channels/signal/turn.py",
        "if isinstance(err, SignalRpcError) and err.transient:",
        "if False:",
        "a reply signal-cli could not send for now (rate limited, the Signal server not reached) is dropped",
        ("test_signal_input.py",),
    ),
    Mutation(
        "signal-same-message-twice",
        f"{BOT}/channels/signal/settings.py",
        '        return f"{PREFIX}{self.uuid or self.number}:{self.timestamp}"',
        "        return f\"{PREFIX}{self.uuid or self.number}:{self.timestamp}:{__import__('time').time_ns()}\"",
        "an event the daemon delivers again (its sender and timestamp) is answered a second time",
        KIT_TELEGRAM_SIGNAL_WHATSAPP,
    ),
    Mutation(
        "signal-attachment-fetched-without-max-bytes",
        f"{BOT}/channels/signal/turn.py",
        'rpc("getAttachment", params, max_bytes=limit * 4 // 3 + 4096)',
        'rpc("getAttachment", params)',
        "the Signal channel reads an attachment listed without its size whole into memory before refusing it",
        ("test_signal_input.py",),
    ),
)
