"""Mutations of the discord channel (messaging_llm_bot/channels/discord/)."""

from __future__ import annotations

from mutation_list.common import BOT, DISCORD, DISCORD_BOT, KIT_SLACK_DISCORD, Mutation

MUTATIONS: tuple[Mutation, ...] = (
    Mutation(
        "discord-mention-mode-off",
        f"{BOT}/channels/discord/message.py",
        "        if not any(user.id == bot_id for user in message.mentions):",
        "        if False:",
        "every message in a guild channel the bot can read reaches the model, not only those that mention it",
        DISCORD_BOT,
    ),
    Mutation(
        "discord-same-message-twice",
        f"{BOT}/channels/discord/message.py",
        '        return f"{KEY_PREFIX}{self.message_id}"',
        "        return f\"{KEY_PREFIX}{self.message_id}:{__import__('time').time_ns()}\"",
        "a message the gateway delivers again (a RESUME's replay) is answered a second time",
        DISCORD_BOT,
    ),
    Mutation(
        "discord-file-any-host",
        f"{BOT}/channels/discord/files.py",
        "    return (got.scheme, got.netloc) == (api.scheme, api.netloc)",
        "    return True",
        "an attachment URL a message names on any server is fetched (the bot asks whatever host it is pointed at)",
        DISCORD_BOT,
    ),
    Mutation(
        "discord-button-anyone",
        f"{BOT}/channels/discord/buttons.py",
        "        if str(interaction.user.id) != owner():",
        "        if False:",
        "anyone who can press the owner's question's buttons answers it (approves the owner's skill call)",
        DISCORD,
    ),
    Mutation(
        "discord-guest-dm-is-the-owners",
        f"{BOT}/channels/discord/turn.py",
        "            msg.direct and from_owner,",
        "            msg.direct,",
        "an allowed guest's own DM is taken for the owner's chat: their turns see the owner's context and memory",
        KIT_SLACK_DISCORD,
    ),
    Mutation(
        "discord-guest-owner-commands",
        f"{BOT}/channels/discord/intake.py",
        "say, command=command, owner_data=owner, decline=decline)",
        "say, command=command, owner_data=True, decline=decline)",
        "an allowed guest's owner-only command (/jobs, /stats, /model) is answered with the owner's data",
        KIT_SLACK_DISCORD,
    ),
    Mutation(
        "discord-job-runs-dropped",
        f"{BOT}/channels/discord/service.py",
        "                start=intake.intake.start_job,",
        "                start=lambda item: None,",
        "a scheduled job's run handed to the channel is never answered (the owner's jobs stop arriving)",
        KIT_SLACK_DISCORD,
    ),
    Mutation(
        "discord-held-refused",
        f"{BOT}/channels/discord/intake.py",
        "        self.intake = host.channel_intake(host.turns, hold=True, lost=_lost)",
        "        self.intake = host.channel_intake(host.turns, lost=_lost)",
        "a message the inbox cannot store (disk full) is refused as if the platform would send it again: the gateway"
        " never does, so it is lost until the next start",
        ("test_discord_catchup.py",),
    ),
    Mutation(
        "discord-no-catch-up",
        f"{BOT}/channels/discord/service.py",
        "        if self.intake is not None and not self.stopping:",
        "        if False:",
        "what no gateway session delivered (written while the bot was down, held at a stop, a new session) is never"
        " read from the channels' history: lost",
        ("test_discord_catchup.py", *KIT_SLACK_DISCORD),
    ),
    Mutation(
        "discord-nonce-random",
        f"{BOT}/channels/discord/channel.py",
        '    return hashlib.sha256(f"{key}\\x00{part}".encode()).hexdigest()[:NONCE_CHARS]',
        "    return secrets.token_hex(12)",
        "a reply part, a turn's file or the live message that reached Discord just before a kill is made a second"
        " time by the restart's send (a random nonce each time)",
        (*DISCORD_BOT, *DISCORD),
    ),
    Mutation(
        "discord-left-live-not-taken-over",
        f"{BOT}/channels/discord/turn.py",
        "        if live is None and self.may_have_left_live(item):",
        "        if False:",
        "a live message a kill left unrecorded stays beside the restart's reply when the restarted turn shows none",
        DISCORD_BOT,
    ),
    Mutation(
        "discord-question-parts-all-with-buttons",
        f"{BOT}/channels/discord/channel.py",
        "            say=self._say_in,",
        "            say=None,",
        "each part of a long question comes with the buttons: the owner may answer before the rest of it is shown",
        ("test_discord_channel.py",),
    ),
)
