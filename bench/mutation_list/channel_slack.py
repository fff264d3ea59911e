"""Mutations of the slack channel (messaging_llm_bot/channels/slack/)."""

from __future__ import annotations

from mutation_list.common import KIT_SLACK_DISCORD, SLACK, SLACK_BOT, SLACK_SOCKET, Mutation

MUTATIONS: tuple[Mutation, ...] = (
    Mutation(
        "slack-socket-unacked",
        "messaging_llm_bot/channels/slack/socketmode.py",
        "        await client.send_socket_mode_response(SocketModeResponse(envelope_id=request.envelope_id))",
        "        pass",
        "Socket Mode envelopes are never acknowledged: Slack sends each event again and again, then drops the app",
        SLACK_SOCKET,
    ),
    Mutation(
        "slack-file-any-host",
        "messaging_llm_bot/channels/slack/api.py",
        '        if parts.scheme not in ("https", "http") or parts.netloc not in self._hosts:',
        '        if parts.scheme not in ("https", "http"):',
        "a signed event naming any file URL gets the bot token sent there: whoever runs that server has the token",
        SLACK_BOT,
    ),
    Mutation(
        "slack-button-anyone",
        "messaging_llm_bot/channels/slack/intake.py",
        "        elif not self.host.config.is_owner(press.user):",
        "        elif False:",
        "anyone who can press the question's button (a channel's member, a forged payload's user) confirms the call",
        SLACK_BOT,
    ),
    Mutation(
        "slack-mention-mode-off",
        "messaging_llm_bot/channels/slack/message.py",
        '    if not (direct or kind == "app_mention"):',
        "    if False:",
        "every message of a channel the bot is in reaches the model, not only those that mention it",
        SLACK,
    ),
    Mutation(
        "slack-signature-unchecked",
        "messaging_llm_bot/channels/slack/webhook.py",
        "        if not signed(webhook.signing_secret(), body, stamp, signature):",
        "        if False:",
        "anyone who finds the request URL posts events as the owner: they reach the model with the owner's data",
        SLACK_BOT,
    ),
    Mutation(
        "slack-signature-any",
        "messaging_llm_bot/channels/slack/webhook.py",
        "        return SignatureVerifier(secret).is_valid(body, timestamp, signature)",
        '        return signature.startswith("v0=")',
        "a request with any v0 signature passes (the HMAC is never compared)",
        SLACK_BOT,
    ),
    Mutation(
        "slack-timestamp-unchecked",
        "messaging_llm_bot/channels/slack/webhook.py",
        "    return abs(now - int(timestamp)) <= MAX_AGE_SECONDS",
        "    return True",
        "a request older than five minutes is no longer refused for its age first (slack-sdk's verifier still "
        "bounds it, so it is refused as unsigned: the test notices by the refusal's reason)",
        SLACK_BOT,
    ),
    Mutation(
        "busy-slack-never-joins",
        "messaging_llm_bot/channels/slack/intake.py",
        "owner, msg.text, msg.ts, joinable(msg)",
        "owner, msg.text, msg.ts, False",
        "busy mode steer does nothing on Slack: a message sent meanwhile waits its turn",
        KIT_SLACK_DISCORD,
    ),
    Mutation(
        "slack-refused-token-goes-on",
        "messaging_llm_bot/channels/slack/service.py",
        "            if err.token_refused:",
        "            if False:",
        "a bot token Slack refuses (invalid_auth) at start is logged as an outage and the bot serves, answering no one",
        SLACK_BOT,
    ),
    Mutation(
        "slack-command-dropped",
        "messaging_llm_bot/channels/slack/webhook.py",
        "            await self.webhook.command(fields)",
        "            pass",
        "a registered slash command over the Events API is acknowledged and then answered by nothing",
        (*SLACK_BOT, *KIT_SLACK_DISCORD),
    ),
    Mutation(
        "slack-command-text-lost",
        "messaging_llm_bot/channels/slack/intake.py",
        "            slash.line, slash.conversation, say,",
        "            slash.command, slash.conversation, say,",
        "a slash command reaches the shared path without its text: /pair CODE, /model NAME or /reset yes do nothing",
        SLACK_SOCKET,
    ),
    Mutation(
        "slack-command-owner-data-anywhere",
        "messaging_llm_bot/channels/slack/intake.py",
        "        owner_data = owner and slash.direct and slash.channel == (host.owner_dm or slash.channel)",
        "        owner_data = owner",
        "the owner's /jobs or /now typed in a channel answers there: the owner's data shown to the channel",
        SLACK_BOT,
    ),
    Mutation(
        "slack-command-stranger-runs",
        "messaging_llm_bot/channels/slack/intake.py",
        "        if not host.config.allows(slash.user):",
        "        if False:",
        "anyone in the workspace runs the bot's commands (a stranger's /reset yes clears their chat's history)",
        SLACK_BOT,
    ),
)
