"""``assistant backup`` / ``restore``: a round trip keeps every data file and leaves caches out."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

from assistant_framework.cli import main
from assistant_framework.workspace import Workspace


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _workspace(root: Path) -> Workspace:
    ws = Workspace(root)
    ws.write_text("notes/groceries.md", "# Groceries\neggs\n")
    ws.write_json("tasks/tasks.json", [{"id": 1, "title": "call the plumber"}])
    ws.append_jsonl("conversations/c1/2026-01-01.jsonl", {"role": "user", "text": "hi"})
    ws.write_text("memory/index.sqlite3", "cache")
    ws.write_text("traces/2026-01-01/20260101T000000000000-aaaaaa.json", "{}")
    ws.write_text("state/logs/console.log", "log line")
    return ws


def test_round_trip_keeps_data_and_leaves_out_caches(tmp_path: Path, capsys) -> None:
    ws = _workspace(tmp_path / "ws")
    out = tmp_path / "backups"
    out.mkdir()
    assert main(["backup", "--workspace", str(ws.root), "--out", str(out)]) == 0
    archive = next(out.glob("assistant-backup-*.tar.gz"))
    assert main(["restore", str(archive), "--workspace", str(tmp_path / "restored")]) == 0
    restored = _files(tmp_path / "restored")
    original = _files(ws.root)
    expected = {
        k: v
        for k, v in original.items()
        if not k.startswith(("memory/index.sqlite3", "traces/", "state/logs/", "state/locks/"))
    }
    assert restored == expected
    assert "notes/groceries.md" in restored and "memory/index.sqlite3" not in restored

    assert (
        main(["backup", "--workspace", str(ws.root), "--out", str(tmp_path / "with.tar.gz"), "--include-traces"]) == 0
    )
    with tarfile.open(tmp_path / "with.tar.gz") as tar:
        assert "workspace/traces/2026-01-01/20260101T000000000000-aaaaaa.json" in tar.getnames()


def test_restore_over_an_existing_workspace_needs_force_and_keeps_the_old_one(tmp_path: Path, capsys) -> None:
    ws = _workspace(tmp_path / "ws")
    assert main(["backup", "--workspace", str(ws.root), "--out", str(tmp_path / "b.tar.gz")]) == 0
    ws.write_text("notes/new.md", "# New\n")
    assert main(["restore", str(tmp_path / "b.tar.gz"), "--workspace", str(ws.root)]) == 2
    assert "pass --force" in capsys.readouterr().err
    assert main(["restore", str(tmp_path / "b.tar.gz"), "--workspace", str(ws.root), "--force"]) == 0
    assert not (ws.root / "notes" / "new.md").exists()
    kept = next(tmp_path.glob("ws.before-restore-*"))
    assert (kept / "notes" / "new.md").read_text() == "# New\n"


def test_restore_refuses_foreign_or_hostile_archives_and_changes_nothing(tmp_path: Path, capsys) -> None:
    hostile = tmp_path / "evil.tar.gz"
    with tarfile.open(hostile, "w:gz") as tar:
        for name in ("workspace/state/x", "workspace/../../escape.txt"):
            data = b"x"
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    assert main(["restore", str(hostile), "--workspace", str(tmp_path / "target")]) == 2
    assert "not a file of an assistant backup" in capsys.readouterr().err
    assert not (tmp_path / "escape.txt").exists() and not (tmp_path / "target").exists()
    (tmp_path / "junk.tar.gz").write_bytes(b"not gzip")
    assert main(["restore", str(tmp_path / "junk.tar.gz"), "--workspace", str(tmp_path / "target")]) == 2
    assert "not a readable .tar.gz" in capsys.readouterr().err
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no staging folder left


def test_backup_of_a_folder_that_is_not_a_workspace_exits_2(tmp_path: Path, capsys) -> None:
    assert main(["backup", "--workspace", str(tmp_path / "typo"), "--out", str(tmp_path)]) == 2
    assert "not a workspace" in capsys.readouterr().err


def test_restore_into_the_current_folder_by_dot(tmp_path: Path, capsys, monkeypatch) -> None:
    """`cd workspace && assistant restore b.tar.gz --workspace . --force` was an internal error (Path('.') has
    no name)."""
    ws = _workspace(tmp_path / "ws")
    assert main(["backup", "--workspace", str(ws.root), "--out", str(tmp_path / "b.tar.gz")]) == 0
    ws.write_text("notes/new.md", "# New\n")
    monkeypatch.chdir(ws.root)
    assert main(["restore", str(tmp_path / "b.tar.gz"), "--workspace", ".", "--force"]) == 0
    captured = capsys.readouterr()
    assert "internal error" not in captured.err and "the previous workspace is in" in captured.out
    assert (tmp_path / "ws" / "notes" / "groceries.md").read_text() == "# Groceries\neggs\n"
    assert not (tmp_path / "ws" / "notes" / "new.md").exists()
    kept = next(tmp_path.glob("ws.before-restore-*"))
    assert (kept / "notes" / "new.md").read_text() == "# New\n"


def test_a_backup_while_the_bot_deletes_and_replaces_files_succeeds_with_whole_files(tmp_path: Path) -> None:
    """Inbox items are deleted and files atomically replaced while the bot runs: a file listed and then
    gone made the whole backup fail (FileNotFoundError), and one replaced between stat and read could be cut."""
    import threading

    from assistant_framework.backup import backup

    ws = Workspace(tmp_path / "ws")
    names = [f"state/inbox/pending/c/{i}.json" for i in range(200)]
    for name in names:
        ws.write_text(name, "x" * 3000)
    stop = threading.Event()

    def bot() -> None:
        n = 0
        while not stop.is_set():
            name = names[n % len(names)]
            if not ws.delete(name):
                ws.write_text(name, ("y" if n % 2 else "z") * (1000 + n % 4000), durable=False)
            n += 1

    writer = threading.Thread(target=bot)
    writer.start()
    try:
        archives = [backup(ws.root, tmp_path / f"b{n}.tar.gz").path for n in range(20)]
    finally:
        stop.set()
        writer.join()
    for archive in archives:
        with tarfile.open(archive) as tar:
            for member in tar.getmembers():
                if member.isfile():
                    data = tar.extractfile(member).read()
                    assert data and len(set(data)) == 1 and len(data) == member.size, member.name  # one whole version


def test_a_symlink_left_out_of_the_backup_is_named(tmp_path: Path, capsys) -> None:
    import json

    ws = _workspace(tmp_path / "ws")
    outside = tmp_path / "elsewhere.md"
    outside.write_text("# Kept elsewhere\n")
    (ws.root / "notes" / "linked.md").symlink_to(outside)
    assert main(["backup", "--workspace", str(ws.root), "--out", str(tmp_path / "b.tar.gz")]) == 0
    err = capsys.readouterr().err
    assert "notes/linked.md is a symbolic link and is not in the backup" in err
    with tarfile.open(tmp_path / "b.tar.gz") as tar:
        assert "workspace/notes/linked.md" not in tar.getnames()
    assert main(["backup", "--workspace", str(ws.root), "--out", str(tmp_path / "c.tar.gz"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["links_left_out"] == ["notes/linked.md"]
