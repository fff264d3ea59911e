"""Text stores: learnings (``learnings/<topic>.md``), notes (``notes/<slug>.md``) and routines.

What is written in a turn with outside content is marked (see ``provenance``): a note or a
learnings topic file gets the front matter ``untrusted: true`` (a topic file as a whole, since it
then holds outside text), a routine ``"untrusted": true``. Reads report the mark.
"""

from __future__ import annotations

import builtins  # the stores have a list() method: their annotations name the type through builtins
import re

from ..workspace import Workspace
from ._common import AmbiguousError, JsonListFile, NotFoundError, norm, one_line, pick_one, slugify
from .provenance import UNTRUSTED_KEY, Record, is_marked_text, mark_record, mark_text, shown, split_marked
from .records import Learning, LearningAdded, Note, NoteHit, NoteRef, Routine

LEARNINGS_DIR = "learnings"
NOTES_DIR = "notes"
ROUTINES_FILE = "routines/routines.json"
DEFAULT_TOPIC = "general"
_BULLET = re.compile(r"^\s*[-*]\s+(.*\S)\s*$")


class LearningStore:
    """Short learnings, one ``- text`` line each, grouped in Markdown files by topic."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace

    def _rel(self, topic: str | None) -> str:
        """The topic's file: one named exactly so, else the slug's, else one written by hand whose
        name has the same slug ("Cooking Tips.md" for "cooking tips"), else the slug's (new)."""
        topic = str(topic or DEFAULT_TOPIC).strip() or DEFAULT_TOPIC
        slug = f"{LEARNINGS_DIR}/{slugify(topic, DEFAULT_TOPIC)}.md"
        exact = f"{LEARNINGS_DIR}/{topic}.md"
        if (
            topic.isprintable()
            and "/" not in topic
            and "\\" not in topic
            and exact != slug
            and self.workspace.exists(exact)
        ):
            return exact
        if self.workspace.exists(slug):
            return slug
        for rel in self.workspace.list(f"{LEARNINGS_DIR}/*.md"):
            if f"{LEARNINGS_DIR}/{slugify(_topic_of(rel), DEFAULT_TOPIC)}.md" == slug:
                return rel
        return slug

    def add(self, text: str, topic: str | None = None, *, untrusted: bool = False) -> LearningAdded:
        """Append a learning; ``added`` is False when the same line is already there. ``untrusted``
        (written from outside content) marks the topic file when a line was added."""
        line = one_line(text)
        if not line:
            raise ValueError("learning text is empty")
        rel = self._rel(topic)
        with self.workspace.lock(rel):
            existing = self.workspace.read_text(rel, default="")
            if any(norm(m.group(1)) == norm(line) for m in map(_BULLET.match, existing.splitlines()) if m):
                return {"topic": _topic_of(rel), "text": line, "path": rel, "added": False}
            prefix = "" if not existing or existing.endswith("\n") else "\n"
            updated = f"{existing}{prefix}- {line}\n"
            self.workspace.write_text(rel, mark_text(updated) if untrusted else updated)
        added: LearningAdded = {"topic": _topic_of(rel), "text": line, "path": rel, "added": True}
        if untrusted:
            added[UNTRUSTED_KEY] = True
        return added

    def list(self, topic: str | None = None) -> list[Learning]:
        """Every learning as ``{"topic", "text"}``, optionally of one topic; those of a marked topic
        file start with ``"untrusted": true``."""
        rels = [self._rel(topic)] if topic else self.workspace.list(f"{LEARNINGS_DIR}/*.md")
        found: list[Learning] = []
        for rel in rels:
            text = self.workspace.read_text(rel, default="")
            marked = is_marked_text(text)
            for line in text.splitlines():
                match = _BULLET.match(line)
                if match:
                    learning: Learning = {"topic": _topic_of(rel), "text": match.group(1)}
                    found.append(_marked_first(learning, marked))
        return found

    def forget(self, query: str, topic: str | None = None) -> Learning:
        """Remove the learning matching ``query`` (exact text first, else one substring match)."""
        candidates = self.list(topic)
        exact = [item for item in candidates if norm(item["text"]) == norm(query)]
        matches = exact or [item for item in candidates if norm(query) and norm(query) in norm(item["text"])]
        if not matches:
            raise NotFoundError(f"no learning matches {query!r}")
        if len(matches) > 1:
            options = "; ".join(item["text"] for item in matches[:5])
            raise AmbiguousError(f"{len(matches)} learnings match {query!r}: {options}; quote the one to forget")
        target = matches[0]
        rel = self._rel(target["topic"])
        with self.workspace.lock(rel):
            lines = self.workspace.read_text(rel, default="").splitlines()
            kept, removed = [], False
            for line in lines:
                match = _BULLET.match(line)
                if not removed and match and norm(match.group(1)) == norm(target["text"]):
                    removed = True
                    continue
                kept.append(line)
            self.workspace.write_text(rel, "\n".join(kept) + ("\n" if kept else ""))
        return target


def _topic_of(rel: str) -> str:
    return rel.rsplit("/", 1)[-1].removesuffix(".md")


class NoteStore:
    """Free-form notes, one Markdown file each, starting with ``# Title``."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace

    def add(self, title: str, body: str = "", *, untrusted: bool = False, source: str = "") -> NoteRef:
        """Write a new note and return its path; a taken slug gets ``-2``, ``-3``... ``untrusted``
        (written from outside content) starts it with the front matter ``untrusted: true``; ``source`` (who
        wrote it, e.g. ``mcp:desktop``) goes into that front matter too."""
        title = one_line(title)
        if not title:
            raise ValueError("note title is empty")
        base = slugify(title, "note")
        rel, n = f"{NOTES_DIR}/{base}.md", 1
        while self.workspace.exists(rel):
            n += 1
            rel = f"{NOTES_DIR}/{base}-{n}.md"
        text = f"# {title}\n\n{body.strip()}\n" if body.strip() else f"# {title}\n"
        if source:
            text = f"---\nsource: {one_line(source)}\n---\n{text}"
        self.workspace.write_text(rel, mark_text(text) if untrusted else text)
        note: NoteRef = {"path": rel, "title": title}
        return _marked_first(note, untrusted)

    def list(self) -> list[NoteRef]:
        """All notes as ``{"path", "title"}``; a marked note's starts with ``"untrusted": true``."""
        found: list[NoteRef] = []
        for rel in self.workspace.list(f"{NOTES_DIR}/**/*.md"):
            title, _, marked = self._parse(rel)
            note: NoteRef = {"path": rel, "title": title}
            found.append(_marked_first(note, marked))
        return found

    def read(self, name: str) -> Note:
        """One note by path, slug or title: ``{"path", "title", "body"}``, after ``"untrusted": true``
        for a marked note (its front matter is not part of the body)."""
        rel = self._resolve(name)
        title, body, marked = self._parse(rel)
        note: Note = {"path": rel, "title": title, "body": body}
        return _marked_first(note, marked)

    def search(self, query: str, limit: int = 10) -> builtins.list[NoteHit]:
        """Notes containing ``query`` (or all its words), title hits first, with a snippet."""
        words = norm(query).split()
        if not words:
            raise ValueError("note search query is empty")
        phrase = " ".join(words)
        hits: builtins.list[tuple[bool, str, NoteHit]] = []
        for rel in self.workspace.list(f"{NOTES_DIR}/**/*.md"):
            title, body, marked = self._parse(rel)
            haystack = norm(f"{title} {body}")
            if phrase in haystack or all(word in haystack for word in words):
                in_title = all(word in norm(title) for word in words)
                hit: NoteHit = {"path": rel, "title": title, "snippet": _snippet(body, words)}
                hits.append((not in_title, rel, _marked_first(hit, marked)))
        return [hit for *_, hit in sorted(hits, key=lambda h: (h[0], h[1]))][:limit]

    def _parse(self, rel: str) -> tuple[str, str, bool]:
        """(title, body, marked as outside content); front matter with an ``untrusted`` key is left out."""
        marked, text = split_marked(self.workspace.read_text(rel, default=""))
        lines = text.splitlines()
        if lines and lines[0].startswith("# "):
            return lines[0][2:].strip(), "\n".join(lines[1:]).strip(), marked
        return _topic_of(rel), text.strip(), marked

    def _resolve(self, name: str) -> str:
        wanted = str(name).strip()
        for rel in (wanted, f"{NOTES_DIR}/{wanted}", f"{NOTES_DIR}/{wanted}.md", f"{NOTES_DIR}/{slugify(wanted)}.md"):
            if rel.startswith(f"{NOTES_DIR}/") and rel.endswith(".md") and self.workspace.exists(rel):
                return rel
        rows = [{"id": "", **item} for item in self.list()]
        return str(pick_one(rows, wanted, "note")["path"])


def _marked_first(record: Record, marked: bool) -> Record:
    """``record`` with the mark first when ``marked`` (so a result cut short still shows it)."""
    return shown(mark_record(record)) if marked else record


def _snippet(body: str, words: list[str], width: int = 160) -> str:
    flat = one_line(body)
    at = min((i for w in words if (i := flat.casefold().find(w)) >= 0), default=0)
    start = max(0, at - width // 4)
    text = flat[start : start + width]
    return ("…" if start else "") + text + ("…" if start + width < len(flat) else "")


class RoutineStore:
    """The user's routines in ``routines/routines.json``: name, when, steps."""

    def __init__(self, workspace: Workspace) -> None:
        self.file: JsonListFile[Routine] = JsonListFile(workspace, ROUTINES_FILE)

    def set(self, name: str, steps: str, when: str = "", *, untrusted: bool = False) -> tuple[Routine, str]:
        """Add or replace a routine by name; returns ``(routine, "added"|"updated")``. ``untrusted``
        (written from outside content) marks it; a trusted update keeps an existing mark."""
        name = one_line(name)
        if not name or not str(steps).strip():
            raise ValueError(f"routine needs a name and steps, got name {name!r}")
        with self.file.edit() as rows:
            for row in rows:
                if norm(row.get("name")) == norm(name):
                    row.update({"steps": str(steps).strip(), "when": when or row.get("when", "")})
                    if untrusted:
                        mark_record(row)
                    return row, "updated"
            routine: Routine = {"name": name, "when": when or "", "steps": str(steps).strip()}
            if untrusted:
                mark_record(routine)
            rows.append(routine)
        return routine, "added"

    def list(self) -> list[Routine]:
        return self.file.load()

    def delete(self, name: str) -> Routine:
        """Remove the routine matching ``name`` and return it."""
        with self.file.edit() as rows:
            routine = pick_one(rows, name, "routine", label="name")
            rows.remove(routine)
        return routine
