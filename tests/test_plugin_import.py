"""assistant_framework/plugin_import.py: what a plugin's source compiles to is kept, yet an edit is always seen;
a shipped plugin's module is reused while its folder is unchanged."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from assistant_framework.plugin_import import PluginImportError, forget_module, import_plugin, module_name_for


def test_an_edit_of_the_same_size_and_mtime_is_imported_fresh(tmp_path: Path) -> None:
    """A .pyc keyed on mtime and size would run the old code; the kept compiled code is keyed on the text."""
    folder = tmp_path / "plugins" / "answer"
    folder.mkdir(parents=True)
    init = folder / "__init__.py"
    init.write_text("VALUE = 'one'\n", encoding="utf-8")
    stat = init.stat()
    assert import_plugin(folder, "test_plugins").VALUE == "one"
    init.write_text("VALUE = 'two'\n", encoding="utf-8")  # same length
    os.utime(init, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # and the same mtime
    assert import_plugin(folder, "test_plugins").VALUE == "two"
    init.write_text("VALUE = 'one'\n", encoding="utf-8")  # back to a text compiled before
    assert import_plugin(folder, "test_plugins").VALUE == "one"


def test_each_import_is_a_new_module_even_from_kept_code(tmp_path: Path) -> None:
    folder = tmp_path / "plugins" / "counter"
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text("SEEN = []\n", encoding="utf-8")
    first = import_plugin(folder, "test_plugins")
    first.SEEN.append(1)
    again = import_plugin(folder, "test_plugins")
    assert again is not first and again.SEEN == []


def test_a_new_import_drops_the_plugins_submodules_and_no_other_plugins(tmp_path: Path) -> None:
    """A submodule imported the last time is imported again from its source; a plugin of the same folder whose
    name begins alike (``web`` and ``web_search``) keeps its modules."""
    plugins = tmp_path / "plugins"
    for name in ("web", "web_search"):
        (plugins / name).mkdir(parents=True)
        (plugins / name / "__init__.py").write_text("from . import helper\n", encoding="utf-8")
        (plugins / name / "helper.py").write_text(f"VALUE = '{name} one'\n", encoding="utf-8")
    web = import_plugin(plugins / "web", "test_plugins")
    other = import_plugin(plugins / "web_search", "test_plugins")
    (plugins / "web" / "helper.py").write_text("VALUE = 'web, second'\n", encoding="utf-8")
    again = import_plugin(plugins / "web", "test_plugins")
    assert (web.helper.VALUE, again.helper.VALUE) == ("web one", "web, second")
    assert sys.modules[other.__name__] is other and sys.modules[other.__name__ + ".helper"] is other.helper
    assert sys.modules[again.__name__ + ".helper"] is again.helper


def test_a_reused_folder_is_imported_once_while_its_files_are_unchanged(tmp_path: Path) -> None:
    """``reuse`` (the shipped plugins): the module of the last import comes back, put back in ``sys.modules`` with
    its submodules after a reload dropped them; an edit of any file, even of the same size and mtime, is new."""
    folder = tmp_path / "plugins" / "kept"
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text("from . import helper\nRUNS = []\nRUNS.append(1)\n", encoding="utf-8")
    helper = folder / "helper.py"
    helper.write_text("VALUE = 'one'\n", encoding="utf-8")
    first = import_plugin(folder, "test_plugins", reuse=True)
    assert import_plugin(folder, "test_plugins", reuse=True) is first and first.RUNS == [1]

    forget_module(first.__name__)  # what a reload does first
    assert import_plugin(folder, "test_plugins", reuse=True) is first
    assert sys.modules[first.__name__] is first and sys.modules[first.__name__ + ".helper"] is first.helper
    fresh = import_plugin(folder, "test_plugins")  # without reuse: a new module, as always
    assert fresh is not first and sys.modules[first.__name__] is fresh
    assert import_plugin(folder, "test_plugins", reuse=True) is first and sys.modules[first.__name__] is first

    init = folder / "__init__.py"
    stat = init.stat()
    init.write_text("from . import helper\nRUNS = []\nRUNS.append(2)\n", encoding="utf-8")  # same length
    os.utime(init, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # and the same mtime
    edited = import_plugin(folder, "test_plugins", reuse=True)
    assert edited is not first and edited.RUNS == [2]
    assert import_plugin(folder, "test_plugins", reuse=True) is edited
    helper.write_text("VALUE = 'second'\n", encoding="utf-8")  # a submodule
    again = import_plugin(folder, "test_plugins", reuse=True)
    assert again is not edited and again.helper.VALUE == "second"
    (folder / "data.txt").write_text("a file the plugin may read\n", encoding="utf-8")
    assert import_plugin(folder, "test_plugins", reuse=True) is not again


def test_a_failed_reused_import_is_not_kept(tmp_path: Path) -> None:
    folder = tmp_path / "plugins" / "broken"
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text("raise RuntimeError('not yet')\n", encoding="utf-8")
    for _ in range(2):
        with pytest.raises(PluginImportError, match="not yet"):
            import_plugin(folder, "test_plugins", reuse=True)
    assert module_name_for(folder, "test_plugins") not in sys.modules
    (folder / "__init__.py").write_text("VALUE = 1\n", encoding="utf-8")
    assert import_plugin(folder, "test_plugins", reuse=True).VALUE == 1
