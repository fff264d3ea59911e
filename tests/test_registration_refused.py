"""A channel's registration that cannot be used, through the bot's real command lines (``python -m
messaging_llm_bot`` and ``assistant run``, in a process of their own): a ``Route`` without its folder, a folder
without the ``entry.py`` the run starts, a ``section.py`` without its ``RECORD`` or with a record the config layer
refuses (a key without a default). Each is one sentence on stderr naming what is wrong and where, exit status 2
(a usage or config error: a service manager does not restart the bot for it), no traceback.

The broken registration is made the way a channel's author leaves it: the process runs ``inject.py`` (written
here), which adds the channel's folder on ``messaging_llm_bot.channels``' path and its ``Route`` to the registry,
as tests/test_channel_walk.py does in-process, then runs the command line's module as ``python -m`` does.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from assistant_framework.workspace import Workspace
from tests import preload

INJECT = """
import importlib
import runpy
import sys
from pathlib import Path

from messaging_llm_bot import channels
from messaging_llm_bot.cli.main import build_parser
from messaging_llm_bot.conversation import routes

name, module = sys.argv[1], sys.argv[2]
channels.__path__.append(str(Path(__file__).parent / "channels"))
importlib.invalidate_caches()
routes.ROUTES = (*routes.ROUTES, routes.section_route(name, name + ":"))
build_parser.cache_clear()  # the command line's parser, with the registry as it is now
sys.argv = [module, *sys.argv[3:]]
runpy.run_module(module, run_name="__main__", alter_sys=True)
"""

SECTION = """
from dataclasses import dataclass, field

from assistant_framework.config.settings.allowlist import Allowlist
from assistant_framework.config.settings.fields import flag, reads, text


@dataclass(frozen=True, kw_only=True)
class MemoSettings(Allowlist):
    enabled: bool = field(default=False, metadata=reads(flag))
    in_file: str = field({default}metadata=reads(text, min_length=1))


{record}
"""

#: The command lines that start the bot: ``python -m messaging_llm_bot`` and ``assistant run``.
COMMANDS = {"python -m": ["messaging_llm_bot"], "assistant run": ["messaging_llm_bot.cli", "run"]}


def _refused(tmp_path: Path, name: str, files: dict[str, str] | None, command: list[str]) -> tuple[int, str]:
    """The command's exit status and stderr, with the channel ``name`` registered and ``files`` in its folder
    (None: no folder)."""
    (tmp_path / "inject.py").write_text(INJECT, encoding="utf-8")
    (tmp_path / "channels").mkdir()
    if files is not None:
        (tmp_path / "channels" / name).mkdir()
        for file, text in {"__init__.py": "", **files}.items():
            (tmp_path / "channels" / name / file).write_text(text, encoding="utf-8")
    Workspace(tmp_path / "ws")  # not the first run's: nothing is said of a new workspace
    config = {"llm": {"runners": [{"name": "none", "base_url": "http://127.0.0.1:9/v1", "model": "m"}]}}
    (tmp_path / "config.json").write_text(json.dumps({**config, name: {"enabled": True}}), encoding="utf-8")
    run = [*command, "--config", str(tmp_path / "config.json"), "--workspace", str(tmp_path / "ws")]
    done = preload.run(
        [sys.executable, "-m", "inject", name, *run, "--frontend", name],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    assert "Traceback" not in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    return done.returncode, done.stderr.strip()


@pytest.mark.parametrize("command", COMMANDS.values(), ids=COMMANDS.keys())
def test_a_route_without_its_folder_is_one_sentence_and_exit_2(tmp_path: Path, command: list[str]) -> None:
    code, err = _refused(tmp_path, "nowhere", None, command)
    assert code == 2, err
    assert err.startswith("error: conversation/routes.py registers the channel 'nowhere', but "), err
    assert "messaging_llm_bot/channels/nowhere/ does not exist" in err


@pytest.mark.parametrize("command", COMMANDS.values(), ids=COMMANDS.keys())
def test_a_folder_without_the_entry_the_run_starts_is_one_sentence_and_exit_2(
    tmp_path: Path, command: list[str]
) -> None:
    section = SECTION.format(default='default="in.txt", ', record="RECORD = MemoSettings")
    code, err = _refused(tmp_path, "memo", {"section.py": section}, command)
    assert code == 2, err
    assert err == "error: the channel 'memo' has no channels/memo/entry.py (docs/channels.md, \"Writing a channel\")"


@pytest.mark.parametrize(
    ("record", "default", "said"),
    [
        (
            "RECORD = MemoSettings",
            "",
            "error: config section 'memo' (messaging_llm_bot.channels.memo.section.MemoSettings): in_file has no "
            "default, and a section left out of the config reads as its record's defaults",
        ),
        (
            "",
            'default="in.txt", ',
            "error: channels/memo/section.py's RECORD is missing: it names the section's record",
        ),
        ("RECORD = 'memo'", 'default="in.txt", ', "error: channels/memo/section.py's RECORD is 'memo': it names"),
    ],
    ids=["a key without a default", "no RECORD", "a RECORD that is no record"],
)
@pytest.mark.parametrize("command", COMMANDS.values(), ids=COMMANDS.keys())
def test_a_section_the_config_refuses_is_one_sentence_naming_it_and_exit_2(
    tmp_path: Path, command: list[str], record: str, default: str, said: str
) -> None:
    section = SECTION.format(default=default, record=record)
    code, err = _refused(
        tmp_path, "memo", {"section.py": section, "entry.py": "def runner(runtime, options): ..."}, command
    )
    assert code == 2, err
    assert err.startswith(said), err
