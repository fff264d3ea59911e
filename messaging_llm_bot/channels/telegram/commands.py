"""The Telegram slash commands: each known name has its PTB handler, and its answer is the conversation service's
to the name PTB matched (conversation/commands.py: the same texts and rules in every channel, the owner-only
commands refused outside the owner's own private chat). What is Telegram's own: /reset's
buttons, /stop declining an open question's buttons, and an unknown command meant for another bot."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

from telegram import InlineKeyboardButton, InlineKeyboardMarkup, Update
from telegram.ext import Application, CallbackQueryHandler, CommandHandler, ContextTypes, MessageHandler, filters

from messaging_llm_bot.channels.telegram.access import Access
from messaging_llm_bot.channels.telegram.send import answer_update
from messaging_llm_bot.channels.telegram.settings import for_other_bot, message_conversation, message_of
from messaging_llm_bot.channels.telegram.turn import TelegramTurns
from messaging_llm_bot.conversation import commands as texts
from messaging_llm_bot.conversation.runtime import Runtime

#: Messages the command handlers take: new ones (an edit must not trigger a second answer), never a
#: forwarded "/reset" (someone else's text, settings.is_command).
ONLY_NEW = filters.UpdateType.MESSAGE
COMMAND = filters.COMMAND & ~filters.FORWARDED
#: The commands answered by the conversation service's text alone (``start`` is /help's old name); /stop and
#: /reset are Telegram's own (``Commands.register``).
SHARED = ["start", *(name for name, _ in texts.COMMANDS if name not in ("stop", "reset"))]

Handler = Callable[[Update, ContextTypes.DEFAULT_TYPE], Coroutine[Any, Any, None]]


class Commands:
    """The command handlers of one Telegram frontend."""

    def __init__(self, runtime: Runtime, access: Access, turns: TelegramTurns) -> None:
        self.runtime = runtime
        self.access = access
        self.turns = turns

    @staticmethod
    def conversation(update: Update) -> str:
        """The conversation id of the chat or forum topic an update came from."""
        message = update.effective_message
        if message is None:  # every handler that asks has a message (or a button under one)
            raise ValueError(f"update {update.update_id} carries no message")
        return message_conversation(message)

    def shared(self, name: str) -> Handler:
        """The handler of ``/name``: the conversation service's answer to the name PTB matched (never a name
        read again from the text, which could differ: ``/NOW@Bot``), with the rest of the line as it was sent;
        an owner-only one is checked there on that name, against the owner's own private chat (``owner_data``)."""

        async def answer(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
            words = (message_of(update).text or "").split(None, 1)
            line = f"/{name} {words[1] if len(words) > 1 else ''}".strip()
            owner = self.access.owner_data(update)
            run = texts.run_command
            text = await asyncio.to_thread(run, self.runtime, self.conversation(update), line, owner_data=owner)
            await answer_update(update, context.bot, text or f"/{name} is not available here.")

        return answer

    async def on_unknown_command(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        message = message_of(update)
        command = (message.text or "").split()[0]
        if for_other_bot(message, context.bot.username):
            return  # meant for another bot in the group
        await answer_update(update, context.bot, texts.unknown_command_text(command))

    async def cmd_stop(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """Stop the turn running in this chat; an open confirmation question counts as declined."""
        approvals, chat = self.turns.approvals, update.effective_chat
        decline = (lambda: approvals.questions.decline_all(chat.id)) if approvals is not None else (lambda: None)
        await answer_update(update, context.bot, texts.stop_turn(self.runtime, self.conversation(update), decline))

    async def cmd_reset(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """Say what will be cleared and ask for confirmation with a button."""
        yes = InlineKeyboardButton("Clear history", callback_data="reset:yes")
        keyboard = InlineKeyboardMarkup([[yes, InlineKeyboardButton("Cancel", callback_data="reset:no")]])
        await update.effective_message.reply_text(texts.RESET_QUESTION, reply_markup=keyboard)

    async def on_reset_choice(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        query = update.callback_query
        await query.answer()
        if query.data == "reset:yes":
            text = await asyncio.to_thread(self.runtime.agent.reset, self.conversation(update))
        else:
            text = "Kept the history."
        await query.edit_message_text(text)

    def register(self, app: Application) -> None:
        """Add the command handlers, /reset's buttons and the answer to an unknown command."""
        own: dict[str, Handler] = {"stop": self.cmd_stop, "reset": self.cmd_reset}
        for name in (*SHARED, *own):
            callback = own.get(name) or self.shared(name)
            app.add_handler(CommandHandler(name, callback, filters=ONLY_NEW & ~filters.FORWARDED))
        app.add_handler(CallbackQueryHandler(self.on_reset_choice, pattern=r"^reset:(yes|no)$"))
        app.add_handler(MessageHandler(ONLY_NEW & COMMAND, self.on_unknown_command))
