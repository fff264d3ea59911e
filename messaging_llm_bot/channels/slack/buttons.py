"""Approvals as Block Kit buttons: the question of an ``ask`` call posted with Confirm and Decline (and "Allow for
this conversation" where the question offers it), and the owner's press, which Slack sends as an interactive
``block_actions`` payload (to the request URL as ``payload=`` form data, signed like the events; over Socket Mode
as an ``interactive`` envelope).

Each question's buttons carry a random token (``<token>:yes``); a press counts only from the owner, in the chat
the question was asked in, while the question is open. The answer typed as a reply ("yes", "no") keeps working:
the message's text says so. Once answered (either way, or not in time) the question's message is updated to say
what was chosen, without its buttons.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from typing import Literal, NotRequired, TypedDict

#: Block Kit's bound on a section's text.
MAX_SECTION_CHARS = 3000
_VALUE = re.compile(r"([0-9a-f]{16}):(yes|no|chat)")
_LABELS = {"yes": "Confirm", "no": "Decline", "chat": "Allow for this conversation"}
_STYLES = {"yes": "primary", "no": "danger"}


@dataclass(frozen=True)
class Asked:
    """An open question's message: its buttons' token, the question key the answer goes to, where the message
    is, and its text (mrkdwn, without the how-to-answer line)."""

    token: str
    key: str
    channel: str
    ts: str
    text: str


@dataclass(frozen=True)
class Press:
    """A button pressed on a question: by whom, in which channel, which token and choice."""

    user: str
    channel: str
    token: str
    choice: str  # yes, no or chat


class TextObject(TypedDict):
    """Block Kit's text object."""

    type: Literal["mrkdwn", "plain_text"]
    text: str


class SectionBlock(TypedDict):
    type: Literal["section"]
    text: TextObject


class Button(TypedDict):
    """A question's button: its value is ``<token>:<choice>``."""

    type: Literal["button"]
    action_id: str
    text: TextObject
    value: str
    style: NotRequired[str]


class ActionsBlock(TypedDict):
    type: Literal["actions"]
    block_id: str
    elements: list[Button]


#: The blocks the channel posts: a question's text and its buttons.
Block = SectionBlock | ActionsBlock


def new_token() -> str:
    return secrets.token_hex(8)


def section(mrkdwn: str) -> SectionBlock:
    return {"type": "section", "text": {"type": "mrkdwn", "text": mrkdwn[:MAX_SECTION_CHARS]}}


def button(token: str, choice: str) -> Button:
    """The button of one choice (yes, no, chat) of the question ``token``."""
    made: Button = {
        "type": "button",
        "action_id": f"approve_{choice}",
        "text": {"type": "plain_text", "text": _LABELS[choice]},
        "value": f"{token}:{choice}",
    }
    if choice in _STYLES:
        made["style"] = _STYLES[choice]
    return made


def question_blocks(mrkdwn: str, token: str, offers_chat: bool) -> list[Block]:
    """The question's text and its buttons."""
    choices = ["yes", "no", "chat"] if offers_chat else ["yes", "no"]
    buttons = [button(token, choice) for choice in choices]
    return [section(mrkdwn), {"type": "actions", "block_id": f"approval_{token}", "elements": buttons}]


def answered_blocks(mrkdwn: str, chosen: str) -> list[Block]:
    """The question's message once closed: its text and what was chosen (``chosen_text``, or why none was), no
    buttons."""
    return [section(f"{mrkdwn}\n\n*{chosen}*")]


def press_of(payload: object) -> Press | None:
    """The button press of a ``block_actions`` payload on a question's button, or None."""
    if not isinstance(payload, dict) or payload.get("type") != "block_actions":
        return None
    user, channel, actions = payload.get("user"), payload.get("channel"), payload.get("actions")
    if not isinstance(user, dict) or not isinstance(channel, dict) or not isinstance(actions, list) or not actions:
        return None
    action = actions[0]
    value = action.get("value") if isinstance(action, dict) else None
    found = _VALUE.fullmatch(value) if isinstance(value, str) else None
    user_id, channel_id = user.get("id"), channel.get("id")
    if found is None or not isinstance(user_id, str) or not isinstance(channel_id, str):
        return None
    return Press(user_id, channel_id, found[1], found[2])
