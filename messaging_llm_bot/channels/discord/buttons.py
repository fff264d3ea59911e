"""An ``ask`` approval as buttons (discord.ui): the question goes to the owner's DM with Yes and No (and "Allow for
this conversation" where the question offers it); a press answers it (conversation/approvals.py's OpenQuestions),
the buttons are taken off the message, and the answer is shown under the question. Only the owner's press counts:
anyone else is told so, privately, and the question stays open. Replying yes or no still answers too
(``ReplyApprovals.resolve``)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from messaging_llm_bot.agent.guard import ALLOW_CONVERSATION
from messaging_llm_bot.conversation.approvals import ALLOWANCE, Answer, OpenQuestions

if TYPE_CHECKING:
    import discord

log = logging.getLogger(__name__)

HOW_TO_ANSWER = "Press a button, or reply yes or no."
HOW_TO_ANSWER_OR_ALLOW = f"Press a button, or reply yes, no or chat (allow for this conversation: {ALLOWANCE})."
NOT_YOURS = "Only the owner can answer this question."
SHOWN = {True: "Yes: going ahead.", False: "No: not done.", ALLOW_CONVERSATION: "Allowed for this conversation."}


def question_view(questions: OpenQuestions, chat: str, owner: Callable[[], str | None]) -> discord.ui.View:
    """The buttons of the open question in ``chat``; ``owner`` is read at the press (a ``/reload`` applies)."""
    import discord

    view = discord.ui.View(timeout=None)  # the question's own timeout ends it (OpenQuestions)
    choices: list[tuple[str, Answer, discord.ButtonStyle]] = [
        ("Yes", True, discord.ButtonStyle.success),
        ("No", False, discord.ButtonStyle.danger),
    ]
    if questions.offered(chat):
        choices.append(("Allow for this conversation", ALLOW_CONVERSATION, discord.ButtonStyle.secondary))
    for label, answer, style in choices:
        button: discord.ui.Button[discord.ui.View] = discord.ui.Button(
            label=label, style=style, custom_id=f"ask:{chat}:{label.split()[0].lower()}"
        )
        button.callback = _press(questions, chat, answer, owner, view)  # type: ignore[method-assign,assignment]  # discord.ui takes a plain coroutine function
        view.add_item(button)
    return view


def _press(
    questions: OpenQuestions, chat: str, answer: Answer, owner: Callable[[], str | None], view: discord.ui.View
) -> Callable[[discord.Interaction[discord.Client]], Coroutine[Any, Any, None]]:
    async def pressed(interaction: discord.Interaction[discord.Client]) -> None:
        if str(interaction.user.id) != owner():
            log.info("discord: %s pressed a button of the owner's question; refused", interaction.user.id)
            await interaction.response.send_message(NOT_YOURS, ephemeral=True)
            return
        taken = questions.answer(chat, answer)
        view.stop()
        shown = SHOWN[answer] if taken else "This question is closed."
        message = interaction.message
        content = f"{message.content}\n\n{shown}" if message is not None else shown
        await interaction.response.edit_message(content=content[:2000], view=None)

    return pressed
