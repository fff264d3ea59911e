"""Backup and restore of a workspace: a dated ``.tar.gz`` of the files that are data.

Left out: the search index (a cache rebuilt from the files), locks, logs, temp files and, unless
asked for, traces (large, and rebuilt by use). Restore checks every member before writing
anything, extracts beside the target and swaps it in, so a failed restore changes nothing.
"""

from __future__ import annotations

import os
import shutil
import tarfile
import tempfile
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path, PurePosixPath

from assistant_framework.workspace import WORKSPACE_MARKER, existing_workspace

#: Workspace-relative prefixes that are not data (rebuilt, or only useful while running).
EXCLUDED = ("memory/index.sqlite3", "state/locks/", "state/logs/")
TRACES = "traces/"
ARCHIVE_ROOT = "workspace"


class BackupError(Exception):
    """An archive that cannot be written or restored; the message says why."""


@dataclass
class BackupResult:
    """What a backup wrote."""

    path: Path
    files: int
    bytes: int
    #: Symbolic links in the workspace, left out (a link may point anywhere; its target is not the workspace's).
    links: list[str] = field(default_factory=list)


def _skipped(rel: str, include_traces: bool) -> bool:
    name = PurePosixPath(rel).name
    if name.startswith(".") and ".tmp-" in name:  # an atomic write in flight
        return True
    if rel.startswith(EXCLUDED) or "__pycache__" in rel.split("/"):
        return True
    return not include_traces and rel.startswith(TRACES)


def backup(
    workspace: str | os.PathLike[str],
    out: str | os.PathLike[str] = ".",
    *,
    include_traces: bool = False,
    now: datetime | None = None,
) -> BackupResult:
    """Write ``assistant-backup-YYYYMMDD-HHMMSS.tar.gz`` into the folder ``out`` (or to the file ``out``)."""
    ws = existing_workspace(workspace)
    target = Path(out)
    if target.is_dir() or str(out).endswith(os.sep):
        stamp = (now or datetime.now()).strftime("%Y%m%d-%H%M%S")
        target = target / f"assistant-backup-{stamp}.tar.gz"
    if not target.parent.is_dir():
        raise BackupError(f"{target.parent}: no such folder")
    if target.resolve().is_relative_to(ws.root):
        raise BackupError(f"{target}: the archive may not be written inside the workspace it backs up")
    files = total = 0
    links: list[str] = []
    partial = target.with_name(f".{target.name}.partial")
    try:
        with tarfile.open(partial, "w:gz") as tar:
            for path in sorted(ws.root.rglob("*")):
                rel = path.relative_to(ws.root).as_posix()
                if path.is_symlink():
                    links.append(rel)
                    continue
                if _skipped(rel + ("/" if path.is_dir() else ""), include_traces):
                    continue
                if path.is_dir():  # folders too, so the layout (state/, ...) comes back even when empty
                    tar.add(path, arcname=f"{ARCHIVE_ROOT}/{rel}", recursive=False)
                elif path.is_file():
                    # Opened first, then measured: a file the bot replaces meanwhile is archived whole (the
                    # version that was opened), one it deleted since the listing is left out, not a failure.
                    try:
                        handle = path.open("rb")
                    except FileNotFoundError:
                        continue
                    with handle:
                        info = tar.gettarinfo(arcname=f"{ARCHIVE_ROOT}/{rel}", fileobj=handle)
                        tar.addfile(info, handle)
                    files += 1
                    total += info.size
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    return BackupResult(target, files, total, links)


def _check_members(tar: tarfile.TarFile) -> list[tarfile.TarInfo]:
    members = tar.getmembers()
    for member in members:
        parts = PurePosixPath(member.name).parts
        if not parts or parts[0] != ARCHIVE_ROOT or ".." in parts or member.name.startswith("/"):
            raise BackupError(f"{member.name!r}: not a file of an assistant backup")
        if not (member.isfile() or member.isdir()):
            raise BackupError(f"{member.name!r}: links and devices are not restored")
    if not any(PurePosixPath(m.name).parts[1:2] == (WORKSPACE_MARKER,) for m in members):
        raise BackupError("the archive holds no workspace (no state/ folder)")
    return members


def restore(archive: str | os.PathLike[str], workspace: str | os.PathLike[str], *, force: bool = False) -> Path | None:
    """Restore ``archive`` into ``workspace``; an existing one is kept as ``<name>.before-restore-<time>``
    (only with ``force``). Returns where the old workspace went, or None."""
    source = Path(archive)
    # Absolute and normalised ("." or "ws/.." have no name to put the old one beside), links not followed.
    target = Path(os.path.abspath(Path(workspace).expanduser()))
    if not source.is_file():
        raise BackupError(f"{source}: no such archive")
    if target.exists() and any(target.iterdir()) and not force:
        raise BackupError(f"{target} exists and is not empty: pass --force to keep it aside and restore over it")
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.restore-", dir=target.parent))
    try:
        try:
            with tarfile.open(source, "r:gz") as tar:
                members = _check_members(tar)
                tar.extractall(staging, members=members, filter="data")
        except (tarfile.TarError, EOFError, OSError, zlib_error()) as exc:
            raise BackupError(f"{source}: not a readable .tar.gz ({exc})") from None
        kept = None
        if target.exists():
            kept = target.with_name(f"{target.name}.before-restore-{datetime.now():%Y%m%d-%H%M%S}")
            os.replace(target, kept)
        os.replace(staging / ARCHIVE_ROOT, target)
        return kept
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def zlib_error() -> type[Exception]:
    import zlib

    return zlib.error


__all__ = ["BackupError", "BackupResult", "backup", "restore"]
