"""A skill declares the config key it needs (``REQUIRES_CONFIG``, assistant_framework/skills/spec.py): until it is
set the skill is not offered to the model, so the unconfigured calendar and mail skills cost no prompt (issue 44:
they were about 1,000 characters of every request)."""

from __future__ import annotations

from pathlib import Path

import pytest

from assistant_framework.skills import SkillManager
from assistant_framework.skills.loader import SkillDefinitionError, load_skill_folder
from assistant_framework.skills.spec import missing_service
from tests.telegram_harness import texts

CALENDAR = {"url": "https://cloud.example.org/remote.php/dav", "username": "anna", "password": "x"}
MAIL = {"from": "Anna <anna@example.org>", "smtp": {"host": "smtp.example.org", "port": 465, "security": "ssl"}}


def _system_prompt(chat_server) -> str:
    return str(chat_server.chat_requests[-1]["messages"][0]["content"])


def odd_skill(tmp_path: Path, declaration: str) -> Path:
    """A skill folder whose module declares ``declaration`` besides its description and run."""
    folder = tmp_path / "odd"
    folder.mkdir()
    run = "def run(workspace, args, context=None):\n    return 1\n"
    (folder / "__init__.py").write_text(f'DESCRIPTION = "x"\n{declaration}\n{run}')
    (folder / "README.md").write_text("# Odd\n\nx\n")
    return folder


def test_unconfigured_calendar_and_mail_are_not_in_the_prompt_and_configured_they_are(fake, start_bot, chat_server):
    bot = start_bot()
    chat_server.enqueue('{"reply": "ok"}')
    fake.send_message("hello")
    fake.wait_for(lambda: "ok" in texts(fake))
    bare = _system_prompt(chat_server)
    assert "\n- file: " in bare and "\n- send_file: " in bare
    assert "\n- calendar: " not in bare and "\n- mail: " not in bare
    bot.stop()

    def configured(config: dict) -> None:
        config["calendar"], config["mail"] = CALENDAR, MAIL

    start_bot(config_patch=configured)
    chat_server.enqueue('{"reply": "ok again"}')
    fake.send_message("hello again")
    fake.wait_for(lambda: "ok again" in texts(fake))
    full = _system_prompt(chat_server)
    assert "\n- calendar: " in full and "\n- mail: " in full
    assert len(full) - len(bare) > 800  # what every request of an owner without them no longer carries


def test_the_rule_is_the_skills_declaration_read_from_the_loaded_config(workspace, tmp_path):
    def offered(config: dict) -> set[str]:
        manager = SkillManager.from_config(config, workspace)
        return {entry["name"] for entry in manager.catalog()} & {"calendar", "mail"}

    assert offered({}) == set()
    assert offered({"calendar": {**CALENDAR, "url": ""}, "mail": {"from": "a@b.c"}}) == set()  # empty or absent key
    assert offered({"calendar": CALENDAR}) == {"calendar"}
    assert offered({"mail": MAIL}) == {"mail"}
    manager = SkillManager.from_config({}, workspace)
    assert {"calendar", "mail"} <= set(manager.names())  # still loaded: /skills shows them, a call says what to set
    with pytest.raises(SkillDefinitionError, match="requires_config must be a dotted config key"):
        load_skill_folder(odd_skill(tmp_path, 'REQUIRES_CONFIG = "not a key!"'))


def test_a_skill_needing_a_service_is_left_out_where_the_turn_lacks_it(workspace, tmp_path):
    manager = SkillManager.from_config({}, workspace)
    send_file = manager.get("send_file")
    assert send_file is not None and send_file.requires_service == "send_file"
    assert "send_file" in manager.unserved({"memory", "clock"})
    assert "send_file" not in manager.unserved({"clock", "send_file"})
    assert missing_service("send_file", "send_file").startswith("send_file cannot be used here: this turn has no chat")
    with pytest.raises(SkillDefinitionError, match="requires_service must be one of clock, memory, send_file"):
        load_skill_folder(odd_skill(tmp_path, 'REQUIRES_SERVICE = "printer"'))
