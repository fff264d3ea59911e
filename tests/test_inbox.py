"""Durable inbox and outbound ledger: survive restarts, answer duplicates once, keep order."""

from __future__ import annotations

import json
import logging

from assistant_framework.inbox import Inbox, conversation_dir
from assistant_framework.workspace import Workspace


def test_accept_persists_before_processing_and_complete_removes(tmp_path):
    ws = Workspace(tmp_path)
    inbox = Inbox(ws)
    item = inbox.accept("101", "tg:5", {"text": "hello"})
    assert item is not None
    files = ws.list("state/inbox/pending/**/*.json")
    assert len(files) == 1
    assert json.loads(ws.read_text(files[0]))["payload"] == {"text": "hello"}
    inbox.complete(item.item_id)
    assert ws.list("state/inbox/pending/**/*.json") == []
    assert inbox.pending() == []


def test_duplicate_source_id_is_refused_also_after_restart(tmp_path):
    ws = Workspace(tmp_path)
    inbox = Inbox(ws)
    first = inbox.accept("7", "tg:1", {"text": "a"})
    assert inbox.accept("7", "tg:1", {"text": "a"}) is None
    inbox.complete(first.item_id)
    again = Inbox(ws)  # a restart: Telegram re-delivers an update that was never confirmed
    assert again.accept("7", "tg:1", {"text": "a"}) is None
    assert again.accept("8", "tg:1", {"text": "b"}) is not None


def test_an_item_left_by_an_earlier_run_is_told_from_one_accepted_since(tmp_path, monkeypatch):
    """What a channel asks before taking over a live message a kill may have left: the items pending when the
    inbox was opened, not those accepted since, even with a clock that went back between the runs."""
    import time

    ws = Workspace(tmp_path)
    first = Inbox(ws)
    left = first.accept("1", "mx:room", {"n": 1})
    assert not first.left_by_earlier_run(left)  # accepted in this run
    monkeypatch.setattr(time, "time_ns", lambda: 1)  # the next run's clock is far behind the first's
    restarted = Inbox(ws)
    since = restarted.accept("2", "mx:room", {"n": 2})
    assert restarted.left_by_earlier_run(restarted.get(left.item_id))
    assert not restarted.left_by_earlier_run(since)


def test_pending_items_survive_restart_in_order_with_ledger(tmp_path):
    ws = Workspace(tmp_path)
    inbox = Inbox(ws)
    ids = [inbox.accept(str(n), "tg:-100" if n % 2 else "tg:42", {"n": n}).item_id for n in range(6)]
    inbox.record_part(ids[0], 0, 555)
    inbox.record_part(ids[0], 1, 556)
    inbox.complete(ids[1])
    # simulated kill -9: a fresh object reads only the files
    restarted = Inbox(ws)
    pending = restarted.pending()
    assert [p.payload["n"] for p in pending] == [0, 2, 3, 4, 5]
    assert [p.payload["n"] for p in pending if p.conversation_id == "tg:42"] == [0, 2, 4]
    assert restarted.parts_sent(ids[0]) == 2
    assert restarted.get(ids[0]).parts == {0: 555, 1: 556}
    assert restarted.parts_sent(ids[2]) == 0
    # a new message after restart sorts after the old ones
    late = restarted.accept("99", "tg:42", {"n": 99})
    assert restarted.pending()[-1].item_id == late.item_id


def test_parts_sent_counts_only_leading_parts(tmp_path):
    inbox = Inbox(Workspace(tmp_path))
    item = inbox.accept("1", "tg:1", {})
    inbox.record_part(item.item_id, 0, 10)
    inbox.record_part(item.item_id, 2, 12)
    assert inbox.parts_sent(item.item_id) == 1


def test_crash_between_item_and_seen_log_still_dedupes(tmp_path):
    ws = Workspace(tmp_path)
    Inbox(ws).accept("55", "tg:1", {"text": "x"})
    ws.delete("state/inbox/seen.log")  # the seen line never made it to disk
    restarted = Inbox(ws)
    assert restarted.accept("55", "tg:1", {"text": "x"}) is None
    assert len(restarted.pending()) == 1


def test_damaged_pending_file_is_skipped(tmp_path):
    ws = Workspace(tmp_path)
    ws.write_text("state/inbox/pending/tg_1/00000000000000000001.json", "{not json")
    assert Inbox(ws).pending() == []


def test_conversation_dir_is_file_name_safe():
    assert conversation_dir("tg:-100123") == "tg_-100123"
    assert "/" not in conversation_dir("../../etc")
    assert conversation_dir("..") == "_"


def test_reply_text_survives_restart(tmp_path):
    ws = Workspace(tmp_path)
    inbox = Inbox(ws)
    item = inbox.accept("1", "tg:1", {"text": "q"})
    inbox.record_reply(item.item_id, "the answer")
    inbox.record_part(item.item_id, 0, 77)
    again = Inbox(ws).get(item.item_id)
    assert again.reply == "the answer" and again.parts == {0: 77}


def test_id_of_an_item_written_just_before_a_crash_stays_seen_after_it_is_answered(tmp_path):
    """Killed between writing the item and logging its id: after restart, answer and another restart,
    a re-delivery of the same update must still be recognised (the test crash found this)."""
    from assistant_framework.inbox import SEEN_LOG, Inbox
    from assistant_framework.workspace import Workspace

    ws = Workspace(tmp_path / "ws")
    item = Inbox(ws).accept("upd-16", "tg:7", {"text": "m016"})
    ws.write_text(SEEN_LOG, "")  # the kill came before the seen line was appended
    restarted = Inbox(ws)
    assert [i.item_id for i in restarted.pending()] == [item.item_id]
    restarted.complete(item.item_id)
    assert Inbox(ws).accept("upd-16", "tg:7", {"text": "m016"}) is None


def test_a_reused_source_id_with_another_fingerprint_is_a_new_message(tmp_path):
    ws = Workspace(tmp_path / "ws")
    inbox = Inbox(ws)
    first = inbox.accept("3", "tg:1", {"text": "old"}, fingerprint="1/40/1700000000")
    assert first is not None
    inbox.complete(first.item_id)
    assert inbox.accept("3", "tg:1", {"text": "old"}, fingerprint="1/40/1700000000") is None  # a re-delivery
    assert inbox.accept("3", "tg:1", {"text": "old"}) is None  # no fingerprint: cannot tell, so dropped
    again = Inbox(ws)  # across a restart, from seen.log
    assert again.accept("3", "tg:1", {"text": "old"}, fingerprint="1/40/1700000000") is None
    reused = again.accept("3", "tg:1", {"text": "new"}, fingerprint="1/42/1800000000")
    assert reused is not None and reused.payload == {"text": "new"}
    assert Inbox(ws).accept("3", "tg:1", {"text": "new"}, fingerprint="1/42/1800000000") is None  # now that one is seen


def test_an_id_noted_with_its_fingerprint_is_taken_once_and_a_reused_one_is_new(tmp_path):
    """A command or a button press is noted by its platform id with what it is (Telegram: the message's
    chat/id/date, the press's own id): the same one again is a delivery again, also across a restart, while a
    message under the id reused (another Bot API server) is still taken. Noted without it, that message was
    dropped as seen (fails so, checked)."""
    ws = Workspace(tmp_path / "ws")
    inbox = Inbox(ws)
    assert inbox.note("5", "1/40/1700000000") is True
    assert inbox.note("5", "1/40/1700000000") is False
    again = Inbox(ws)  # from seen.log
    assert again.note("5", "1/40/1700000000") is False and again.seen("5", "1/40/1700000000")
    reused = again.accept("5", "tg:1", {"text": "new"}, fingerprint="1/41/1800000000")
    assert reused is not None and reused.payload == {"text": "new"}


def test_ledger_writes_leave_the_message_file_alone_and_an_emptied_ledger_only_costs_a_new_answer(tmp_path):
    """The reply and parts go to a side ledger written without fsync (it is on the reply path); the
    user's message file, fsynced at accept, is never rewritten, so a power loss cannot tear it."""
    ws = Workspace(tmp_path)
    inbox = Inbox(ws)
    item = inbox.accept("7", "tg:1", {"text": "hello"})
    message_file = f"state/inbox/pending/{item.item_id}.json"
    before = ws.read_text(message_file)
    inbox.record_reply(item.item_id, "the answer")
    inbox.record_part(item.item_id, 0, 99)
    assert ws.read_text(message_file) == before
    again = Inbox(ws).get(item.item_id)
    assert again.reply == "the answer" and again.parts == {0: 99}  # a killed process loses nothing
    ws.write_text(f"state/inbox/pending/{item.item_id}.ledger", "")  # what a power loss may leave
    after_power_loss = Inbox(ws).get(item.item_id)
    assert after_power_loss is not None and after_power_loss.payload == {"text": "hello"}
    assert after_power_loss.reply is None and after_power_loss.parts == {}  # asked again, nothing lost
    Inbox(ws).complete(item.item_id)
    assert ws.list("state/inbox/pending/*/*") == []


def test_the_ledger_is_read_back_change_by_change_past_a_torn_line_and_from_an_older_whole_file(tmp_path):
    """Each ledger change is a line appended; a restart folds them in order. A line torn by a power loss (or a
    full disk) is skipped, and what was appended after it still counts; a ledger an older version wrote whole
    (one object, no newline) is read and appended to."""
    ws = Workspace(tmp_path)
    inbox = Inbox(ws)
    item = inbox.accept("9", "tg:1", {"text": "hi"})
    ledger = f"state/inbox/pending/{item.item_id}.ledger"
    inbox.record_live(item.item_id, 40)
    inbox.record_reply(item.item_id, "first answer", merged=["tg_1/00000000000000000001"])
    inbox.record_part(item.item_id, 0, 41)
    inbox.record_reply(item.item_id, "second answer")  # the last reply counts, with its own merged list
    again = Inbox(ws).get(item.item_id)
    assert (again.live, again.reply, again.merged, again.parts) == (40, "second answer", [], {0: 41})
    with ws.path(ledger).open("a") as torn:
        torn.write('\n{"parts":{"1":4')  # the kill or the power loss came mid-write
    restarted = Inbox(ws)
    restarted.record_part(item.item_id, 2, 43)
    assert Inbox(ws).get(item.item_id).parts == {0: 41, 2: 43}
    old = inbox.accept("10", "tg:1", {"text": "from before"})
    old_ledger = f"state/inbox/pending/{old.item_id}.ledger"
    ws.write_text(old_ledger, '{"reply": "kept", "live": 7, "parts": {"0": 8}, "merged": ["tg_1/x"]}')
    Inbox(ws).record_part(old.item_id, 1, 9)
    back = Inbox(ws).get(old.item_id)
    assert (back.reply, back.live, back.parts, back.merged) == ("kept", 7, {0: 8, 1: 9}, ["tg_1/x"])
    assert oct(ws.path(ledger).stat().st_mode & 0o777) == "0o600"


def test_orphan_ledger_of_a_completed_item_is_removed_at_start(tmp_path):
    ws = Workspace(tmp_path)
    inbox = Inbox(ws)
    item = inbox.accept("8", "tg:1", {"text": "x"})
    inbox.record_reply(item.item_id, "y")
    ws.delete(f"state/inbox/pending/{item.item_id}.json")  # a crash between the two deletes of complete()
    assert Inbox(ws).pending() == []
    assert ws.list("state/inbox/pending/*/*.ledger") == []


def test_accept_many_persists_a_batch_dedupes_and_survives_restart(tmp_path):
    ws = Workspace(tmp_path)
    inbox = Inbox(ws)
    first = inbox.accept("1", "tg:1", {"n": 1})
    batch = inbox.accept_many(
        [("1", "tg:1", {"n": 1}), ("2", "tg:1", {"n": 2}), ("3", "tg:2", {"n": 3}), ("3", "tg:2", {"n": 3})]
    )
    assert batch[0] is None and batch[3] is None  # seen before, and twice in the batch
    assert [i.payload for i in batch[1:3]] == [{"n": 2}, {"n": 3}]
    assert all(inbox.seen(s) for s in ("1", "2", "3"))
    again = Inbox(ws)  # what a restart finds: every item on disk, in order, ids logged
    assert [i.payload["n"] for i in again.pending()] == [1, 2, 3]
    assert again.accept_many([("2", "tg:1", {"n": 2})]) == [None]
    assert first.item_id in {i.item_id for i in again.pending()}


def test_accept_many_leaves_nothing_behind_when_the_batch_fails(tmp_path, monkeypatch):
    from assistant_framework.inbox import store as inbox_store

    ws = Workspace(tmp_path)
    inbox = Inbox(ws)

    def disk_full(paths, missing_ok=False):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(inbox_store, "fsync_all", disk_full)
    import pytest

    with pytest.raises(OSError):
        inbox.accept_many([("5", "tg:1", {"n": 5}), ("6", "tg:1", {"n": 6})])
    assert inbox.pending() == [] and not inbox.seen("5")
    assert ws.list("state/inbox/pending/*/*.json") == []  # the one-by-one retry starts clean


def test_accept_syncs_the_file_and_its_folder_together_before_it_counts_as_seen(tmp_path, monkeypatch):
    """One message takes the batch's way: its file and folder fsynced in one call (one journal commit, not two
    in a row), the id logged as seen only after; a failed fsync leaves no file and no seen id."""
    from assistant_framework.inbox import store as inbox_store

    ws = Workspace(tmp_path)
    inbox = Inbox(ws)
    synced: list[list] = []

    def record(paths, missing_ok=False):
        assert not inbox.seen("7")  # not yet logged while the fsyncs run
        synced.append(list(paths))

    monkeypatch.setattr(inbox_store, "fsync_all", record)
    item = inbox.accept("7", "tg:1", {"n": 7})
    target = ws.path(f"state/inbox/pending/{item.item_id}.json")
    assert synced == [[target, target.parent]] and inbox.seen("7")

    def disk_full(paths, missing_ok=False):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(inbox_store, "fsync_all", disk_full)
    import pytest

    with pytest.raises(OSError):
        inbox.accept("8", "tg:1", {"n": 8})
    assert not inbox.seen("8") and [i.source_id for i in inbox.pending()] == ["7"]
    assert len(ws.list("state/inbox/pending/*/*.json")) == 1


def test_unsynced_items_are_known_at_once_and_logged_as_seen_once_synced_or_completed(tmp_path, monkeypatch):
    """``synced=False`` (Telegram's fetch: the turn starts while the disk commits): the file is written, the id
    is known to ``seen`` and a re-delivery is a duplicate, but it is logged as seen only by ``sync_accepted`` (file
    and folder fsynced together first) or when the item is completed before that (a restart must not answer the
    platform's re-delivery again). A failed sync raises and leaves it to sync again."""
    from assistant_framework.inbox import store as inbox_store

    ws = Workspace(tmp_path)
    inbox = Inbox(ws)
    synced: list[list] = []
    monkeypatch.setattr(inbox_store, "fsync_all", lambda paths, missing_ok=False: synced.append(list(paths)))

    def logged() -> str:
        return ws.read_text("state/inbox/seen.log") if ws.exists("state/inbox/seen.log") else ""

    one, two = inbox.accept_many([("1", "tg:1", {"n": 1}, "f1"), ("2", "tg:1", {"n": 2}, "f2")], synced=False)
    assert synced == [] and inbox.unsynced and inbox.seen("1", "f1") and inbox.seen("2", "f2")
    assert ws.exists(f"state/inbox/pending/{one.item_id}.json") and "1" not in logged().split()
    assert inbox.accept("1", "tg:1", {"n": 1}, "f1", synced=False) is None  # delivered again meanwhile
    assert inbox.accept_many([("2", "tg:1", {"n": 2}, "f2")]) == [None]
    inbox.complete(one.item_id)  # answered before its sync
    assert "1" in logged().split() and "2" not in logged().split()

    def failing(paths, missing_ok=False):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(inbox_store, "fsync_all", failing)
    import pytest

    with pytest.raises(OSError):
        inbox.sync_accepted()
    assert inbox.unsynced and "2" not in logged().split()
    monkeypatch.setattr(inbox_store, "fsync_all", lambda paths, missing_ok=False: synced.append(list(paths)))
    assert inbox.sync_accepted() is True and not inbox.unsynced
    target = ws.path(f"state/inbox/pending/{two.item_id}.json")
    assert synced == [[target, target.parent]] and "2" in logged().split()
    assert inbox.sync_accepted() is False  # nothing left to sync
    assert [i.source_id for i in inbox.pending()] == ["2"]
    assert Inbox(ws).seen("1", "f1")  # a restart knows the one completed: its re-delivery is not answered again


def test_batch_accept_knows_fingerprints_and_live_goes_to_the_ledger(tmp_path):
    """The batch path tells a reused id from a re-delivery as accept does; record_live leaves the message file alone."""
    ws = Workspace(tmp_path)
    inbox = Inbox(ws)
    first = inbox.accept("3", "tg:1", {"text": "old"}, fingerprint="1/40/1700000000")
    inbox.complete(first.item_id)
    batch = inbox.accept_many(
        [("3", "tg:1", {"text": "old"}, "1/40/1700000000"), ("3", "tg:1", {"text": "new"}, "1/42/1800000000")]
    )
    assert batch[0] is None and batch[1] is not None and batch[1].payload == {"text": "new"}
    message_file = f"state/inbox/pending/{batch[1].item_id}.json"
    before = ws.read_text(message_file)
    inbox.record_live(batch[1].item_id, 555)
    assert ws.read_text(message_file) == before
    assert Inbox(ws).get(batch[1].item_id).live == 555  # read back from the ledger after a restart


def test_a_damaged_item_file_is_moved_aside_with_one_warning_and_the_rest_is_kept(tmp_path, caplog):
    caplog.set_level(logging.WARNING, logger="assistant_framework.inbox")
    ws = Workspace(tmp_path)
    inbox = Inbox(ws)
    good = inbox.accept("7", "tg:1", {"text": "still here"})
    inbox.record_reply(good.item_id, "its answer")
    folder = "state/inbox/pending/tg_1"
    ws.write_text(f"{folder}/00000000000000000001.json", "{not json")  # torn
    ws.write_text(f"{folder}/00000000000000000001.ledger", '{"reply": "half an answer", "parts": {}}')
    ws.path(f"{folder}/00000000000000000002.json").write_bytes(b'{"item_id": "\xff\xfe"}')  # bad bytes
    ws.write_json(f"{folder}/00000000000000000003.json", {"what": "a foreign file"})  # no item fields
    restarted = Inbox(ws)
    assert [(i.item_id, i.reply) for i in restarted.pending()] == [(good.item_id, "its answer")]
    damaged = [r.getMessage() for r in caplog.records]
    assert len(damaged) == 3, damaged
    for n in (1, 2, 3):
        [line] = [m for m in damaged if f"0000000{n}.json" in m]
        [aside] = ws.list(f"{folder}/0000000000000000000{n}.json.broken-*")
        assert aside in line and not ws.exists(f"{folder}/0000000000000000000{n}.json")
    assert ws.read_text(ws.list(f"{folder}/00000000000000000001.json.broken-*")[0]) == "{not json"
    [ledger] = ws.list(f"{folder}/00000000000000000001.ledger.broken-*")  # kept beside it, not deleted
    assert "half an answer" in ws.read_text(ledger)
    caplog.clear()
    assert [i.item_id for i in Inbox(ws).pending()] == [good.item_id]
    assert caplog.records == []  # not read (nor reported) again at the next start


def test_an_item_is_one_json_line_with_its_text_as_sent(tmp_path):
    """The item file is written before the message's turn starts: one line of JSON (the C encoder; indented, Python's
    own took several times as long), the text kept readable as sent, read back whole after a restart."""
    ws = Workspace(tmp_path)
    payload = {"message": {"text": "Grüße, wie geht's?", "chat": {"id": 5}, "entities": [{"type": "bold"}]}}
    item = Inbox(ws).accept("102", "tg:5", payload)
    assert item is not None
    (rel,) = ws.list("state/inbox/pending/**/*.json")
    text = ws.read_text(rel)
    assert text.count("\n") == 1 and text.endswith("}\n") and "Grüße" in text
    (again,) = Inbox(ws).pending()
    assert (again.item_id, again.payload) == (item.item_id, payload)
