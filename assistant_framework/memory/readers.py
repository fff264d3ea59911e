"""Reader connections to the index: a small pool, and several queries run at once.

In WAL mode a reader sees the last commit and never waits for the writer. SQLite releases
the GIL while it works, so two range queries of one search run in parallel on two cores.

A search bounds its time with ``time_limit(seconds)``: every read query made inside it (also
those ``query_many`` runs on other threads) has a progress handler that interrupts SQLite once
the limit has passed, and raises ``QueryTimeout`` (not a database error: the index is fine).
"""

from __future__ import annotations

import queue
import sqlite3
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

#: One row of an SQLite result.
Row = tuple[Any, ...]

#: SQLite virtual machine steps between two looks at the clock (about a millisecond of work).
PROGRESS_STEPS = 10_000
#: ``query_many`` runs its queries at once only on an index file at least this large: on a smaller one each
#: query takes less than handing it to another thread and back (a recall on a young index paid that each turn).
PARALLEL_FROM_BYTES = 4 << 20

_deadline: ContextVar[float | None] = ContextVar("memory_query_deadline", default=None)


class QueryTimeout(Exception):
    """A read query ran past its search's time limit and was interrupted."""


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Read queries made in this block (in this context) end, ``QueryTimeout``, ``seconds`` from now."""
    at = time.monotonic() + seconds
    outer = _deadline.get()
    token = _deadline.set(at if outer is None else min(at, outer))
    try:
        yield
    finally:
        _deadline.reset(token)


class ReaderPool:
    """Read-only connections to one SQLite file, opened on demand and reused (thread-safe)."""

    def __init__(self, db_path: Path, parallel: int = 2, parallel_from: int = PARALLEL_FROM_BYTES) -> None:
        self.db_path = db_path
        self.parallel = parallel
        self.parallel_from = parallel_from  # the index file's size (bytes) from which queries run at once
        self._lock = threading.Lock()
        self._idle: queue.SimpleQueue[sqlite3.Connection] = queue.SimpleQueue()
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

    def query(self, sql: str, params: tuple[Any, ...] = (), deadline: float | None = None) -> list[Row]:
        """Run one read query (sees the last committed state), interrupted at ``deadline`` (monotonic
        seconds; default: the enclosing ``time_limit``)."""
        deadline = _deadline.get() if deadline is None else deadline
        if deadline is None:
            with self.reading() as conn:
                return conn.execute(sql, params).fetchall()
        if time.monotonic() >= deadline:
            raise QueryTimeout
        with self.reading() as conn:
            conn.set_progress_handler(lambda: time.monotonic() >= deadline, PROGRESS_STEPS)
            try:
                return conn.execute(sql, params).fetchall()
            except sqlite3.OperationalError:
                if time.monotonic() >= deadline:
                    raise QueryTimeout from None
                raise
            finally:
                conn.set_progress_handler(None, 0)

    def query_many(self, queries: list[tuple[str, tuple[Any, ...]]]) -> list[list[Row]]:
        """Several read queries at once, each on its own connection (one after the other on an index smaller than
        ``parallel_from``); results in the given order."""
        if len(queries) < 2 or self.parallel < 2 or not self._large():
            return [self.query(sql, params) for sql, params in queries]
        deadline = _deadline.get()  # the executor's threads do not share this context
        with self._lock:
            if self._closed:
                raise sqlite3.ProgrammingError(f"memory index {self.db_path} is closed")
            if self._executor is None:
                self._executor = ThreadPoolExecutor(self.parallel - 1, thread_name_prefix="memory-read")
            futures = [self._executor.submit(self.query, sql, params, deadline) for sql, params in queries[1:]]
        try:
            first = self.query(*queries[0])  # the caller's own thread takes one
        finally:
            results = [_outcome(future) for future in futures]
        rows: list[list[Row]] = [first]
        for result in results:
            if isinstance(result, BaseException):
                raise result
            rows.append(result)
        return rows

    def _large(self) -> bool:
        """The index file is large enough for its queries to run at once (``parallel_from``)."""
        if self.parallel_from <= 0:
            return True
        try:
            return self.db_path.stat().st_size >= self.parallel_from
        except OSError:
            return True  # the queries say what is wrong

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


def _outcome(future: Future[list[Row]]) -> list[Row] | BaseException:
    """A future's result, or the exception it raised (every future is waited for)."""
    try:
        return future.result()
    except Exception as exc:  # noqa: BLE001 - handed back to be raised by the caller
        return exc
