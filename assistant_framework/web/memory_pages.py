"""The memory pages: search, each category, one file (view, edit, delete), facts and new notes; each also
JSON under ``/api/...`` (the same handler with ``api=True``). Blocking work runs off the event loop."""

from __future__ import annotations

import re
from datetime import datetime, time
from urllib.parse import quote, urlencode
from zoneinfo import ZoneInfo

import tornado.web

from ..json_types import JsonObject
from ..memory.recall import is_outside
from ..memory.search import MemoryHit
from . import memfiles, views, window
from .base import BaseHandler
from .shapes import HitBody

#: The largest file the page's editor opens: the lines one page shows, and characters whose form fits the
#: server's body bound (web.max_body_bytes, 4 MiB) even URL-encoded at 9 bytes a character. A larger file
#: is edited on disk: the editor holds the whole file in one page, and a form past the bound is refused.
EDITOR_LINES = window.ROWS
EDITOR_CHARS = 400_000


def anchor(ref: str) -> str:
    """The element id a memory hit's ref points at in the file view."""
    if match := re.match(r"^L(\d+)", ref):
        return f"L{match.group(1)}"
    if match := re.match(r"^\[(\d+)\]$", ref):
        return f"r{match.group(1)}"
    return re.sub(r"[^A-Za-z0-9_.:-]", "-", ref)


def hit_link(hit: MemoryHit) -> str:
    """Where a hit opens: a conversation day at its turn, or the file at its line or record."""
    path = hit.path or ""
    parts = path.split("/")
    if len(parts) == 3 and parts[0] == "conversations" and parts[2].endswith(".jsonl"):
        return day_link(parts[1], parts[2][:-6], hit.ref or "")
    at = anchor(hit.ref or "")
    start = window.page_of(_row_index(at))
    return "/file?" + urlencode({"path": path, **({"from": start} if start else {})}) + f"#{at}"


def _row_index(at: str) -> int:
    """The row an anchor names (``L12``: the 12th line, index 11; ``r3``: record 3), 0 for any other."""
    if re.fullmatch(r"[Lr]\d{1,9}", at):
        return int(at[1:]) - (1 if at[0] == "L" else 0)
    return 0


def hit_body(hit: MemoryHit) -> HitBody:
    """A hit as ``/api/memory`` sends it: its fields, whether its text came from outside, and where it opens."""
    return {
        "source": hit.source,
        "path": hit.path,
        "ref": hit.ref,
        "time": hit.time,
        "snippet": hit.snippet,
        "score": hit.score,
        "conversation": hit.conversation,
        "outside": is_outside(hit),
        "link": hit_link(hit),
    }


def turn_link(ref: object) -> str | None:
    """The conversation day of a turn id ``<chat>:<YYYY-MM-DD>:<n>`` (where an extracted fact came from)."""
    match = re.fullmatch(r"([^/:]+):(\d{4}-\d{2}-\d{2}):\d+", str(ref or ""))
    return day_link(match.group(1), match.group(2), str(ref)) if match else None


def day_link(chat: str, day: str, turn_id: str) -> str:
    """A conversation day at a turn, on the page that holds it: a turn id ends in its line's number in the
    day's log (memory/log.py)."""
    number = re.fullmatch(r".*:(\d{1,9})", turn_id)
    start = window.page_of(int(number.group(1)) - 1, window.TURNS) if number else 0
    query = f"?from={start}" if start else ""
    return f"/conversations/{quote(chat)}/{day}{query}#{anchor(turn_id)}"


class MemoryHandler(BaseHandler):
    """Search, and the list of what can be edited."""

    async def get(self) -> None:
        query = self.get_query_argument("q", "").strip()
        source = self.get_query_argument("source", "").strip() or None
        since, until = self._day("since"), self._day("until", end=True)
        hits: list[HitBody] = []
        problem = None
        memory = self.parts.memory
        if query and memory is None:
            problem = "memory is off (memory.enabled is false)"
        elif query:
            limit = self.int_argument("limit", 20, 1, 100)

            def search() -> list[HitBody]:
                memory.refresh()
                found = memory.search(query, limit=limit, source=source, since=since, until=until)
                return [hit_body(h) for h in found]

            hits = await self.off_loop("search", search)
        if self.api:
            self.send_json({"query": query, "source": source, "hits": hits, "problem": problem})
            return
        workspace = self.parts.workspace
        counts = await self.off_loop(
            "files", lambda: {c: len(memfiles.list_files(workspace, c)) for c in memfiles.EDITABLE}
        )
        self.page(
            "memory.html",
            title="Memory",
            query=query,
            source=source or "",
            hits=hits,
            problem=problem,
            since=self.get_query_argument("since", ""),
            until=self.get_query_argument("until", ""),
            sources=views.search_sources(),
            categories=memfiles.EDITABLE,
            counts=counts,
        )

    def _day(self, name: str, end: bool = False) -> datetime | None:
        text = self.get_query_argument(name, "").strip()
        if not text:
            return None
        try:
            day = datetime.strptime(text, "%Y-%m-%d").date()
        except ValueError:
            raise tornado.web.HTTPError(400, "dates are YYYY-MM-DD") from None
        zone = ZoneInfo(self.parts.settings.runtime.timezone)
        return datetime.combine(day, time.max if end else time.min, tzinfo=zone)


class CategoryHandler(BaseHandler):
    async def get(self, category: str) -> None:
        if category not in memfiles.EDITABLE:
            raise tornado.web.HTTPError(404, "no such memory category")
        workspace = self.parts.workspace

        def read() -> tuple[list[str], list[JsonObject] | None, list[str]]:
            files = memfiles.list_files(workspace, category)  # listed once: 20,000 notes take 2 s
            facts = memfiles.facts_view(workspace) if category == "facts" else None
            return files, facts, memfiles.unreadable(workspace, files)

        files, facts, problems = await self.off_loop("files", read)
        if self.api:
            self.send_json({"category": category, "files": files, "facts": facts, "problems": problems})
            return
        self.page(
            "category.html",
            title=category.capitalize(),
            category=category,
            about=memfiles.EDITABLE[category][1],
            files=self.entries(files),
            facts=None if facts is None else self.entries(facts, "facts_from"),
            problems=problems,
            turn_link=turn_link,
        )


class MemoryFileHandler(BaseHandler):
    """View, edit (POST / PUT) and delete (DELETE) one memory file; every path is confined."""

    def _path(self) -> str:
        return self.raw_argument("path")

    def file_page(
        self,
        shown: memfiles.MemoryFile,
        *,
        edit: bool,
        error: str | None = None,
        draft: str | None = None,
        conflict: bool = False,
        title: str | None = None,
    ) -> None:
        """The file's page: its rows from ``from=`` on (window.py), the editor only for a file it holds whole."""
        records = shown.records if shown.records is not None and not conflict else None
        rows = window.window(records if records is not None else shown.lines, self.int_argument("from", 0, 0, 10**9))
        self.page(
            "file.html",
            title=title or shown.path,
            file=shown,
            edit=edit,
            error=error,
            draft=draft,
            conflict=conflict,
            anchor=anchor,
            rows=rows,
            cut=window.cut,
            fits_editor=len(shown.lines) <= EDITOR_LINES and len(shown.text) <= EDITOR_CHARS,
            editor_lines=EDITOR_LINES,
            editor_chars=EDITOR_CHARS,
        )

    async def get(self) -> None:
        workspace, rel = self.parts.workspace, self._path()
        try:
            shown = await self.off_loop("files", memfiles.load, workspace, rel)
        except memfiles.MemoryFileRefused as exc:
            raise tornado.web.HTTPError(403, str(exc).replace("%", "%%")) from None
        except FileNotFoundError:
            if self.api or self.get_query_argument("edit", "") != "1":
                raise tornado.web.HTTPError(404, "no such file") from None
            try:  # e.g. the first profile.md
                shown = await self.off_loop("files", memfiles.empty, workspace, rel)
            except memfiles.MemoryFileRefused as exc:
                raise tornado.web.HTTPError(403, str(exc).replace("%", "%%")) from None
        if self.api:
            self.send_json(shown)
            return
        self.file_page(shown, edit=self.get_query_argument("edit", "") == "1")

    async def post(self) -> None:
        body = self.json_body() if self.api else None
        content = body.get("content") if body is not None else self.get_body_argument("content", None)
        # The version the editor opened (scripts may leave it out: then the save is not checked).
        version = body.get("version") if body is not None else self.get_body_argument("version", None)
        if not isinstance(content, str):
            raise tornado.web.HTTPError(400, "content is missing")
        if version is not None and not isinstance(version, str):
            raise tornado.web.HTTPError(400, "version must be a string")
        await self._save(self._path(), content, version)

    put = post

    async def _save(self, rel: str, content: str, version: str | None) -> None:
        workspace, memory, secrets = self.parts.workspace, self.parts.memory, self.state.secrets
        try:
            real = await self.off_loop("files", memfiles.save, workspace, memory, rel, content, secrets, version)
        except memfiles.MemoryFileRefused as exc:
            raise tornado.web.HTTPError(403, str(exc).replace("%", "%%")) from None
        except memfiles.EditConflict as exc:  # changed since the editor opened: nothing written, both texts shown
            if self.api:
                self.send_json({"error": str(exc), "version": exc.current}, 409)
                return
            self.set_status(409)
            shown = await self.off_loop("files", memfiles.load_or_empty, workspace, rel)
            self.file_page(shown, edit=True, error=str(exc), draft=content, conflict=True)
            return
        except ValueError as exc:  # bad JSON: nothing written, the draft is shown again
            if self.api:
                self.send_json({"error": str(exc)}, 400)
                return
            self.set_status(400)
            shown = await self.off_loop("files", memfiles.load_or_empty, workspace, rel)
            shown.version = version or shown.version  # still the version the draft was written against
            self.file_page(shown, edit=True, error=str(exc), draft=content, title=rel)
            return
        if self.api:
            self.send_json({"saved": real})
        else:
            self.redirect("/file?" + urlencode({"path": real}))

    async def delete(self) -> None:
        try:
            gone = await self.off_loop("files", memfiles.delete, self.parts.workspace, self.parts.memory, self._path())
        except memfiles.MemoryFileRefused as exc:
            raise tornado.web.HTTPError(403, str(exc).replace("%", "%%")) from None
        self.send_json({"deleted": gone}, 200 if gone else 404)


class FileDeleteHandler(BaseHandler):
    """The form's delete: a whole file, or one record of a JSON list (``id``)."""

    async def post(self) -> None:
        rel, record = self.raw_argument("path"), self.get_body_argument("id", "")
        version = self.get_body_argument("version", None)
        workspace, memory = self.parts.workspace, self.parts.memory

        def delete() -> str:
            if record:
                memfiles.delete_record(workspace, memory, rel, record)
                real, source = memfiles.resolve(workspace, rel)
                return f"/memory/{source}" if source == "facts" else "/file?" + urlencode({"path": real})
            _, source = memfiles.resolve(workspace, rel, edit=True)
            memfiles.delete(workspace, memory, rel, expected=version)
            return f"/memory/{source}"

        try:
            where = await self.off_loop("files", delete)
        except memfiles.MemoryFileRefused as exc:
            raise tornado.web.HTTPError(403, str(exc).replace("%", "%%")) from None
        except memfiles.EditConflict as exc:
            raise tornado.web.HTTPError(409, str(exc).replace("%", "%%")) from None
        self.redirect(where)


class FactHandler(BaseHandler):
    """Add or correct a fact as the owner's; the old value stays in the file as superseded."""

    async def post(self) -> None:
        values = (
            self.json_body()
            if self.api
            else {k: self.get_body_argument(k, "") for k in ("subject", "attribute", "value")}
        )
        try:
            fact, action = await self.off_loop(
                "files",
                memfiles.set_fact,
                self.parts.workspace,
                self.parts.memory,
                str(values.get("subject") or ""),
                str(values.get("attribute") or ""),
                str(values.get("value") or ""),
            )
        except ValueError as exc:
            raise tornado.web.HTTPError(400, str(exc).replace("%", "%%")) from None
        if self.api:
            self.send_json({"fact": fact, "result": action})
        else:
            self.redirect("/memory/facts")


class NewNoteHandler(BaseHandler):
    async def post(self) -> None:
        title = " ".join(self.get_body_argument("title", "").split()) or "Untitled"
        workspace, memory = self.parts.workspace, self.parts.memory

        def create() -> str:
            rel = memfiles.new_note_path(workspace, title)
            memfiles.save(workspace, memory, rel, f"# {title}\n")
            return rel

        rel = await self.off_loop("files", create)
        self.redirect("/file?" + urlencode({"path": rel, "edit": "1"}))
