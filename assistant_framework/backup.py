"""Backup and restore of a workspace: a dated ``.tar.gz`` of the files that are data.

Left out: the search index (a cache rebuilt from the files), locks, logs, temp files, the secrets
the bot keeps in ``state/`` (the web page's token, the webhook secret: both made again at the next
start) and, unless asked for, traces (large, and rebuilt by use). The archive is written 0600, its members
0600/0700 whatever the files' modes, and synced before the command says it is written.

Restore checks every member before writing anything (only files and folders under ``workspace/``; no
link of any kind) and reads the stream to gzip's checksum (a damaged copy is refused), bounds what it unpacks
(a size limit, the free disk), refuses a folder that is no workspace and a workspace a bot or
``assistant web`` is using, extracts beside the target and swaps it in, so a failed restore changes
nothing (an empty folder, a Docker volume's too, is unpacked into and filled in place). What it restores
is private (0600 files, 0700 folders), whatever the archive says, and synced before the swap.
"""

from __future__ import annotations

import contextlib
import errno
import gzip
import os
import shutil
import stat
import tarfile
import tempfile
import zlib
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path, PurePosixPath

from assistant_framework.hints import CLI
from assistant_framework.inbox.fsync import fsync_all, fsync_path
from assistant_framework.workspace import WORKSPACE_MARKER, Workspace, existing_workspace
from assistant_framework.workspace.inuse import WorkspaceBusyError, exclusive
from assistant_framework.workspace.private import DIR_MODE, FILE_MODE, make_private_dirs, tighten

#: Workspace-relative prefixes that are not data (rebuilt, or only useful while running).
EXCLUDED = ("memory/index.sqlite3", "state/locks/", "state/logs/")
#: Secrets the bot keeps in the workspace; a backup may sit anywhere, and both are made anew at the next
#: start (a new web page token is logged once; the webhook is registered again with the new secret).
SECRETS = ("state/web/", "state/webhook_secret")
#: Lock files (``state/bot.lock``, ``state/in-use.lock``, ...) anywhere: no data, and meaningless elsewhere.
LOCK_SUFFIX = ".lock"
TRACES = "traces/"
ARCHIVE_ROOT = "workspace"

#: What ``restore`` unpacks at most unless told otherwise: this many times the archive's size, but at
#: least ``MIN_RESTORE_BYTES``. Workspace text packs 3-20 times; a file of zeros over 1000 times.
RESTORE_RATIO = 100
MIN_RESTORE_BYTES = 256 * 1024**2
#: Members at most (each is an inode and a block on disk).
MAX_MEMBERS = 500_000
#: Kept free on the disk after a restore, and what each member takes at least.
DISK_RESERVE = 64 * 1024**2
BLOCK = 4096


class BackupError(Exception):
    """An archive that cannot be written or restored; the message says why (exit status 2)."""

    exit_code = 2


class RestoreRefused(BackupError):
    """A restore that cannot run now (the workspace is in use, the disk is too full): exit status 1."""

    exit_code = 1


@dataclass
class BackupResult:
    """What a backup wrote."""

    path: Path
    files: int
    bytes: int
    #: Symbolic links in the workspace, left out (a link may point anywhere; its target is not the workspace's).
    links: list[str] = field(default_factory=list)
    #: Secret files left out (``SECRETS``), made anew by the bot.
    secrets: list[str] = field(default_factory=list)


def _is_secret(rel: str) -> bool:
    return rel.startswith(SECRETS) or rel + "/" in SECRETS


def _skipped(rel: str, include_traces: bool) -> bool:
    name = PurePosixPath(rel.rstrip("/")).name
    if name.startswith(".") and ".tmp-" in name:  # an atomic write in flight
        return True
    if name.endswith(LOCK_SUFFIX) and not rel.endswith("/"):
        return True
    if rel.startswith(EXCLUDED) or "__pycache__" in rel.split("/"):
        return True
    return not include_traces and rel.startswith(TRACES)


#: Where archives go unless told otherwise, and where ``restore --force`` keeps the old workspace: a folder
#: beside the workspace (``backups/`` in the checkout is git-ignored), never the current folder.
BACKUPS_DIR = "backups"


def backups_dir(workspace_root: Path) -> Path:
    """``<the workspace's parent>/backups``: the default home of archives and of a replaced workspace."""
    return workspace_root.parent / BACKUPS_DIR


def backup(
    workspace: str | os.PathLike[str],
    out: str | os.PathLike[str] | None = None,
    *,
    include_traces: bool = False,
    now: datetime | None = None,
) -> BackupResult:
    """Write ``assistant-backup-YYYYMMDD-HHMMSS.tar.gz`` into the folder ``out`` (or to the file ``out``), mode 0600;
    without ``out``, into ``backups/`` beside the workspace (made private when missing)."""
    ws = existing_workspace(workspace)
    target = _archive_path(ws, out, now)
    files = total = 0
    links: list[str] = []
    secrets: list[str] = []
    partial = target.with_name(f".{target.name}.partial")
    partial.unlink(missing_ok=True)  # a partial file left by a killed backup: its mode is not ours to trust
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    try:
        os.fchmod(fd, FILE_MODE)  # the archive holds all memory: never readable by others, whatever the umask
        with os.fdopen(fd, "wb") as raw, tarfile.open(fileobj=raw, mode="w:gz") as tar:
            for path in sorted(ws.root.rglob("*")):
                rel = path.relative_to(ws.root).as_posix()
                if path.is_symlink():
                    links.append(rel)
                    continue
                if _is_secret(rel):
                    if path.is_file():
                        secrets.append(rel)
                    continue
                if _skipped(rel + ("/" if path.is_dir() else ""), include_traces):
                    continue
                if path.is_dir():  # folders too, so the layout (state/, ...) comes back even when empty
                    tar.add(path, arcname=f"{ARCHIVE_ROOT}/{rel}", recursive=False, filter=_private_member)
                elif path.is_file():
                    added = _add_file(tar, ws, rel)
                    if added is not None:
                        files += 1
                        total += added
        # On the disk before the command says it is written: a USB stick pulled out at once still holds it.
        fsync_path(partial)
        os.replace(partial, target)
        with contextlib.suppress(OSError):  # a file system that cannot sync a folder still has the file synced
            fsync_path(target.parent)
    finally:
        partial.unlink(missing_ok=True)
    return BackupResult(target, files, total, links, secrets)


def _archive_path(ws: Workspace, out: str | os.PathLike[str] | None, now: datetime | None) -> Path:
    """Where the archive goes: the file ``out``, a stamped name in the folder ``out`` (or in ``backups/``
    beside the workspace, made private when missing), never inside the workspace."""
    if out is None:
        out = backups_dir(ws.root)
        make_private_dirs(Path(out))
    target = Path(out)
    if target.is_dir() or str(out).endswith(os.sep):
        stamp = (now or datetime.now()).strftime("%Y%m%d-%H%M%S")
        target = target / f"assistant-backup-{stamp}.tar.gz"
    if not target.parent.is_dir():
        raise BackupError(f"{target.parent}: no such folder")
    if target.resolve().is_relative_to(ws.root):
        raise BackupError(f"{target}: the archive may not be written inside the workspace it backs up")
    return target


def _private_member(info: tarfile.TarInfo) -> tarfile.TarInfo:
    """A member as the workspace keeps it (0600 files, 0700 folders), not as a file copied in by hand left it:
    an archive unpacked with plain ``tar`` elsewhere is private too."""
    info.mode = DIR_MODE if info.isdir() else FILE_MODE
    return info


def _add_file(tar: tarfile.TarFile, ws: Workspace, rel: str) -> int | None:
    """Archive one file; its size, or None when it is gone or became a link meanwhile."""
    # Opened first, then measured: a file the bot replaces meanwhile is archived whole (the version that
    # was opened), one it deleted since the listing is left out, not a failure. No link is followed.
    path = ws.root / rel
    if not Path(os.path.realpath(path.parent)).is_relative_to(ws.root):  # a folder became a link out meanwhile
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # became a link meanwhile
            return None
        raise
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        info = _private_member(tar.gettarinfo(arcname=f"{ARCHIVE_ROOT}/{rel}", fileobj=handle))
        tar.addfile(info, handle)
        return info.size


# -- restore ---------------------------------------------------------------------------------------


@dataclass
class ArchivePlan:
    members: list[tarfile.TarInfo]
    bytes: int  # what the members unpack to (headers and blocks as in the tar stream)
    disk: int  # what they take on disk, at least


def _size(n: float) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def check_member_name(name: str, root: str | None, what: str) -> None:
    """A member's name stays inside what is unpacked: relative, no ``..``, under ``root`` when given (a
    backup's members are all under ``workspace/``). ``what`` names the archive's kind in the message."""
    parts = PurePosixPath(name).parts
    if not parts or (root is not None and parts[0] != root) or ".." in parts or name.startswith(("/", "\\")):
        raise BackupError(f"{name!r}: not a file of {what}")


def check_member(member: tarfile.TarInfo, root: str | None = ARCHIVE_ROOT, what: str = "") -> None:
    """One tar member: its name (``check_member_name``), and a plain file or folder (no link, device or
    sparse file)."""
    check_member_name(member.name, root, what or f"a backup made by `{CLI} backup`")
    if member.issym() or member.islnk():
        raise BackupError(
            f"{member.name!r} is a {'symbolic' if member.issym() else 'hard'} link (to {member.linkname!r}): "
            + ("restore refuses links, a backup never holds one" if root == ARCHIVE_ROOT else "links are refused")
        )
    if member.type not in (tarfile.REGTYPE, tarfile.AREGTYPE, tarfile.DIRTYPE) or member.sparse is not None:
        done = "restored" if root == ARCHIVE_ROOT else "unpacked"
        raise BackupError(f"{member.name!r}: links, devices and sparse files are not {done}")


def check_members(
    tar: tarfile.TarFile,
    archive_bytes: int,
    max_bytes: int | None,
    target: Path,
    *,
    root: str | None = ARCHIVE_ROOT,
    max_members: int = MAX_MEMBERS,
    what: str = "",
) -> ArchivePlan:
    """Every member checked, and what they unpack to bounded by the limit and the free disk, before anything
    is written. Headers are read one by one and the sums checked at each, so a bomb is refused at its
    header, before its data is unpacked even to be skipped. ``root``, ``max_members`` and ``what``: a
    backup's by default; a skill's archive (``agentskills/install.py``) has its own."""
    limit = max_bytes if max_bytes is not None else max(MIN_RESTORE_BYTES, RESTORE_RATIO * archive_bytes)
    disk_at, free = _free_disk(target)
    members: list[tarfile.TarInfo] = []
    total = disk = 0
    for member in tar:
        check_member(member, root, what)
        members.append(member)
        # What the members unpack to as the tar stream holds them (a header and whole 512-byte blocks each):
        # what gzip expanded, so a flood of empty files counts too, not only the bytes of the files.
        total += tarfile.BLOCKSIZE + -(-member.size // tarfile.BLOCKSIZE) * tarfile.BLOCKSIZE
        disk += BLOCK + -(-member.size // BLOCK) * BLOCK
        if total > limit:
            how = "" if max_bytes is not None else f" ({_size(archive_bytes)} packed; at most {RESTORE_RATIO}x that)"
            raise BackupError(
                f"the archive unpacks to more than {_size(limit)}{how}, the limit of a restore: refused, nothing "
                f"written. If you trust it, pass --max-size with its size (e.g. --max-size {_flag_size(total * 2)})"
            )
        if disk + DISK_RESERVE > free:
            raise RestoreRefused(
                f"not enough free disk for the restore: it unpacks to at least {_size(total)} and {disk_at} has "
                f"{_size(free)} free (keeping {_size(DISK_RESERVE)}): nothing written; make room first"
            )
        if len(members) > max_members:
            raise BackupError(f"the archive holds more than {max_members} files: refused, nothing written")
    _read_to_end(tar, max(limit - total, tarfile.RECORDSIZE))
    return ArchivePlan(members, total, disk)


def _read_to_end(tar: tarfile.TarFile, room: int) -> None:
    """Read the stream past tar's end marker to its end (at most ``room`` bytes more), so gzip checks its CRC:
    tar stops before gzip's trailer, and a bit flipped on the way restored damaged files as if whole."""
    try:
        while chunk := tar.fileobj.read(min(1 << 20, room + 1)) if tar.fileobj else b"":
            room -= len(chunk)
            if room < 0:
                raise BackupError("the archive goes on past its last file, over the limit of a restore: refused")
    except gzip.BadGzipFile as exc:
        raise _damaged(exc) from None


def _damaged(exc: gzip.BadGzipFile) -> BackupError:
    return BackupError(f"the archive is damaged ({exc}): refused, nothing written")


def _free_disk(target: Path) -> tuple[Path, int]:
    """``target`` or its nearest existing parent, and the free bytes of its file system (a mount point's own)."""
    existing = target
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    return existing, shutil.disk_usage(existing).free


def _flag_size(n: int) -> str:
    """A ``--max-size`` value at least ``n``: whole MiB or GiB."""
    mib = -(-n // 1024**2)
    return f"{-(-mib // 1024)}G" if mib >= 1024 else f"{mib}M"


def restore(
    archive: str | os.PathLike[str],
    workspace: str | os.PathLike[str],
    *,
    force: bool = False,
    max_bytes: int | None = None,
) -> Path | None:
    """Restore ``archive`` into ``workspace``: a new folder, an empty one (filled in place: a mount point too), or
    with ``force`` over an existing workspace, kept as ``backups/<name>.before-restore-<time>`` beside it (only
    when no bot or web page uses it, and not a mount point's, which cannot be moved). ``max_bytes`` is the most the
    archive may unpack to (default: ``RESTORE_RATIO`` times its size, at least ``MIN_RESTORE_BYTES``).
    Returns where the old workspace went, or None."""
    source = Path(archive)
    # Absolute and normalised ("." or "ws/.." have no name to put the old one beside), links not followed.
    target = Path(os.path.abspath(Path(workspace).expanduser()))
    if not source.is_file():
        raise BackupError(f"{source}: no such archive")
    occupied = target.exists() and any(target.iterdir())
    if occupied and not (target / WORKSPACE_MARKER).is_dir():  # a typo's folder, the checkout: not set aside
        raise BackupError(
            f"{target} is not a workspace (no {WORKSPACE_MARKER}/ folder) and not empty: nothing changed. Name the "
            "workspace folder, or a new or empty one"
        )
    if occupied and not force:
        raise BackupError(f"{target} exists and is not empty: pass --force to keep it aside and restore over it")
    if occupied and os.path.ismount(target):
        raise BackupError(
            f"{target} is a mount point (a Docker volume or a disk of its own), so the workspace in it cannot be kept "
            f"aside: nothing changed. Back it up first ({CLI} backup), empty it, then restore into it"
        )
    try:
        with tarfile.open(source, "r:gz") as tar:
            plan = check_members(tar, source.stat().st_size, max_bytes, target)
            if not any(PurePosixPath(m.name).parts[1:2] == (WORKSPACE_MARKER,) for m in plan.members):
                raise BackupError("the archive holds no workspace (no state/ folder)")
            try:
                with exclusive(target):  # held through the swap: no bot starts on the workspace meanwhile
                    return _unpack(tar, plan, target)
            except WorkspaceBusyError as exc:
                raise RestoreRefused(f"{exc}; nothing written") from None
    except (tarfile.TarError, EOFError, zlib.error) as exc:
        raise BackupError(f"{source}: not a readable .tar.gz ({exc}); nothing restored") from None
    except gzip.BadGzipFile as exc:  # a stream a flipped bit ended early fails its checksum among tar's headers
        raise _damaged(exc) from None
    except OSError as exc:
        raise BackupError(f"{source}: could not be restored ({exc}); {target} is as it was") from None


def _unpack(tar: tarfile.TarFile, plan: ArchivePlan, target: Path) -> Path | None:
    # An empty folder is filled in place, unpacked inside it: it may be a mount point (a Docker volume), which
    # cannot be renamed and whose parent may not be writable, and an empty folder is no workspace to keep.
    in_place = target.is_dir() and not any(target.iterdir())
    if in_place:
        aside = target
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        # Unpacked in, and the old workspace kept in, backups/ beside the target (the same file system, so the
        # swap is a rename): nothing is left in the folder that holds the workspace (the checkout).
        aside = backups_dir(target)
        make_private_dirs(aside)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.restore-", dir=aside))
    try:
        tar.extractall(staging, members=plan.members, filter="data")
        tighten(staging / ARCHIVE_ROOT)  # private whatever modes the archive carries
        _sync_tree(staging / ARCHIVE_ROOT)
        if in_place:
            _move_into(staging / ARCHIVE_ROOT, target)
            fsync_all([target])
            return None
        kept = None
        if target.exists():
            kept = aside / f"{target.name}.before-restore-{datetime.now():%Y%m%d-%H%M%S}"
            os.replace(target, kept)
        os.replace(staging / ARCHIVE_ROOT, target)
        fsync_all([target.parent, aside])  # both renames durable: the workspace and the one kept aside
        return kept
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _sync_tree(root: Path) -> None:
    """Every unpacked file and folder on the disk before the swap: a rename can reach the disk before the data it
    names, so a power cut just after a restore could leave the workspace's files empty. Synced together (one
    journal commit for many on ext4/xfs, ``fsync_all``)."""
    paths = [root]
    for folder, dirs, files in os.walk(root):
        paths += [Path(folder, name) for name in (*dirs, *files)]
    fsync_all(paths)


def _move_into(unpacked: Path, target: Path) -> None:
    """What was unpacked into the empty folder ``target``, renamed in (the same file system) with ``state/`` last:
    until it arrives the folder is no workspace, so a restore cut short is not started on."""
    for entry in sorted(unpacked.iterdir(), key=lambda p: p.name == WORKSPACE_MARKER):
        os.replace(entry, target / entry.name)
    os.chmod(target, DIR_MODE)


__all__ = [
    "BACKUPS_DIR",
    "ArchivePlan",
    "BackupError",
    "BackupResult",
    "RestoreRefused",
    "backup",
    "backups_dir",
    "check_member",
    "check_member_name",
    "check_members",
    "restore",
]
