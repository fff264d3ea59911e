"""Discord's part of setup and doctor: the owner and the bot token (setup), the token and first message tried
(probe), the doctor's lines (doctor)."""
