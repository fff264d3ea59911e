"""The floor for bench/e2e.py: a bare python-telegram-bot bot that forwards each message to the model.

No memory, no inbox, no prompt, no rate limiter: one Chat Completions call per message and one
``sendMessage`` with the answer's ``reply`` field. What a user would wait for with nothing but
python-telegram-bot, httpx and the model in between.

    python bench/e2e_floor.py TOKEN BOT_API_BASE_URL MODEL_BASE_URL
"""

from __future__ import annotations

import json
import sys

import httpx
from telegram import Update
from telegram.ext import ApplicationBuilder, ContextTypes, MessageHandler, filters


def main(token: str, bot_base_url: str, model_base_url: str) -> None:
    client = httpx.AsyncClient(timeout=60, limits=httpx.Limits(max_connections=64))

    async def forward(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        body = {"model": "fake-model", "messages": [{"role": "user", "content": update.message.text}]}
        response = await client.post(f"{model_base_url}/chat/completions", json=body)
        content = response.json()["choices"][0]["message"]["content"]
        try:
            text = json.loads(content)["reply"]
        except (ValueError, KeyError, TypeError):
            text = content
        await context.bot.send_message(update.effective_chat.id, text)

    app = (
        ApplicationBuilder().token(token).base_url(bot_base_url).concurrent_updates(64).connection_pool_size(64).build()
    )
    app.add_handler(MessageHandler(filters.TEXT, forward))
    app.run_polling(poll_interval=0.0, timeout=10, allowed_updates=["message"])


if __name__ == "__main__":
    main(*sys.argv[1:4])
