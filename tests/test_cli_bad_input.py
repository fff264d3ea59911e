"""Bad values on the command line: exit 2 with a one-line error, never a traceback or a surprise."""

from __future__ import annotations

from pathlib import Path

import pytest

from assistant_framework.workspace import Workspace
from messaging_llm_bot.cli.main import main


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    workspace = Workspace(tmp_path / "ws")
    workspace.path("state").mkdir(parents=True, exist_ok=True)
    workspace.write_text("notes/a.md", "# A\n\nbanana split\n")
    return workspace


def _exit(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exc:  # argparse rejects a value
        return int(exc.code)


@pytest.mark.parametrize(
    "argv, option",
    [
        (["memory", "search", "banana", "--limit", "0"], "--limit"),
        (["memory", "search", "banana", "--limit", "-5"], "--limit"),  # was: all hits but the last 5
        (["trace", "list", "-n", "-1"], "-n/--limit"),  # was: every trace but the oldest
        (["trace", "list", "-n", "0"], "-n/--limit"),
        (["trace", "replay", "--last", "-1"], "--last"),  # was: replay every trace but the oldest
        (["trace", "export-cases", "--last", "-2", "--out", "x.yaml"], "--last"),
        (["web", "--port", "99999"], "--port"),  # was: listening on 99999 % 65536
        (["web", "--port", "-1"], "--port"),
    ],
)
def test_out_of_range_numbers_are_usage_errors(ws, capsys, argv, option):
    assert _exit([*argv, "--workspace", str(ws.root)]) == 2
    err = capsys.readouterr().err
    assert f"argument {option}" in err and "Traceback" not in err and "internal error" not in err


@pytest.mark.parametrize("conversation", ["", "   "])
def test_memory_search_with_an_empty_conversation_is_a_usage_error(ws, capsys, conversation):
    assert _exit(["memory", "search", "banana", "--conversation", conversation, "--workspace", str(ws.root)]) == 2
    err = capsys.readouterr().err
    assert "--conversation" in err and "internal error" not in err


def test_json_commands_keep_stdout_json_free_of_messages_when_nothing_is_found(ws, tmp_path, capsys):
    # `... --json | jq` must not get a human sentence on stdout: the message goes to stderr.
    assert _exit(["trace", "last-prompt", "--json", "--workspace", str(ws.root)]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and "no traces" in captured.err
    config = tmp_path / "config"
    config.mkdir()
    assert _exit(["config", "get", "runtime.nonsense", "--json", "--config", str(config)]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "unknown config key 'runtime.nonsense'" in captured.err
    assert _exit(["config", "get", "llm.runners[0].api_key_env", "--json", "--config", str(config)]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and "not set and has no default" in captured.err


@pytest.mark.parametrize(
    "source",
    [
        "collector:.",
        "collector:*",
        "collector:**",
        "collector:rs?",
        "collector:[rm]*",
        "collector:RSS",
        "collector: rss",
    ],
)
def test_purge_with_a_name_that_is_no_collector_name_deletes_nothing(ws, capsys, source):
    ws.write_text("collectors/rss/items.jsonl", '{"title": "kernel released"}\n')
    ws.write_text("collectors/mail/items.jsonl", '{"subject": "invoice"}\n')
    assert _exit(["memory", "purge", "--source", source, "--workspace", str(ws.root)]) == 2
    assert "collector:NAME" in capsys.readouterr().err
    assert ws.list("collectors/**/*") == ["collectors/mail/items.jsonl", "collectors/rss/items.jsonl"]


@pytest.mark.parametrize(
    "argv, words",
    [
        (["memory", "search", "banana", "--source", "note"], "--source"),  # a typo: was "no memory matches", exit 1
        (["memory", "search", "banana", "--source", "collector:"], "--source"),
        (["memory", "search", "banana", "--source", "bogus"], "collector:NAME"),
        (["memory", "search", ""], "query"),  # was: "no memory matches ''", exit 1
        (["memory", "search", "   "], "query"),
    ],
)
def test_memory_search_with_an_unknown_source_or_an_empty_query_is_a_usage_error(ws, capsys, argv, words):
    assert _exit([*argv, "--workspace", str(ws.root)]) == 2
    captured = capsys.readouterr()
    assert words in captured.err and "Traceback" not in captured.err and "internal error" not in captured.err
    assert captured.out == ""


@pytest.mark.parametrize("source", ["notes", "skill:notes", "collector:rss", "collector:*", "skill:weather"])
def test_memory_search_accepts_every_kind_of_source(ws, source):
    expected = 0 if source in ("notes", "skill:notes") else 1  # only the note holds "banana"
    assert _exit(["memory", "search", "banana", "--source", source, "--workspace", str(ws.root)]) == expected
