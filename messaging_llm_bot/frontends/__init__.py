"""Chat surfaces that hand messages to the agent: Telegram, the terminal chat, and what they share
(command texts, the /now digest, reminder delivery)."""
