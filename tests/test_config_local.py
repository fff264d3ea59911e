"""The first hour with the config (issue 17): a git-ignored local layer, typos caught with a
suggestion, start-up checks in ``config validate``, ``runners[0].model`` keys, effective values."""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from assistant_framework.config import load_config, parse_key
from assistant_framework.config.settings import Settings
from assistant_framework.config.settings.fields import record_defaults
from messaging_llm_bot.cli.main import main
from tests.cli_inprocess import run_cli
from tests.waiting import wait_until

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def example(tmp_path: Path) -> Path:
    """A copy of the example config (tracked files only: never the user's own config/local/)."""
    target = tmp_path / "config"
    shutil.copytree(REPO / "config", target, ignore=shutil.ignore_patterns("local"))
    return target


def _tracked(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and "local" not in p.relative_to(root).parts
    }


def test_set_writes_the_local_layer_and_no_tracked_file(example: Path, capsys) -> None:
    before = _tracked(example)
    assert main(["config", "set", "telegram.allowed_user_ids", "[123456789]", "--config", str(example)]) == 0
    assert main(["config", "set", "telegram.token", "123:SECRET-token", "--config", str(example)]) == 0
    assert "git-ignored local layer" in capsys.readouterr().out
    assert _tracked(example) == before
    local = json.loads((example / "local" / "telegram.json").read_text())
    assert local == {"allowed_user_ids": [123456789], "token": "123:SECRET-token"}
    assert (example / "local" / "telegram.json").stat().st_mode & 0o077 == 0  # private: it holds the token
    merged = load_config(example, env=False)
    assert merged["telegram"]["allowed_user_ids"] == [123456789]
    assert merged["telegram"]["mode"] == "polling"  # the tracked file still supplies the rest
    assert load_config(example, env=False, local=False)["telegram"]["allowed_user_ids"] == []


def test_local_layer_mirrors_the_layout_and_errors_name_the_local_file(example: Path, capsys) -> None:
    assert main(["config", "set", "collectors.rss.enabled", "true", "--config", str(example)]) == 0
    assert json.loads((example / "local" / "collectors" / "rss.json").read_text()) == {"enabled": True}
    (example / "local" / "llm.json").write_text('{"max_tokens": "lots"}')
    assert main(["config", "validate", "--config", str(example)]) == 2
    assert "local/llm.json: max_tokens: 'lots' is not of type" in capsys.readouterr().err


def test_config_local_is_git_ignored() -> None:
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    result = subprocess.run(["git", "check-ignore", "-q", "config/local/telegram.json"], cwd=REPO)
    assert result.returncode == 0, "config/local/ must be in .gitignore"


@pytest.mark.parametrize(
    "key, value, expected",
    [
        ("telegarm.token", "x", "unknown config section 'telegarm' (did you mean 'telegram'?)"),
        ("collectors.rsss.enabled", "true", "unknown collector 'rsss' (did you mean 'rss'?)"),
        ("collectors.wether.enabled", "true", "unknown collector 'wether'"),
        ("runtime.timezone", "Mars/Olympus", "local/runtime.json: timezone: unknown IANA time zone 'Mars/Olympus'"),
    ],
)
def test_typos_are_refused_with_file_path_and_suggestion(
    example: Path, capsys, key: str, value: str, expected: str
) -> None:
    assert main(["config", "set", key, value, "--config", str(example)]) == 2
    assert expected in capsys.readouterr().err
    assert not (example / "local").exists()  # nothing written, not even an empty folder
    assert not (example / "telegarm.json").exists()


@pytest.mark.parametrize(
    "file, content, expected",
    [
        (
            "telegarm.json",
            {"token": "x"},
            "telegarm.json: (top level): unknown config section 'telegarm' (did you mean 'telegram'?)",
        ),
        ("collectors/wether.json", {"enabled": True}, "wether.json: (top level): unknown collector 'wether'"),
        ("runtime.json", {"timezone": "Mars/Olympus"}, "runtime.json: timezone: unknown IANA time zone 'Mars/Olympus'"),
        (
            "llm.json",
            {
                "runners": [
                    {"name": "a", "base_url": "http://x/v1", "model": "m"},
                    {"name": "a", "base_url": "http://y/v1", "model": "m"},
                ]
            },
            "llm.json: runners[1].name: runner name 'a' is used twice",
        ),
        (
            "llm.json",
            {"runners": [{"name": "main", "base_url": "http://x/v1", "model": "m"}], "vision_runner": "mian"},
            "llm.json: vision_runner: names no runner: 'mian' (did you mean 'main'?)",
        ),
        (
            "llm.json",
            {"embeddings": {"enabled": True}},
            "llm.json: embeddings: enabled but base_url or model is missing",
        ),
        ("telegram.json", {"mode": "webhook"}, "telegram.json: webhook.url: mode is webhook"),
    ],
)
def test_validate_reports_what_the_bot_would_refuse_at_start(
    example: Path, capsys, file: str, content: dict, expected: str
) -> None:
    (example / file).write_text(json.dumps(content))
    assert main(["config", "validate", "--config", str(example)]) == 2
    assert expected in capsys.readouterr().err


def test_the_bot_refuses_a_bad_time_zone_naming_the_file(example: Path, tmp_path: Path) -> None:
    from assistant_framework.config import ConfigError
    from messaging_llm_bot.runtime import build_runtime

    (example / "runtime.json").write_text('{"timezone": "Mars/Olympus"}')
    with pytest.raises(ConfigError, match=r"runtime\.json: timezone: unknown IANA time zone"):
        build_runtime(example, tmp_path / "ws")


def test_parse_key_accepts_both_list_notations() -> None:
    assert parse_key("llm.runners[0].model") == ("llm", "runners", 0, "model")
    assert parse_key("llm.runners.0.model") == ("llm", "runners", 0, "model")
    assert parse_key("telegram.webhook.port") == ("telegram", "webhook", "port")


def test_get_and_set_through_a_list(example: Path, capsys) -> None:
    assert main(["config", "get", "llm.runners[0].model", "--config", str(example)]) == 0
    assert capsys.readouterr().out.strip() == "qwen3:8b"
    assert main(["config", "set", "llm.runners.0.base_url", "http://127.0.0.1:1234/v1", "--config", str(example)]) == 0
    assert main(["config", "set", "llm.runners[0].model", "gemma3:4b", "--config", str(example)]) == 0
    capsys.readouterr()
    runner = load_config(example, env=False)["llm"]["runners"][0]
    assert (runner["base_url"], runner["model"], runner["name"]) == ("http://127.0.0.1:1234/v1", "gemma3:4b", "local")
    assert main(["config", "get", "llm.runners[0].model", "--json", "--config", str(example)]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["value"] == "gemma3:4b" and got["default"] is False and got["file"].endswith("local/llm.json")
    assert main(["config", "set", "llm.runners[5].model", "x", "--config", str(example)]) == 2
    assert "the list has 1 item(s)" in capsys.readouterr().err


def test_get_and_show_mark_defaults(example: Path, capsys) -> None:
    assert main(["config", "get", "runtime.log_level", "--config", str(example)]) == 0
    assert capsys.readouterr().out.strip() == "null  (default)"
    assert main(["config", "get", "runtime.nonsense", "--config", str(example)]) == 2
    assert "unknown config key 'runtime.nonsense'" in capsys.readouterr().err
    assert main(["config", "get", "llm.runners[0].api_key_env", "--config", str(example)]) == 1  # known, unset
    assert "not set and has no default" in capsys.readouterr().out
    assert main(["config", "show", "--config", str(example)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "runtime.log_level = null  (default)" in lines
    assert any(line.startswith("runtime.timezone = UTC  (") and "runtime.json" in line for line in lines)
    assert main(["config", "show", "--json", "--config", str(example)]) == 0
    assert json.loads(capsys.readouterr().out)["memory"]["recall"]["skip_recent_turns"] == 12


def test_defaults_table_matches_config_readme() -> None:
    readme = (REPO / "config" / "README.md").read_text(encoding="utf-8")
    for section, keys in record_defaults(Settings).items():  # a declared section's page documents it: docs/<name>.md
        for key in keys:
            assert f"`{key}`" in readme or f"`{key}." in readme, (
                f"{section}.{key} is not documented in config/README.md"
            )


def test_set_with_a_missing_config_directory_creates_nothing(tmp_path: Path, capsys) -> None:
    assert main(["config", "set", "--config", str(tmp_path / "confg"), "llm.max_tokens", "300"]) == 2
    assert "config directory does not exist" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_set_on_a_missing_json_file_creates_the_file(tmp_path: Path, capsys) -> None:
    target = tmp_path / "x.json"
    assert main(["config", "set", "--config", str(target), "llm.max_tokens", "300"]) == 0
    assert target.is_file()
    assert json.loads(target.read_text()) == {"llm": {"max_tokens": 300}}


def _everything_under(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.mark.parametrize(
    "key",
    [
        "/etc/passwd",
        "/llm.model",
        "llm./max_tokens",
        "collectors./ESCAPE/evil.enabled",
        "collectors.rss\\evil.enabled",
        "telegram.webhook/evil",
        "llm\x01.max_tokens",
        "collectors." + "a" * 5000 + ".enabled",  # no file name that long: it was an OSError naming it in full
    ],
    ids=lambda key: key[:40],
)
def test_a_key_with_a_path_in_it_is_a_usage_error_that_writes_nothing(example: Path, tmp_path: Path, key: str) -> None:
    """`config set /llm.model x` was an internal error (exit 1); `collectors./tmp/x` named a file outside the
    config. A key's names become file names below the config root, so a separator or '..' is refused first."""
    key = key.replace("/ESCAPE", str(tmp_path / "outside"))
    before = _everything_under(tmp_path)
    result = run_cli("config", "set", "--config", str(example), key, "1")
    assert result.returncode == 2, result.stderr
    assert "is not a config name" in result.stderr and "internal error" not in result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr) < 500
    assert _everything_under(tmp_path) == before  # no local/ layer, nothing outside the config either


@pytest.mark.parametrize(
    "keys",
    [("collectors", "../../escaped"), ("..", "x"), ("llm", ""), ("collectors", "a/b", "enabled"), (".",)],
)
def test_write_setting_refuses_names_that_are_no_file_names(example: Path, tmp_path: Path, keys: tuple) -> None:
    """The same check for the framework API `assistant setup` uses (a tuple of names, not a dotted string)."""
    from assistant_framework.config import ConfigError, set_key
    from assistant_framework.settings import write_setting

    before = _everything_under(tmp_path)
    with pytest.raises(ConfigError, match="is not a config name"):
        write_setting(example, keys, 1)
    with pytest.raises(ConfigError, match="is not a config name"):
        set_key(example, keys, 1)
    assert _everything_under(tmp_path) == before
    assert main(["config", "get", "--config", str(example), "/" + ".".join(k for k in keys if k)]) == 2


def test_config_set_leaves_no_file_in_the_shared_temporary_folder(
    example: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One `config set` at a time per config, without a lock file in the temporary folder every user shares (one a
    stranger could make first, or point at a file of the owner's), or a stray file in the config's tracked folder:
    what a set leaves is its value in the local layer, and nothing else anywhere."""
    import tempfile

    shared = tmp_path / "shared-tmp"
    shared.mkdir()
    monkeypatch.setenv("TMPDIR", str(shared))
    monkeypatch.setattr(tempfile, "tempdir", None)
    before = _everything_under(tmp_path)
    result = run_cli("config", "set", "--config", str(example), "llm.temperature", "0.3")
    assert result.returncode == 0, result.stderr
    assert list(shared.iterdir()) == []
    made = set(_everything_under(tmp_path)) - set(before)
    assert made and all(path.startswith("config/local/") for path in made), made


def test_a_second_config_writer_waits_for_the_first(example: Path) -> None:
    """Two writers of one config at once would each write back the file as it read it (the first one's value
    lost): a set waits while another holds the config's writer lock, then writes."""
    import fcntl
    import os

    from assistant_framework.settings import write_setting

    holder = os.open(example, os.O_RDONLY | os.O_DIRECTORY)  # another writer, by the same lock
    fcntl.flock(holder, fcntl.LOCK_EX)
    done = threading.Event()
    writer = threading.Thread(target=lambda: (write_setting(example, "llm.temperature", 0.17), done.set()))
    writer.start()

    def opened() -> int:  # descriptors of this process on the config's folder: the holder's, the writer's
        return sum(1 for fd in Path("/proc/self/fd").iterdir() if os.path.realpath(fd) == str(example.resolve()))

    try:
        # Once the writer has the folder open it asks for the lock every 0.05 s (flock_until): a tenth then
        # instead of a fixed half second from the start.
        wait_until(lambda: opened() >= 2, 10, "the writer to ask for the config's lock")
        assert not done.wait(0.1)  # held: nothing written yet
        assert load_config(example)["llm"]["temperature"] != 0.17
    finally:
        os.close(holder)  # released: the waiting set goes on
    writer.join(10)
    assert done.is_set() and load_config(example)["llm"]["temperature"] == 0.17
