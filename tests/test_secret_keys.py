"""Secret-looking keys in every spelling (issue 34.12, found by the mutation audit): ``Password``,
``API_KEYS``, ``Api-Key`` are secret keys like their lower-case forms, and a list under one is hidden
whole, and so is a ``credentials`` key. ``config show`` (the real CLI, on a collector's section, which
takes keys of the owner's choosing) and the audit line of a call the model makes through the Telegram
bot show none of them."""

from __future__ import annotations

import json
import shutil
import subprocess

from tests.crash_bot import REPO
from tests.telegram_harness import OWNER, texts

SECRETS = (
    "Hunter2-mail-secret",
    "sk-first-secret-1",
    "sk-second-secret-2",
    "pass-phrase-secret-3",
    "oauth-credential-secret-4",
)


def test_config_show_hides_secret_keys_in_any_case_and_the_lists_under_them(tmp_path):
    config = tmp_path / "config"
    shutil.copytree(REPO / "config", config, ignore=shutil.ignore_patterns("local"))
    mail = json.loads((config / "collectors" / "mail.json").read_text(encoding="utf-8"))
    mail.update(
        {
            "Password": SECRETS[0],
            "API_KEYS": [SECRETS[1], SECRETS[2]],
            "Accounts": [{"user": "ann", "PassPhrase": SECRETS[3]}],
            "OAuth_Credentials": SECRETS[4],
            "Folder_Label": "visible-label",
        }
    )
    (config / "collectors" / "mail.json").write_text(json.dumps(mail), encoding="utf-8")
    shown = subprocess.run(
        [str(REPO / ".venv" / "bin" / "assistant"), "config", "show", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shown.returncode == 0, shown.stderr
    out = shown.stdout + shown.stderr
    assert not [s for s in SECRETS if s in out], out
    assert "collectors.mail.Password = ***" in out and 'collectors.mail.API_KEYS = ["***", "***"]' in out
    assert "visible-label" in out  # an ordinary key is shown as it is


LOGIN_SKILL = """
DESCRIPTION = "Store logins"
CAPABILITIES = ["write"]
ARGS_SCHEMA = {"type": "object", "additionalProperties": True, "properties": {"site": {"type": "string"}}}

def run(workspace, args, context=None):
    return "stored"
"""


def test_the_audit_line_hides_secret_keys_in_any_case(fake, start_bot, chat_server, workspace, tmp_path):
    (tmp_path / "more" / "login").mkdir(parents=True)
    (tmp_path / "more" / "login" / "__init__.py").write_text(LOGIN_SKILL)
    (tmp_path / "more" / "login" / "README.md").write_text("# login\n")

    def patch(config):
        config["runtime"]["skills_dirs"] = [*config["runtime"]["skills_dirs"], str(tmp_path / "more")]

    start_bot(config_patch=patch)
    args = {
        "site": "mail.example",
        "Password": SECRETS[0],
        "API_KEYS": [SECRETS[1], SECRETS[2]],
        "Accounts": [{"user": "ann", "PassPhrase": SECRETS[3]}],
        "service_credential": SECRETS[4],
    }
    chat_server.enqueue(json.dumps({"skill": "login", "args": args}), '{"reply": "stored"}')
    fake.send_message("store my logins", user_id=OWNER)
    fake.wait_for(lambda: texts(fake) == ["stored"], timeout=15)
    [line] = workspace.read_jsonl("state/audit.jsonl")
    assert line["skill"] == "login" and line["outcome"] == "ok" and line["args"]["site"] == "mail.example"
    logged = workspace.read_text("state/audit.jsonl")
    assert not [s for s in SECRETS if s in logged], logged
    assert line["args"]["Password"] == line["args"]["API_KEYS"] == "***"
    assert line["args"]["Accounts"] == [{"user": "ann", "PassPhrase": "***"}]
    assert line["args"]["service_credential"] == "***"
