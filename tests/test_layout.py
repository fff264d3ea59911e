"""The package layout keeps its arrows: cli -> ops -> channels -> conversation -> agent -> protocol / model client
-> framework; a channel (one folder under channels/, and its setup and doctor under ops/channels/) never imports
another channel, and a channel's runtime never imports ops/.

Every module's imports are read with ``ast`` (including imports inside functions and under
``TYPE_CHECKING``: a type-only arrow is still an arrow a reader has to follow).
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

from tests.statements import parse, statements

ROOT = Path(__file__).resolve().parent.parent
BOT = "messaging_llm_bot"
FRAMEWORK = "assistant_framework"

# What each part of the bot may import from the bot (the framework is open to all of them).
ALLOWED = {
    "llm": {"llm"},
    "protocol": {"protocol"},
    "agent": {"agent", "llm", "protocol"},
    "parts": {"parts", "agent", "llm", "protocol"},
    "runtime": {"runtime", "parts", "agent", "llm", "protocol"},
    "evals": {"evals", "agent", "llm", "protocol", "runtime"},
    "conversation": {"conversation", "agent", "llm", "protocol", "runtime"},
    "channels": {"channels", "conversation", "agent", "llm", "protocol", "runtime"},
    "serve": {"serve", "conversation", "agent", "llm", "protocol", "runtime"},
    "ops": {"ops", "serve", "channels", "conversation", "agent", "llm", "protocol", "runtime"},
    "cli": {"cli", "ops", "serve", "evals", "channels", "conversation", "agent", "llm", "protocol", "runtime"},
    "__main__": {"__main__", "cli"},
}


def _modules(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path, module: str | None = None) -> list[tuple[int, str, bool]]:
    """(line, imported module, at module level) for every import in the file, relative ones resolved."""
    package = (module or _module_name(path)).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    found: list[tuple[int, str, bool]] = []
    for line, level, name, top in _read(path)[0]:
        if level:
            name = ".".join(package[: len(package) - (level - 1)] + ([name] if name else []))
        found.append((line, name, top))
    return found


def _dynamic_imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) for ``importlib.import_module("...")`` / ``__import__("...")`` with a literal name."""
    return _read(path)[1]


#: (line, relative level, module as written, at module level) for each imported module of a file.
Written = list[tuple[int, int, str, bool]]


def _read(path: Path) -> tuple[Written, list[tuple[int, str]]]:
    """The file's imports as written and its imports by name, read once for all the checks of this module (they
    read the same 400 files); what is kept is the two lists, not the syntax tree."""
    stat = path.stat()
    return _read_once(path, stat.st_mtime_ns, stat.st_size)


@functools.cache
def _read_once(path: Path, mtime_ns: int, size: int) -> tuple[Written, list[tuple[int, str]]]:
    source = path.read_text(encoding="utf-8")
    tree = parse(source, filename=str(path))
    # A call of import_module or __import__ names it in the text: a file without either has no expression to walk.
    by_name = _imports_by_name(tree) if "import_module" in source or "__import__" in source else []
    return _written_imports(tree), by_name


def _written_imports(tree: ast.Module) -> Written:
    top_level = {id(node) for node in tree.body}
    found: Written = []
    for node in statements(tree):  # an import is always a statement
        if isinstance(node, ast.Import):
            found.extend((node.lineno, 0, alias.name, id(node) in top_level) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            found.append((node.lineno, node.level, node.module or "", id(node) in top_level))
    return found


def _imports_by_name(tree: ast.Module) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        first = node.args[0]
        if isinstance(first, ast.JoinedStr) and first.values:
            first = first.values[0]  # f"messaging_llm_bot.{x}": its literal start
        if name in ("import_module", "__import__") and isinstance(first, ast.Constant) and isinstance(first.value, str):
            found.append((node.lineno, first.value))
    return found


def _part_of(module: str) -> str:
    """The bot's part a module belongs to: the first name under ``messaging_llm_bot``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_the_framework_imports_nothing_from_the_bot() -> None:
    """Not at module level, not inside a function, not for types: no exception."""
    wrong = []
    for path in _modules(FRAMEWORK):
        rel = path.relative_to(ROOT).as_posix()
        for line, name, _top in _imports(path):
            if name.split(".")[0] == BOT:
                wrong.append(f"{rel}:{line} imports {name}")
        for line, name in _dynamic_imports(path):
            if name.startswith(BOT):
                wrong.append(f"{rel}:{line} imports {name} by name")
    assert not wrong, "assistant_framework must not depend on the bot:\n" + "\n".join(wrong)


def test_the_bot_parts_import_only_downwards() -> None:
    wrong = []
    for path in _modules(BOT):
        module = _module_name(path)
        part = _part_of(module)
        if not part:
            continue  # messaging_llm_bot/__init__.py
        allowed = ALLOWED.get(part)
        assert allowed is not None, f"{module}: a new part of the bot; add it to ALLOWED with its arrows"
        for line, name, _top in _imports(path):
            if name.split(".")[0] != BOT:
                continue
            target = _part_of(name)
            if target and target not in allowed:
                wrong.append(f"{path.relative_to(ROOT)}:{line} ({part}) imports {name} ({target})")
    assert not wrong, "imports against the layout's direction:\n" + "\n".join(wrong)


CHANNELS = f"{BOT}.channels"
#: Where a channel's parts are: its runtime (channels/<name>/) and its setup, probe and doctor (ops/channels/<name>/).
CHANNEL_HOMES = (("channels",), ("ops", "channels"))


def _channel_of(module: str) -> str:
    """The channel a module belongs to (``telegram`` for channels.telegram.send and ops.channels.telegram.probe),
    "" for the top-level modules of channels/ and ops/channels/ (the contract, the registry, setup's dialog, the
    doctor's record) and for modules outside them."""
    parts = module.split(".")
    for home in CHANNEL_HOMES:
        depth = 1 + len(home)  # messaging_llm_bot.<home>
        if parts[1 : 1 + len(home)] != list(home) or len(parts) <= depth:
            continue
        if len(parts) > depth + 1 or ROOT.joinpath(BOT, *home, parts[depth]).is_dir():
            return parts[depth]
    return ""


def test_a_channel_imports_no_other_channel() -> None:
    """Each channel is an adapter on the conversation service: it may import channels' top-level modules and the
    conversation service's modules, never another channel's folder nor a private (``_``) conversation module. Its
    setup, probe and doctor (ops/channels/<name>/) may import its own runtime folder, never another channel's."""
    wrong = []
    for path in [*_modules(f"{BOT}/channels"), *_modules(f"{BOT}/ops/channels")]:
        module = _module_name(path)
        own = _channel_of(module)
        if not own:
            continue
        for line, name, _top in _imports(path):
            other = _channel_of(name)
            private = name.startswith(f"{BOT}.conversation.") and name.rsplit(".", 1)[-1].startswith("_")
            if (other and other != own) or private:
                wrong.append(f"{path.relative_to(ROOT)}:{line} ({own}) imports {name}")
    assert not wrong, "a channel reaches into another channel or the conversation's internals:\n" + "\n".join(wrong)


def test_the_channel_check_sees_a_cross_channel_import() -> None:
    assert _channel_of(f"{CHANNELS}.telegram.turn") == "telegram"
    assert _channel_of(f"{CHANNELS}.signal") == "signal"
    assert _channel_of(f"{CHANNELS}.run") == ""
    assert _channel_of(f"{BOT}.conversation.held") == ""
    assert _channel_of(f"{BOT}.ops.channels.telegram.probe") == "telegram"
    assert _channel_of(f"{BOT}.ops.channels.signal") == "signal"
    assert _channel_of(f"{BOT}.ops.channels.doctor") == ""
    assert _channel_of(f"{BOT}.ops.doctor.run") == ""


def _channel_imports(path: Path) -> list[str]:
    """Where a module imports a channel's folder (by statement or by a literal name), as ``file:line name``."""
    rel = path.relative_to(ROOT)
    found = [f"{rel}:{line} imports {name}" for line, name, _top in _imports(path) if _channel_of(name)]
    dynamic = _dynamic_imports(path)
    found += [f"{rel}:{line} imports {name} by name" for line, name in dynamic if _channel_of(name.rstrip("."))]
    return found


def test_ops_and_the_cli_name_no_channel() -> None:
    """A channel's doctor checks and setup steps come from its folder under ops/channels/, its start and web page
    from its folder under channels/, through the registry (ops/channels/__init__.py, channels/run.py): the rest of
    ops/ and cli/ import no channel's folder, so a new channel is new files plus its Route line (the email and
    Matrix channels each had to edit both)."""
    wrong = [
        hit
        for folder in ("ops", "cli")
        for path in _modules(f"{BOT}/{folder}")
        if not _channel_of(_module_name(path))  # a channel's own setup and doctor import its runtime's records
        for hit in _channel_imports(path)
    ]
    assert not wrong, "ops/ or cli/ names a channel; give the channel a hook in its folder:\n" + "\n".join(wrong)


def test_the_no_channel_check_sees_a_channel_named(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import importlib\nfrom messaging_llm_bot.ops.channels.doctor import Check\n\ndef f():\n"
        "    from ..channels.email.servers import Mailbox\n"
        "    importlib.import_module('messaging_llm_bot.ops.channels.matrix.probe')\n"
    )
    module = f"{BOT}.ops.probe"
    hits = [name for _line, name, _top in _imports(probe, module=module) if _channel_of(name)]
    assert hits == [f"{CHANNELS}.email.servers"]  # the top-level ops.channels.doctor is the doctor's, not a channel
    dynamic = [name for _line, name in _dynamic_imports(probe) if _channel_of(name)]
    assert dynamic == [f"{BOT}.ops.channels.matrix.probe"]


def test_no_import_circle_among_the_channels_and_the_conversation_service() -> None:
    """A job's turn used to import the turn runner it is called from (telegram/turn.py <-> job_turn.py, the same
    on Signal), the Signal event reader the service that owns it; circles, type-only ones too, make a module
    impossible to read or test on its own."""
    arrows: dict[str, set[str]] = {}
    for folder in ("channels", "conversation"):
        for path in _modules(f"{BOT}/{folder}"):
            arrows[_module_name(path)] = {name for _line, name, _top in _imports(path)}
    circles = set()
    for start in arrows:
        seen, todo = set(), [start]
        while todo:
            for target in arrows.get(todo.pop(), ()):
                if target == start:
                    circles.add(start)
                elif target not in seen:
                    seen.add(target)
                    todo.append(target)
    assert sorted(circles) == []


def test_plugins_import_only_the_framework() -> None:
    """Built-in skills and collectors are written as users write theirs: against the framework only."""
    wrong = []
    for folder in ("skills", "collectors"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for line, name, _top in _imports(path):
                if name.split(".")[0] == BOT:
                    wrong.append(f"{path.relative_to(ROOT)}:{line} imports {name}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("package", [BOT, FRAMEWORK])
def test_no_prefixed_module_left_at_the_top(package: str) -> None:
    """A name prefix shared by modules is a package waiting to be made (issue 13)."""
    prefixes = ("telegram_", "llm_", "protocol_", "collector_", "skill_", "config_")
    flat = [p.name for p in (ROOT / package).glob("*.py") if p.name.startswith(prefixes)]
    assert not flat, f"{package}: move these into their package: {flat}"


def test_the_direction_check_sees_a_wrong_arrow(tmp_path: Path) -> None:
    """The reader resolves relative imports inside functions: a lazy ``from ..conversation`` in the agent is caught."""
    probe = tmp_path / "probe.py"
    probe.write_text("import os\n\ndef f():\n    from ..conversation.commands import x\n")
    found = _imports(probe, module=f"{BOT}.agent.probe")
    assert (4, "messaging_llm_bot.conversation.commands", False) in found
    assert _part_of("messaging_llm_bot.conversation.commands") not in ALLOWED["agent"]
    assert _part_of("messaging_llm_bot.channels.run") not in ALLOWED["conversation"]


def test_the_framework_check_sees_an_import_by_name(tmp_path: Path) -> None:
    """A lazy ``importlib.import_module("messaging_llm_bot...")`` is an arrow too (the old CLI loaded groups so)."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import importlib\n\ndef f(group):\n"
        "    importlib.import_module(f'messaging_llm_bot.cli.{group}')\n    __import__('messaging_llm_bot')\n"
    )
    assert _dynamic_imports(probe) == [(4, "messaging_llm_bot.cli."), (5, "messaging_llm_bot")]
