"""``assistant backup`` / ``restore``: a round trip keeps every data file and leaves caches out."""

from __future__ import annotations

import gzip
import io
import json
import os
import stat
import subprocess
import tarfile
from pathlib import Path

import pytest

from assistant_framework.workspace import Workspace
from messaging_llm_bot.cli.main import main
from tests import preload
from tests.cli_inprocess import CliRun, run_cli
from tests.crash_bot import REPO, BotProcess, echo_reply, sent_texts, write_bot_config
from tests.tmpfs import mounted_tmpfs


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
    kept = next((tmp_path / "backups").glob("ws.before-restore-*"))
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
    assert "not a file of a backup made by `.venv/bin/assistant backup`" in capsys.readouterr().err
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
    kept = next((tmp_path / "backups").glob("ws.before-restore-*"))
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


# -- issue 26.6 / 34.11: secrets, modes, links, bombs, and a workspace in use ------------------------------

ASSISTANT = str(REPO / ".venv" / "bin" / "assistant")


def cli(*argv: str, cwd: Path | None = None) -> CliRun:
    """The `assistant` command under the usual umask 022, in this process (tests/cli_inprocess.py): the
    modes of what it writes come from the command, not from the test's umask."""
    before = os.umask(0o022)
    try:
        return run_cli(*argv, cwd=cwd)
    finally:
        os.umask(before)


def _everything(folder: Path) -> dict[str, bytes | None]:
    return {p.relative_to(folder).as_posix(): (p.read_bytes() if p.is_file() else None) for p in folder.rglob("*")}


def _secret_workspace(root: Path) -> tuple[Workspace, list[str]]:
    """A workspace holding every secret and lock the bot keeps in state/, written by the real code."""
    from assistant_framework.config.settings import WebSettings
    from assistant_framework.web.auth import load_or_create_token
    from messaging_llm_bot.channels.telegram.webhook import webhook_secret

    ws = _workspace(root)
    token = load_or_create_token(WebSettings(), ws).value
    secret = str(webhook_secret(None, ws))
    for lock in ("state/bot.lock", "state/signal.lock", "state/in-use.lock"):
        ws.write_text(lock, "")
    with ws.lock("notes/groceries.md"):
        pass
    return ws, [token, secret]


def test_the_archive_is_private_and_holds_no_secret_and_no_lock(tmp_path: Path) -> None:
    """`assistant backup` wrote a 0644 archive holding the web page's token and the webhook secret."""
    ws, secrets = _secret_workspace(tmp_path / "ws")
    result = cli("backup", "--workspace", str(ws.root), "--out", str(tmp_path), "--json")
    assert result.returncode == 0, result.stderr
    archive = Path(json.loads(result.stdout)["path"])
    assert stat.S_IMODE(archive.stat().st_mode) == 0o600  # under umask 022
    assert json.loads(result.stdout)["secrets_left_out"] == ["state/web/token", "state/webhook_secret"]
    assert "state/web/token" in result.stderr and "new ones" in result.stderr
    with tarfile.open(archive) as tar:
        names = tar.getnames()
        contents = b"".join(tar.extractfile(m).read() for m in tar.getmembers() if m.isfile())
    assert "workspace/notes/groceries.md" in names
    assert not [n for n in names if n.endswith(".lock") or "/state/web" in n or "webhook_secret" in n], names
    for secret in secrets:
        assert secret.encode() not in contents
    # The same through the API whatever the umask (no CLI around it), and over an existing loose file.
    (tmp_path / "api.tar.gz").write_bytes(b"old")
    os.chmod(tmp_path / "api.tar.gz", 0o666)
    old = os.umask(0)
    try:
        from assistant_framework.backup import backup

        backup(ws.root, tmp_path / "api.tar.gz")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "api.tar.gz").stat().st_mode) == 0o600


def test_the_secrets_left_out_are_the_files_the_bot_keeps_them_in() -> None:
    """One owner per fact: the paths the web page and the webhook write their secrets to are the ones the
    backup leaves out (a renamed file would otherwise land in every archive)."""
    from assistant_framework.backup import _is_secret
    from assistant_framework.web.auth import TOKEN_FILE
    from messaging_llm_bot.channels.telegram.webhook import SECRET_FILE

    assert _is_secret(TOKEN_FILE) and _is_secret(SECRET_FILE)
    assert not _is_secret("state/website.json") and not _is_secret("notes/state/web/token")


def _tar_with(path: Path, *members: tuple[tarfile.TarInfo, bytes | None]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        state = tarfile.TarInfo("workspace/state")
        state.type = tarfile.DIRTYPE
        tar.addfile(state)
        note = tarfile.TarInfo("workspace/notes/first.md")  # a plain file before the link: nothing may be written
        note.size = 5
        tar.addfile(note, io.BytesIO(b"first"))
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return path


def _link(name: str, target: str, kind: bytes = tarfile.SYMTYPE) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = target
    return info


@pytest.mark.parametrize(
    "member",
    [
        _link("workspace/notes/rel.md", "../state/web/token"),  # relative, stays inside: the data filter allows it
        _link("workspace/notes/abs.md", "/etc/passwd"),
        _link("workspace/notes/up", "../../.."),
        _link("workspace/notes/hard.md", "workspace/notes/first.md", tarfile.LNKTYPE),  # a hard link inside
        _link("workspace/notes/hard-out.md", "/etc/passwd", tarfile.LNKTYPE),
    ],
    ids=["relative-symlink", "absolute-symlink", "symlink-up", "hard-link", "hard-link-out"],
)
def test_restore_refuses_every_link_before_writing_anything(tmp_path: Path, capsys, member: tarfile.TarInfo) -> None:
    """Refused by restore's own check, naming the link (not only by the tar library's filter, which lets a
    relative link and a hard link inside the archive through)."""
    archive = _tar_with(tmp_path / "links.tar.gz", (member, None))
    before = _everything(tmp_path)
    argv = ["restore", str(archive), "--workspace", str(tmp_path / "target")]
    if member.name.endswith("rel.md"):  # the real command once; in-process (same code) for the others
        result = cli(*argv)
        code, err = result.returncode, result.stderr
    else:
        code, err = main(argv), capsys.readouterr().err
    assert code == 2, err
    assert "link" in err and "restore refuses links" in err
    assert member.name in err and "Traceback" not in err
    assert _everything(tmp_path) == before  # no target, no staging folder, nothing beside them


@pytest.mark.parametrize("kind", [tarfile.FIFOTYPE, tarfile.CHRTYPE, tarfile.CONTTYPE])
def test_restore_refuses_devices_and_odd_members(tmp_path: Path, capsys, kind: bytes) -> None:
    info = tarfile.TarInfo("workspace/notes/odd")
    info.type = kind
    archive = _tar_with(tmp_path / "odd.tar.gz", (info, None))
    before = _everything(tmp_path)
    assert main(["restore", str(archive), "--workspace", str(tmp_path / "target")]) == 2
    assert "are not restored" in capsys.readouterr().err
    assert _everything(tmp_path) == before


def _bomb(path: Path, size: int = 1024**3) -> Path:
    """A real .tar.gz (about 1 MB) of a workspace with a `size`-byte file of zeros: gzip members
    concatenated, so it is made in milliseconds."""
    state = tarfile.TarInfo("workspace/state")
    state.type = tarfile.DIRTYPE
    zeros = tarfile.TarInfo("workspace/notes/zeros.md")
    zeros.size = size
    chunk = gzip.compress(bytes(1 << 20), compresslevel=9)
    with open(path, "wb") as out:
        out.write(gzip.compress(state.tobuf() + zeros.tobuf()))
        for _ in range(size >> 20):
            out.write(chunk)
        out.write(gzip.compress(bytes(2 * tarfile.BLOCKSIZE)))
    return path


def test_a_small_archive_that_unpacks_to_a_gigabyte_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    archive = _bomb(tmp_path / "bomb.tar.gz")
    assert archive.stat().st_size < 2 * 1024**2
    with tarfile.open(archive) as tar:  # what it is: a valid archive, the workspace and a 1 GiB note
        assert [(m.name, m.size) for m in (tar.next(), tar.next())] == [
            ("workspace/state", 0),
            ("workspace/notes/zeros.md", 1024**3),
        ]
    before = _everything(tmp_path)
    result = cli("restore", str(archive), "--workspace", str(tmp_path / "target"))
    assert result.returncode == 2, result.stderr
    assert "limit" in result.stderr and "--max-size" in result.stderr and "nothing written" in result.stderr
    assert "Traceback" not in result.stderr
    assert _everything(tmp_path) == before
    # Into an existing workspace with --force: the same, and the workspace stays as it was.
    ws = _workspace(tmp_path / "ws")
    kept = _everything(ws.root)
    assert main(["restore", str(archive), "--workspace", str(ws.root), "--force"]) == 2
    assert _everything(ws.root) == kept and not list((tmp_path / "backups").glob("ws.before-restore-*"))


@pytest.fixture
def small_disk(tmp_path: Path):
    with mounted_tmpfs(tmp_path / "disk", "96m") as mount_point:
        yield mount_point


def test_a_restore_larger_than_the_free_disk_is_refused_before_anything_is_written(
    tmp_path: Path, small_disk: Path
) -> None:
    """Even with a limit that lets it through, 256 MiB do not go onto a 96 MiB disk: checked first."""
    archive = _bomb(tmp_path / "bomb.tar.gz", size=256 * 1024**2)
    result = cli("restore", str(archive), "--workspace", str(small_disk / "ws"), "--max-size", "1G")
    assert result.returncode == 1, result.stderr
    assert "not enough free disk" in result.stderr and "nothing written" in result.stderr
    assert list(small_disk.iterdir()) == []
    # What fits goes through (the same check, the other side of it).
    ws = _workspace(tmp_path / "ws")
    assert main(["backup", "--workspace", str(ws.root), "--out", str(tmp_path / "ok.tar.gz")]) == 0
    assert main(["restore", str(tmp_path / "ok.tar.gz"), "--workspace", str(small_disk / "ws")]) == 0
    assert (small_disk / "ws" / "notes" / "groceries.md").read_text() == "# Groceries\neggs\n"


def test_max_size_is_checked_as_given(tmp_path: Path, capsys) -> None:
    ws = _workspace(tmp_path / "ws")
    assert main(["backup", "--workspace", str(ws.root), "--out", str(tmp_path / "b.tar.gz")]) == 0
    assert main(["restore", str(tmp_path / "b.tar.gz"), "--workspace", str(tmp_path / "r"), "--max-size", "10"]) == 2
    assert "more than 10 bytes" in capsys.readouterr().err and not (tmp_path / "r").exists()
    with pytest.raises(SystemExit):
        main(["restore", str(tmp_path / "b.tar.gz"), "--workspace", str(tmp_path / "r"), "--max-size", "lots"])
    assert main(["restore", str(tmp_path / "b.tar.gz"), "--workspace", str(tmp_path / "r"), "--max-size", "1M"]) == 0


@pytest.mark.timeout(120)
def test_restore_refuses_the_workspace_of_a_running_bot_and_a_bot_cannot_start_during_a_restore(
    tmp_path: Path, bot_config: dict, fake, chat_server
) -> None:
    """`restore --force` replaced the workspace under a running bot, and a second bot could then start on
    it. The real bot (Telegram and the web page) holds its locks; restore takes them all or refuses."""
    chat_server.set_handler(echo_reply)
    config = write_bot_config(tmp_path / "config.json", bot_config, fake, extra={"web": {"enabled": True, "port": 0}})
    ws = _workspace(tmp_path / "ws")
    assert main(["backup", "--workspace", str(ws.root), "--out", str(tmp_path / "b.tar.gz")]) == 0
    with BotProcess(config, ws.root, tmp_path / "bot.log") as bot:
        bot.start().wait_ready()
        fake.send_message("hello", user_id=1)
        fake.wait_for(lambda: sent_texts(fake, 1), timeout=20)
        # A backup while it runs: allowed, and the page's token (made by this bot) is not in it.
        token = (ws.root / "state" / "web" / "token").read_text().strip()
        assert main(["backup", "--workspace", str(ws.root), "--out", str(tmp_path / "live.tar.gz")]) == 0
        assert token.encode() not in gzip.decompress((tmp_path / "live.tar.gz").read_bytes())
        before = _everything(ws.root)
        refused = cli("restore", str(tmp_path / "b.tar.gz"), "--workspace", str(ws.root), "--force")
        assert refused.returncode == 1, refused.stderr
        assert "in use" in refused.stderr and "state/bot.lock" in refused.stderr and "stop it first" in refused.stderr
        assert "Traceback" not in refused.stderr
        assert not list((tmp_path / "backups").glob("ws.before-restore-*")) and not list(
            (tmp_path / "backups").glob(".ws.restore-*")
        )
        after = _everything(ws.root)
        assert {k: v for k, v in after.items() if k.startswith("notes/")} == {
            k: v for k, v in before.items() if k.startswith("notes/")
        }
        fake.send_message("still here?", user_id=1)
        fake.wait_for(lambda: len(sent_texts(fake, 1)) >= 2, timeout=20)
        assert bot.terminate() == 0
    # Stopped: the restore goes through.
    assert main(["restore", str(tmp_path / "b.tar.gz"), "--workspace", str(ws.root), "--force"]) == 0
    # While a restore holds the workspace, a bot refuses to start on it (exit 2, one sentence).
    from assistant_framework.workspace.inuse import exclusive

    with exclusive(ws.root), BotProcess(config, ws.root, tmp_path / "second.log") as second:
        second.start()
        assert second.wait(timeout=30) == 2
        assert "being restored" in second.run_log() and "Traceback" not in second.run_log()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("holder", ["signal-lock", "assistant-web", "console-bot"])
def test_restore_refuses_a_workspace_any_frontend_or_the_web_page_uses(
    tmp_path: Path, bot_config: dict, chat_server, capsys, holder: str
) -> None:
    import filelock

    chat_server.set_handler(echo_reply)
    ws = _workspace(tmp_path / "ws")
    assert main(["backup", "--workspace", str(ws.root), "--out", str(tmp_path / "b.tar.gz")]) == 0
    config = tmp_path / "config.json"
    config.write_text(json.dumps({**bot_config, "web": {"port": 0}}))
    proc = None
    lock = None
    try:
        if holder == "signal-lock":  # as the Signal frontend takes it
            lock = filelock.FileLock(str(ws.path("state/signal.lock")), mode=0o600)
            lock.acquire(timeout=0)
            expect = "state/signal.lock"
        else:
            argv = (
                [ASSISTANT, "web", "--config", str(config), "--workspace", str(ws.root), "--port", "0"]
                if holder == "assistant-web"
                else [str(REPO / ".venv/bin/python"), "-m", "messaging_llm_bot", "--frontend", "console"]
                + ["--config", str(config), "--workspace", str(ws.root)]
            )
            proc = preload.popen(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=REPO
            )
            if holder == "console-bot":
                proc.stdin.write("hello\n")
                proc.stdin.flush()
            ready = "web page:" if holder == "assistant-web" else "re: hello"  # the banner / the first reply
            seen = ""
            while ready not in seen:
                line = proc.stdout.readline()
                assert line, f"the process ended before it was up: {seen}"
                seen += line
            expect = "state/in-use.lock"
        capsys.readouterr()
        assert main(["restore", str(tmp_path / "b.tar.gz"), "--workspace", str(ws.root), "--force"]) == 1
        err = capsys.readouterr().err
        assert "in use" in err and expect in err
        assert not list((tmp_path / "backups").glob("ws.before-restore-*"))
    finally:
        if lock is not None:
            lock.release()
        if proc is not None:
            proc.kill()
            proc.communicate()  # reaps it and closes its pipes
            proc.wait(10)
    assert main(["restore", str(tmp_path / "b.tar.gz"), "--workspace", str(ws.root), "--force"]) == 0


@pytest.mark.slow(reason="writes and archives a flood of empty files (the limit's own size) (out of make check's tier)")
def test_a_flood_of_empty_files_counts_toward_the_limit(tmp_path: Path) -> None:
    """The limit is on what the archive unpacks to, headers included: 1,200 empty files are 600 KB of tar
    stream (and 1,200 inodes) though they hold no byte, over a limit of 512 KB."""
    from assistant_framework.backup import BackupError, restore

    empty = [(tarfile.TarInfo(f"workspace/notes/{n}.md"), b"") for n in range(1200)]
    archive = _tar_with(tmp_path / "flood.tar.gz", *empty)
    assert archive.stat().st_size < 100_000
    with pytest.raises(BackupError, match="limit of a restore"):
        restore(archive, tmp_path / "target", max_bytes=512 * 1024)
    assert not (tmp_path / "target").exists()
    assert restore(archive, tmp_path / "target", max_bytes=2 * 1024**2) is None
    assert len(list((tmp_path / "target" / "notes").iterdir())) == 1201
