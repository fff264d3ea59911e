"""The drafted skills on the web page (docs/skills.md): each draft's ``SKILL.md`` in full, approved (moved
to ``.agents/skills/``: the running bot offers it at its next turn) or discarded, each a POST with the
page's CSRF token (``/api/skills/drafts/...`` the same with the access token)."""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urlencode

import tornado.web

from ..agentskills.drafts import DraftError, approve, discard, drafts, read_draft
from . import window
from .base import BaseHandler
from .shapes import DraftRow, DraftsBody

if TYPE_CHECKING:
    from .parts import Parts

ACTIONS = ("approve", "discard")


def draft_rows(parts: Parts, start: int = 0, size: int | None = None) -> tuple[DraftsBody, window.Window[DraftRow]]:
    """Every draft waiting (``size`` of them from ``start`` on, for a page: window.py; the others are not read),
    with its description and instructions, one that does not load saying why; and the same rows as the page's
    window of the list."""
    names = drafts(parts.workspace)
    shown = window.window(names, start, size) if size else window.Window(0, names, len(names))
    rows: list[DraftRow] = []
    for name in shown.rows:
        try:
            skill = read_draft(parts.workspace, name)
            rows.append({"name": name, "description": skill.description, "instructions": skill.body, "error": None})
        except DraftError as exc:
            rows.append({"name": name, "description": "", "instructions": "", "error": str(exc)})
    return {"drafts": rows}, window.Window(shown.first, rows, shown.total, shown.size)


def change(parts: Parts, name: str, action: str) -> str:
    """Approve or discard one draft; the sentence the page shows. DraftError says why not."""
    if action == "approve":
        approve(parts.workspace, name)
        return f"{name}: approved; the assistant offers it from its next message"
    discard(parts.workspace, name)
    return f"{name}: discarded"


class DraftsHandler(BaseHandler):
    async def get(self) -> None:
        if self.api:
            self.send_json((await self.off_loop("files", draft_rows, self.parts))[0])
            return
        asked = self.int_argument("from", 0, 0, 10**9)
        _, rows = await self.off_loop("files", draft_rows, self.parts, asked, window.ENTRIES)
        self.page("drafts.html", title="Drafted skills", drafts=rows, done=self.get_query_argument("done", ""))


class DraftActionHandler(BaseHandler):
    async def post(self, name: str, action: str) -> None:
        if action not in ACTIONS:
            raise tornado.web.HTTPError(404, "no such action")
        try:
            said = await self.off_loop("files", change, self.parts, name, action)
        except DraftError as exc:
            if self.api:
                raise tornado.web.HTTPError(409, str(exc)) from None
            said = f"Not done: {exc}"
        if self.api:
            self.send_json({"name": name, "done": action, "said": said})
        else:
            self.redirect("/skills/drafts?" + urlencode({"done": said}))
