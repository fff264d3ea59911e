"""Jobs through the real Signal frontend (FakeSignalDaemon, FakeChatServer): a prompt job runs in the
owner's direct chat with a skill call and its reply arrives once; a message job made in a Signal chat is
delivered there without a model call; past the day's budget prompt runs are skipped and the owner is told
once. Under a second each."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

from assistant_framework.jobs import JOBS_FILE, RUNS_FILE
from tests.signal_harness import OWNER, wait_for


def due_now(**row) -> list[dict]:
    created = (datetime.now(timezone.utc) - timedelta(minutes=60, seconds=10)).isoformat(timespec="seconds")
    return [{"id": "j1", "name": "task check", "every_minutes": 60, "created_at": created, **row}]


def fast_jobs(config: dict) -> None:
    config["jobs"] = {"poll_seconds": 0.1}


def test_a_prompt_job_runs_in_the_owners_signal_chat_and_its_reply_arrives_once(start, daemon, chat_server, workspace):
    workspace.write_json(JOBS_FILE, due_now(prompt="Which tasks are open?"))
    chat_server.enqueue('{"skill": "tasks", "args": {"action": "list"}}', '{"reply": "No open tasks."}')
    start(patch=fast_jobs)
    [sent] = daemon.wait_sent(1)
    assert sent["recipient"] == [OWNER] and sent["message"] == "🗓 task check\n\nNo open tasks."
    wait_for(lambda: len(workspace.read_jsonl(RUNS_FILE)) == 1, what="the run's line")
    line = workspace.read_jsonl(RUNS_FILE)[0]
    assert line["outcome"] == "delivered" and line["kind"] == "prompt" and len(line["message_ids"]) == 1
    assert len(chat_server.chat_requests) == 2 and "Which tasks are open?" in json.dumps(chat_server.chat_requests[0])
    wait_for(lambda: not list(workspace.root.glob("state/inbox/pending/*/*.json")), what="the item completed")


def test_a_message_job_made_in_a_signal_chat_is_delivered_there(start, daemon, chat_server, workspace):
    workspace.write_json(JOBS_FILE, due_now(message="Stretch", chat_id=f"sig:{OWNER}"))
    start(patch=fast_jobs)
    [sent] = daemon.wait_sent(1)
    assert sent["recipient"] == [OWNER] and sent["message"] == "🗓 Stretch"
    wait_for(lambda: len(workspace.read_jsonl(RUNS_FILE)) == 1, what="the run's line")
    assert chat_server.chat_requests == []  # a message job makes no model call


def test_past_the_days_budget_prompt_jobs_are_skipped_and_the_owner_is_told_once(start, daemon, chat_server, workspace):
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    workspace.write_text(  # today's one allowed model run is used already
        RUNS_FILE, json.dumps({"run": "job:j0:x", "job": "j0", "kind": "prompt", "started": now}) + "\n"
    )
    [first] = due_now(prompt="News?")
    second = {**first, "id": "j2", "name": "weather", "prompt": "Weather?"}
    workspace.write_json(JOBS_FILE, [first, second])

    def patch(config: dict) -> None:
        config["jobs"] = {"poll_seconds": 0.1, "max_model_runs_per_day": 1}

    start(patch=patch)
    wait_for(lambda: len(workspace.read_jsonl(RUNS_FILE)) == 3, what="both runs' lines")
    skipped = workspace.read_jsonl(RUNS_FILE)[1:]
    assert [line["outcome"] for line in skipped] == ["skipped", "skipped"]
    [sent] = daemon.sent  # one notice for the day, not one per run
    assert sent["recipient"] == [OWNER] and "did not run" in sent["message"]
    assert "config set jobs.max_model_runs_per_day 2" in sent["message"]
    assert chat_server.chat_requests == []  # past the budget nothing goes to the model


def test_a_run_signal_refuses_for_good_is_recorded_failed_with_the_reason(start, daemon, chat_server, workspace):
    """The owner's number is no longer a Signal user: the run's reply cannot arrive, so the run is a failure
    naming Signal's answer (it counts toward the pause), as on Telegram, not a run recorded delivered."""
    daemon.unregistered.add(OWNER)
    workspace.write_json(JOBS_FILE, due_now(message="Stretch", chat_id=f"sig:{OWNER}"))
    start(patch=fast_jobs)
    wait_for(lambda: len(workspace.read_jsonl(RUNS_FILE)) == 1, what="the run's line")
    [line] = workspace.read_jsonl(RUNS_FILE)
    assert line["outcome"] == "failed" and line["error"].startswith("signal refused it: ")
    wait_for(lambda: not list(workspace.root.glob("state/inbox/pending/*/*.json")), what="the item completed")
