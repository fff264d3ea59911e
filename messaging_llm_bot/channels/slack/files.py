"""A Slack message's files for the turn (``file_share``): each fetched from its ``url_private`` with the bot token
(at most ``MAX_FILE_BYTES``), saved in the chat's area like the other channels' attachments
(conversation/media_in.py's ``files_saver``), and read for the model by conversation/images.py's ``files_input``:
pictures to a runner that sees them, documents to text, every file named as outside content. A file that cannot
be fetched is named to the model with the reason (or answered with it, when it is the only one)."""

from __future__ import annotations

import functools

from assistant_framework.config.settings import Settings
from messaging_llm_bot.channels.contract import DeliveryError
from messaging_llm_bot.channels.slack.api import SlackClient, SlackUnavailable
from messaging_llm_bot.channels.slack.format import MAX_FILE_BYTES
from messaging_llm_bot.channels.slack.message import SlackMessage
from messaging_llm_bot.conversation.media_in import files_saver, shared_file
from messaging_llm_bot.conversation.turn import SaveFiles


def save_files(client: SlackClient, msg: SlackMessage, settings: Settings) -> SaveFiles:
    """The turn's input for ``msg``'s files (conversation/media_in.py), or the one sentence that answers instead."""
    fetch = client.download
    files = [shared_file(f.name, f.mimetype, f.size, functools.partial(fetch, f.url), msg.text) for f in msg.files]
    return files_saver(files, settings, limit=MAX_FILE_BYTES, source="Slack", errors=(DeliveryError, SlackUnavailable))
