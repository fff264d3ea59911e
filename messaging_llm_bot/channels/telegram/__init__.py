"""The Telegram frontend on python-telegram-bot 22.x: polling or webhook, allowlist, durable inbox,
per-chat order, progress edits, formatting and splitting, media, approvals."""
