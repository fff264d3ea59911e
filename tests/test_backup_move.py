"""Moving to a new machine as a user does it: `assistant backup` on the old one, `assistant restore` into a new
folder on the new one, the real bot started there against the fake Bot API and the fake model server.

The restored bot knows what the old one knew (facts and notes recalled through a search index it rebuilt, the
job it had, the message it had taken and not yet answered) and sends nothing the old one had sent.
"""

from __future__ import annotations

import gzip
import json
import os
import stat
import subprocess
import tarfile
import zlib
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from assistant_framework.inbox import Inbox
from assistant_framework.jobs import JOBS_FILE, RUNS_FILE
from assistant_framework.workspace import Workspace
from tests.cli_inprocess import run_cli
from tests.crash_bot import REPO, BotProcess, sent_texts, write_bot_config

OWNER = 1
API_KEY = "sk-test-9f8e7d6c5b4a39281706f5e4d3c2b1a0"
ASSISTANT = str(REPO / ".venv" / "bin" / "assistant")


def assistant(*argv: str, umask: int = 0o000, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    """The real command in a subprocess, under a umask that keeps nothing private by itself."""
    return subprocess.run(
        [ASSISTANT, *argv], capture_output=True, text=True, cwd=cwd, timeout=120, preexec_fn=lambda: os.umask(umask)
    )


def last_user_text(request: dict) -> str:
    content = request["messages"][-1]["content"]
    return content if isinstance(content, str) else json.dumps(content)


def answer(request: dict) -> str:
    """A model that answers in words what the owner asked (its first line)."""
    return json.dumps({"reply": "re: " + last_user_text(request).split("\n")[0].strip()})


@pytest.mark.timeout(180)
def test_moved_to_a_new_machine_the_bot_recalls_what_it_knew_and_sends_nothing_twice(
    tmp_path: Path, bot_config: dict, fake, chat_server
) -> None:
    old = Workspace(tmp_path / "old-machine" / "workspace")
    bot_config["llm"]["runners"][0]["api_key"] = API_KEY
    config = write_bot_config(
        tmp_path / "config.json",
        bot_config,
        fake,
        runtime={"shutdown_timeout_seconds": 5},
        extra={
            "memory": {"enabled": True, "extract_facts": False, "episodes": False, "profile": {"enabled": False}},
            "jobs": {"poll_seconds": 0.2},
        },
    )
    chat_server.set_handler(answer)
    # -- the old machine: a fact and a note saved through the model's skill calls, a message answered, and one
    # taken but not answered when the machine died (its model call never came back).
    chat_server.enqueue(
        json.dumps(
            {
                "skill": "facts",
                "args": {"action": "add", "subject": "owner", "attribute": "locker code", "value": "4711"},
            }
        ),
        json.dumps({"reply": "Noted."}),
        json.dumps(
            {
                "skill": "notes",
                "args": {"action": "add", "title": "Bike lock", "body": "The bike lock opens with 2718."},
            }
        ),
        json.dumps({"reply": "Saved."}),
    )

    def said(start: str) -> bool:
        return any(text.startswith(start) for text in sent_texts(fake, OWNER))

    with BotProcess(config, old.root, tmp_path / "old.log") as bot:
        bot.start().wait_ready()
        fake.send_message("My locker code is 4711, remember it", user_id=OWNER)
        fake.wait_for(lambda: said("Noted."), timeout=30)
        fake.send_message("Note that the bike lock opens with 2718", user_id=OWNER)
        fake.wait_for(lambda: said("Saved."), timeout=30)
        fake.send_message("hello", user_id=OWNER)
        fake.wait_for(lambda: "re: hello" in sent_texts(fake, OWNER), timeout=30)
        fake.send_document(OWNER, "list.txt", b"eggs, milk", caption="my list")
        fake.wait_for(lambda: len(sent_texts(fake, OWNER)) == 4, timeout=30)
        fake.send_photo(OWNER, b"\xff\xd8\xff\xe0 not much of a photo", caption="my cat")
        fake.wait_for(lambda: len(sent_texts(fake, OWNER)) == 5, timeout=30)
        # The answered messages are completed once their exchange is kept, beside the reply's send
        # (conversation/handed.py): the one the machine dies on is then the only one left.
        fake.wait_for(lambda: Inbox(old).pending() == [], timeout=30)
        asked = len(chat_server.chat_requests)
        chat_server.enqueue({"content": json.dumps({"reply": "never sent: the machine died"}), "delay": 60})
        fake.send_message("what is on today?", user_id=OWNER)
        assert chat_server.wait_for_requests(asked + 1, timeout=30, path="/chat/completions")
        bot.kill()
    [waiting] = Inbox(old).pending()
    assert "what is on today?" in json.dumps(waiting.payload)
    due = (datetime.now(timezone.utc) - timedelta(minutes=60, seconds=10)).isoformat(timespec="seconds")
    old.write_json(
        JOBS_FILE,
        [{"id": "j1", "name": "water", "every_minutes": 60, "message": "Water the plants", "created_at": due}],
    )
    sent_before = sent_texts(fake, OWNER)
    assert [text.split("\n")[0] for text in sent_before][:3] == ["Noted.", "Saved.", "re: hello"]

    made = assistant("backup", "--workspace", str(old.root), "--out", str(tmp_path), "--json")
    assert made.returncode == 0, made.stderr
    archive = Path(json.loads(made.stdout)["path"])
    traced = run_cli(
        "backup", "--workspace", str(old.root), "--out", str(tmp_path / "traced.tar.gz"), "--include-traces"
    )
    assert traced.returncode == 0, traced.stderr
    for each in (archive, tmp_path / "traced.tar.gz"):
        with tarfile.open(each) as tar:
            names = tar.getnames()
            everything = b"".join(tar.extractfile(m).read() for m in tar.getmembers() if m.isfile())
        for secret in (fake.token, API_KEY, fake.token.split(":")[-1]):
            assert secret.encode() not in everything, (each, secret)
    assert any("/traces/" in n for n in names) and any(n.startswith("workspace/inbox/") for n in names), names
    assert stat.S_IMODE(archive.stat().st_mode) == 0o600

    # -- the new machine: a folder that does not exist yet, the same config, the archive.
    new_root = tmp_path / "new-machine" / "workspace"
    restored = assistant("restore", str(archive), "--workspace", str(new_root))
    assert restored.returncode == 0, restored.stderr
    assert "memory reindex" in restored.stdout
    loose = [
        p.relative_to(new_root).as_posix()
        for p in [new_root, *new_root.rglob("*")]
        if stat.S_IMODE(p.stat().st_mode) & 0o077
    ]
    assert loose == []
    assert not (new_root / "memory" / "index.sqlite3").exists()

    chat_server.reset()
    chat_server.set_handler(answer)
    with BotProcess(config, new_root, tmp_path / "new.log") as bot:
        bot.start().wait_ready()
        # The message the old machine took and never answered is answered now, once; the job runs once.
        fake.wait_for(lambda: "re: what is on today?" in sent_texts(fake, OWNER), timeout=30)
        new = Workspace(new_root)
        fake.wait_for(lambda: len(new.read_jsonl(RUNS_FILE)) == 1, timeout=30)
        fake.send_message("what was my locker code?", user_id=OWNER)
        fake.wait_for(lambda: "re: what was my locker code?" in sent_texts(fake, OWNER), timeout=30)
        fake.send_message("how does the bike lock open?", user_id=OWNER)
        fake.wait_for(lambda: "re: how does the bike lock open?" in sent_texts(fake, OWNER), timeout=30)
        assert bot.terminate() == 0
    prompts = {last_user_text(r).split("\n")[0]: last_user_text(r) for r in chat_server.chat_requests}
    assert "4711" in prompts["what was my locker code?"], prompts["what was my locker code?"]
    assert "2718" in prompts["how does the bike lock open?"], prompts["how does the bike lock open?"]
    after = sent_texts(fake, OWNER)[len(sent_before) :]
    assert sorted(after) == sorted(
        [
            "re: what is on today?",
            "🗓 Water the plants",
            "re: what was my locker code?",
            "re: how does the bike lock open?",
        ]
    ), after
    assert Inbox(new).pending() == []
    found = run_cli("memory", "search", "locker", "--workspace", str(new_root), "--config", str(config), "--json")
    assert found.returncode == 0, found.stderr
    assert "4711" in found.stdout


def _archive(tmp_path: Path) -> Path:
    ws = Workspace(tmp_path / "old" / "workspace")
    ws.write_text("notes/groceries.md", "# Groceries\neggs\n")
    made = run_cli("backup", "--workspace", str(ws.root), "--out", str(tmp_path / "b.tar.gz"))
    assert made.returncode == 0, made.stderr
    return tmp_path / "b.tar.gz"


def _tree(folder: Path) -> dict[str, tuple[int, bytes | None]]:
    return {
        p.relative_to(folder).as_posix(): (stat.S_IMODE(p.stat().st_mode), p.read_bytes() if p.is_file() else None)
        for p in [folder, *folder.rglob("*")]
    }


def test_restore_into_an_empty_folder_fills_it_and_keeps_nothing_aside(tmp_path: Path) -> None:
    """The folder made for the workspace on the new machine (mkdir, under umask 0): it was set aside as "the
    previous workspace" (backups/<name>.before-restore-<time>, an empty 0777 folder) and said to be one."""
    archive = _archive(tmp_path)
    target = tmp_path / "new" / "workspace"
    target.mkdir(parents=True)
    target.chmod(0o777)
    restored = assistant("restore", str(archive), "--workspace", str(target))
    assert restored.returncode == 0, restored.stderr
    assert "previous workspace" not in restored.stdout and restored.stderr == ""
    assert not (tmp_path / "new" / "backups").exists()
    assert (target / "notes" / "groceries.md").read_text() == "# Groceries\neggs\n"
    assert [rel for rel, (mode, _) in _tree(target).items() if mode & 0o077] == []
    assert [p.name for p in target.iterdir() if p.name.startswith(".")] == []  # no staging folder left


@pytest.fixture
def volume(tmp_path: Path):
    """A file system of its own at the workspace's path, as a Docker volume (/app/workspace) or a disk is."""
    from tests.tmpfs import mounted_tmpfs

    with mounted_tmpfs(tmp_path / "volume", "200m") as mount_point:
        yield mount_point


def test_restore_into_a_mount_point_fills_it_and_refuses_to_move_one_in_use(tmp_path: Path, volume: Path) -> None:
    """A Docker volume or a disk mounted at the workspace's path cannot be renamed: restoring into the empty one
    of a new machine failed ("Device or resource busy"). Now it is filled in place; one that holds a workspace
    is refused with --force too (it cannot be kept aside), in one sentence, nothing changed."""
    archive = _archive(tmp_path)
    restored = assistant("restore", str(archive), "--workspace", str(volume))
    assert restored.returncode == 0, restored.stderr
    assert (volume / "notes" / "groceries.md").read_text() == "# Groceries\neggs\n"
    assert [rel for rel, (mode, _) in _tree(volume).items() if mode & 0o077] == []
    (volume / "notes" / "new.md").write_text("# Written after the restore\n")
    before = _tree(volume)
    again = assistant("restore", str(archive), "--workspace", str(volume), "--force")
    assert again.returncode == 2, again.stderr
    assert "mount point" in again.stderr and "nothing changed" in again.stderr and "backup" in again.stderr
    assert len(again.stderr.strip().splitlines()) == 1 and "Traceback" not in again.stderr
    assert _tree(volume) == before and not (tmp_path / "backups").exists()


def test_the_archives_members_are_private_whatever_the_files_modes(tmp_path: Path) -> None:
    """A note copied in by hand (0666) into a folder made under umask 0 (0777), backed up before the bot next
    started and tightened them: the archive carried 0666/0777 members, so a copy unpacked with plain `tar` on
    the new machine was readable (and writable) by every user there."""
    ws = Workspace(tmp_path / "ws")
    loose = ws.root / "notes" / "copied"
    loose.mkdir(mode=0o777)
    loose.chmod(0o777)
    (loose / "diary.md").write_text("# Diary\n")
    (loose / "diary.md").chmod(0o666)
    made = assistant("backup", "--workspace", str(ws.root), "--out", str(tmp_path / "b.tar.gz"))
    assert made.returncode == 0, made.stderr
    with tarfile.open(tmp_path / "b.tar.gz") as tar:
        modes = {m.name: stat.S_IMODE(m.mode) for m in tar.getmembers()}
    assert modes["workspace/notes/copied/diary.md"] == 0o600 and modes["workspace/notes/copied"] == 0o700
    assert {name: oct(mode) for name, mode in modes.items() if mode & 0o077} == {}


def test_restore_json_says_where_the_workspace_and_the_previous_one_are(tmp_path: Path) -> None:
    """`restore` had no --json (backup has): a script could not learn where the previous workspace went."""
    archive = _archive(tmp_path)
    target = tmp_path / "new" / "workspace"
    first = run_cli("restore", str(archive), "--workspace", str(target), "--json")
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout) == {"workspace": str(target), "previous": None}
    (target / "notes" / "new.md").write_text("# New\n")
    refused = run_cli("restore", str(archive), "--workspace", str(target), "--json")
    assert refused.returncode == 2 and refused.stdout == ""
    assert "pass --force" in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
    again = run_cli("restore", str(archive), "--workspace", str(target), "--json", "--force")
    assert again.returncode == 0, again.stderr
    previous = Path(json.loads(again.stdout)["previous"])
    assert previous.parent == tmp_path / "new" / "backups" and (previous / "notes" / "new.md").read_text() == "# New\n"


def test_a_damaged_archive_is_refused_not_restored_with_damaged_files(tmp_path: Path) -> None:
    """A copy damaged on its way (one bit flipped on a USB stick, in the data or in gzip's checksum) was restored
    as if whole: tar stops at its end marker, before gzip's trailer, so the checksum was never read, and the
    flipped bit became wrong bytes in a note or a task, said nowhere. Each is refused now, nothing written."""
    import random

    words = random.Random(7)
    ws = Workspace(tmp_path / "ws")
    for n in range(40):
        ws.write_text(f"tasks/t{n:02d}.md", " ".join(f"{words.getrandbits(32):08x}" for _ in range(400)))
    made = assistant("backup", "--workspace", str(ws.root), "--out", str(tmp_path / "b.tar.gz"))
    assert made.returncode == 0, made.stderr
    whole = (tmp_path / "b.tar.gz").read_bytes()
    body = len(whole) - 8  # gzip's trailer: the CRC-32, then the length
    flips = [int(body * share / 20) for share in range(2, 20)] + [len(whole) - 6]  # the data, and the CRC itself
    checked = 0
    for at in flips:
        damaged = bytearray(whole)
        damaged[at] ^= 0x01
        if _unpacks_to(bytes(damaged)) == _unpacks_to(whole):
            continue  # a bit deflate never reads (a code no byte uses): nothing is damaged
        checked += 1
        (tmp_path / "damaged.tar.gz").write_bytes(bytes(damaged))
        target = tmp_path / f"restored-{at}"
        argv = ("restore", str(tmp_path / "damaged.tar.gz"), "--workspace", str(target))
        result = assistant(*argv) if at == flips[-1] else run_cli(*argv)  # the real command once, the rest in-process
        assert result.returncode == 2, (at, result.stdout)
        assert "nothing" in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
        assert not target.exists() and not [p for p in (tmp_path / "backups").glob("*")]
    assert checked >= 10


def test_a_damaged_archive_whose_stream_ends_among_its_files_is_refused_as_damaged(tmp_path: Path) -> None:
    """A flipped bit can end deflate's stream early, so tar reads to gzip's end among its headers, and the checksum
    failed there, not where the restore reads on to it: "could not be restored (CRC check failed ...); ... is as it
    was" (it failed now and then in the test above, by the archive's timestamps). Made so here: the stream ends
    after the first files, and its checksum is wrong."""
    whole = gzip.decompress(_archive(tmp_path).read_bytes())
    cut = whole[: 3 * tarfile.BLOCKSIZE]  # the workspace/ folder and what follows it: no end marker
    damaged = bytearray(gzip.compress(cut))
    damaged[-8] ^= 0x01  # the CRC-32
    (tmp_path / "damaged.tar.gz").write_bytes(bytes(damaged))
    result = run_cli("restore", str(tmp_path / "damaged.tar.gz"), "--workspace", str(tmp_path / "r"))
    assert result.returncode == 2 and "is damaged" in result.stderr and "nothing" in result.stderr, result.stderr
    assert not (tmp_path / "r").exists()


def _unpacks_to(archive: bytes) -> bytes | None:
    try:
        return gzip.decompress(archive)
    except (OSError, EOFError, zlib.error):
        return None


def test_what_follows_the_last_file_is_read_within_the_limit(tmp_path: Path) -> None:
    """Reading on to gzip's checksum is bounded too: 2 MiB of zeros after tar's end marker, under --max-size 1M."""
    archive = _archive(tmp_path)
    padded = tmp_path / "padded.tar.gz"
    padded.write_bytes(gzip.compress(gzip.decompress(archive.read_bytes()) + bytes(2 * 1024**2)))
    result = run_cli("restore", str(padded), "--workspace", str(tmp_path / "r"), "--max-size", "1M")
    assert result.returncode == 2 and "past its last file" in result.stderr, result.stderr
    assert not (tmp_path / "r").exists()
    assert run_cli("restore", str(padded), "--workspace", str(tmp_path / "r"), "--max-size", "3M").returncode == 0


def test_the_archive_is_on_the_disk_when_backup_says_it_is_written(tmp_path: Path, monkeypatch) -> None:
    """`backup --out /media/usb`, then the stick pulled out as soon as the command is done: nothing was synced,
    so the archive could still be in memory only, and the stick hold none or a torn one. Now the archive is
    synced before it gets its name, and its folder after (what the calls are: the real fsync, recorded)."""
    synced: list[str] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    ws = Workspace(tmp_path / "ws")
    ws.write_text("notes/groceries.md", "# Groceries\neggs\n")
    stick = tmp_path / "usb"
    stick.mkdir()
    monkeypatch.setattr(os, "fsync", fsync)
    result = run_cli("backup", "--workspace", str(ws.root), "--out", str(stick), "--json")
    assert result.returncode == 0, result.stderr
    archive = Path(json.loads(result.stdout)["path"])
    assert synced[-2:] == [str(stick / f".{archive.name}.partial"), str(stick)], synced


@pytest.mark.parametrize("into", ["over a workspace", "an empty folder"])
def test_what_restore_unpacks_is_on_the_disk_before_it_is_swapped_in(tmp_path: Path, monkeypatch, into: str) -> None:
    """A power cut just after `restore --force`: the renames could reach the disk before the data they name, and the
    workspace come back with empty files. Every unpacked file and folder is synced where it was unpacked (before the
    swap), and the folders the renames changed after (what the calls are: the real fsync, recorded)."""
    synced: list[str] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        path = os.readlink(f"/proc/self/fd/{fd}")
        if path.startswith(str(tmp_path)):  # not another test's thread's
            synced.append(path)
        real_fsync(fd)

    old = Workspace(tmp_path / "old" / "workspace")
    old.write_text("notes/groceries.md", "# Groceries\neggs\n")
    old.write_text("tasks/open.md", "- call the plumber\n")
    archive = tmp_path / "b.tar.gz"
    assert run_cli("backup", "--workspace", str(old.root), "--out", str(archive)).returncode == 0
    target = tmp_path / "new" / "workspace"
    if into == "over a workspace":
        Workspace(target).write_text("notes/older.md", "older\n")
    else:
        target.mkdir(parents=True)
    monkeypatch.setattr(os, "fsync", fsync)
    result = run_cli("restore", str(archive), "--workspace", str(target), *(["--force"] if "over" in into else []))
    assert result.returncode == 0, result.stderr
    unpacked_into = {Path(p).parent for p in synced if Path(p).parent.name.startswith(".workspace.restore-")}
    assert len(unpacked_into) == 1, synced  # one folder unpacked into, beside the target or in it
    unpacked = unpacked_into.pop() / "workspace"
    restored = [p.relative_to(target) for p in [target, *target.rglob("*")]]
    assert {str(unpacked / rel) for rel in restored} <= set(synced), synced
    after = [str(tmp_path / "new"), str(tmp_path / "new" / "backups")] if "over" in into else [str(target)]
    assert sorted(synced[-len(after) :]) == after, synced


@pytest.mark.parametrize("force", [False, True])
def test_restore_over_a_folder_that_is_no_workspace_is_refused(tmp_path: Path, force: bool) -> None:
    """`restore ... --workspace . --force` typed in the checkout, not in the workspace: the checkout (its code,
    its config/local/ with the bot token) was moved into backups/ as "the previous workspace" and a workspace
    put in its place. A folder that holds files but no state/ is refused, with and without --force."""
    archive = _archive(tmp_path)
    checkout = tmp_path / "assistant"
    (checkout / "config" / "local").mkdir(parents=True)
    (checkout / "config" / "local" / "telegram.json").write_text('{"token": "123:abc"}')
    (checkout / "README.md").write_text("# The assistant\n")
    before = _tree(checkout)
    argv = ["restore", str(archive), "--workspace", ".", *(["--force"] if force else [])]
    result = assistant(*argv, cwd=checkout) if force else run_cli(*argv, cwd=checkout)
    assert result.returncode == 2, result.stdout
    assert "is not a workspace" in result.stderr and "--force" not in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    assert _tree(checkout) == before and not (tmp_path / "backups").exists()
