"""Matrix's part of setup and doctor: the bot's account and homeserver (setup), the login tried (probe), the
doctor's lines (doctor)."""
