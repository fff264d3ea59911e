"""Plugin folders the model could write into are refused at ``/reload`` too, not only at start (issue
34.12: the neighbour of test_security_injection.py's start-up test). A running Telegram bot whose
config is edited to load skills or collectors from inside its workspace, from the folder holding
it, or through a ``..`` spelling that lands inside, refuses the reload with the file and the key,
keeps its running config, and never imports the code planted there."""

from __future__ import annotations

import json

import pytest

from tests.telegram_harness import OWNER

PLANTED = """
NAME = "planted"
DESCRIPTION = "code the model wrote"
CAPABILITIES = ["read"]
ARGS_SCHEMA = {"type": "object", "properties": {}}


def run(workspace, args, context=None):
    return "planted code ran"
"""


@pytest.mark.parametrize("key", ["skills_dirs", "collectors_dirs"])
def test_reload_refuses_plugin_folders_the_model_could_write(fake, start_bot, chat_server, workspace, key):
    planted = workspace.root / "notes" / "plugins"
    (planted / "planted").mkdir(parents=True)
    (planted / "planted" / "__init__.py").write_text(PLANTED, encoding="utf-8")
    (planted / "planted" / "README.md").write_text("# planted\n", encoding="utf-8")
    bot = start_bot()
    config_path = bot.runtime.config_path
    good = config_path.read_text(encoding="utf-8")
    spellings = [str(planted), str(workspace.root.parent), f"{workspace.root}/../{workspace.root.name}/notes"]
    for n, folder in enumerate(spellings, 1):
        config = json.loads(good)
        config.setdefault("runtime", {})[key] = [folder]
        config_path.write_text(json.dumps(config), encoding="utf-8")
        config_before = bot.runtime.config
        fake.send_message("/reload", user_id=OWNER)
        reply = fake.wait_for_messages(OWNER, n)[-1]["text"]
        assert reply.startswith("Reload refused"), (folder, reply)
        assert f"runtime.{key}[0]" in reply and "inside the workspace" in reply and str(config_path) in reply, reply
        assert bot.runtime.config is config_before
    assert "planted" not in bot.runtime.skills.names()
    config_path.write_text(good, encoding="utf-8")
    fake.send_message("/reload", user_id=OWNER)
    assert fake.wait_for_messages(OWNER, len(spellings) + 1)[-1]["text"].startswith("Reloaded")
