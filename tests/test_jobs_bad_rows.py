"""One bad row of ``jobs/jobs.json`` costs only itself (issue 39.3): a cron no date matches, a time that
overflows when moved to UTC, a minute cron dated years ago. Through the Telegram bot (FakeBotAPI,
FakeChatServer, the scheduler on the test's clock), the CLI's doctor and the web page's API."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import requests

from assistant_framework.jobs import JOBS_FILE, RUNS_FILE
from assistant_framework.schedules import from_iso
from assistant_framework.workspace import Workspace
from tests.telegram_harness import OWNER, texts
from tests.test_doctor import _config, _doctor, servers  # noqa: F401 - servers is a fixture
from tests.test_jobs_bot import Clock, delivered, job_bot, next_look  # noqa: F401 - job_bot is a fixture


def bad_rows(created: str) -> list[dict]:
    """Rows that parse but cannot be planned, each as a hand edit (or, the first, the skill before) made them."""
    return [
        {"id": "j2", "name": "feb30", "cron": "0 0 30 2 *", "message": "never", "created_at": created},
        {
            "id": "j3",
            "name": "far",
            "at": "9999-12-31 23:59",
            "timezone": "America/New_York",
            "message": "too far",
            "created_at": created,
        },
        {"id": "j4", "name": "ancient", "every_minutes": 5, "message": "x", "created_at": "0001-01-01T00:00:00+01:00"},
        {
            "id": "j5",
            "name": "end",
            "every_minutes": 60,
            "message": "x",
            "created_at": created,
            "last_planned": "9999-12-31T23:59:59+00:00",  # the run after it is past the end
        },
        {
            "id": "j6",
            "name": "year one",
            "cron": "0 9 * * *",
            "timezone": "America/New_York",
            "message": "x",
            "created_at": "0001-01-01T00:00:00+00:00",  # readable; planning from it in New York overflows
        },
        # Readable, its next run (the anchor) too; the one after it is past the calendar's end.
        {"id": "j7", "name": "last", "every_minutes": 60, "message": "x", "created_at": "9999-12-31T23:59:00+00:00"},
    ]


def test_bad_rows_are_skipped_and_named_while_the_others_run(fake, chat_server, job_bot, workspace):  # noqa: F811
    clock = Clock()
    created = (datetime.now(timezone.utc) - timedelta(seconds=30)).isoformat(timespec="seconds")
    water = {"id": "j1", "name": "water", "every_minutes": 1, "message": "Drink water", "created_at": created}
    workspace.write_json(JOBS_FILE, [*bad_rows(created), water])
    bot = job_bot(clock)
    clock.advance(seconds=31)
    fake.wait_for(lambda: delivered(fake, "🗓 Drink water") == ["🗓 Drink water"])
    fake.send_message("/jobs", user_id=OWNER)
    listing = fake.wait_for(lambda: next((t for t in texts(fake, OWNER) if t.startswith("🗓 Jobs")), None))
    assert "j1 water: every 1 minute" in listing
    assert "feb30" in listing and "never fires" in listing and "30 February" in listing
    assert "too far ahead" in listing and "created_at" in listing and "cannot be planned" in listing
    assert "(j5 'end')" in listing and "(j6 'year one')" in listing and "(j7 'last')" in listing
    # The skill refuses the schedule before storing it (it stored it before, and the scheduler then stopped).
    add = {"action": "add", "name": "leap", "cron": "0 9 30 2 *", "message": "m"}
    chat_server.enqueue(json.dumps({"skill": "jobs", "args": add}), '{"reply": "Could not."}')
    fake.send_message("every 30 February at 9 say m", user_id=OWNER)
    fake.wait_for(lambda: "Could not." in texts(fake, OWNER))
    assert "never fires" in chat_server.chat_requests[-1]["messages"][-1]["content"]
    assert [row["id"] for row in json.loads(workspace.read_text(JOBS_FILE))] == [f"j{n}" for n in (2, 3, 4, 5, 6, 7, 1)]
    clock.advance(seconds=60)  # the scheduler goes on: the next minute's run
    fake.wait_for(lambda: len(delivered(fake, "🗓 Drink water")) == 2)
    next_look(bot, fake)


def test_a_minute_cron_dated_years_ago_is_caught_up_in_one_look(fake, chat_server, job_bot, workspace):  # noqa: F811
    """Five years behind is 2.6 million minutes: the look makes the one late run ``catch_up: once`` asks for
    and moves the row to now at once (it walked 100,000 of them per look, about a minute of CPU each, and
    needed 26 looks), recording the runs let go with a count that is a floor."""
    clock = Clock()
    years_ago = (datetime.now(timezone.utc) - timedelta(days=5 * 365)).isoformat(timespec="seconds")
    row = {"id": "j1", "name": "tick", "cron": "* * * * *", "message": "tick", "created_at": years_ago}
    workspace.write_json(JOBS_FILE, [{**row, "last_planned": years_ago}])
    bot = job_bot(clock)
    fake.wait_for(lambda: any(t.startswith("🗓 tick") for t in texts(fake, OWNER)))
    next_look(bot, fake)
    [stored] = json.loads(workspace.read_text(JOBS_FILE))
    assert clock() - from_iso(stored["last_planned"]) < timedelta(minutes=2)
    skipped = [line for line in workspace.read_jsonl(RUNS_FILE) if line["outcome"] == "skipped"]
    assert skipped and skipped[0]["count"] >= 200 and skipped[0]["count_is_a_floor"] is True


def test_doctor_names_the_rows_that_do_not_run(servers, tmp_path: Path, capsys) -> None:  # noqa: F811
    tg, chat = servers
    workspace = Workspace(tmp_path / "ws")
    created = datetime.now(timezone.utc).isoformat(timespec="seconds")
    good = {"id": "j1", "name": "water", "every_minutes": 60, "message": "Drink", "created_at": created}
    workspace.write_json(JOBS_FILE, [good, *bad_rows(created)])
    _code, checks = _doctor(capsys, _config(tmp_path / "config", tg, chat), workspace.root, "--quick")
    jobs = checks["jobs"]
    assert jobs["status"] == "warn" and "6 row(s) do not run (1 job(s) do)" in jobs["detail"]
    assert "feb30" in jobs["detail"] and "never fires" in jobs["detail"] and "jobs list" in jobs["fix"]
    workspace.write_json(JOBS_FILE, [good])
    _code, checks = _doctor(capsys, _config(tmp_path / "config", tg, chat), workspace.root, "--quick")
    assert checks["jobs"]["status"] == "ok" and "1 job(s)" in checks["jobs"]["detail"]


def test_the_web_jobs_page_names_the_rows_that_do_not_run(tmp_path: Path) -> None:
    from tests.web_site import WEB_TOKEN, start_site

    bearer = {"Authorization": f"Bearer {WEB_TOKEN}"}

    site = start_site(tmp_path)
    try:
        created = datetime.now(timezone.utc).isoformat(timespec="seconds")
        rows = json.loads(site.workspace.read_text(JOBS_FILE)) if site.workspace.exists(JOBS_FILE) else []
        site.workspace.write_json(JOBS_FILE, [*rows, *bad_rows(created)])
        listed = requests.get(f"{site.base}/api/jobs", headers=bearer).json()
        assert [job["id"] for job in listed["jobs"]] == [row["id"] for row in rows]
        assert len(listed["problems"]) == 6 and "never fires" in listed["problems"][0]
        page = requests.get(f"{site.base}/jobs", headers=bearer).text
        assert "feb30" in page and "never fires" in page
    finally:
        site.close()
