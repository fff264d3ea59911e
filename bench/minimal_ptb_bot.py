"""The floor for start-up: a minimal python-telegram-bot bot that polls and echoes.

``python bench/minimal_ptb_bot.py TOKEN BASE_URL BASE_FILE_URL`` builds an ``Application``
against the given Bot API (the fake, in the benchmarks) and long-polls until SIGTERM.
Nothing of this project is imported: it is what any PTB bot pays before its first poll.
"""

from __future__ import annotations

import sys

from telegram import Update
from telegram.ext import Application, ContextTypes, MessageHandler, filters


async def echo(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
    """Answer a text message with the same text."""
    if update.effective_message is not None and update.effective_message.text:
        await update.effective_message.reply_text(update.effective_message.text)


def main(argv: list[str]) -> int:
    token, base_url, base_file_url = argv[1:4]
    app = Application.builder().token(token).base_url(base_url).base_file_url(base_file_url).build()
    app.add_handler(MessageHandler(filters.TEXT, echo))
    app.run_polling(drop_pending_updates=False)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
