"""The index's reader pool: queries see the last commit, several run at once on their own
connections, and a closed pool refuses new work with a clear error."""

from __future__ import annotations

import sqlite3
import threading

import pytest

from assistant_framework.memory.readers import ReaderPool
from tests.waiting import wait_until


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "x.sqlite3"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE TABLE t (n INTEGER)")
    conn.executemany("INSERT INTO t VALUES (?)", [(i,) for i in range(10)])
    yield path, conn
    conn.close()


def test_query_many_returns_each_result_in_order_and_sees_the_last_commit(db):
    path, writer = db
    pool = ReaderPool(path)
    try:
        queries = [("SELECT n FROM t WHERE n < ? ORDER BY n", (k,)) for k in (3, 1, 5)]
        assert pool.query_many(queries) == [[(0,), (1,), (2,)], [(0,)], [(0,), (1,), (2,), (3,), (4,)]]
        writer.execute("INSERT INTO t VALUES (-1)")
        assert pool.query_many(queries[:2])[1] == [(-1,), (0,)]
    finally:
        pool.close()


def _probed_threads(pool: ReaderPool) -> list[str]:
    """The threads two ``query_many`` queries ran on."""
    seen: list[str] = []
    with pool.reading() as first, pool.reading() as second:  # two connections, both idle afterwards
        for conn in (first, second):
            conn.create_function("probe", 0, lambda: seen.append(threading.current_thread().name) or 1)
    assert pool.query_many([("SELECT probe()", ()), ("SELECT probe()", ())]) == [[(1,)], [(1,)]]
    return seen


def test_query_many_uses_a_second_thread_and_connection(db):
    path, _ = db
    pool = ReaderPool(path, parallel_from=path.stat().st_size)  # as large as it must be
    try:
        seen = _probed_threads(pool)
        assert len(set(seen)) == 2 and any(name.startswith("memory-read") for name in seen)
    finally:
        pool.close()


def test_query_many_on_a_small_index_stays_on_the_callers_thread(db):
    """Below ``parallel_from`` the queries cost less than the hand-over to another thread: one after the other."""
    path, _ = db
    pool = ReaderPool(path, parallel_from=path.stat().st_size + 1)
    try:
        assert _probed_threads(pool) == [threading.current_thread().name] * 2
        assert pool._executor is None  # no thread was started for it
    finally:
        pool.close()


def test_closed_pool_refuses_queries(db):
    path, _ = db
    pool = ReaderPool(path)
    pool.query("SELECT 1")
    pool.close()
    with pytest.raises(sqlite3.ProgrammingError, match="closed"):
        pool.query_many([("SELECT 1", ()), ("SELECT 2", ())])


def test_the_worker_indexes_a_logged_turn_only_once_no_search_is_running(tmp_path):
    from assistant_framework.memory import MemoryService
    from assistant_framework.workspace import Workspace

    service = MemoryService(Workspace(tmp_path / "ws"), {"runtime": {"timezone": "UTC"}})
    try:

        def indexed() -> int:
            return service.index.query("SELECT count(*) FROM entries WHERE text LIKE '%walnut%'")[0][0]

        # The worker's wait for the searches, watched: it began before indexing, and it ended once the search
        # was over (not at once, nor at its 1 s bound), where a fixed 0.3 s sleep looked only at the count.
        searches, began, ended = service._searches, threading.Event(), []
        wait_idle = searches.wait_idle

        def watched(timeout: float) -> bool:
            began.set()
            idle = wait_idle(timeout)
            ended.append((idle, searches.busy, indexed()))
            return idle

        searches.wait_idle = watched  # type: ignore[method-assign]
        with service._searching_now():  # a recall in progress
            service.log_turn("c", "user", "walnut bread")
            wait_until(began.is_set, 5, "the worker's wait for the searches")
            assert indexed() == 0 and ended == []
        assert service.worker.drain(5) and indexed() == 1
        assert ended == [(True, False, 0)]  # woken by the search's end, then it indexed
    finally:
        service.close()
