"""A typo in a config key gets "did you mean" (issue 33.6), as config/README.md promises: in a file (the
message names the file that holds the key, a tracked one or its local override), in ``config get`` (exit 2)
and ``config set`` (exit 2, nothing written), and when the bot starts."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from messaging_llm_bot.cli.main import main
from tests.console_harness import run_bot

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def example(tmp_path: Path) -> Path:
    target = tmp_path / "config"
    shutil.copytree(REPO / "config", target, ignore=shutil.ignore_patterns("local"))
    (target / "local").mkdir()
    (target / "local" / "llm.json").write_text(json.dumps({"max_tokens": 500}))  # a local override of llm
    return target


def _with_typo(config: Path, file: str, key: str) -> None:
    data = json.loads((config / file).read_text())
    data[key] = data.pop(key.replace("temperture", "temperature").replace("timezon", "timezone"), 1)
    (config / file).write_text(json.dumps(data))


def test_a_key_typo_in_a_tracked_file_names_that_file_and_the_key_it_meant(example: Path, capsys) -> None:
    _with_typo(example, "llm.json", "temperture")
    assert main(["config", "validate", "--config", str(example)]) == 2
    err = capsys.readouterr().err
    assert "config/llm.json: temperture: unknown key (did you mean 'temperature'?)" in err
    assert "local/llm.json" not in err  # the override holds no typo: it is not the file to edit


def test_a_key_typo_in_the_local_layer_names_the_local_file(example: Path, capsys) -> None:
    (example / "local" / "runtime.json").write_text(json.dumps({"timezon": "Europe/Berlin"}))
    (example / "local" / "llm.json").write_text(
        json.dumps({"runners": [{"name": "a", "base_url": "http://x/v1", "model": "m", "api_kye": "k"}]})
    )
    assert main(["config", "validate", "--config", str(example)]) == 2
    err = capsys.readouterr().err
    assert "local/runtime.json: timezon: unknown key (did you mean 'timezone'?)" in err
    assert "local/llm.json: runners[0].api_kye: unknown key (did you mean 'api_key'?)" in err


def test_config_get_of_an_unknown_key_exits_2_with_a_suggestion(example: Path, capsys) -> None:
    assert main(["config", "get", "llm.max_token", "--config", str(example)]) == 2
    assert "unknown config key 'llm.max_token' (did you mean 'llm.max_tokens'?)" in capsys.readouterr().err
    assert main(["config", "get", "lm.max_tokens", "--config", str(example)]) == 2
    assert "unknown config section 'lm' (did you mean 'llm'?)" in capsys.readouterr().err
    assert main(["config", "get", "llm.max_tokens", "--config", str(example)]) == 0
    assert capsys.readouterr().out.strip() == "500"


def test_config_set_of_an_unknown_key_exits_2_and_writes_nothing(example: Path, capsys) -> None:
    before = (example / "local" / "llm.json").read_bytes()
    assert main(["config", "set", "llm.runners[0].modle", "x", "--config", str(example)]) == 2
    err = capsys.readouterr().err
    assert "unknown config key 'llm.runners[0].modle' (did you mean 'llm.runners[0].model'?)" in err
    assert "nothing was written" in err
    assert (example / "local" / "llm.json").read_bytes() == before
    assert main(["config", "set", "runtime.timezon", "UTC", "--config", str(example)]) == 2
    assert "did you mean 'runtime.timezone'?" in capsys.readouterr().err
    assert not (example / "local" / "runtime.json").exists()


def test_the_bot_refuses_a_key_typo_at_start_with_the_suggestion(example: Path, tmp_path: Path) -> None:
    _with_typo(example, "runtime.json", "timezon")
    result = run_bot(["--frontend", "console", "--config", str(example), "--workspace", str(tmp_path / "ws")], "")
    assert result.returncode == 2
    assert "runtime.json: timezon: unknown key (did you mean 'timezone'?)" in result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "ws").exists()
