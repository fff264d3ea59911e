"""Memory index and files damaged or edited by hand while the service runs: real files, real SQLite."""

from __future__ import annotations

import os
from datetime import datetime, timezone

import pytest

from assistant_framework.memory import MemoryService
from assistant_framework.workspace import Workspace

UTC = timezone.utc


def _delete_index(ws: Workspace) -> None:
    for suffix in ("", "-wal", "-shm"):
        path = ws.path("memory/index.sqlite3" + suffix)
        if path.exists():
            os.remove(path)


def test_index_file_deleted_while_running_is_recreated_and_refilled(ws, service):
    ws.write_text("notes/garden.md", "# Garden\n\nThe tomato seeds are in the blue box.\n")
    service.log_turn("42", "user", "My sister Anna lives in Lisbon", time=datetime(2026, 5, 3, tzinfo=UTC))
    service.refresh()
    assert service.search("tomato seeds") and service.search("Anna Lisbon")

    _delete_index(ws)  # by hand, while the bot runs
    assert [h.path for h in service.search("tomato seeds")][:1] == ["notes/garden.md"]
    assert service.search("Anna Lisbon")[0].snippet.startswith("My sister Anna")
    service.log_turn("42", "user", "The parcel from Porto arrived", time=datetime(2026, 5, 4, tzinfo=UTC))
    assert service.search("parcel Porto")

    # What was indexed since went into the file at the path, not into the deleted one.
    again = MemoryService(ws, {}, start_worker=False)
    try:
        assert again.index.stats().entries == 3
    finally:
        again.close()


def test_refresh_recreates_an_index_file_deleted_while_running(ws, service):
    ws.write_text("notes/garden.md", "# Garden\n\nThe tomato seeds are in the blue box.\n")
    service.refresh()
    _delete_index(ws)
    service.refresh()  # the bot's idle pass
    assert ws.path("memory/index.sqlite3").exists()
    assert service.index.stats().entries == 1
    assert service.search("tomato seeds")[0].path == "notes/garden.md"


def _bump_mtime(ws: Workspace, rel: str) -> None:
    st = os.stat(ws.path(rel))
    os.utime(ws.path(rel), ns=(st.st_atime_ns, st.st_mtime_ns + 10_000_000))


def test_log_line_redacted_by_hand_to_the_same_length_is_reindexed(ws, service):
    when = datetime(2026, 5, 3, tzinfo=UTC)
    service.log_turn("42", "user", "my phone number is 5551234567", time=when)
    for i in range(10):  # later lines: the redacted one is not in the last bytes the index checks
        service.log_turn("42", "user", f"filler line number {i} " + "x" * 40, time=when)
    assert service.search("5551234567")
    rel = "conversations/42/2026-05-03.jsonl"
    data = ws.path(rel).read_bytes()
    ws.path(rel).write_bytes(data.replace(b"5551234567", b"XXXXXXXXXX"))  # same size
    _bump_mtime(ws, rel)
    service.refresh()
    assert service.search("5551234567") == []
    assert service.search("XXXXXXXXXX")[0].snippet == "my phone number is XXXXXXXXXX"


@pytest.mark.parametrize(
    "tail",
    [
        b'{"time":"2026-05-03T01:00:00+00:00","role":"user","text":"torn bet',  # a crash mid-line
        b'{"time":"2026-05-03T01:00:00+00:00","role":"user","text":"beta line"}',  # an editor dropped the newline
    ],
)
def test_turn_logged_after_a_last_line_without_newline_is_kept(ws, service, tail):
    service.log_turn("42", "user", "alpha line", time=datetime(2026, 5, 3, tzinfo=UTC))
    rel = "conversations/42/2026-05-03.jsonl"
    with open(ws.path(rel), "ab") as handle:
        handle.write(tail)
    row = service.log_turn("42", "user", "gamma line", time=datetime(2026, 5, 3, 2, tzinfo=UTC))
    lines = ws.path(rel).read_bytes().split(b"\n")
    assert lines[1] == tail and lines[-1] == b""
    assert row["turn_id"] == "42:2026-05-03:3"  # the line number it has in the file
    hit = service.search("gamma")[0]
    assert hit.snippet == "gamma line" and hit.ref == row["turn_id"]


def _refresh_within(service, seconds: float = 10.0) -> None:
    import threading

    errors: list[BaseException] = []

    def run() -> None:
        try:
            service.refresh()
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), "refresh hung"
    assert not errors, errors


def test_a_symlink_loop_in_notes_does_not_stop_indexing_the_rest(ws, service):
    ws.write_text("notes/garden.md", "# Garden\n\nThe tomato seeds are in the blue box.\n")
    os.symlink("loop.md", ws.path("notes/loop.md"))
    _refresh_within(service)
    assert service.search("tomato seeds")[0].path == "notes/garden.md"
    assert service.reindex() == 1


def test_a_fifo_in_notes_is_skipped_not_read_forever(ws, service):
    ws.write_text("notes/garden.md", "# Garden\n\nThe tomato seeds are in the blue box.\n")
    os.mkfifo(ws.path("notes/pipe.md"))
    _refresh_within(service)
    assert service.search("tomato seeds")[0].path == "notes/garden.md"
    assert service.index.stats().files == 1


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file without read permission")
def test_an_unreadable_note_does_not_stop_indexing_the_rest(ws, service):
    ws.write_text("notes/garden.md", "# Garden\n\nThe tomato seeds are in the blue box.\n")
    ws.write_text("notes/secret.md", "# Secret\n\nkiwi\n")
    os.chmod(ws.path("notes/secret.md"), 0)
    _refresh_within(service)
    assert service.search("tomato seeds")[0].path == "notes/garden.md"


def test_memory_folder_deleted_while_running_is_recreated(ws, service):
    import shutil

    ws.write_text("notes/garden.md", "# Garden\n\nThe tomato seeds are in the blue box.\n")
    service.refresh()
    shutil.rmtree(ws.path("memory"))  # "forget everything" by hand
    _refresh_within(service)
    assert ws.path("memory/index.sqlite3").exists()
    assert service.search("tomato seeds")[0].path == "notes/garden.md"


def test_a_memory_folder_that_is_a_link_out_is_not_walked(ws, service, tmp_path, caplog):
    """`notes` replaced by a link to a folder outside: os.walk followed it, read the whole tree behind it and
    warned once per file; now the folder is skipped with one warning and nothing behind it is indexed."""
    import logging
    import shutil

    outside = tmp_path / "elsewhere-notes"
    outside.mkdir()
    for n in range(30):
        (outside / f"n{n}.md").write_text(f"# N{n}\n\nthe outside pineapple {n}\n")
    shutil.rmtree(ws.path("notes"))
    os.symlink(outside, ws.root / "notes")
    ws.write_text("learnings/garden.md", "- the tomato seeds are in the blue box\n")
    with caplog.at_level(logging.WARNING, logger="assistant_framework.memory"):
        _refresh_within(service)
        service.reindex()
    assert service.search("tomato seeds")[0].path == "learnings/garden.md"
    assert service.search("pineapple") == []
    skips = [r.getMessage() for r in caplog.records if "skipping" in r.getMessage()]
    assert skips and all("skipping notes (" in line for line in skips), skips
