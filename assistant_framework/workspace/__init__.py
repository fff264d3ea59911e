"""The Workspace: all persistent state as plain files under one root.

Every whole-file write is atomic (temporary file in the same folder, fsync,
``os.replace``) so a crash leaves the old or the new content, never a torn
file. Appends take a file lock so lines from several threads or processes
never interleave. Every path is resolved inside the root: absolute paths,
``..`` escapes, symlinks that lead outside and NUL bytes are refused.

- ``files``: the ``Workspace`` class (read, write, append, list, delete, lock), ``LAYOUT``,
  ``existing_workspace``, ``created_workspace``.
- ``paths``: path confinement (``WorkspacePathError``).
- ``atomic``: ``atomic_write_bytes``, also used for files outside a workspace (config files, exports).
- ``locks``: the thread-plus-file lock behind ``Workspace.lock`` and every append.
- ``tail``: a log's last lines read from its end, and the bound an append cuts a log to (``LogCap``).

The names below are the API for the framework, the bot and plugins; import them from here.
"""

from assistant_framework.workspace.atomic import atomic_write_bytes
from assistant_framework.workspace.files import (
    LAYOUT,
    WORKSPACE_MARKER,
    NotAWorkspaceError,
    Workspace,
    created_workspace,
    existing_workspace,
    is_workspace,
)
from assistant_framework.workspace.paths import WorkspacePathError
from assistant_framework.workspace.tail import LogCap, tail_bytes

__all__ = [
    "LAYOUT",
    "WORKSPACE_MARKER",
    "LogCap",
    "NotAWorkspaceError",
    "Workspace",
    "WorkspacePathError",
    "atomic_write_bytes",
    "created_workspace",
    "existing_workspace",
    "is_workspace",
    "tail_bytes",
]
