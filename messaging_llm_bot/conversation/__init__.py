"""The conversation service: what every chat channel shares (per-chat queues, the turn pool, the held inbox,
command texts, the chat and item turns, the intake, approvals, pairing, job runs and their answers, reminders,
the /now digest, voice, images, attachments, markup, chat flags). It imports no channel; channels
(messaging_llm_bot/channels/) import it."""
