"""The drafted skills on the web page (docs/skills.md): each draft's ``SKILL.md`` in full, approved (moved
to ``.agents/skills/``: the running bot offers it at its next turn) or discarded, each a POST with the
page's CSRF token (``/api/skills/drafts/...`` the same with the access token)."""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urlencode

import tornado.web

from ..agentskills.drafts import DraftError, approve, discard, drafts, read_draft
from .base import BaseHandler
from .shapes import DraftRow, DraftsBody

if TYPE_CHECKING:
    from .parts import Parts

ACTIONS = ("approve", "discard")


def draft_rows(parts: Parts) -> DraftsBody:
    """Every draft waiting, with its description and instructions; one that does not load says why."""
    rows: list[DraftRow] = []
    for name in drafts(parts.workspace):
        try:
            skill = read_draft(parts.workspace, name)
            rows.append({"name": name, "description": skill.description, "instructions": skill.body, "error": None})
        except DraftError as exc:
            rows.append({"name": name, "description": "", "instructions": "", "error": str(exc)})
    return {"drafts": rows}


def change(parts: Parts, name: str, action: str) -> str:
    """Approve or discard one draft; the sentence the page shows. DraftError says why not."""
    if action == "approve":
        approve(parts.workspace, name)
        return f"{name}: approved; the assistant offers it from its next message"
    discard(parts.workspace, name)
    return f"{name}: discarded"


class DraftsHandler(BaseHandler):
    async def get(self) -> None:
        data = await self.off_loop("files", draft_rows, self.parts)
        if self.api:
            self.send_json(data)
            return
        self.page("drafts.html", title="Drafted skills", data=data, done=self.get_query_argument("done", ""))


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
