"""The eval runner end to end: real agent, real skills, a scripted loopback model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assistant_framework.evals.cases import BUILTIN_CASES_DIR, load_cases
from messaging_llm_bot.cli.main import main
from tests.fakes.chat_server import FakeChatServer

CASES = [
    # answered right
    {
        "id": "r-task",
        "category": "tasks",
        "message": "Add a task to call the plumber, due next Friday.",
        "expect": {
            "skill": "tasks",
            "args": {"action": "add", "title": {"contains": "plumber"}, "due": {"date": "next friday"}},
        },
    },
    # answered with the wrong skill
    {
        "id": "w-note",
        "category": "notes",
        "message": "Make a note titled Groceries: eggs.",
        "expect": {"skill": "notes", "args": {"action": "add"}},
    },
    # malformed but recoverable (fenced, single quotes, synonym keys)
    {
        "id": "m-read",
        "category": "file",
        "message": "Read notes/groceries.md",
        "workspace": {"notes/groceries.md": "# Groceries\n- tomatoes\n"},
        "expect": {
            "skill": "file",
            "args": {"action": "read", "path": {"endswith": "notes/groceries.md"}},
            "reply": {"contains": "tomatoes"},
        },
    },
    # prose where a call was needed
    {
        "id": "p-remind",
        "category": "reminders",
        "message": "Remind me in 20 minutes to take the laundry out.",
        "expect": {"skill": "reminders", "args": {"action": "add", "in_minutes": {"number": 20}}},
    },
    # no skill needed, answered in prose
    {"id": "n-hi", "category": "no_skill", "message": "Hi there!", "expect": {"skill": None}},
    # invalid args first, corrected in the next round
    {
        "id": "x-repair",
        "category": "tasks",
        "message": "Task: pay rent, due tomorrow.",
        "expect": {"skill": "tasks", "args": {"action": "add", "due": {"date": "tomorrow"}}},
    },
]


def scripted(request: dict) -> str:
    """Answer like a model that gets some cases right and some wrong."""
    messages = request["messages"]
    first_user = next(m["content"] for m in messages if m["role"] == "user")
    last = messages[-1]["content"]
    after_skill = len([m for m in messages if m["role"] == "user"]) > 1
    if "plumber" in first_user:
        return (
            "Added."
            if after_skill
            else '{"skill": "tasks", "args": {"action": "add", "title": "Call the plumber", "due": "2026-06-12"}}'
        )
    if "Groceries" in first_user:
        return "Done." if after_skill else '{"skill": "tasks", "args": {"action": "add", "title": "Groceries: eggs"}}'
    if "groceries.md" in first_user:
        if after_skill:
            return "It lists tomatoes." if "tomatoes" in last else "I could not read it."
        return "Sure!\n```json\n{'tool': 'file', 'parameters': {'action': 'read', 'path': 'notes/groceries.md',},}\n```"
    if "laundry" in first_user:
        return "Okay, I'll remind you in 20 minutes!"
    if "pay rent" in first_user:
        if not after_skill:
            return '{"skill": "tasks", "args": {"action": "add", "title": "Pay rent", "due": "tomorrow"}}'
        if "was not run" in last and "due" in last:
            return '{"skill": "tasks", "args": {"action": "add", "title": "Pay rent", "due": "2026-06-11"}}'
        return "Added the task."
    return '{"reply": "Hello! How can I help?"}'


@pytest.fixture
def eval_setup(tmp_path: Path):
    cases_dir = tmp_path / "cases"
    cases_dir.mkdir()
    (cases_dir / "mine.json").write_text(json.dumps(CASES))
    config_dir = tmp_path / "config"
    config_dir.mkdir()
    with FakeChatServer() as server:
        server.set_handler(scripted)
        (config_dir / "llm.json").write_text(
            json.dumps(
                {
                    "runners": [{"name": "fake", "base_url": server.base_url, "model": "fake-model"}],
                    "max_skill_rounds": 3,
                }
            )
        )
        (config_dir / "runtime.json").write_text(json.dumps({"timezone": "UTC"}))
        yield cases_dir, config_dir, server


def test_builtin_suite_has_at_least_60_valid_cases() -> None:
    cases = load_cases([BUILTIN_CASES_DIR])
    assert len(cases) >= 60
    assert {"no_skill", "chain", "tasks", "notes", "file"} <= {c.category for c in cases}


def test_eval_scores_right_wrong_malformed_and_prose(eval_setup, tmp_path: Path, capsys) -> None:
    cases_dir, config_dir, server = eval_setup
    report_path = tmp_path / "a.json"
    code = main(
        [
            "eval",
            "skills",
            "--config",
            str(config_dir),
            "--cases",
            str(cases_dir),
            "--no-builtin",
            "--report",
            str(report_path),
        ]
    )
    assert code == 1  # 2 of 6 cases failed
    out = capsys.readouterr().out
    report = json.loads(report_path.read_text())
    results = {r["id"]: r for r in report["results"]}
    assert report["cases"] == 6 and report["model"] == "fake-model"
    assert results["r-task"]["passed"] and results["r-task"]["args_correct"]
    assert not results["w-note"]["passed"] and results["w-note"]["chose_right_skill"] is False
    assert results["m-read"]["passed"], results["m-read"]["problems"]
    assert not results["p-remind"]["passed"] and results["p-remind"]["calls"] == []
    assert results["n-hi"]["passed"] and results["n-hi"]["no_skill_ok"]
    assert results["x-repair"]["passed"] and results["x-repair"]["repair_round"], results["x-repair"]
    assert report["passed"] == 4
    assert report["by_category"]["tasks"]["cases"] == 2 and report["by_category"]["tasks"]["passed"] == 2
    assert "FAIL w-note" in out and "FAIL p-remind" in out
    # The real prompt went out: the system message lists the built-in tools, as an owner's chat gets them
    # (send_file too: the eval's turn is a chat that takes files).
    system = server.chat_requests[0]["messages"][0]["content"]
    assert "[Tools]" in system and "tasks:" in system and "\n- send_file: " in system


def test_compare_two_reports(eval_setup, tmp_path: Path, capsys) -> None:
    cases_dir, config_dir, server = eval_setup
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    assert (
        main(
            [
                "eval",
                "skills",
                "--config",
                str(config_dir),
                "--cases",
                str(cases_dir),
                "--no-builtin",
                "--report",
                str(a),
            ]
        )
        == 1
    )

    def better(request: dict) -> str:
        first_user = next(m["content"] for m in request["messages"] if m["role"] == "user")
        if "laundry" in first_user and len(request["messages"]) == 2:
            return '{"skill": "reminders", "args": {"action": "add", "text": "take the laundry out", "in_minutes": 20}}'
        return scripted(request)

    server.set_handler(better)
    assert (
        main(
            [
                "eval",
                "skills",
                "--config",
                str(config_dir),
                "--cases",
                str(cases_dir),
                "--no-builtin",
                "--report",
                str(b),
            ]
        )
        == 1
    )
    capsys.readouterr()
    assert main(["eval", "skills", "--compare", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "fixed  p-remind" in out
    assert "+1" in out


def test_bad_case_file_exits_2(tmp_path: Path, capsys) -> None:
    (tmp_path / "bad.yaml").write_text("id: x\ncategory: c\n")
    assert (
        main(
            [
                "eval",
                "skills",
                "--base-url",
                "http://127.0.0.1:9/v1",
                "--model",
                "m",
                "--cases",
                str(tmp_path),
                "--no-builtin",
            ]
        )
        == 2
    )
    assert "bad.yaml" in capsys.readouterr().err


def test_structured_output_and_tool_transport_flags_reach_the_requests(eval_setup, capsys) -> None:
    cases_dir, config_dir, server = eval_setup
    code = main(
        [
            "eval",
            "skills",
            "--config",
            str(config_dir),
            "--cases",
            str(cases_dir),
            "--no-builtin",
            "--id",
            "n-hi",
            "--structured-output",
            "json_object",
            "--tool-transport",
            "native",
        ]
    )
    assert code in (0, 1)
    request = server.chat_requests[0]
    assert "response_format" not in request and {t["function"]["name"] for t in request["tools"]} >= {"tasks", "notes"}
    server.reset()
    assert main(
        [
            "eval",
            "skills",
            "--config",
            str(config_dir),
            "--cases",
            str(cases_dir),
            "--no-builtin",
            "--id",
            "n-hi",
            "--structured-output",
            "off",
        ]
    ) in (0, 1)
    assert [("response_format" in r, "tools" in r) for r in server.chat_requests] == [(False, False)]


def test_the_eval_with_and_without_the_published_skill_md_skills(eval_setup, tmp_path: Path) -> None:
    """The same cases and answers with ``runtime.skills_dirs`` holding the three published SKILL.md skills:
    the prompt lists them in [Skills] (skill_doc offered) and the scores are comparable row for row
    (bench/real_model.py --skills-dir tests/data/agent_skills is the same on the real model)."""
    cases_dir, config_dir, server = eval_setup
    reports = {}
    for label in ("without", "with"):
        if label == "with":
            published = str(Path(__file__).parent / "data" / "agent_skills")
            (config_dir / "runtime.json").write_text(json.dumps({"timezone": "UTC", "skills_dirs": [published]}))
        path = tmp_path / f"{label}.json"
        before = len(server.chat_requests)
        main(
            [
                "eval",
                "skills",
                "--config",
                str(config_dir),
                "--cases",
                str(cases_dir),
                "--no-builtin",
                "--report",
                str(path),
            ]
        )
        reports[label] = json.loads(path.read_text())
        system = server.chat_requests[before]["messages"][0]["content"]
        listed = "- internal-comms: A set of resources" in system and "skill_doc:" in system
        assert listed == (label == "with"), label
    assert reports["with"]["passed"] == reports["without"]["passed"] == 4
    right = {label: [r["chose_right_skill"] for r in report["results"]] for label, report in reports.items()}
    assert right["with"] == right["without"]
