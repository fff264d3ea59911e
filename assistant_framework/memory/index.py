"""The search index: SQLite FTS5 (BM25, porter stemming) at ``memory/index.sqlite3``.

A cache only: every row comes from a workspace file and ``rebuild()`` recreates it. Each
file's size, mtime, read offset and a hash of the bytes just before that offset are kept,
so an appended JSONL file is read from where it stopped, a changed file is re-read and a
deleted file's rows go away. One writer connection, guarded by ``lock``, makes every change;
reads use a small pool of reader connections, so in WAL mode a search sees the last commit
and never waits for an update in progress (SQLite releases the GIL while it works).

What a file's entries become in the tables (rows in their conversation's id slot) is ``index_rows.py``;
the database file itself is ``index_db.py``.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import stat
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from ..workspace import Workspace, WorkspacePathError
from ..workspace.private import make_private_dirs
from .index_rows import IndexRows
from .readers import ReaderPool, Row
from .rowkeys import content_hash, default_time
from .sources import (
    DEFAULT_SOURCES,
    file_entries,
    is_appendable,
    jsonl_entries,
    source_for,
    walk_roots,
)

log = logging.getLogger(__name__)

INDEX_PATH = "memory/index.sqlite3"
_TAIL = 256
#: Paths whose source ``MemoryIndex._source`` remembers (a few MB at most; a workspace of more files asks again).
_SOURCES_REMEMBERED = 50_000


@dataclass
class FileState:
    source: str
    size: int
    mtime_ns: int
    offset: int
    lines: int
    tail_hash: str


@dataclass
class IndexStats:
    files: int
    entries: int
    by_source: dict[str, int]
    bytes: int


class MemoryIndex(IndexRows):
    """FTS5 index over the workspace's memory files (thread-safe); the database file itself
    (opening, schema, reopening) is ``IndexDatabase``'s, in ``index_db.py``."""

    def __init__(
        self, workspace: Workspace, sources: Iterable[tuple[str, str]] = DEFAULT_SOURCES, path: str = INDEX_PATH
    ) -> None:
        self.workspace = workspace
        self.sources = tuple(sources)
        # rel -> its source name or None: a pure function of the path and ``sources`` (fixed for this index), asked
        # for every file of the owner's folders before each recall; fnmatch against every glob was most of that.
        self._source_of: dict[str, str | None] = {}
        self.db_path = workspace.path(path)
        make_private_dirs(self.db_path.parent)
        self.lock = threading.RLock()
        self.readers = ReaderPool(self.db_path)
        self.moved_aside = None  # where a broken index file went; the caller refills
        self.emptied = False  # an index of another schema version was dropped; the caller refills
        self._skipped: set[str] = set()  # files that could not be read, warned about once
        try:
            self.conn = self._open()
        except sqlite3.OperationalError:
            raise  # locked, busy, cannot open: the file may be fine, never move it aside for that
        except sqlite3.DatabaseError as err:  # not a database, malformed: it is only a cache
            self._move_aside(path, err)
            self.conn = self._open()
        self._rel = path
        self._file_id = self._identity()

    # -- writing -------------------------------------------------------------

    def rebuild(self) -> int:
        """Drop every row and read all memory files again; returns the number of entries."""
        with self.lock:
            self.conn.execute("BEGIN")
            try:
                self._clear()
                for rel in self._walk():
                    self._index_file(rel, None)
                self.conn.execute("COMMIT")
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            count: int = self.conn.execute("SELECT count(*) FROM entries").fetchone()[0]
            return count

    def refresh(self, roots: Sequence[str] | None = None) -> int:
        """Walk the memory folders (``roots``: only these top-level folders or files of them) and bring changed,
        new and deleted files up to date; returns how many files changed.

        The walk and the stat calls run without the lock, so searches are not held up by it;
        only changed files are then read, each under the lock.
        """
        if self.reopen_if_replaced():
            roots = None  # the new file is empty: read every file again
        seen: dict[str, tuple[int, int]] = {}
        root_text = str(self.workspace.root)
        for rel in self._walk(roots):
            try:
                st = os.stat(f"{root_text}/{rel}")  # the walk's own path, without a Path object per file
            except OSError:  # gone, a symlink loop, no permission: as if absent (its rows go)
                continue
            if not stat.S_ISREG(st.st_mode):  # a FIFO would block the read forever, a device is no note
                continue
            seen[rel] = (st.st_size, st.st_mtime_ns)
        known = self._known(roots)
        stale = [rel for rel, sig in seen.items() if known.get(rel) != sig] + [rel for rel in known if rel not in seen]
        self._in_batches(stale, lambda rel: self._update(rel) if rel in seen else self._remove(rel))
        return len(stale)

    def _known(self, roots: Sequence[str] | None) -> dict[str, tuple[int, int]]:
        """(size, mtime_ns) of each indexed file (under ``roots``: by the path's index, not a scan of them all)."""
        query = "SELECT path, size, mtime_ns FROM files"
        params: list[str] = []
        if roots is not None:
            if not roots:
                return {}
            # One query for all roots (a recall's refresh of the owner's nine folders ran nine): each root itself
            # (a file), or a path below it, between "root/" and "root0" (the primary key's index serves each term).
            query += " WHERE " + " OR ".join("path=? OR (path>? AND path<?)" for _ in roots)
            params = [bound for root in roots for bound in (root, f"{root}/", f"{root}0")]
        with self.lock:
            return {row[0]: (row[1], row[2]) for row in self.conn.execute(query, params)}

    def index_files(self, paths: Iterable[str]) -> int:
        """Bring these workspace files up to date now, without walking the folders (a collector run
        hands over the files it wrote or removed); files memory does not index are passed over.
        Returns how many files that is."""
        wanted = [rel for rel in dict.fromkeys(paths) if self._source(rel)]
        if wanted and self.reopen_if_replaced():
            self.refresh()  # the new file is empty: read every file again, these included
        else:
            self._in_batches(wanted, self._update)
        return len(wanted)

    def _in_batches(self, paths: list[str], step: Callable[[str], object]) -> None:
        """``step(rel)`` for each path, 200 to a transaction: recall may run in between."""
        for start in range(0, len(paths), 200):
            with self.lock:
                self.conn.execute("BEGIN")
                try:
                    for rel in paths[start : start + 200]:
                        step(rel)
                    self.conn.execute("COMMIT")
                except BaseException:
                    self.conn.execute("ROLLBACK")
                    raise

    def update_file(self, rel: str) -> int:
        """Bring one file up to date (cheap: reads only appended lines); returns entries added."""
        if self.reopen_if_replaced():
            self.refresh()  # the new file is empty: read every file again, this one included
            count: int = self.query("SELECT count(*) FROM entries WHERE path=?", (rel,))[0][0]
            return count
        with self.lock:
            self.conn.execute("BEGIN")
            try:
                added = self._update(rel)
                self.conn.execute("COMMIT")
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            return added

    def purge_source(self, source: str) -> int:
        """Remove a source's rows (the files stay; a later refresh would re-read them)."""
        with self.lock:
            self.conn.execute("BEGIN")
            ids = [r[0] for r in self.conn.execute("SELECT id FROM entries WHERE source=?", (source,))]
            self.conn.executemany("DELETE FROM fts WHERE rowid=?", ((i,) for i in ids))
            self.conn.executemany("DELETE FROM cjkfts WHERE rowid=?", ((i,) for i in ids))
            self.conn.execute("DELETE FROM entries WHERE source=?", (source,))
            self.conn.execute("DELETE FROM files WHERE source=?", (source,))
            self.conn.execute("COMMIT")
            return len(ids)

    def _source(self, rel: str) -> str | None:
        """``source_for(rel, self.sources)``, remembered (forgotten all at once past ``_SOURCES_REMEMBERED`` paths)."""
        try:
            return self._source_of[rel]
        except KeyError:
            pass
        if len(self._source_of) >= _SOURCES_REMEMBERED:
            self._source_of.clear()
        source = self._source_of[rel] = source_for(rel, self.sources)
        return source

    def _walk(self, roots: Sequence[str] | None = None) -> Iterator[str]:
        root = self.workspace.root
        root_text = str(root)
        # One listing of the root: an absent source folder costs nothing, and a present one that is no link needs
        # no confinement check of its own (the listing says so) before it is walked.
        present = _top_level_entries(root)
        for top in walk_roots(self.sources):
            if roots is not None and top not in roots:
                continue
            entry = present.get(top) if present is not None else None
            if present is not None and entry is None:
                continue
            start = root / top
            if entry is None or entry.is_symlink():
                try:
                    self.workspace.path(top)  # a source folder that is a link out is not walked (os.walk follows it)
                except WorkspacePathError as err:
                    self._skip(top, err)
                    continue
            if entry.is_file() if entry is not None else start.is_file():
                if self._source(top):
                    yield top
                continue
            for dirpath, dirnames, filenames in os.walk(start):
                dirnames.sort()
                base = dirpath[len(root_text) + 1 :].replace(os.sep, "/")
                for name in sorted(filenames):
                    rel = f"{base}/{name}"
                    if self._source(rel):
                        yield rel

    def _state(self, rel: str) -> FileState | None:
        row = self.conn.execute(
            "SELECT source, size, mtime_ns, offset, lines, tail_hash FROM files WHERE path=?", (rel,)
        ).fetchone()
        return FileState(*row) if row else None

    def _readable(self, rel: str) -> tuple[Path, os.stat_result] | None:
        """The file's path and stat when it is a regular file inside the workspace; else its rows
        go (a symlink leading out or looping, a FIFO, no permission: skipped, never fatal)."""
        try:
            path = self.workspace.path(rel)
            st = os.stat(path)
        except FileNotFoundError:
            self._remove(rel)
            return None
        except (WorkspacePathError, RuntimeError, OSError) as err:  # RuntimeError: pathlib's symlink loop
            self._skip(rel, err)
            return None
        if not stat.S_ISREG(st.st_mode):
            self._skip(rel, "not a regular file")
            return None
        target = Path(path).relative_to(self.workspace.root).as_posix()
        if target != rel and not self._source(target):
            # A link in notes/ to state/ (say the web page's token): memory indexes only its own folders.
            self._skip(rel, f"a link to {target}, which memory does not index")
            return None
        return path, st

    def _skip(self, rel: str, why: object) -> int:
        self._remove(rel)
        if rel not in self._skipped:  # once per file and process: a refresh runs every minute
            self._skipped.add(rel)
            log.warning("memory index: skipping %s (%s)", rel, why)
        return 0

    def _update(self, rel: str) -> int:
        found = self._readable(rel)
        if found is None:
            return 0
        path, st = found
        state = self._state(rel)
        if state and state.size == st.st_size and state.mtime_ns == st.st_mtime_ns:
            return 0
        # Same size, new mtime: nothing was appended, the file was rewritten in place (a line
        # redacted by hand to the same length): read it all again.
        if state and is_appendable(rel) and st.st_size >= state.offset and st.st_size != state.size:
            try:
                with open(path, "rb") as handle:
                    start = max(0, state.offset - _TAIL)
                    handle.seek(start)
                    if content_hash(handle.read(state.offset - start)) == state.tail_hash:
                        return self._append_from(rel, state, st, handle)
            except OSError as err:
                return self._skip(rel, err)
        return self._index_file(rel, found)

    def _append_from(self, rel: str, state: FileState, st: os.stat_result, handle: BinaryIO) -> int:
        """Read the lines appended since the last pass (``handle`` is positioned at the offset)."""
        data = handle.read(st.st_size - state.offset)
        tail_start = max(0, state.offset - _TAIL)
        handle.seek(tail_start)
        before = handle.read(state.offset - tail_start)
        complete = data[: data.rfind(b"\n") + 1]  # a half-written last line waits for the next pass
        lines, number = [], state.lines
        for raw in complete.splitlines():
            if raw.strip():
                number += 1
                lines.append((number, raw))
        entries = jsonl_entries(lines, rel, state.source)
        self._insert(entries)
        self._extend_segment(rel, state.source, entries)
        offset = state.offset + len(complete)
        tail = (before + complete)[-_TAIL:]
        self.conn.execute(
            "UPDATE files SET size=?, mtime_ns=?, offset=?, lines=?, tail_hash=? WHERE path=?",
            (st.st_size, st.st_mtime_ns, offset, number, content_hash(tail), rel),
        )
        return len(entries)

    def _index_file(self, rel: str, found: tuple[Path, os.stat_result] | None) -> int:
        source = self._source(rel)
        if source is None:
            return 0
        found = found or self._readable(rel)
        if found is None:
            return 0
        path, st = found
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            self._remove(rel)
            return 0
        except OSError as err:
            return self._skip(rel, err)
        self._delete_rows(rel)
        fallback_time = default_time(rel, st.st_mtime)
        if is_appendable(rel):
            data = data[: data.rfind(b"\n") + 1]
        entries = file_entries(data, rel, source, fallback_time)
        self._insert(entries)
        self._update_segment(rel, source)
        lines = sum(1 for raw in data.splitlines() if raw.strip()) if is_appendable(rel) else 0
        self.conn.execute(
            "INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?, ?, ?)",
            (rel, source, st.st_size, st.st_mtime_ns, len(data), lines, content_hash(data[-_TAIL:])),
        )
        return len(entries)

    def _remove(self, rel: str) -> None:
        self._delete_rows(rel)
        self.conn.execute("DELETE FROM files WHERE path=?", (rel,))

    # -- reading -------------------------------------------------------------

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[Row]:
        """Run a read query on a reader connection (sees the last committed state)."""
        try:
            return self.readers.query(sql, params)
        except sqlite3.DatabaseError:
            if not self._refilled():
                raise
            return self.readers.query(sql, params)

    def query_many(self, queries: list[tuple[str, tuple[Any, ...]]]) -> list[list[Row]]:
        """Several read queries at once (in parallel: SQLite works without the GIL); results in order."""
        try:
            return self.readers.query_many(queries)
        except sqlite3.DatabaseError:
            if not self._refilled():
                raise
            return self.readers.query_many(queries)

    def _refilled(self) -> bool:
        """After a failed read: when the index file was deleted or replaced, reopen and refill it."""
        if not self.reopen_if_replaced():
            return False
        self.refresh()
        return True

    def conversation_slot(self, conversation: str) -> int | None:
        """The id slot of a (filesystem-safe) conversation id; None when it has no rows yet."""
        rows = self.query("SELECT slot FROM slots WHERE conversation=?", (conversation,))
        return rows[0][0] if rows else None

    def stats(self) -> IndexStats:
        files = self.query("SELECT count(*) FROM files")[0][0]
        by_source: dict[str, int] = dict(
            self.query("SELECT source, count(*) FROM entries GROUP BY source ORDER BY source")
        )
        size = self.db_path.stat().st_size if self.db_path.exists() else 0
        return IndexStats(files=files, entries=sum(by_source.values()), by_source=by_source, bytes=size)

    def snapshot(self) -> list[Row]:
        """Every entry as a comparable tuple (path, ref, source, time, conversation, text)."""
        return self.query("SELECT path, ref, source, time, conversation, text FROM entries ORDER BY path, seq, ref")

    # -- vector cache ----------------------------------------------------------

    def cached_vectors(self, hashes: list[str], model: str) -> dict[str, bytes]:
        found: dict[str, bytes] = {}
        for i in range(0, len(hashes), 500):
            part = hashes[i : i + 500]
            marks = ",".join("?" * len(part))
            for h, blob in self.query(
                f"SELECT hash, vec FROM vectors WHERE model=? AND hash IN ({marks})", (model, *part)
            ):
                found[h] = blob
        return found

    def store_vectors(self, rows: list[tuple[str, bytes]], model: str) -> None:
        with self.lock:
            self.conn.execute("BEGIN")
            self.conn.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)", ((h, model, b) for h, b in rows))
            self.conn.execute("COMMIT")


def _top_level_entries(root: Path) -> dict[str, os.DirEntry[str]] | None:
    """The entries of the workspace's root folder by name (None when it cannot be listed: every root is then
    tried as before)."""
    try:
        with os.scandir(root) as entries:
            return {entry.name: entry for entry in entries}
    except OSError:
        return None
