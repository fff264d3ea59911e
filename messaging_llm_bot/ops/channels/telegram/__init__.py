"""Telegram's part of setup and doctor: the token and owner's id (setup), the Bot API's getMe, webhook and
getUpdates calls (probe), the doctor's lines (doctor)."""
