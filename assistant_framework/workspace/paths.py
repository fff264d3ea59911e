"""Path confinement: every workspace path is resolved inside the root.

Absolute paths, ``..`` escapes, symlinks that lead outside, control characters (NUL, a
newline in a name that would then pose as two lines in a listing) and direction characters (a
right-to-left override shows ``invoice_<U+202E>fdp.exe.md`` as "invoice_dm.exe.pdf" in a listing,
on the web page and in the owner's question about a call) are refused with ``WorkspacePathError``.
This runs for every file operation, so the common case (no symlink below the root) is answered
without a full ``resolve()``.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from .. import direction

_CONTROL = re.compile(rf"[\x00-\x1f\x7f{direction.CONTROLS}]")


class WorkspacePathError(ValueError):
    """A path that would leave the workspace, or is otherwise unusable."""


def confined_path(root: Path, root_text: str, rel: str | os.PathLike[str]) -> Path:
    """Resolve a workspace-relative path under ``root`` (already resolved; ``root_text`` is
    ``str(root)``), refusing anything that escapes it."""
    text = os.fspath(rel)
    if not isinstance(text, str):
        raise WorkspacePathError(f"workspace path must be text, got {text!r}")
    text = text.replace("\\", "/").strip()
    if _CONTROL.search(text):
        raise WorkspacePathError(
            f"workspace path {text!r} contains a control or direction character; use a plain file name"
        )
    if not text:
        raise WorkspacePathError("workspace path is empty")
    if text.startswith("/") or (len(text) > 1 and text[1] == ":") or text.startswith("~"):
        raise WorkspacePathError(f"workspace path {text!r} is absolute; use a path relative to the workspace")
    parts = [p for p in text.split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts):
        raise WorkspacePathError(f"workspace path {text!r} uses '..' to leave its folder")
    if not _has_link(root_text, parts):
        # No symlink below the (already resolved) root: the joined path is the resolved one.
        return Path(root_text + "/" + "/".join(parts)) if parts else root
    try:
        # Every link on the way must stay inside, not only the end: a link out to the folder holding
        # the workspace and back in (``notes/up/ws/...``) is refused too.
        current = root
        for part in parts:
            current = current / part
            if current.is_symlink() and not _inside(root, current.resolve()):
                raise WorkspacePathError(f"workspace path {text!r} leads outside the workspace (through a symlink)")
        # resolve() follows symlinks, so a link pointing outside shows up here.
        resolved = root.joinpath(*parts).resolve()
    except (RuntimeError, OSError) as err:  # RuntimeError: pathlib's "Symlink loop"
        raise WorkspacePathError(f"workspace path {text!r} cannot be resolved (a symlink loop?): {err}") from None
    if not _inside(root, resolved):
        raise WorkspacePathError(f"workspace path {text!r} leads outside the workspace (through a symlink)")
    return resolved


def _inside(root: Path, resolved: Path) -> bool:
    return resolved == root or root in resolved.parents


def _has_link(root_text: str, parts: list[str]) -> bool:
    """True when a component below the root is a symlink (one lstat per existing component;
    cheaper than a full resolve(), which walks every component from '/')."""
    current = root_text
    for part in parts:
        current = current + "/" + part
        try:
            mode = os.lstat(current).st_mode
        except FileNotFoundError:
            return False  # nothing below a missing component exists yet
        except OSError:
            return True  # e.g. a file used as a folder: let resolve() decide
        if stat.S_ISLNK(mode):
            return True
    return False
