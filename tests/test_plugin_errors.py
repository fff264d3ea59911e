"""User plugins that do not load (syntax error, raising at import, a name clash...): the bot still
starts with the others, the user is told which plugin and what to do, and the list commands report it."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from tests.cli_inprocess import CliRun, run_cli
from tests.crash_bot import BotProcess, echo_reply, sent_texts, write_bot_config
from tests.fakes.bot_api import FakeBotAPI

REPO = Path(__file__).resolve().parents[1]


def _cli(*argv: str) -> CliRun:
    """The command's behaviour (exit status, output), in this process (tests/cli_inprocess.py)."""
    return run_cli(*argv, cwd=REPO)


def _plugin(root: Path, name: str, code: str, readme: str | None = "# x\n") -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text(code)
    if readme is not None:
        (folder / "README.md").write_text(readme)
    return folder


def test_the_bot_starts_and_logs_one_line_per_plugin_that_failed(tmp_path: Path, bot_config: dict, chat_server) -> None:
    skills, collectors = tmp_path / "my_skills", tmp_path / "my_collectors"
    _plugin(skills, "weather", "def run(workspace, args)\n    return 1\n")
    _plugin(collectors, "news", "raise RuntimeError('no API key in NEWS_KEY')\n")
    chat_server.set_handler(echo_reply)
    with FakeBotAPI() as fake:
        runtime = {
            "skills_dirs": [*bot_config["runtime"]["skills_dirs"], str(skills)],
            "collectors_dirs": [str(collectors)],
        }
        config = write_bot_config(tmp_path / "config.json", bot_config, fake, runtime=runtime)
        with BotProcess(config, tmp_path / "ws", tmp_path / "bot.log") as bot:
            bot.start().wait_ready()
            fake.send_message("hello", user_id=1)
            fake.wait_for_messages(chat_id=1, n=1, timeout=20)
            deadline = time.monotonic() + 10
            while "news" not in bot.run_log() and time.monotonic() < deadline:
                time.sleep(0.05)
            log = bot.run_log()
        assert sent_texts(fake, 1) == ["re: hello"]  # the bot works with the other plugins
    lines = [line for line in log.splitlines() if "weather" in line or "news" in line]
    assert len(lines) == 2, log[-3000:]
    weather = next(line for line in lines if "weather" in line)
    assert "WARNING" in weather and "skill weather not loaded" in weather and "SyntaxError" in weather
    assert "`.venv/bin/assistant skills list`" in weather
    news = next(line for line in lines if "news" in line)
    assert (
        "collector news not loaded" in news
        and "no API key in NEWS_KEY" in news
        and "`.venv/bin/assistant collectors list`" in news
    )


def _workspace_and_config(tmp_path: Path, runtime: dict) -> tuple[Path, Path]:
    (tmp_path / "ws" / "state").mkdir(parents=True)
    config = tmp_path / "cfg"
    config.mkdir()
    (config / "runtime.json").write_text(json.dumps({"timezone": "UTC", **runtime}))
    return tmp_path / "ws", config


def test_collectors_list_names_an_import_error_without_python_internals(tmp_path: Path) -> None:
    collectors = tmp_path / "my_collectors"
    folder = _plugin(collectors, "news", "raise RuntimeError('boom')\n")
    _plugin(collectors, "weather", "DESCRIPTION = 'w'\nINTERVAL_SECONDS = 60\ndef run(workspace):\n    return {}\n")
    ws, config = _workspace_and_config(tmp_path, {"collectors_dirs": [str(collectors)]})
    result = _cli("collectors", "list", "--json", "--config", str(config), "--workspace", str(ws))
    assert result.returncode == 1, result.stderr
    listed = json.loads(result.stdout)
    assert "weather" in [row["name"] for row in listed["collectors"]]
    assert listed["errors"] == [
        {"name": "news", "folder": str(folder), "error": f"{folder}: import failed: RuntimeError: boom"}
    ]


def test_two_skill_folders_of_one_directory_with_the_same_name_are_reported(tmp_path: Path) -> None:
    skills = tmp_path / "my_skills"
    _plugin(skills, "notes", "DESCRIPTION = 'first'\ndef run(workspace, args, context=None):\n    return 'first'\n")
    second = _plugin(
        skills,
        "notes_v2",
        "NAME = 'notes'\nDESCRIPTION = 'second'\ndef run(workspace, args, context=None):\n    return 'second'\n",
    )
    result = _cli("skills", "list", "--json", "--skills", str(skills))
    assert result.returncode == 1, result.stdout
    rows = {row["name"]: row for row in json.loads(result.stdout)}
    assert rows["notes"]["loaded"] and rows["notes"]["description"] == "first"
    error = rows["notes_v2"]["error"]
    assert str(second) in error and "'notes'" in error and "already" in error and str(skills / "notes") in error


def test_a_skill_in_a_later_directory_still_replaces_one_of_the_same_name(tmp_path: Path) -> None:
    mine = tmp_path / "my_skills"
    _plugin(
        mine,
        "my_time",
        "NAME = 'time'\nDESCRIPTION = 'my time'\ndef run(workspace, args, context=None):\n    return 'mine'\n",
    )
    result = _cli("skills", "list", "--json", "--skills", str(REPO / "skills"), "--skills", str(mine))
    assert result.returncode == 0, result.stdout
    rows = {row["name"]: row for row in json.loads(result.stdout)}
    assert rows["time"]["description"] == "my time" and "tasks" in rows


def test_a_collector_result_of_the_wrong_shape_is_a_failed_run_with_backoff(tmp_path: Path) -> None:
    collectors = tmp_path / "my_collectors"
    _plugin(
        collectors,
        "news",
        "DESCRIPTION = 'n'\nINTERVAL_SECONDS = 60\n"
        "def run(workspace):\n    return {'new_items': 5, 'summary': 'one'}\n",
    )
    ws, config = _workspace_and_config(tmp_path, {"collectors_dirs": [str(collectors)]})
    result = _cli("collectors", "run", "news", "--config", str(config), "--workspace", str(ws))
    assert result.returncode == 1
    assert "internal error" not in result.stderr and "Traceback" not in result.stderr
    assert "collector 'news' returned 'new_items' as int, expected a list" in result.stdout + result.stderr
    state = json.loads((ws / "state" / "collectors" / "news.json").read_text())
    # Recorded as a failure: counted, retried after a backoff (not at once, again and again).
    assert state["outcome"] == "error" and state["consecutive_failures"] == 1 and state["next_run"]
    assert "'new_items' as int" in state["error"]


def test_a_skill_readme_that_is_not_utf8_is_named(tmp_path: Path) -> None:
    skills = tmp_path / "my_skills"
    folder = _plugin(
        skills,
        "weather",
        "DESCRIPTION = 'w'\ndef run(workspace, args, context=None):\n    return 'sunny'\n",
        readme=None,
    )
    (folder / "README.md").write_bytes(b"# M\xe9t\xe9o\n")  # saved as Latin-1
    result = _cli("skills", "list", "--json", "--skills", str(skills))
    assert result.returncode == 1
    [row] = json.loads(result.stdout)
    assert row["error"] == f"{folder / 'README.md'}: not UTF-8 text; save it as UTF-8"


def test_a_plugin_folder_in_the_config_that_does_not_exist_is_reported(tmp_path: Path) -> None:
    missing_skills, missing_collectors = tmp_path / "my-skils", tmp_path / "my-colectors"  # typos
    ws, config = _workspace_and_config(
        tmp_path, {"skills_dirs": [str(missing_skills)], "collectors_dirs": [str(missing_collectors)]}
    )
    skills = _cli("skills", "list", "--json", "--config", str(config))
    assert skills.returncode == 1, skills.stderr
    rows = json.loads(skills.stdout)
    assert "time" in [row["name"] for row in rows if row["loaded"]]  # the built-ins still load
    assert [row["error"] for row in rows if not row["loaded"]] == [
        f"{missing_skills}: no such folder (listed in runtime.skills_dirs)"
    ]
    collectors = _cli("collectors", "list", "--json", "--config", str(config), "--workspace", str(ws))
    assert collectors.returncode == 1, collectors.stderr
    assert [e["error"] for e in json.loads(collectors.stdout)["errors"]] == [
        f"{missing_collectors}: no such folder (listed in runtime.collectors_dirs)"
    ]


def test_forgetting_a_plugin_module_survives_another_thread_importing(tmp_path: Path) -> None:
    """The bot loads skills and collectors while other threads import: a plugin's own error must be
    reported, not "RuntimeError: dictionary changed size during iteration" (seen at start-up)."""
    import threading
    import types

    from assistant_framework.plugin_import import PluginImportError, forget_module, import_plugin

    stop = threading.Event()

    def churn() -> None:  # what another thread's imports do to sys.modules
        i = 0
        while not stop.is_set():
            name = f"_plugin_test_churn_{i % 50}"
            if sys.modules.pop(name, None) is None:
                sys.modules[name] = types.ModuleType(name)
            i += 1

    broken = tmp_path / "weather"
    broken.mkdir()
    (broken / "__init__.py").write_text("def run(:\n")
    thread = threading.Thread(target=churn, daemon=True)
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible: the race shows in a few hundred tries
    thread.start()
    try:
        for _ in range(300):
            sys.modules["nothing.here"] = types.ModuleType("nothing.here")  # present: its names are scanned
            forget_module("nothing.here")
        for _ in range(20):
            with pytest.raises(PluginImportError, match="SyntaxError"):
                import_plugin(broken, "plugin_test_race")
    finally:
        sys.setswitchinterval(old)
        stop.set()
        thread.join(5)
        for i in range(50):
            sys.modules.pop(f"_plugin_test_churn_{i}", None)
