"""The Control section of the web page (``/control``, docs/web.md#control): the owner's chat's model and the
pairing codes waiting, set from the page with the same code as ``/model`` and ``/pair``.

The model: the configured runners (conversation/model_choice.py's lines, caps included) and the choice of the
owner's home chat (agent/runner_choice.py's file, which the next turn reads); a switch or "default" goes
through ``model_choice.choose``, the one check ``/model NAME`` uses. The pairing codes: who waits (channel,
sender, when, expiry; never a code or its hash), approved by typing the code the stranger was given (the code
is what proves the stranger is the one who asked: ``pairing.approve``, as ``/pair`` and ``pair approve``; it
writes the allowlist into ``config/local/``) as guest or owner, or revoked. Every change is a POST with the
page's form token (``/api/control/...`` with the access token); the page is mounted by the bot side (the
framework does not import the bot). In the bot's process an approval reloads its config at once; on
``assistant web`` alone the running bot applies it at the stranger's next message, as after ``pair approve``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlencode

from assistant_framework.json_types import JsonObject
from assistant_framework.spending import SpendingLedger
from assistant_framework.web.base import BaseHandler, WebState
from assistant_framework.web.parts import Parts
from assistant_framework.web.server import Mount
from messaging_llm_bot.agent.runner_choice import RunnerChoices
from messaging_llm_bot.conversation import pairing
from messaging_llm_bot.conversation.model_choice import RunnerLine, choose, runner_lines
from messaging_llm_bot.conversation.routes import home_conversation

if TYPE_CHECKING:  # pragma: no cover
    from messaging_llm_bot.conversation.runtime import Runtime

#: A form field longer than this is no runner name, code or role: refused before any lookup.
MAX_FIELD_CHARS = 100


class Control:
    """What the section reads and changes: the config it approves into, and the bot when it runs the page."""

    def __init__(self, config_root: Path, runtime: Runtime | None = None) -> None:
        self.config_root = config_root
        self.runtime = runtime

    def _lines(self, parts: Parts) -> list[RunnerLine]:
        if self.runtime is not None:  # the client turns use now (a /reload swaps it)
            llm = self.runtime.agent.llm
            return runner_lines(list(llm.runners), llm.spending)
        ledger = SpendingLedger(parts.workspace, parts.settings.runtime.timezone)  # reads only
        return runner_lines(list(parts.settings.llm.runners), ledger)

    def view(self, parts: Parts) -> JsonObject:
        lines = self._lines(parts)
        chat = home_conversation(parts.settings, parts.workspace)
        chosen = RunnerChoices(parts.workspace).get(chat)
        known = chosen if any(line.name == chosen for line in lines) else None
        waiting = pairing.PairingStore(parts.workspace).pending()
        return {
            "chat": chat,
            "chosen": chosen,
            "current": known or (lines[0].name if lines else None),
            "runners": [
                {"name": r.name, "model": r.model, "vision": r.vision, "caps_left": r.caps_left, "at_cap": r.at_cap}
                for r in lines
            ],
            "pairing": [
                {"channel": p.channel, "sender": p.sender, "created": p.created, "expires": p.expires} for p in waiting
            ],
        }

    def switch(self, parts: Parts, name: str) -> str:
        chat = home_conversation(parts.settings, parts.workspace)
        return choose(RunnerChoices(parts.workspace), self._lines(parts), chat, name, esc=str)

    def approve(self, parts: Parts, code: str, role: str) -> str:
        store = pairing.PairingStore(parts.workspace)
        entry, text = pairing.approve(store, self.config_root, code, role)
        if entry is None:
            return text
        if self.runtime is None:
            store.note_approved(entry.channel, entry.sender)  # the bot applies it at their next message
            return text
        report = self.runtime.reload()
        return text if report.error is None else f"{text} But the running config could not be reloaded: {report.error}"

    def revoke(self, parts: Parts, sender: str) -> str:
        removed = pairing.PairingStore(parts.workspace).revoke(sender)
        return f"Revoked {removed} waiting code(s)." if removed else "No waiting code matches that; nothing changed."


class ControlHandler(BaseHandler):
    def initialize(self, state: WebState, api: bool = False, control: Control | None = None) -> None:
        super().initialize(state, api)
        assert control is not None
        self.control = control

    def field(self, name: str) -> str:
        value = self.get_body_argument(name, "")
        return value if len(value) <= MAX_FIELD_CHARS else ""

    async def get(self) -> None:
        data = await self.off_loop("files", self.control.view, self.parts)
        if self.api:
            self.send_json(data)
            return
        self.page("control.html", title="Control", data=data, done=self.get_query_argument("done", "")[:500])


class ControlActionHandler(ControlHandler):
    async def post(self, action: str) -> None:
        if action == "model":
            said = await self.off_loop("files", self.control.switch, self.parts, self.field("runner"))
        elif action == "approve":
            said = await self.off_loop(
                "files", self.control.approve, self.parts, self.field("code"), self.field("role") or "guest"
            )
        else:  # revoke (the route allows no other word)
            said = await self.off_loop("files", self.control.revoke, self.parts, self.field("sender"))
        if self.api:
            self.send_json({"done": action, "said": said})
        else:
            self.redirect("/control?" + urlencode({"done": said}))


def control_mount(config_root: str | Path, runtime: Runtime | None = None) -> Mount:
    """The section's routes; ``runtime``: the bot's, when the page runs in its process."""
    control = Control(Path(config_root), runtime)

    def routes(state: WebState) -> list[tuple[str, type[BaseHandler], dict[str, object]]]:
        s: dict[str, object] = {"state": state, "control": control}
        a: dict[str, object] = {**s, "api": True}
        return [
            (r"/control", ControlHandler, s),
            (r"/api/control", ControlHandler, a),
            (r"/control/(model|approve|revoke)", ControlActionHandler, s),
            (r"/api/control/(model|approve|revoke)", ControlActionHandler, a),
        ]

    return routes  # type: ignore[return-value]
