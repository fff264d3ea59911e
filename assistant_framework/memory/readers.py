"""Reader connections to the index: a small pool, and several queries run at once.

In WAL mode a reader sees the last commit and never waits for the writer. SQLite releases
the GIL while it works, so two range queries of one search run in parallel on two cores.
"""

from __future__ import annotations

import queue
import sqlite3
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


class ReaderPool:
    """Read-only connections to one SQLite file, opened on demand and reused (thread-safe)."""

    def __init__(self, db_path: Path, parallel: int = 2) -> None:
        self.db_path = db_path
        self.parallel = parallel
        self._lock = threading.Lock()
        self._idle: queue.SimpleQueue = queue.SimpleQueue()
        self._opened: list[sqlite3.Connection] = []
        self._closed = False
        self._executor: ThreadPoolExecutor | None = None

    @contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        """A reader connection from the pool (opened on demand, returned after use)."""
        try:
            conn = self._idle.get_nowait()
        except queue.Empty:
            with self._lock:
                if self._closed:
                    raise sqlite3.ProgrammingError(f"memory index {self.db_path} is closed") from None
                conn = sqlite3.connect(str(self.db_path), check_same_thread=False, isolation_level=None)
                conn.execute("PRAGMA temp_store=MEMORY")
                conn.execute("PRAGMA query_only=1")
                self._opened.append(conn)
        try:
            yield conn
        finally:
            self._idle.put(conn)

    def query(self, sql: str, params: tuple = ()) -> list[tuple]:
        """Run one read query (sees the last committed state)."""
        with self.reading() as conn:
            return conn.execute(sql, params).fetchall()

    def query_many(self, queries: list[tuple[str, tuple]]) -> list[list[tuple]]:
        """Several read queries at once, each on its own connection; results in the given order."""
        if len(queries) < 2 or self.parallel < 2:
            return [self.query(sql, params) for sql, params in queries]
        with self._lock:
            if self._closed:
                raise sqlite3.ProgrammingError(f"memory index {self.db_path} is closed")
            if self._executor is None:
                self._executor = ThreadPoolExecutor(self.parallel - 1, thread_name_prefix="memory-read")
            futures = [self._executor.submit(self.query, sql, params) for sql, params in queries[1:]]
        first = self.query(*queries[0])  # the caller's own thread takes one
        return [first] + [future.result() for future in futures]

    def close(self) -> None:
        with self._lock:
            self._closed = True
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True)
        with self._lock:
            for conn in self._opened:
                conn.close()
            self._opened.clear()
