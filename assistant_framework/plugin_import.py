"""Import a plugin folder (a skill or a collector) as a package under a unique module name.

No ``sys.path`` changes; two folders with the same name in different directories never clash;
each import reads the source, so a plugin edited and reloaded within one second is fresh. What a
source compiles to is kept for the process, keyed by the file's path and its whole text (not by its
mtime): the built-in skills and collectors are imported at every start and reload of a bot, and a
test run starts hundreds.

With ``reuse`` (the folders the framework ships: the built-in skills and collectors) a folder whose files are
unchanged is not imported again: the module object of its last import comes back, and with it its module-level
state, shared by every manager of the process that loads it (``folder_key``: each file's path, size and times).
Any other folder is imported afresh each time, so a user's plugin runs its module code again at ``/reload``.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.machinery
import importlib.util
import os
import re
import sys
import threading
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path


class PluginImportError(ImportError):
    """A plugin folder that could not be imported; the message names the folder."""


def module_name_for(folder: Path, root: str) -> str:
    """A unique, stable module name per plugin folder: ``<root>.d<hash>.<name>``."""
    digest = hashlib.sha1(str(folder.resolve().parent).encode("utf-8")).hexdigest()[:10]
    safe = re.sub(r"\W", "_", folder.name)
    if not safe or safe[0].isdigit():
        safe = "_" + safe
    return f"{root}.d{digest}.{safe}"


def _ensure_parent_packages(module_name: str) -> None:
    # Placeholder namespace packages so the dotted name is importable as a whole.
    parts = module_name.split(".")
    for depth in range(1, len(parts)):
        name = ".".join(parts[:depth])
        if name not in sys.modules:
            package = types.ModuleType(name)
            package.__path__ = []
            sys.modules[name] = package


def forget_module(module_name: str) -> None:
    """Drop a plugin module and its submodules from ``sys.modules`` (for reload)."""
    if module_name not in sys.modules:
        # Its submodules are imported only after it (``import_plugin`` registers it first) and leave with it
        # (here), so there are none to drop: no scan of every module's name (a test process holds thousands,
        # and each bot start imports and forgets every built-in skill).
        return
    for name in _loaded_under(module_name):
        sys.modules.pop(name, None)


def _loaded_under(module_name: str) -> list[str]:
    """``module_name`` and its submodules in ``sys.modules``: the names joined into one text, searched for the
    name at a line's start. A comprehension that asked every name ``startswith`` took 0.4 ms with a test
    process's 2,400 modules, at each plugin of every bot start; the search is three times faster."""
    # The names copied first (one C call, atomic under the GIL): another thread importing at the same
    # moment would otherwise end the iteration with "dictionary changed size during iteration".
    listing = "\n" + "\n".join(list(sys.modules)) + "\n"
    key, found = "\n" + module_name, []
    at = listing.find(key)
    while at >= 0:
        end = listing.index("\n", at + 1)
        name = listing[at + 1 : end]
        if name == module_name or name.startswith(module_name + "."):  # not a longer name that begins alike
            found.append(name)
        at = listing.find(key, end)
    return found


class _FreshSourceLoader(importlib.machinery.SourceFileLoader):
    """Compiles from source every time: a .pyc keyed on whole-second mtime and size can be
    stale when a plugin is edited and reloaded within the same second."""

    def get_code(self, fullname: str) -> types.CodeType:
        return _compiled(self.path, self.get_source(fullname) or "")


@functools.lru_cache(maxsize=512)
def _compiled(path: str, source: str) -> types.CodeType:
    """A code object is immutable: the same text at the same path compiles to an equal one every time."""
    return compile(source, path, "exec", dont_inherit=True)


def import_plugin(folder: Path, root: str, *, reuse: bool = False) -> types.ModuleType:
    """Import ``folder/__init__.py`` as a package; PluginImportError names the folder on failure.

    With ``reuse`` the module of the folder's last reused import comes back when no file in the folder
    changed since (``folder_key``); it is registered again in ``sys.modules`` with its submodules."""
    if not reuse:
        return _import_fresh(folder, root)
    with _KEPT_LOCK:
        key = folder_key(folder)
        kept = _KEPT.get((str(folder), root))
        if kept is not None and kept.key == key:
            kept.register()
            return kept.modules[kept.name]
        module = _import_fresh(folder, root)
        modules = {name: sys.modules[name] for name in _loaded_under(module.__name__)}
        _KEPT[(str(folder), root)] = _Kept(module.__name__, key, modules)
        return module


def _import_fresh(folder: Path, root: str) -> types.ModuleType:
    module_name = module_name_for(folder, root)
    forget_module(module_name)
    _ensure_parent_packages(module_name)
    init = folder / "__init__.py"
    loader = _FreshSourceLoader(module_name, str(init))
    spec = importlib.util.spec_from_file_location(
        module_name, init, loader=loader, submodule_search_locations=[str(folder)]
    )
    if spec is None or spec.loader is None:
        raise PluginImportError(f"{folder}: cannot create an import spec for {init}")
    module = importlib.util.module_from_spec(spec)
    # Registered before exec so the package's own relative imports resolve.
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except KeyboardInterrupt:
        forget_module(module_name)
        raise
    except BaseException as exc:  # SyntaxError, ImportError, even sys.exit() in a plugin
        forget_module(module_name)
        raise PluginImportError(f"{folder}: import failed: {type(exc).__name__}: {exc}") from exc
    return module


def folder_key(folder: Path) -> tuple[tuple[str, int, int, int, int], ...]:
    """What a plugin folder holds, as each file's path in it, size, inode, mtime and ctime (``__pycache__`` and
    hidden names left out). An edit shows in them even when it keeps the size and sets the old mtime back (the
    ctime then moves); only a rewrite of the same size within one tick of the file system's clock would not."""
    return tuple(_plugin_files(str(folder), ""))


def _plugin_files(folder: str, prefix: str) -> Iterator[tuple[str, int, int, int, int]]:
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        if entry.name.startswith(".") or entry.name == "__pycache__":
            continue
        if entry.is_dir(follow_symlinks=False):
            yield from _plugin_files(entry.path, f"{prefix}{entry.name}/")
        elif entry.is_file():
            stat = entry.stat()
            yield (prefix + entry.name, stat.st_size, stat.st_ino, stat.st_mtime_ns, stat.st_ctime_ns)


@dataclass(frozen=True)
class _Kept:
    """A reused plugin's modules as its import left them (the package ``name`` and its submodules), and the
    folder's ``folder_key`` then."""

    name: str
    key: tuple[tuple[str, int, int, int, int], ...]
    modules: dict[str, types.ModuleType]

    def register(self) -> None:
        """The modules in ``sys.modules`` again (a reload, or a fresh import of the folder, dropped them): the
        plugin's relative imports at call time resolve to its own submodules."""
        if sys.modules.get(self.name) is not self.modules[self.name]:
            forget_module(self.name)
        _ensure_parent_packages(self.name)
        sys.modules.update(self.modules)


#: Each folder imported with ``reuse`` (the path as given, no ``resolve`` each time) and root -> what its last
#: import left.
_KEPT: dict[tuple[str, str], _Kept] = {}
_KEPT_LOCK = threading.RLock()


class LoadOnce:
    """Runs a manager's ``load`` once, when first needed or ahead of time from a thread.

    A caller that arrives while another thread loads waits for that load instead of starting its
    own; a direct ``load()`` (a reload) marks it done too.
    """

    def __init__(self, load: Callable[[], None]) -> None:
        self._load = load
        self._lock = threading.Lock()
        self.done = False

    def ensure(self) -> None:
        """Load now unless already loaded."""
        if self.done:
            return
        with self._lock:
            if not self.done:
                self._load()
                self.done = True
