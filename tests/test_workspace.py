"""Workspace: path confinement, atomic writes, concurrent appends, on real files."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from assistant_framework.workspace import LAYOUT, Workspace, WorkspacePathError
from tests import preload

REPO = Path(__file__).resolve().parents[1]


def test_layout_created_on_first_use(ws: Workspace) -> None:
    for folder in LAYOUT:
        assert (ws.root / folder).is_dir(), folder


@pytest.mark.parametrize(
    "bad",
    [
        "/etc/passwd",
        "../outside.txt",
        "notes/../../outside.txt",
        "notes/..",
        "..",
        "a\x00b",
        "notes/two\nlines.md",
        "notes/tab\there.md",
        "bell\x07.txt",
        "~/secret",
        "",
        "C:/windows",
        "..\\outside.txt",
    ],
)
def test_traversal_attempts_refused(ws: Workspace, bad: str) -> None:
    with pytest.raises(WorkspacePathError):
        ws.path(bad)
    with pytest.raises(WorkspacePathError):
        ws.write_text(bad, "x")


def test_error_names_the_path(ws: Workspace) -> None:
    with pytest.raises(WorkspacePathError, match=r"\.\./outside\.txt"):
        ws.read_text("../outside.txt")


def test_symlink_leading_outside_refused(ws: Workspace, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    os.symlink(outside, ws.root / "notes" / "link")
    with pytest.raises(WorkspacePathError, match="outside"):
        ws.read_text("notes/link/secret.txt")
    with pytest.raises(WorkspacePathError):
        ws.write_text("notes/link/new.txt", "x")
    assert not (outside / "new.txt").exists()
    assert "notes/link/secret.txt" not in ws.list("**/*")


def _links_out(ws: Workspace, tmp_path: Path) -> Path:
    """Every kind of link that leads out of ``ws``: to a file (absolute and relative), to a folder, through a
    link inside, dangling, a loop, and to the folder holding the workspace (so ``up/<ws name>/...`` comes
    back in). Returns the outside folder, which holds ``secret.md`` and ``sub/deep.md``."""
    outside = tmp_path / "outside"
    (outside / "sub").mkdir(parents=True)
    (outside / "secret.md").write_text("outside secret")
    (outside / "sub" / "deep.md").write_text("outside secret")
    ws.write_text("notes/mine.md", "# mine")
    notes = ws.root / "notes"
    os.symlink(outside / "secret.md", notes / "abs.md")
    os.symlink(os.path.relpath(outside / "secret.md", notes), notes / "rel.md")
    os.symlink(outside, notes / "folder")
    os.symlink("abs.md", notes / "chain.md")  # a link inside to a link out
    os.symlink(outside / "gone.md", notes / "dangling.md")
    os.symlink("loop-b.md", notes / "loop-a.md")
    os.symlink("loop-a.md", notes / "loop-b.md")
    os.symlink(ws.root.parent, notes / "up")  # out, and back in through the workspace's own name
    os.symlink(ws.root / "notes", ws.root / "alias")  # stays inside: listed
    return outside


@pytest.mark.parametrize(
    "pattern",
    [
        "**/*",
        "*/*",
        "notes/*",
        "notes/*.md",
        "notes/*/*",
        "notes/*/*/*",
        "notes/*/*/*/*",
        "notes/folder/**/*",
        "notes/up/*/notes/*",
        "**/*.md",
        "*/*/*",
    ],
)
@pytest.mark.parametrize("files_only", [True, False])
def test_list_never_shows_a_link_that_leads_outside(ws: Workspace, tmp_path: Path, pattern, files_only) -> None:
    """Only ``path()`` was tested against links; ``list`` names every entry ``path()`` would accept, and no
    other: nothing reached through a link out (also out and back in), and a loop is skipped, not an error."""
    _links_out(ws, tmp_path)
    listed = ws.list(pattern, files_only=files_only)
    for rel in listed:
        assert ws.path(rel)  # every name listed is one the workspace's own check accepts
        assert not set(rel.split("/")) & {"abs.md", "rel.md", "folder", "chain.md", "dangling.md", "up", "loop-a.md"}
    if pattern in ("notes/*", "notes/*.md", "**/*.md"):
        assert "notes/mine.md" in listed


@pytest.mark.parametrize("pattern", ["../*", "notes/../../*", "/etc/*", "notes/\x00*"])
def test_a_glob_that_would_leave_the_workspace_is_refused_naming_it(ws: Workspace, pattern: str) -> None:
    """A pattern with '..', an absolute one or a NUL is an error naming it, not an empty list (which would let a
    skill's "nothing there" hide that it asked for the folder holding the workspace)."""
    with pytest.raises(WorkspacePathError, match="must stay inside the workspace"):
        ws.list(pattern)


def test_list_names_links_that_stay_inside(ws: Workspace, tmp_path: Path) -> None:
    _links_out(ws, tmp_path)
    assert ws.list("alias/*") == ["alias/mine.md"]
    assert ws.list("notes/*") == ["notes/mine.md"]
    assert "alias" in ws.list("*", files_only=False)
    with pytest.raises(WorkspacePathError, match="outside"):
        ws.path("notes/up/" + ws.root.name + "/notes/mine.md")  # out and back in is out
    with pytest.raises(WorkspacePathError, match="symlink loop"):
        ws.read_text("notes/loop-a.md")


def test_symlink_inside_is_allowed(ws: Workspace) -> None:
    ws.write_text("notes/a.md", "hello")
    os.symlink(ws.root / "notes", ws.root / "alias")
    assert ws.read_text("alias/a.md") == "hello"


def test_read_write_json_and_text(ws: Workspace) -> None:
    ws.write_json("state/x.json", {"a": [1, 2], "ü": "ß"})
    assert ws.read_json("state/x.json") == {"a": [1, 2], "ü": "ß"}
    assert "ß" in (ws.root / "state/x.json").read_text(encoding="utf-8")
    assert ws.read_json("state/missing.json", default={}) == {}
    assert ws.read_text("missing.txt", default="") == ""
    with pytest.raises(FileNotFoundError, match="missing.txt"):
        ws.read_text("missing.txt")


def test_append_jsonl_and_list_and_delete(ws: Workspace) -> None:
    ws.append_jsonl("conversations/c1/log.jsonl", {"n": 1})
    ws.append_jsonl("conversations/c1/log.jsonl", {"n": 2})
    with open(ws.path("conversations/c1/log.jsonl"), "a") as handle:
        handle.write('{"torn": ')  # a torn last line is skipped, not fatal
    assert ws.read_jsonl("conversations/c1/log.jsonl") == [{"n": 1}, {"n": 2}]
    assert ws.list("conversations/**/*.jsonl") == ["conversations/c1/log.jsonl"]
    assert ws.delete("conversations/c1/log.jsonl") is True
    assert ws.delete("conversations/c1/log.jsonl") is False
    with pytest.raises(WorkspacePathError):
        ws.delete(".")


def test_append_refuses_embedded_newline(ws: Workspace) -> None:
    with pytest.raises(ValueError, match="log.txt"):
        ws.append_line("log.txt", "one\ntwo")


def test_four_processes_append_without_interleaving(ws: Workspace) -> None:
    # Four real processes, forked by the worker's zygote (tests/append_writer.py; they were multiprocessing's
    # spawns, each a fresh interpreter importing this test module: about 0.15 s of CPU apiece).
    writers = [
        preload.popen([sys.executable, "-m", "tests.append_writer", str(ws.root), str(w), "500"], cwd=REPO)
        for w in range(4)
    ]
    for writer in writers:
        with writer:
            assert writer.wait(60) == 0
    lines = ws.path("shared.jsonl").read_text().splitlines()
    assert len(lines) == 2000
    rows = [json.loads(line) for line in lines]  # every line parses: none interleaved
    for worker in range(4):
        mine = [r["i"] for r in rows if r["worker"] == worker]
        assert mine == list(range(500))


def test_threads_append_without_interleaving(ws: Workspace) -> None:
    import threading

    def run(worker: int) -> None:
        for i in range(200):
            ws.append_line("t.log", f"{worker}:{i}:" + "y" * 200)

    threads = [threading.Thread(target=run, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    lines = ws.path("t.log").read_text().splitlines()
    assert len(lines) == 800
    assert all(line.endswith("y" * 200) and line.count(":") == 2 for line in lines)


@pytest.mark.parametrize("durable", [True, False])
def test_writes_replace_the_file_and_never_touch_the_old_one(ws: Workspace, durable: bool) -> None:
    """Deterministic check of atomicity: a reader holding the old file keeps reading the old, whole
    content while it is rewritten, and the path points at a new file afterwards. An in-place write
    (truncate, then write) changes what the open reader sees and keeps the inode, so it fails here."""
    old_text = json.dumps({"n": 0, "body": [0] * 5000})
    ws.write_text("state/doc.json", old_text)
    for n in range(1, 4):
        with open(ws.path("state/doc.json"), "rb") as reader:
            before = os.fstat(reader.fileno())
            new_text = json.dumps({"n": n, "body": [n] * (5000 - n)})  # a different length each time
            ws.write_text("state/doc.json", new_text, durable=durable)
            assert reader.read().decode() == old_text  # the old file is untouched: no truncate, no overwrite
            assert os.fstat(reader.fileno()).st_size == before.st_size
        after = os.stat(ws.path("state/doc.json"))
        assert (after.st_ino, after.st_dev) != (before.st_ino, before.st_dev)  # a new file was renamed in
        assert ws.read_text("state/doc.json") == new_text
        old_text = new_text
    assert sorted(p.name for p in ws.path("state").iterdir()) == ["doc.json"]  # no temp file left behind


def test_sigkill_during_writes_never_leaves_a_torn_file(ws: Workspace) -> None:
    ws.write_json("state/big.json", {"n": 0, "body": [0] * 20000})
    for round_no in range(8):
        # A real process, SIGKILLed at a different point of its writes each round; forked by the worker's zygote.
        writer = [sys.executable, "-m", "tests.torn_writer", str(ws.root)]
        with preload.popen(writer, stdout=subprocess.PIPE, cwd=REPO) as proc:
            assert proc.stdout is not None
            assert proc.stdout.readline().strip() == b"ready"
            time.sleep(0.02 + 0.01 * round_no)
            proc.send_signal(signal.SIGKILL)
            assert proc.wait(10) == -signal.SIGKILL
        data = ws.read_json("state/big.json")
        assert data["body"] == [data["n"]] * 20000
    # Temp files of killed writers are hidden from listings.
    assert ws.list("state/*") == ["state/big.json"]


def test_a_line_cut_by_a_full_disk_is_removed(tmp_path: Path) -> None:
    writer = [sys.executable, "-m", "tests.full_disk_writer", str(tmp_path / "ws")]  # forked by the zygote
    result = preload.run(writer, capture_output=True, text=True, cwd=REPO, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "raised" in result.stdout
    assert (tmp_path / "ws" / "log.txt").read_text() == "first\nthird\n"


def test_an_append_after_a_last_line_without_newline_keeps_both(ws: Workspace) -> None:
    # A crash mid-write or an editor that drops the final newline: the next line must not be glued on.
    ws.path("state").mkdir(exist_ok=True)
    ws.path("state/log.jsonl").write_bytes(b'{"a": 1}\n{"b": 2}')
    ws.append_jsonl("state/log.jsonl", {"c": 3})
    ws.append_jsonl("state/log.jsonl", {"d": 4})
    assert ws.read_jsonl("state/log.jsonl") == [{"a": 1}, {"b": 2}, {"c": 3}, {"d": 4}]
    assert ws.path("state/log.jsonl").read_bytes().count(b"\n\n") == 0  # no empty line added when not needed


def test_read_jsonl_skips_a_line_with_bytes_that_are_not_utf8(ws: Workspace) -> None:
    ws.path("state").mkdir(exist_ok=True)
    ws.path("state/log.jsonl").write_bytes(b'{"a": 1}\n{"b": "\xff\xfe"}\n{"c": 3}\n')
    assert ws.read_jsonl("state/log.jsonl") == [{"a": 1}, {"c": 3}]


def test_move_aside_keeps_the_damaged_file_under_a_new_name(ws: Workspace) -> None:
    ws.path("state").mkdir(exist_ok=True)
    ws.path("state/cache.db").write_bytes(b"\x00damaged")
    first = ws.move_aside("state/cache.db")
    ws.path("state/cache.db").write_bytes(b"\x00damaged again")
    second = ws.move_aside("state/cache.db")
    assert (
        first != second and first.startswith("state/cache.db.broken-") and second.startswith("state/cache.db.broken-")
    )
    assert ws.path(first).read_bytes() == b"\x00damaged" and ws.path(second).read_bytes() == b"\x00damaged again"
    assert not ws.exists("state/cache.db")


@pytest.mark.parametrize("damaged", [b"{not json", b"[1, 2]", b'{"a": "\xff"}'])
def test_read_state_moves_a_damaged_file_aside_and_starts_afresh(ws: Workspace, damaged: bytes, caplog) -> None:
    """Signal's identities, Matrix's sync state and email's cursor: a state file that is not UTF-8, not JSON or
    not an object is kept for a human under a new name, said once, and read as empty; a missing one is empty."""
    log = logging.getLogger("tests.read_state")
    assert ws.read_state("state/x.json", log, "x: starting afresh") == {} and not caplog.records
    ws.write_json("state/x.json", {"kept": 1})
    assert ws.read_state("state/x.json", log, "x: starting afresh") == {"kept": 1}
    ws.path("state/x.json").write_bytes(damaged)
    with caplog.at_level(logging.WARNING, logger="tests.read_state"):
        assert ws.read_state("state/x.json", log, "x: starting afresh") == {}
    [aside] = ws.list("state/x.json.broken-*")
    assert ws.path(aside).read_bytes() == damaged and not ws.exists("state/x.json")
    [line] = [r.getMessage() for r in caplog.records]
    assert line.startswith("x: starting afresh (") and aside in line


def test_move_aside_never_overwrites_an_earlier_copy_of_the_same_second(ws: Workspace) -> None:
    import time as _time

    ws.path("state").mkdir(exist_ok=True)
    now = _time.time()
    # Earlier copies under every stamp the call below can take: this second and a few either side (the
    # wall clock may be stepped back between two readings; it was once here, under load).
    for offset in range(-10, 11):
        stamp = _time.strftime("%Y%m%dT%H%M%SZ", _time.gmtime(now + offset))
        ws.path(f"state/cache.db.broken-{stamp}").write_bytes(b"earlier")
    ws.path("state/cache.db").write_bytes(b"newer")
    aside = ws.move_aside("state/cache.db")
    assert aside.endswith("-2") and ws.path(aside).read_bytes() == b"newer"
    assert all(p.read_bytes() == b"earlier" for p in ws.path("state").glob("cache.db.broken-*Z"))


@pytest.mark.parametrize("block", [1, 3, 7, 64 * 1024])
def test_the_last_lines_of_a_log_read_from_its_end_are_the_whole_reads_last(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch, block: int
) -> None:
    """``read_jsonl(rel, last=N)`` (read from the end, a block at a time) gives what a whole read's last N give:
    across block edges, with a torn last line, a blank line and lines that are not JSON objects."""
    from assistant_framework.workspace import tail

    monkeypatch.setattr(tail, "_BLOCK", block)
    lines = [json.dumps({"n": n, "pad": "x" * (n % 5)}) for n in range(12)]
    for content in (
        "\n".join(lines) + "\n",
        "\n".join(lines) + '\n{"n": 12, "to',  # an append torn by a kill
        "\n".join(lines[:6]) + "\n\n[1]\n" + "\n".join(lines[6:]) + "\n",
        "",
    ):
        ws.write_text("state/log.jsonl", content)
        whole = ws.read_jsonl("state/log.jsonl")
        for last in (1, 2, 5, 13, 40):
            tail_rows = ws.read_jsonl("state/log.jsonl", last=last)
            assert tail_rows == whole[len(whole) - len(tail_rows) :], (content, last)
            assert len(tail_rows) >= min(len(whole), last - 2), (content, last)
    assert ws.read_jsonl("state/missing.jsonl", last=3) == []
