"""The Telegram slash commands (/help, /status, /now, /reset, /stop, ...): their texts come from
conversation/commands.py, shared with the other frontends; owner-only ones pass the check in telegram/access.py."""

from __future__ import annotations

import asyncio
from datetime import datetime
from zoneinfo import ZoneInfo

from telegram import InlineKeyboardButton, InlineKeyboardMarkup, Update
from telegram.ext import Application, CallbackQueryHandler, CommandHandler, ContextTypes, MessageHandler, filters

from assistant_framework.access import OWNER_ONLY_COMMANDS
from messaging_llm_bot.channels.telegram.access import Access, Handler
from messaging_llm_bot.channels.telegram.send import answer_update
from messaging_llm_bot.channels.telegram.settings import (
    TelegramSettings,
    for_other_bot,
    message_conversation,
    message_of,
)
from messaging_llm_bot.channels.telegram.turn import TurnRunner
from messaging_llm_bot.conversation import commands as texts
from messaging_llm_bot.conversation.job_texts import jobs_text
from messaging_llm_bot.conversation.notices import digest_now
from messaging_llm_bot.conversation.runtime import Runtime
from messaging_llm_bot.conversation.voice import voice_command

#: Messages the command handlers take: new ones (an edit must not trigger a second answer), never a
#: forwarded "/reset" (someone else's text, settings.is_command).
ONLY_NEW = filters.UpdateType.MESSAGE
COMMAND = filters.COMMAND & ~filters.FORWARDED


class Commands:
    """The command handlers of one Telegram frontend."""

    def __init__(self, runtime: Runtime, access: Access, turns: TurnRunner) -> None:
        self.runtime = runtime
        self.access = access
        self.turns = turns

    @property
    def settings(self) -> TelegramSettings:
        """The current ``telegram`` settings."""
        return self.access.settings

    def owner_data(self, update: Update) -> bool:
        """True only in the owner's own private chat (telegram/access.py)."""
        return self.access.owner_data(update)

    @staticmethod
    def conversation(update: Update) -> str:
        """The conversation id of the chat or forum topic an update came from."""
        message = update.effective_message
        if message is None:  # every handler that asks has a message (or a button under one)
            raise ValueError(f"update {update.update_id} carries no message")
        return message_conversation(message)

    def _offered(self, update: Update) -> list[str]:
        """The skills this chat's turns are offered (the agent decides): all only in the owner's own chat."""
        return self.runtime.agent.offered_skills(self.owner_data(update))

    async def cmd_help(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        text = texts.help_text(self._offered(update), owner_data=self.owner_data(update))
        await answer_update(update, context.bot, text)

    async def cmd_skills(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        text = texts.skills_text(self.runtime.skills, self._offered(update), owner_data=self.owner_data(update))
        await answer_update(update, context.bot, text)

    async def cmd_skill(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        name = " ".join(context.args or [])
        await answer_update(update, context.bot, texts.skill_text(self.runtime.skills, name, self._offered(update)))

    async def cmd_status(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        if not self.owner_data(update):  # model, skills and collector errors are the owner's business
            await answer_update(update, context.bot, texts.GUEST_STATUS)
            return
        await answer_update(update, context.bot, await asyncio.to_thread(self.runtime.status_text))

    async def cmd_now(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        await answer_update(update, context.bot, await asyncio.to_thread(self.digest_text))

    async def cmd_jobs(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        message = update.effective_message
        if context.args and context.args[0].lower() == "add" and message is not None and message.text:
            # /jobs add ...: the conversation service's, as in every channel (conversation/job_add.py)
            conversation, owner = self.conversation(update), self.owner_data(update)
            run = texts.run_command
            text = await asyncio.to_thread(run, self.runtime, conversation, message.text, owner_data=owner)
            await answer_update(update, context.bot, text or "")
            return
        tz = self.settings.timezone
        limits = self.runtime.settings.jobs
        text = await asyncio.to_thread(jobs_text, self.runtime.workspace, datetime.now(ZoneInfo(tz)), tz, limits)
        await answer_update(update, context.bot, text)

    def digest_text(self) -> str:
        """The /now digest for this moment (no model call)."""
        return digest_now(self.runtime.workspace, self.settings.timezone)

    async def cmd_reload(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        report = await asyncio.to_thread(self.runtime.reload)
        await answer_update(update, context.bot, texts.reload_text(report))

    async def cmd_stats(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        text = await asyncio.to_thread(texts.runtime_stats, self.runtime)
        await answer_update(update, context.bot, text)

    async def cmd_why(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        conversation = self.conversation(update)
        agent = self.runtime.agent
        await answer_update(
            update, context.bot, texts.why_text(agent.last_recall(conversation), agent.last_summary(conversation))
        )

    async def cmd_voice(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """/voice, /voice on, /voice off: whether this chat's replies are spoken too (conversation/voice.py)."""
        text = await asyncio.to_thread(
            voice_command,
            self.turns.flags,
            self.runtime.settings.voice,
            self.conversation(update),
            " ".join(context.args or []),
        )
        await answer_update(update, context.bot, text)

    async def on_unknown_command(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        message = message_of(update)
        command = (message.text or "").split()[0]
        if for_other_bot(message, context.bot.username):
            return  # meant for another bot in the group
        await answer_update(update, context.bot, f"Unknown command {command}. /help lists what I understand.")

    async def cmd_stop(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """Stop the turn running in this chat; an open confirmation question counts as declined."""
        chat = update.effective_chat
        stopped = self.runtime.agent.stop(self.conversation(update))
        if stopped and self.turns.approvals is not None:
            self.turns.approvals.decline_all(chat.id)
        await answer_update(update, context.bot, texts.STOPPING_TEXT if stopped else texts.NOTHING_TO_STOP_TEXT)

    async def cmd_reset(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """Say what will be cleared and ask for confirmation with a button."""
        keyboard = InlineKeyboardMarkup(
            [
                [
                    InlineKeyboardButton("Clear history", callback_data="reset:yes"),
                    InlineKeyboardButton("Cancel", callback_data="reset:no"),
                ]
            ]
        )
        await update.effective_message.reply_text(
            "This clears the message history of this conversation, so I forget what we talked about here. "
            "Notes, tasks, reminders, learnings and other saved data are kept.",
            reply_markup=keyboard,
        )

    async def cmd_new(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """Start a new conversation in this chat or topic (the earlier one is kept)."""
        made = await asyncio.to_thread(self.runtime.agent.new_session, self.conversation(update))
        await answer_update(update, context.bot, texts.new_text(*made))

    async def cmd_sessions(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        listing = await asyncio.to_thread(self.runtime.agent.session_list, self.conversation(update))
        await answer_update(update, context.bot, texts.sessions_text(*listing))

    async def cmd_resume(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        args = " ".join(context.args or [])
        text = await asyncio.to_thread(texts.resume_command, self.runtime, self.conversation(update), args)
        await answer_update(update, context.bot, text)

    async def on_reset_choice(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        query = update.callback_query
        await query.answer()
        if query.data == "reset:yes":
            text = await asyncio.to_thread(self.runtime.agent.reset, self.conversation(update))
        else:
            text = "Kept the history."
        await query.edit_message_text(text)

    def register(self, app: Application) -> None:
        """Add the command handlers (owner-only ones behind their check), /reset's buttons and the answer to
        an unknown command."""
        commands: tuple[tuple[str, Handler], ...] = (
            ("start", self.cmd_help),
            ("help", self.cmd_help),
            ("skills", self.cmd_skills),
            ("skill", self.cmd_skill),
            ("stop", self.cmd_stop),
            ("reset", self.cmd_reset),
            ("new", self.cmd_new),
            ("sessions", self.cmd_sessions),
            ("resume", self.cmd_resume),
            ("status", self.cmd_status),
            ("now", self.cmd_now),
            ("jobs", self.cmd_jobs),
            ("reload", self.cmd_reload),
            ("stats", self.cmd_stats),
            ("why", self.cmd_why),
            ("voice", self.cmd_voice),
        )
        for name, callback in commands:
            if name in OWNER_ONLY_COMMANDS:
                callback = self.access.owner_only(name, callback)
            app.add_handler(CommandHandler(name, callback, filters=ONLY_NEW & ~filters.FORWARDED))
        app.add_handler(CallbackQueryHandler(self.on_reset_choice, pattern=r"^reset:(yes|no)$"))
        app.add_handler(MessageHandler(ONLY_NEW & COMMAND, self.on_unknown_command))
