"""The index's database file: opening it (WAL), its schema and version, a broken file moved
aside, a file deleted or replaced while open. The rows themselves are ``index.MemoryIndex``'s."""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from ..workspace.private import make_private_dirs, private_file
from .day_terms import scratch_tables
from .readers import ReaderPool

if TYPE_CHECKING:
    from ..workspace import Workspace

log = logging.getLogger(__name__)

SCHEMA_VERSION = 9
#: Seconds the writer's connection waits for another connection's lock before the open fails with "database is
#: locked" (sqlite3's own default; named so a test of a locked index can shorten it).
BUSY_TIMEOUT_SECONDS = 5.0

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS files (
    path TEXT PRIMARY KEY, source TEXT, size INTEGER, mtime_ns INTEGER,
    offset INTEGER, lines INTEGER, tail_hash TEXT);
CREATE TABLE IF NOT EXISTS entries (
    id INTEGER PRIMARY KEY, path TEXT NOT NULL, source TEXT NOT NULL, ref TEXT NOT NULL,
    seq INTEGER NOT NULL, time TEXT, ts REAL, conversation TEXT, role TEXT, text TEXT NOT NULL,
    outside INTEGER NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS entries_path_seq ON entries(path, seq);
CREATE INDEX IF NOT EXISTS entries_source ON entries(source);
CREATE INDEX IF NOT EXISTS entries_conv_ts ON entries(conversation, ts);
CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(body, date, scope, tokenize='porter unicode61');
CREATE TABLE IF NOT EXISTS segments (
    id INTEGER PRIMARY KEY, path TEXT UNIQUE NOT NULL, conversation TEXT, tokens INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS segterms (term TEXT, seg INTEGER, tf INTEGER NOT NULL, PRIMARY KEY (term, seg))
    WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS segdf (term TEXT PRIMARY KEY, df INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS segstats (one INTEGER PRIMARY KEY CHECK (one = 1), days INTEGER, tokens INTEGER);
INSERT OR IGNORE INTO segstats VALUES (1, 0, 0);
CREATE VIRTUAL TABLE IF NOT EXISTS cjkfts USING fts5(body, tokenize='trigram');
CREATE TABLE IF NOT EXISTS slots (conversation TEXT PRIMARY KEY, slot INTEGER UNIQUE NOT NULL);
CREATE TABLE IF NOT EXISTS vectors (hash TEXT, model TEXT, vec BLOB, PRIMARY KEY (hash, model));
"""


_TABLES = (
    "fts",
    "segterms",
    "segdf",
    "segstats",
    "cjkfts",
    "segments",
    "entries",
    "files",
    "vectors",
    "slots",
    "meta",
)


class IndexDatabase:
    """The SQLite side of ``MemoryIndex``: it sets ``workspace``, ``db_path``, ``lock``, ``readers``,
    ``conn``, ``moved_aside``, ``emptied``, ``_rel`` and ``_file_id`` in its ``__init__``."""

    workspace: Workspace
    db_path: Path
    lock: threading.RLock
    readers: ReaderPool
    conn: sqlite3.Connection
    moved_aside: str | None
    emptied: bool
    _rel: str
    _file_id: tuple[int, int] | None

    def _identity(self) -> tuple[int, int] | None:
        try:
            st = os.stat(self.db_path)
        except FileNotFoundError:
            return None
        return st.st_dev, st.st_ino

    def reopen_if_replaced(self) -> bool:
        """Open the file now at the index path when the one open was deleted or replaced (by
        hand, a restore) while running: else every write went to the deleted file and a reader
        opened later saw an empty one. True when it reopened (the rows must be read again)."""
        with self.lock:
            if self._identity() == self._file_id:
                return False
            log.warning(
                "memory index %s was deleted or replaced while open: reopening it and reading the files again",
                self._rel,
            )
            old, self.readers = self.readers, ReaderPool(self.db_path)
            old.close()
            self.conn.close()
            make_private_dirs(self.db_path.parent)  # the whole memory/ folder may be gone
            try:
                self.conn = self._open()
            except sqlite3.OperationalError:
                raise
            except sqlite3.DatabaseError as err:
                self._move_aside(self._rel, err)
                self.conn = self._open()
            self._file_id = self._identity()
            return True

    def _open(self) -> sqlite3.Connection:
        # Created 0600 before SQLite opens it: the index holds all memory text, and SQLite gives its
        # -wal and -shm files the database file's mode.
        private_file(self.db_path)
        conn = sqlite3.connect(
            str(self.db_path), timeout=BUSY_TIMEOUT_SECONDS, check_same_thread=False, isolation_level=None
        )
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA temp_store=MEMORY")
            self.conn = conn
            self._ensure_schema()
            scratch_tables(conn, "temp")  # where the writer cuts a day's new text into words (index_rows.py)
        except BaseException:
            conn.close()
            raise
        return conn

    def _move_aside(self, rel: str, err: Exception) -> None:
        """Keep the broken file (and its WAL) for a human as ``*.broken-<time>``; the next refresh refills."""
        aside = self.workspace.move_aside(rel)
        for suffix in ("-wal", "-shm"):
            if self.workspace.exists(rel + suffix):
                os.replace(self.workspace.path(rel + suffix), self.workspace.path(aside + suffix))
        log.warning(
            "memory index %s could not be opened (%s): moved aside to %s; rebuilding it from the files", rel, err, aside
        )
        self.moved_aside = aside

    def _ensure_schema(self) -> None:
        with self.lock:
            tables = {r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            row = (
                self.conn.execute("SELECT value FROM meta WHERE key='schema'").fetchone() if "meta" in tables else None
            )
            columns = {r[1] for r in self.conn.execute("PRAGMA table_info(fts)")} if "fts" in tables else set()
            if tables and (row is None or int(row[0]) != SCHEMA_VERSION or columns != {"body", "date", "scope"}):
                # An index from another version is only a cache: drop it and read the files again (the caller refills).
                self.emptied = True
                # (segfts: the whole-day documents of version 8 and before, now counted in segterms)
                for name in (*_TABLES, "segfts"):
                    self.conn.execute(f"DROP TABLE IF EXISTS {name}")
            self.conn.executescript(_SCHEMA)
            self.conn.execute("INSERT OR REPLACE INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))

    def close(self) -> None:
        self.readers.close()
        with self.lock:
            self.conn.close()

    def _clear(self) -> None:
        self.conn.execute("DELETE FROM entries")
        self.conn.execute("DELETE FROM fts")
        self.conn.execute("DELETE FROM files")
        self.conn.execute("DELETE FROM segments")
        self.conn.execute("DELETE FROM segterms")
        self.conn.execute("DELETE FROM segdf")
        self.conn.execute("UPDATE segstats SET days=0, tokens=0")
        self.conn.execute("DELETE FROM cjkfts")
        self.conn.execute("DELETE FROM slots")
