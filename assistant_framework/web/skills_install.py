"""Installing, updating and removing ``SKILL.md`` skills from the web page (docs/skills.md), on the CLI's
installer (``agentskills/install.py``: staging, review, pinning, provenance, archive checks).

A source (a git URL or repository folder with an optional ref, a skill folder or an archive on this
machine) is fetched into a staging folder in a worker thread, each git command bounded by
``GIT_SECONDS``, and shown as the CLI shows it. The staged copy waits under a random id (at most
``MAX_PENDING``, each for ``PENDING_SECONDS``); only a confirm that names it (a POST with the form
token) installs it: what is installed is what was reviewed, not a second fetch. A source that fails
a check is refused in one sentence and nothing stays written.
"""

from __future__ import annotations

import secrets
import shutil
import threading
import time
from dataclasses import dataclass
from urllib.parse import urlencode

import tornado.web

from ..agentskills.format import SKILL_FILE
from ..agentskills.install import (
    STAGING,
    InstallError,
    InstallRecord,
    Review,
    Staged,
    install,
    read_records,
    remove,
    stage,
)
from ..agentskills.library import WORKSPACE_SKILLS
from ..workspace import Workspace
from .base import BaseHandler, WebState
from .shapes import InstalledSkillRow, ReviewBody

#: Each git command of a fetch from the page (the CLI allows longer: a terminal shows it working).
GIT_SECONDS = 60
#: Reviews waiting for a confirm; a new one past this ends the oldest.
MAX_PENDING = 4
#: A review not confirmed within this is dropped (its staging folder removed).
PENDING_SECONDS = 15 * 60
#: The page's own staging folder: what a stopped page left there is removed at the next start.
WEB_STAGING = f"{STAGING}/web"
#: The longest source, ref and skill name the form takes.
MAX_SOURCE = 2000
MAX_REF = 200
MAX_NAME = 64


@dataclass
class _Pending:
    staged: Staged
    since: float


class PendingReviews:
    """The staged skills shown for review, by id, bounded in number and age. Used from worker threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: dict[str, _Pending] = {}

    def add(self, staged: Staged) -> str:
        with self._lock:
            dropped = self._expired()
            while len(self._items) >= MAX_PENDING:
                oldest = min(self._items, key=lambda key: self._items[key].since)
                dropped.append(self._items.pop(oldest).staged)
            review_id = secrets.token_urlsafe(16)
            self._items[review_id] = _Pending(staged, time.monotonic())
        for old in dropped:
            old.close()
        return review_id

    def take(self, review_id: str) -> Staged | None:
        """The staged skill of a review, once (a second confirm finds nothing); None when unknown or too old."""
        with self._lock:
            dropped = self._expired()
            pending = self._items.pop(review_id, None)
        for old in dropped:
            old.close()
        return pending.staged if pending is not None else None

    def _expired(self) -> list[Staged]:
        now = time.monotonic()
        old = [key for key, item in self._items.items() if now - item.since > PENDING_SECONDS]
        return [self._items.pop(key).staged for key in old]


def review_view(review: Review) -> ReviewBody:
    """What the review page shows: what the CLI's review prints."""
    skill = review.skill
    return {
        "name": skill.name,
        "description": skill.description,
        "licence": skill.license or "(none given)",
        "licence_files": review.licence_files,
        "source": review.source,
        "kind": review.kind,
        "ref": review.ref,
        "commit": review.commit,
        "compatibility": skill.compatibility,
        "allowed_tools": list(skill.allowed_tools or []),
        "capabilities": review.capability_notes(),
        "files": review.files,
        "bytes": sum(size for _, size in review.files),
        "scripts": review.scripts,
        "replaces": review.replaces,
    }


def installed_rows(workspace: Workspace) -> list[InstalledSkillRow]:
    """The skills in ``.agents/skills/``, with where each came from when it was installed from a source."""
    records = read_records(workspace)
    folder = workspace.root / WORKSPACE_SKILLS
    names = sorted(p.parent.name for p in folder.glob(f"*/{SKILL_FILE}")) if folder.is_dir() else []
    rows: list[InstalledSkillRow] = []
    for name in names:
        record: InstallRecord = records.get(name) or {}
        rows.append(
            {
                "name": name,
                "source": record.get("source"),
                "ref": record.get("ref"),
                "commit": record.get("commit"),
                "installed": record.get("installed"),
            }
        )
    return rows


def _field(handler: BaseHandler, name: str, bound: int) -> str:
    """A form field (a JSON body's key under ``/api``), stripped; 400 past its bound."""
    if handler.api:
        value = handler.json_body().get(name) or ""
        if not isinstance(value, str):
            raise tornado.web.HTTPError(400, f"{name} must be a string")
    else:
        value = handler.get_body_argument(name, "")
    value = value.strip()
    if len(value) > bound:
        raise tornado.web.HTTPError(400, f"{name} is longer than {bound} characters")
    return value


class _Handler(BaseHandler):
    def initialize(self, state: WebState, reviews: PendingReviews, api: bool = False) -> None:  # type: ignore[override]
        super().initialize(state, api)
        self.reviews = reviews

    async def _form(
        self, *, done: str = "", error: str = "", source: str = "", ref: str = "", status: int = 200
    ) -> None:
        rows = await self.off_loop("files", installed_rows, self.parts.workspace)
        if self.api:  # the sentence as the answer (not an HTTPError: its message, a source, would be logged)
            self.send_json({"installed": rows, **({"error": error} if error else {})}, status)
            return
        self.set_status(status)
        self.page(
            "skills_install.html",
            title="Install a skill",
            installed=self.entries(rows),
            done=done,
            error=error,
            source=source,
            ref=ref,
        )

    async def _review(self, source: str, ref: str, name: str) -> None:
        """Stage ``source`` off the loop and show it with a confirm form; refused in one sentence."""

        def fetch() -> tuple[str, ReviewBody]:
            staged = stage(
                self.parts.workspace,
                source,
                ref=ref or None,
                name=name or None,
                git_seconds=GIT_SECONDS,
                staging_dir=WEB_STAGING,
            )
            return self.reviews.add(staged), review_view(staged.review)

        try:
            review_id, view = await self.off_loop("runs", fetch)
        except InstallError as exc:
            await self._form(error=f"Not installed: {exc}; nothing written.", source=source, ref=ref, status=400)
            return
        if self.api:
            self.send_json({"review": view, "id": review_id})
            return
        self.page("skills_review.html", title=f"Review {view['name']}", review=view, review_id=review_id)


class InstallFormHandler(_Handler):
    async def get(self) -> None:
        await self._form(done=self.get_query_argument("done", "")[:500])


class ReviewHandler(_Handler):
    async def post(self) -> None:
        source = _field(self, "source", MAX_SOURCE)
        if not source:
            await self._form(error="Give a source: a git URL, or a folder or archive on this machine.", status=400)
            return
        await self._review(source, _field(self, "ref", MAX_REF), _field(self, "skill", MAX_NAME))


class ConfirmHandler(_Handler):
    async def post(self, action: str) -> None:
        review_id = _field(self, "review", 64)

        def finish() -> tuple[str, str | None]:
            staged = self.reviews.take(review_id)
            if staged is None:
                return "Not installed: that review is no longer waiting (too old, or done); review it again.", None
            name = staged.review.skill.name
            try:
                if action == "cancel":
                    return f"{name}: not installed; nothing written.", name
                install(self.parts.workspace, staged)
                return f"Installed {name}; the assistant offers it from its next message.", name
            finally:
                staged.close()

        said, name = await self.off_loop("files", finish)
        if self.api:
            self.send_json({"said": said, "name": name, "done": action if name else None}, 200 if name else 409)
            return
        self.redirect("/skills/install?" + urlencode({"done": said}))


class InstalledActionHandler(_Handler):
    async def post(self, name: str, action: str) -> None:
        if action == "update":
            record = read_records(self.parts.workspace).get(name)
            if record is None:
                await self._form(
                    error=f"{name} was not installed from a source: nothing to update it from.", status=409
                )
                return
            ref = _field(self, "ref", MAX_REF) or str(record.get("ref") or "")
            await self._review(str(record["source"]), ref, name)
            return
        try:
            await self.off_loop("files", remove, self.parts.workspace, name)
        except InstallError as exc:
            await self._form(error=f"Not removed: {exc}.", status=409)
            return
        said = f"Removed {name}; the assistant stops offering it at its next message."
        if self.api:
            self.send_json({"said": said, "name": name, "done": "remove"})
            return
        self.redirect("/skills/install?" + urlencode({"done": said}))


def sweep_staging(workspace: Workspace, now: float | None = None) -> list[str]:
    """Remove what a stopped page left staged (older than a review may wait; a younger one may be another
    page's on the same workspace, still waiting). Returns the names removed."""
    folder = workspace.root / WEB_STAGING
    if not folder.is_dir():
        return []
    now = time.time() if now is None else now
    removed = []
    for entry in folder.iterdir():
        if now - entry.lstat().st_mtime > PENDING_SECONDS:
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry.name)
    return sorted(removed)


def routes(state: WebState) -> list[tuple[str, type[tornado.web.RequestHandler], dict[str, object]]]:
    """The install pages' routes, sharing one list of waiting reviews (made as the server starts)."""
    sweep_staging(state.parts.workspace)
    s: dict[str, object] = {"state": state, "reviews": PendingReviews()}
    a: dict[str, object] = {**s, "api": True}
    return [
        (r"/skills/install", InstallFormHandler, s),
        (r"/api/skills/install", InstallFormHandler, a),
        (r"/skills/install/review", ReviewHandler, s),
        (r"/api/skills/install/review", ReviewHandler, a),
        (r"/skills/install/(confirm|cancel)", ConfirmHandler, s),
        (r"/api/skills/install/(confirm|cancel)", ConfirmHandler, a),
        (r"/skills/installed/([a-z0-9-]{1,64})/(update|remove)", InstalledActionHandler, s),
        (r"/api/skills/installed/([a-z0-9-]{1,64})/(update|remove)", InstalledActionHandler, a),
    ]
