"""Jobs without a capable model (issue 46), through the Telegram bot (FakeBotAPI, FakeChatServer, the scheduler
on the test's clock): a row written by hand needs only a name, one schedule and one payload, and a wrong cron
field is named with its range."""

from __future__ import annotations

import json

import pytest

from assistant_framework.jobs import JOBS_FILE
from assistant_framework.schedules import from_iso, validate_cron
from tests.telegram_harness import OWNER, texts
from tests.test_jobs_bot import Clock, delivered, job_bot, next_look  # noqa: F401 - job_bot is a fixture


def test_a_row_with_only_a_name_a_schedule_and_a_payload_gets_its_id_and_runs(
    fake,
    chat_server,
    job_bot,  # noqa: F811
    workspace,
):
    """Without ``created_at`` such a row never ran (its first run moved on at every look), without ``id`` it was
    refused: the scheduler writes both in at its first look, and the job runs at its minute."""
    clock = Clock()
    workspace.write_json(
        JOBS_FILE,
        [
            {"name": "tick", "every_minutes": 1, "message": "TICK"},
            {"name": "tock", "cron": "* * * * *", "message": "TOCK"},
        ],
    )
    bot = job_bot(clock)
    next_look(bot, fake)
    rows = json.loads(workspace.read_text(JOBS_FILE))
    assert [(row["id"], row["name"]) for row in rows] == [("j1", "tick"), ("j2", "tock")]
    assert all(from_iso(row["created_at"]) is not None for row in rows)
    clock.advance(seconds=61)
    fake.wait_for(lambda: delivered(fake, "🗓 TICK") == ["🗓 TICK"] and len(delivered(fake, "🗓 TOCK")) >= 1)
    next_look(bot, fake, 3)
    assert json.loads(workspace.read_text(JOBS_FILE))[0]["created_at"] == rows[0]["created_at"]  # given once


def test_a_wrong_cron_field_is_named_with_its_range(fake, chat_server, start_bot, workspace):
    start_bot()
    add = {"action": "add", "name": "x", "cron": "30 25 * * 1-5", "message": "m"}
    chat_server.enqueue(json.dumps({"skill": "jobs", "args": add}), '{"reply": "Could not."}')
    fake.send_message("weekdays at 25:30 say m", user_id=OWNER)
    fake.wait_for(lambda: "Could not." in texts(fake, OWNER))
    fed_back = chat_server.chat_requests[-1]["messages"][-1]["content"]
    assert "hour 25 is out of 0-23" in fed_back and "five fields" not in fed_back.split(";")[0]
    assert not workspace.exists(JOBS_FILE)


@pytest.mark.parametrize(
    ("expr", "said"),
    [
        ("30 25 * * 1-5", "hour 25 is out of 0-23"),
        ("60 7 * * *", "minute 60 is out of 0-59"),
        ("0 7 0 * *", "day 0 is out of 1-31"),
        ("0 7 * 13 *", "month 13 is out of 1-12"),
        ("0 7 * * 1-8", "weekday 8 is out of 0-7"),
        ("*/0 7 * * *", "minute step '0'"),
        ("0 7 * foo *", "month 'foo' is not a number from 1 to 12"),
        ("7:30 daily", "it has 2 field(s); five expected"),
    ],
)
def test_cron_errors_name_the_field_and_its_range(expr, said):
    """The one cron check (jobs, collectors' ``cron``) says which field is wrong; what croniter reads passes."""
    with pytest.raises(ValueError, match="invalid cron expression") as err:
        validate_cron(expr)
    assert said in str(err.value)
    for fine in ("30 7 * * 1-5", "0 0 L * *", "0 9 * JAN MON", "*/15 * * * *", "0 0 * * 7"):
        validate_cron(fine)


def test_a_job_added_by_the_cli_is_delivered_by_the_running_bot(fake, chat_server, job_bot, workspace):  # noqa: F811
    from messaging_llm_bot.cli.main import main

    clock = Clock()
    job_bot(clock)
    argv = ["jobs", "add", "tick", "--every-minutes", "1", "--message", "TICK"]
    assert main([*argv, "--workspace", str(workspace.root), "--config", "/nonexistent"]) == 0
    clock.advance(seconds=61)
    fake.wait_for(lambda: delivered(fake, "🗓 TICK") == ["🗓 TICK"])
