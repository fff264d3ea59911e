"""The loop: one message in, one reply out. The agent, turn records, prompt history, prompt assembly,
the policy gate, the honesty note, per-conversation locks and the bot's defaults."""
