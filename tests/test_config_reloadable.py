"""The reload plan: which changed keys /reload applies, which keep their running value (config/reloadable.py)."""

from __future__ import annotations

from assistant_framework.config.reloadable import changed_keys, plan_reload

RUNNING = {
    "llm": {"runners": [{"name": "a", "base_url": "http://127.0.0.1:1/v1", "model": "m"}], "max_tokens": 800},
    "runtime": {"timezone": "Europe/Berlin"},
    "telegram": {"token": "old-token", "allowed_user_ids": [1]},
}


def test_restart_keys_keep_their_running_value_and_reload_keys_apply() -> None:
    loaded = {
        "llm": {"runners": [{"name": "a", "base_url": "http://127.0.0.1:2/v1", "model": "m"}]},  # max_tokens gone
        "runtime": {},  # timezone gone: UTC by default, a restart-only change
        "telegram": {"token": "new-token", "allowed_user_ids": [1, 2], "mode": "polling"},
        "web": {"enabled": True},
    }
    plan = plan_reload(RUNNING, loaded)
    assert plan.applied == ("llm.runners", "telegram.allowed_user_ids")  # max_tokens 800 is the default anyway
    assert plan.needs_restart == ("runtime.timezone", "telegram.token", "web.enabled")
    assert plan.config["runtime"]["timezone"] == "Europe/Berlin" and plan.config["telegram"]["token"] == "old-token"
    assert "enabled" not in plan.config["web"] and plan.config["telegram"]["allowed_user_ids"] == [1, 2]
    assert loaded["telegram"]["token"] == "new-token"  # the config read is not changed in place


def test_nothing_changed_is_an_empty_plan() -> None:
    assert changed_keys(RUNNING, RUNNING) == []
    plan = plan_reload(RUNNING, RUNNING)
    assert plan.applied == () == plan.needs_restart and plan.config == RUNNING
