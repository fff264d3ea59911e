"""``assistant jobs list|show|run|pause|resume|remove`` as the operator runs it (in-process:
tests/cli_inprocess.py, on a real workspace): ``--json`` gives each job's ``next_run`` in ISO 8601 with its offset;
exit codes 0/1/2."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

from assistant_framework.jobs import JOBS_FILE, RUNS_FILE
from assistant_framework.workspace import Workspace
from tests.cli_inprocess import CliRun, run_cli

REPO = Path(__file__).resolve().parents[1]


def cli(ws: Workspace, config: Path, *argv: str) -> CliRun:
    """``assistant jobs <argv>`` on ``ws`` in this process (tests/cli_inprocess.py): what is checked is the
    command's answer and exit status, not a process start."""
    return run_cli("jobs", *argv, "--workspace", str(ws.root), "--config", str(config), cwd=REPO)


def setup(tmp_path: Path, rows: list) -> tuple[Workspace, Path]:
    ws = Workspace(tmp_path / "ws")
    ws.write_json(JOBS_FILE, rows)
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"runtime": {"timezone": "Europe/Berlin"}}), encoding="utf-8")
    return ws, config


ROWS = [
    {
        "id": "j1",
        "name": "morning",
        "cron": "30 7 * * 1-5",
        "prompt": "Weather?",
        "created_at": "2026-11-01T00:00:00+00:00",
    },
    {
        "id": "j2",
        "name": "rent",
        "cron": "0 9 1 * *",
        "timezone": "UTC",
        "message": "Pay",
        "created_at": "2026-11-01T00:00:00+00:00",
    },
]


def test_list_json_gives_next_run_in_iso_8601_with_offset(tmp_path: Path) -> None:
    ws, config = setup(tmp_path, ROWS)
    done = cli(ws, config, "list", "--json")
    assert done.returncode == 0, done.stderr
    listed = json.loads(done.stdout)
    assert listed["problems"] == []
    by_id = {row["id"]: row for row in listed["jobs"]}
    morning = datetime.fromisoformat(by_id["j1"]["next_run"])
    assert morning.utcoffset() is not None and by_id["j1"]["next_run"][-6:] in ("+01:00", "+02:00")
    assert morning.strftime("%H:%M") == "07:30" and morning.isoweekday() <= 5  # Berlin wall time, a weekday
    rent = datetime.fromisoformat(by_id["j2"]["next_run"])
    assert by_id["j2"]["next_run"].endswith("+00:00") and rent.day == 1 and rent.hour == 9


def test_a_broken_row_is_reported_and_exits_1_the_others_listed(tmp_path: Path) -> None:
    ws, config = setup(tmp_path, [*ROWS, {"id": "j3", "name": "bad", "every_minutes": 0, "message": "x"}])
    done = cli(ws, config, "list", "--json")
    assert done.returncode == 1
    listed = json.loads(done.stdout)
    assert [row["id"] for row in listed["jobs"]] == ["j1", "j2"] and "every_minutes 0" in listed["problems"][0]
    text = cli(ws, config, "list")
    assert (
        text.returncode == 1
        and "morning" in text.stdout
        and "problem:" in text.stderr
        and "Traceback" not in text.stderr
    )


def test_show_pause_resume_run_remove(tmp_path: Path) -> None:
    ws, config = setup(tmp_path, ROWS)
    ws.append_jsonl(
        RUNS_FILE, {"run": "job:j2:x", "job": "j2", "planned": "2026-11-01T09:00:00+00:00", "outcome": "delivered"}
    )
    shown = json.loads(cli(ws, config, "show", "rent", "--json").stdout)
    assert shown["id"] == "j2" and shown["runs"][0]["outcome"] == "delivered"
    assert cli(ws, config, "pause", "j1").returncode == 0
    assert json.loads(cli(ws, config, "show", "j1", "--json").stdout)["next_run"] is None
    resumed = json.loads(cli(ws, config, "resume", "j1", "--json").stdout)
    assert resumed["paused"] is False and resumed["next_run"]
    assert cli(ws, config, "run", "j1").returncode == 0
    assert json.loads(ws.read_text(JOBS_FILE))[0]["run_requested"]
    assert cli(ws, config, "remove", "j2").returncode == 0
    assert [row["id"] for row in json.loads(ws.read_text(JOBS_FILE))] == ["j1"]
    missing = cli(ws, config, "show", "j9")
    assert missing.returncode == 2 and "no job 'j9'" in missing.stderr and "jobs list" in missing.stderr


def test_add_without_the_model_checks_as_the_skill_does(tmp_path: Path) -> None:
    """``jobs add`` (issue 46): a job from the command line, listed with its next run; a wrong cron field, a
    prompt job more often than the minimum, a second schedule each exit 2 saying what to fix, nothing stored."""
    ws, config = setup(tmp_path, [])
    added = cli(ws, config, "add", "tick", "--every-minutes", "1", "--message", "TICK")
    assert added.returncode == 0 and "job j1 (tick) added: every 1 minute, message; next run " in added.stdout
    [job] = json.loads(cli(ws, config, "list", "--json").stdout)["jobs"]
    assert job["id"] == "j1" and job["text"] == "TICK" and datetime.fromisoformat(job["next_run"]).utcoffset()
    before = ws.read_text(JOBS_FILE)
    wrong = cli(ws, config, "add", "x", "--cron", "30 25 * * 1-5", "--message", "m")
    assert wrong.returncode == 2 and "hour 25 is out of 0-23" in wrong.stderr and "Traceback" not in wrong.stderr
    often = cli(ws, config, "add", "news", "--every-minutes", "5", "--prompt", "News?")
    assert often.returncode == 2 and "at most every 15 minutes" in often.stderr
    two = cli(ws, config, "add", "y", "--every-minutes", "5", "--cron", "0 7 * * *", "--message", "m")
    assert two.returncode == 2 and "not allowed with argument" in two.stderr
    assert ws.read_text(JOBS_FILE) == before


def test_update_without_the_model_checks_as_the_skill_does(tmp_path: Path) -> None:
    """``jobs update`` (issue 46): a message job made a prompt job on its every-minute schedule is refused (the
    minimum interval holds on update too), as is a wrong cron field; with a longer schedule it is changed."""
    ws, config = setup(tmp_path, [])
    assert cli(ws, config, "add", "tick", "--every-minutes", "1", "--message", "TICK").returncode == 0
    before = ws.read_text(JOBS_FILE)
    often = cli(ws, config, "update", "tick", "--prompt", "News?")
    assert often.returncode == 2 and "at most every 15 minutes" in often.stderr
    wrong = cli(ws, config, "update", "j1", "--cron", "0 24 * * *")
    assert wrong.returncode == 2 and "hour 24 is out of 0-23" in wrong.stderr
    assert cli(ws, config, "update", "j1").returncode == 2  # nothing to change
    assert cli(ws, config, "update", "j9", "--name", "x").returncode == 2
    assert ws.read_text(JOBS_FILE) == before
    changed = cli(ws, config, "update", "j1", "--every-minutes", "30", "--prompt", "News?", "--json")
    assert changed.returncode == 0, changed.stderr
    row = json.loads(changed.stdout)
    assert row["kind"] == "prompt" and row["schedule"] == "every 30 minutes" and row["next_run"]
