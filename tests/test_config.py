"""Config loading, validation and the config CLI, on real files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from assistant_framework.config import ConfigError, get_key, load_config, owner_file, redact, set_key
from messaging_llm_bot.cli.main import main
from tests import preload
from tests.cli_inprocess import CliRun, run_cli

REPO = Path(__file__).resolve().parents[1]

SAMPLE = {
    "llm": {
        "runners": [{"name": "local", "base_url": "http://127.0.0.1:1/v1", "model": "m", "api_key": "sk-secret"}],
        "max_tokens": 100,
    },
    "telegram": {"token": "", "allowed_user_ids": [42]},
    "runtime": {"timezone": "Europe/Berlin"},
    "collectors": {"rss": {"enabled": True, "feeds": ["http://127.0.0.1:2/feed"]}},
}


def write_tree(root: Path, files: dict[str, object]) -> Path:
    for rel, value in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(value, str):
            path.write_text(value)
        elif rel.endswith((".yaml", ".yml")):
            path.write_text(yaml.safe_dump(value))
        else:
            path.write_text(json.dumps(value, indent=2))
    return root


@pytest.fixture(autouse=True)
def no_token_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TELEGRAM_BOT_TOKEN", raising=False)


def test_file_and_directory_configs_give_the_same_result(tmp_path: Path) -> None:
    single = tmp_path / "single.json"
    single.write_text(json.dumps(SAMPLE))
    tree = write_tree(
        tmp_path / "tree",
        {
            "llm.json": SAMPLE["llm"],
            "telegram.yaml": SAMPLE["telegram"],
            "runtime.json": SAMPLE["runtime"],
            "collectors/rss.json": SAMPLE["collectors"]["rss"],
            "README.md": "ignored",
        },
    )
    assert load_config(single) == load_config(tree) == SAMPLE


def test_index_json_supplies_its_folders_own_keys(tmp_path: Path) -> None:
    tree = write_tree(
        tmp_path / "cfg",
        {
            "index.json": {"runtime": {"reply_footer": True}},
            "collectors/index.json": {"shared": {"enabled": False}},
            "collectors/rss.json": {"enabled": True},
            "llm/index.json": {"max_tokens": 5},
            "llm/runners.json": [{"name": "a", "base_url": "http://x/v1", "model": "m"}],
        },
    )
    data = load_config(tree)
    assert data["runtime"] == {"reply_footer": True}
    assert data["collectors"] == {"shared": {"enabled": False}, "rss": {"enabled": True}}
    assert data["llm"] == {"max_tokens": 5, "runners": [{"name": "a", "base_url": "http://x/v1", "model": "m"}]}


def test_json_syntax_error_names_file_line_and_column(tmp_path: Path) -> None:
    tree = write_tree(tmp_path / "cfg", {"llm.json": '{\n  "max_tokens": 5,\n}\n'})
    with pytest.raises(ConfigError) as exc:
        load_config(tree)
    message = str(exc.value)
    assert "llm.json" in message and "line 3" in message and "column 1" in message


def test_yaml_syntax_error_names_file_and_line(tmp_path: Path) -> None:
    tree = write_tree(tmp_path / "cfg", {"telegram.yaml": "token: [unclosed\nmode: polling\n"})
    with pytest.raises(ConfigError, match=r"telegram\.yaml: line \d+"):
        load_config(tree)


def test_schema_error_names_file_and_json_path(tmp_path: Path) -> None:
    tree = write_tree(
        tmp_path / "cfg",
        {"llm.json": {"runners": [{"name": "a", "base_url": 42, "model": "m"}]}},
    )
    with pytest.raises(ConfigError) as exc:
        load_config(tree)
    assert str(exc.value).endswith("llm.json: runners[0].base_url: 42 is not of type 'string'")


def test_schema_error_in_nested_file_is_relative_to_that_file(tmp_path: Path) -> None:
    tree = write_tree(
        tmp_path / "cfg",
        {"llm/index.json": {}, "llm/runners.json": [{"name": "a", "base_url": "http://x/v1"}]},
    )
    with pytest.raises(ConfigError) as exc:
        load_config(tree)
    assert "runners.json: [0]: 'model' is a required property" in str(exc.value)


def test_unknown_key_is_reported_as_a_typo(tmp_path: Path) -> None:
    tree = write_tree(tmp_path / "cfg", {"llm.json": {"max_concurency": 4}})
    with pytest.raises(ConfigError, match="max_concurency"):
        load_config(tree)


def test_a_wrong_file_given_as_config_does_not_have_its_lines_printed(tmp_path: Path, capsys) -> None:
    # --config pointed at /etc/shadow or a key file: the error names the file, not its contents.
    wrong = tmp_path / "shadow.yaml"
    wrong.write_text("root:$6$saltsalt$hashhashhash:19000:0:99999:7:::\ndaemon:*:19000:0:99999:7:::\n")
    assert main(["config", "validate", "--config", str(wrong)]) == 2
    err = capsys.readouterr().err
    assert "shadow.yaml" in err and "unknown config section" in err
    assert "$6$" not in err and "hashhash" not in err and "daemon" not in err


@pytest.mark.parametrize(
    "ranking,where",
    [
        ({"candidate": 10}, "candidate"),
        ({"candidates": 1e30}, "memory.ranking.candidates"),
        ({"owner_cap": -5}, "memory.ranking.owner_cap"),
        ({"segment_top": 2.5}, "memory.ranking.segment_top"),
    ],
)
def test_memory_ranking_keys_are_checked(tmp_path: Path, ranking: dict, where: str) -> None:
    # A misspelt key was silently ignored, and candidates 1e30 ended in "internal error: OverflowError".
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"memory": {"ranking": ranking}}))
    with pytest.raises(ConfigError, match=where):
        load_config(path)
    path.write_text(json.dumps({"memory": {"ranking": {"candidates": 300, "owner_cap": 0, "segment_weight": 0.4}}}))
    assert load_config(path)["memory"]["ranking"]["candidates"] == 300


def test_env_substitution_and_token_override(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tree = write_tree(
        tmp_path / "cfg",
        {
            "llm.json": {"runners": [{"name": "a", "base_url": "http://x/v1", "model": "m", "api_key": "${MY_KEY}"}]},
            "telegram.json": {"token": "from-file"},
        },
    )
    monkeypatch.setenv("MY_KEY", "k-123")
    monkeypatch.setenv("TELEGRAM_BOT_TOKEN", "from-env")
    data = load_config(tree)
    assert data["llm"]["runners"][0]["api_key"] == "k-123"
    assert data["telegram"]["token"] == "from-env"
    monkeypatch.delenv("MY_KEY")
    with pytest.raises(ConfigError, match=r"llm\.json: runners\[0\]\.api_key: environment variable MY_KEY is not set"):
        load_config(tree)


def test_missing_config_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "nope")


def test_redact_hides_secrets_only() -> None:
    shown = redact(SAMPLE)
    assert shown["llm"]["runners"][0]["api_key"] == "***"
    assert shown["llm"]["runners"][0]["base_url"] == "http://127.0.0.1:1/v1"
    assert shown["telegram"]["token"] == ""  # empty stays visible: the user sees it is unset


def test_owner_file_rules(tmp_path: Path) -> None:
    tree = write_tree(tmp_path / "cfg", {"llm.json": {}, "collectors/rss.json": {}})
    assert owner_file(tree, "llm.max_tokens") == (tree / "llm.json", ("max_tokens",))
    assert owner_file(tree, "collectors.rss.enabled") == (tree / "collectors/rss.json", ("enabled",))
    assert owner_file(tree, "collectors.mail.enabled") == (tree / "collectors/mail.json", ("enabled",))
    assert owner_file(tree, "telegram.webhook.port") == (tree / "telegram.json", ("webhook", "port"))
    assert owner_file(tree, "owner") == (tree / "index.json", ("owner",))


def test_set_round_trips_and_keeps_other_keys_and_style(tmp_path: Path) -> None:
    tree = write_tree(tmp_path / "cfg", {"collectors/rss.json": ""})
    (tree / "llm.json").write_text('{\n    "max_tokens": 5,\n    "temperature": 0.2\n}\n')
    set_key(tree, "llm.max_tokens", 900)
    text = (tree / "llm.json").read_text()
    assert text == '{\n    "max_tokens": 900,\n    "temperature": 0.2\n}\n'
    set_key(tree, "collectors.mail.enabled", True)
    assert json.loads((tree / "collectors/mail.json").read_text()) == {"enabled": True}
    set_key(tree, "telegram.webhook.port", 8444)
    data = load_config(tree)
    assert data["llm"] == {"max_tokens": 900, "temperature": 0.2}
    assert get_key(data, "telegram.webhook.port") == 8444


def test_set_in_yaml_file(tmp_path: Path) -> None:
    tree = write_tree(tmp_path / "cfg", {"runtime.yaml": {"timezone": "UTC", "reply_footer": False}})
    set_key(tree, "runtime.reply_footer", True)
    assert yaml.safe_load((tree / "runtime.yaml").read_text()) == {"timezone": "UTC", "reply_footer": True}


def test_cli_show_get_set_validate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tree = write_tree(tmp_path / "cfg", {"llm.json": SAMPLE["llm"], "telegram.json": {"token": "123:abc"}})
    assert main(["config", "show", "--json", "--config", str(tree)]) == 0
    out = capsys.readouterr().out
    assert "sk-secret" not in out and "123:abc" not in out and "***" in out
    assert json.loads(out)["llm"]["max_tokens"] == 100

    assert main(["config", "set", "llm.max_tokens", "250", "--config", str(tree)]) == 0
    assert main(["config", "set", "runtime.timezone", "Europe/Paris", "--config", str(tree)]) == 0
    capsys.readouterr()
    assert main(["config", "get", "llm.max_tokens", "--config", str(tree)]) == 0
    assert capsys.readouterr().out.strip() == "250"
    assert main(["config", "get", "runtime.timezone", "--config", str(tree)]) == 0
    assert capsys.readouterr().out.strip() == "Europe/Paris"
    assert main(["config", "get", "telegram.token", "--config", str(tree)]) == 0
    assert capsys.readouterr().out.strip() == "***"
    assert main(["config", "validate", "--config", str(tree)]) == 0


def test_cli_set_refuses_an_invalid_value_and_keeps_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tree = write_tree(tmp_path / "cfg", {"llm.json": {"max_tokens": 5}})
    before = (tree / "llm.json").read_text()
    assert main(["config", "set", "llm.max_tokens", '"lots"', "--config", str(tree)]) == 2
    assert "llm.json: max_tokens: 'lots' is not of type" in capsys.readouterr().err
    assert (tree / "llm.json").read_text() == before


def test_bad_config_exits_2_without_traceback(tmp_path: Path) -> None:
    tree = write_tree(tmp_path / "cfg", {"llm.json": "{ not json"})
    result = preload.run(
        [sys.executable, "-m", "messaging_llm_bot.cli", "config", "validate", "--config", str(tree)],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert result.returncode == 2
    assert "llm.json: line 1 column 3" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


def test_example_config_is_valid() -> None:
    data = load_config(REPO / "config", local=False)  # never the user's own settings
    assert data["telegram"]["token"] == ""
    assert data["telegram"]["allowed_user_ids"] == []
    assert all(r["api_key"] == "" for r in data["llm"]["runners"])


def test_set_updates_a_section_held_in_the_root_index(tmp_path: Path) -> None:
    tree = write_tree(tmp_path / "cfg", {"index.json": {"runtime": {"timezone": "UTC"}}, "llm.json": {}})
    assert owner_file(tree, "runtime.timezone") == (tree / "index.json", ("runtime", "timezone"))
    set_key(tree, "runtime.timezone", "Europe/Oslo")
    assert not (tree / "runtime.json").exists()
    assert load_config(tree)["runtime"]["timezone"] == "Europe/Oslo"


def test_validate_and_set_check_collector_schemas(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tree = write_tree(tmp_path / "cfg", {"collectors/rss.json": {"enabled": False, "feeds": 42}})
    assert main(["config", "validate", "--config", str(tree)]) == 2
    assert "rss.json: feeds: 42 is not of type" in capsys.readouterr().err
    (tree / "collectors/rss.json").write_text('{"enabled": false, "feeds": []}')
    assert main(["config", "validate", "--config", str(tree)]) == 0
    assert main(["config", "set", "collectors.rss.feeds", "42", "--config", str(tree)]) == 2
    assert json.loads((tree / "collectors/rss.json").read_text()) == {"enabled": False, "feeds": []}


# -- config bombs: refused with a config error naming the file, exit 2, quickly and in little memory --

BILLION_LAUGHS = "\n".join(
    ["a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    + [
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
        f"*{chr(97 + i)},"
        f" *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]"
        for i in range(8)
    ]
    + ["telegram: {token: *i}", ""]
)


#: Config files whose ``config validate`` runs in the memory-limited child (``limited_validations``): key -> (file
#: name, text); the huge file's text is written by the fixture.
LIMITED = {
    "billion laughs": ("telegram.yaml", BILLION_LAUGHS),
    "deep json": ("llm.json", '{"extra": ' + "[" * 100_000 + "]" * 100_000 + "}"),
    "deep yaml": ("llm.yaml", "extra: " + "[" * 100_000 + "]" * 100_000 + "\n"),
    "huge": ("llm.json", ""),
}

#: The child: ``config validate`` of each tree through ``run_cli`` (``main(argv)``, its exit status and output
#: captured, logging as in a fresh process), the runs as JSON on stdout.
_CHILD = """
import json, sys
from tests.cli_inprocess import run_cli
runs = {key: run_cli("config", "validate", "--config", tree) for key, tree in json.loads(sys.argv[1]).items()}
print(json.dumps({key: [run.returncode, run.stdout, run.stderr] for key, run in runs.items()}))
"""


@pytest.fixture(scope="module")
def limited_validations(tmp_path_factory: pytest.TempPathFactory) -> dict[str, CliRun]:
    """``config validate`` of a tree holding each file of ``LIMITED``, all in one child limited to 512 MB of address
    space and 30 s, so a bomb fails the test instead of the machine (one interpreter's start for the four; the
    exit status a shell sees is test_bad_config_exits_2_without_traceback's)."""
    import resource

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (512 * 2**20, 512 * 2**20))

    root = tmp_path_factory.mktemp("limited")
    trees = {}
    for number, (key, (name, text)) in enumerate(LIMITED.items()):
        if key == "huge":
            text = '{"max_tokens": 5, "x": "' + "a" * (12 * 2**20) + '"}'
        trees[key] = str(write_tree(root / f"cfg{number}", {name: text}))
    # A real spawn, not the tests' zygote (tests/preload.py): the address-space bound is about what the CLI's
    # own start maps, and a fork of the zygote would carry every module it preloaded.
    child = subprocess.run(
        [sys.executable, "-c", _CHILD, json.dumps(trees)],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        preexec_fn=limit,
        timeout=30,
    )
    assert child.returncode == 0, f"the limited child exited {child.returncode}:\n{child.stderr[-3000:]}"
    runs = json.loads(child.stdout)
    return {key: CliRun(["assistant", "config", "validate"], *runs[key]) for key in LIMITED}


@pytest.mark.parametrize(
    "key,expected",
    [
        ("billion laughs", "telegram.yaml: line 2 column 8: invalid YAML: aliases (*a) are not allowed"),
        ("deep json", "llm.json: line 1 column 74: nested more than 64 levels deep"),
        ("deep yaml", "llm.yaml: nested more than 64 levels deep"),
    ],
)
def test_config_bombs_are_config_errors_naming_the_file(
    limited_validations: dict[str, CliRun], key: str, expected: str
) -> None:
    result = limited_validations[key]
    assert result.returncode == 2, result.stderr[-2000:]
    assert expected in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


def test_deep_yaml_block_nesting_names_the_json_path(tmp_path: Path) -> None:
    text = "".join(f"{'  ' * i}k{i}:\n" for i in range(70)) + f"{'  ' * 70}leaf: 1\n"
    tree = write_tree(tmp_path / "cfg", {"runtime.yaml": text})
    with pytest.raises(ConfigError, match=r"runtime\.yaml: k0\.k1\.k2\..*k63: nested more than 64 levels deep"):
        load_config(tree)


def test_yaml_flow_nesting_stops_the_reading_at_its_bound_and_below_it_names_the_json_path(tmp_path: Path) -> None:
    """Past 128 open brackets the scanner stops: the '@' after 200 of them (a YAML error, had it been read) is
    never reached. PyYAML's scanner reads about 1,000 characters ahead, each step walking every open bracket: a
    line of 100,000 was half a second of CPU. Between 65 and 128 levels the refusal still names the path."""
    tree = write_tree(tmp_path / "cfg", {"llm.yaml": "extra: " + "[" * 200 + "@" + "]" * 200 + "\n"})
    with pytest.raises(ConfigError, match=r"llm\.yaml: nested more than 64 levels deep$"):
        load_config(tree)
    (tree / "llm.yaml").write_text("extra: " + "[" * 100 + "]" * 100 + "\n")
    with pytest.raises(ConfigError, match=r"llm\.yaml: extra(\[0\]){63}: nested more than 64 levels deep"):
        load_config(tree)


def test_a_yaml_anchor_without_alias_still_loads(tmp_path: Path) -> None:
    tree = write_tree(tmp_path / "cfg", {"runtime.yaml": "timezone: &tz UTC\n"})
    assert load_config(tree)["runtime"]["timezone"] == "UTC"


# -- file encodings, duplicate keys, ${ENV} during `config set` --


def _cli(*argv: str, env: dict | None = None) -> CliRun:
    """The command's behaviour (exit status, output, files), in this process (tests/cli_inprocess.py)."""
    return run_cli(*argv, env=env, cwd=REPO)


@pytest.mark.parametrize(
    "name,raw",
    [
        ("llm.json", b'{"max_tokens": 5,\n "extra": "caf\xe9"}'),
        ("llm.yaml", b"max_tokens: 5\nextra: caf\xe9\n"),
    ],
)
def test_a_file_that_is_not_utf8_is_a_config_error_naming_file_and_line(tmp_path: Path, name: str, raw: bytes) -> None:
    tree = tmp_path / "cfg"
    tree.mkdir()
    (tree / name).write_bytes(raw)
    for argv in (
        ("config", "validate"),
        ("config", "show"),
        ("config", "get", "llm.max_tokens"),
        ("config", "set", "llm.temperature", "0.5"),
    ):
        result = _cli(*argv, "--config", str(tree))
        assert result.returncode == 2, (argv, result.stderr)
        assert f"{name}: line 2: not UTF-8 text" in result.stderr, result.stderr
        assert "internal error" not in result.stderr and "Traceback" not in result.stderr
    assert (tree / name).read_bytes() == raw
    assert not (tree / "local").exists()


@pytest.mark.parametrize("name", ["llm.json", "llm.yaml"])
def test_a_utf8_bom_is_accepted_in_json_and_yaml(tmp_path: Path, name: str) -> None:
    tree = tmp_path / "cfg"
    tree.mkdir()
    text = '{"max_tokens": 5}' if name.endswith(".json") else "max_tokens: 5\n"
    (tree / name).write_bytes(b"\xef\xbb\xbf" + text.encode())  # what Windows Notepad saves
    assert load_config(tree)["llm"]["max_tokens"] == 5


@pytest.mark.parametrize(
    "name,text,expected",
    [
        (
            "llm.json",
            '{"max_tokens": 5,\n "runners": [],\n "max_tokens": 9}',
            "llm.json: line 3 column 2: invalid JSON: key 'max_tokens' appears twice",
        ),
        (
            "llm.json",
            '{"runners": [{"name": "a", "model": "m", "name": "b"}]}',
            "llm.json: line 1 column 42: invalid JSON: key 'name' appears twice",
        ),
        (
            "llm.yaml",
            "max_tokens: 5\nrunners: []\nmax_tokens: 9\n",
            "llm.yaml: line 3 column 1: invalid YAML: key 'max_tokens' appears twice",
        ),
    ],
)
def test_a_duplicate_key_is_a_config_error_naming_file_line_and_key(
    tmp_path: Path, name: str, text: str, expected: str
) -> None:
    tree = write_tree(tmp_path / "cfg", {name: text})
    result = _cli("config", "validate", "--config", str(tree))
    assert result.returncode == 2, result.stdout
    assert expected in result.stderr


def test_set_works_when_another_value_is_an_env_reference(tmp_path: Path) -> None:
    tree = write_tree(
        tmp_path / "cfg",
        {"llm.json": {"runners": [{"name": "a", "base_url": "${ASSISTANT_TEST_LLM_URL}", "model": "m"}]}},
    )
    env = {"ASSISTANT_TEST_LLM_URL": "http://127.0.0.1:1/v1"}
    result = _cli("config", "set", "llm.max_tokens", "300", "--config", str(tree), env=env)
    assert result.returncode == 0, result.stderr
    assert json.loads((tree / "local/llm.json").read_text()) == {"max_tokens": 300}
    # A wrong value is still refused, and the reference itself is checked when it is substituted.
    assert _cli("config", "set", "llm.max_tokens", '"lots"', "--config", str(tree), env=env).returncode == 2
    bad = _cli("config", "validate", "--config", str(tree), env={"ASSISTANT_TEST_LLM_URL": "localhost"})
    assert bad.returncode == 2 and "llm.json: runners[0].base_url: 'localhost' does not match" in bad.stderr


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_set_refuses_a_number_json_cannot_carry(tmp_path: Path, value: str) -> None:
    tree = write_tree(tmp_path / "cfg", {"llm.json": {"max_tokens": 5}})
    result = _cli("config", "set", "llm.temperature", value, "--config", str(tree))
    assert result.returncode == 2, result.stdout
    assert not (tree / "local").exists()


def test_nan_in_a_config_file_is_a_config_error(tmp_path: Path) -> None:
    tree = write_tree(tmp_path / "cfg", {"llm.json": '{"max_tokens": 5,\n "temperature": NaN}'})
    result = _cli("config", "validate", "--config", str(tree))
    assert result.returncode == 2, result.stdout
    assert "llm.json: invalid JSON: NaN is not a JSON number" in result.stderr


@pytest.mark.parametrize(
    "files",
    [
        {"local/llm.json": {"max_tokens": 5}, "local/llm.yaml": "max_tokens: 100\n"},
        {"llm.json": {"max_tokens": 5}, "llm.yml": "max_tokens: 100\n"},
        {"collectors.json": {"rss": {"enabled": False}}, "collectors/index.json": {"mail": {"enabled": False}}},
    ],
)
def test_two_files_for_one_key_in_one_layer_are_an_error(tmp_path: Path, files: dict) -> None:
    tree = write_tree(tmp_path / "cfg", files)
    before = {p: p.read_bytes() for p in tree.rglob("*") if p.is_file()}
    names = sorted(Path(rel).name for rel in files)
    for argv in (("config", "validate"), ("config", "set", "llm.max_tokens", "200")):
        result = _cli(*argv, "--config", str(tree))
        assert result.returncode == 2, (argv, result.stdout)
        assert "both supply" in result.stderr and all(name in result.stderr for name in names), result.stderr
    assert {p: p.read_bytes() for p in tree.rglob("*") if p.is_file()} == before


@pytest.mark.parametrize(
    "text,expected",
    [
        ("temperature: .nan\n", "llm.yaml: temperature: .nan is not a JSON number; write a number"),
        ("temperature: -.inf\n", "llm.yaml: temperature: -.inf is not a JSON number; write a number"),
        (
            "runners:\n  - name: a\n    since: 2024-01-01\n",
            "llm.yaml: runners[0].since: 2024-01-01 is a date, not a JSON value; quote it",
        ),
        ("extra: !!binary aGVsbG8=\n", "llm.yaml: extra: a binary is not a JSON value"),
        ("stop: !!set {a, b}\n", "llm.yaml: stop: a set is not a JSON value; write a list"),
        ("1: x\n", "llm.yaml: (top level): the key 1 is not text; quote it"),
    ],
)
def test_a_yaml_value_json_cannot_hold_is_a_config_error(tmp_path: Path, text: str, expected: str) -> None:
    tree = write_tree(tmp_path / "cfg", {"llm.yaml": text})
    for argv in (("config", "validate"), ("config", "show", "--json")):
        result = _cli(*argv, "--config", str(tree))
        assert result.returncode == 2, (argv, result.stdout)
        assert expected in result.stderr and "internal error" not in result.stderr, result.stderr


def test_a_yaml_date_in_a_collector_section_without_schema_is_refused(tmp_path: Path) -> None:
    plugins = tmp_path / "plugins" / "mine"
    plugins.mkdir(parents=True)
    (plugins / "__init__.py").write_text(
        "DESCRIPTION = 'd'\nINTERVAL_SECONDS = 60\ndef run(workspace):\n    return {}\n"
    )
    (plugins / "README.md").write_text("# mine\n")
    tree = write_tree(
        tmp_path / "cfg",
        {
            "runtime.json": {"collectors_dirs": [str(plugins.parent)]},
            "collectors/mine.yaml": "enabled: false\nwhen: 2024-01-01\n",
        },
    )
    result = _cli("config", "show", "--json", "--config", str(tree))
    assert result.returncode == 2 and "mine.yaml: when: 2024-01-01 is a date" in result.stderr, result.stderr


def test_a_huge_file_is_refused_at_once_naming_its_size(limited_validations: dict[str, CliRun]) -> None:
    result = limited_validations["huge"]  # 12 MB of llm.json
    assert result.returncode == 2, result.stderr[-2000:]
    assert "llm.json: 12.0 MB; a config file is at most 10 MB" in result.stderr


def test_config_set_from_several_threads_at_once_loses_no_update(tmp_path: Path) -> None:
    """Two `config set` at the same moment each read the file, changed one key and wrote it back:
    one update was lost. They now take turns."""
    import threading

    from assistant_framework.settings import write_setting

    tree = write_tree(tmp_path / "cfg", {"collectors/rss.json": ""})
    (tree / "runtime.json").write_text('{"timezone": "UTC"}\n')
    keys = [f"runtime.skill_timeouts.skill{i}" for i in range(12)]
    errors: list[BaseException] = []

    def set_one(key: str) -> None:
        try:
            write_setting(tree, key, 30)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=set_one, args=(key,)) for key in keys]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    data = load_config(tree)
    assert sorted(data["runtime"]["skill_timeouts"]) == sorted(k.rsplit(".", 1)[1] for k in keys)
