"""Capability policy decisions, audit records and the internal-address guard."""

from __future__ import annotations

import pytest

from assistant_framework.config.settings import PolicySettings
from assistant_framework.config.settings.fields import read_record
from assistant_framework.netguard import BlockedURLError, check_url
from assistant_framework.policy import append_audit, audit_record, decide
from assistant_framework.skills import SkillManager
from assistant_framework.workspace import Workspace
from messaging_llm_bot.agent.guard import capabilities_for


def rules(section: dict) -> PolicySettings:
    """The ``policy`` record of a config section (the capabilities it names over their defaults)."""
    return read_record(PolicySettings, section, where="policy")


def test_defaults_allow_reads_and_ask_for_destructive_calls() -> None:
    assert decide("notes", ["read"]).action == "allow"
    assert decide("notes", ["read", "write"]).action == "allow"
    assert decide("file", ["read", "write", "delete"]).action == "ask"
    assert decide("mailer", ["send"]).action == "ask"


def test_config_and_per_skill_rules() -> None:
    policy = rules({"capabilities": {"delete": "deny", "network": "allow"}, "skills": {"file": "allow"}})
    assert decide("cleanup", ["delete"], policy).action == "deny"
    assert decide("web", ["network"], policy).action == "allow"
    assert decide("file", ["delete"], policy).action == "allow"


def test_untrusted_turn_needs_confirmation_whatever_the_policy() -> None:
    policy = rules({"capabilities": {"delete": "allow", "network": "allow", "send": "allow"}})
    for cap in ("delete", "network", "send"):
        decision = decide("x", [cap], policy, untrusted=True)
        assert decision.action == "ask" and "untrusted" in decision.reason
    assert decide("notes", ["read", "write"], policy, untrusted=True).action == "allow"
    # deny stays deny
    assert decide("x", ["delete"], rules({"capabilities": {"delete": "deny"}}), untrusted=True).action == "deny"
    # A per-skill allow is no way around it (issue 34.1).
    for cap in ("delete", "network", "send"):
        decision = decide("x", ["read", cap], rules({"skills": {"x": "allow"}}), untrusted=True)
        assert decision.action == "ask" and "untrusted" in decision.reason
        assert decide("x", ["read", cap], rules({"skills": {"x": "allow"}})).action == "allow"


def test_narrowing_by_action_never_drops_what_reaches_outside_or_an_unknown_delete() -> None:
    from types import SimpleNamespace

    search = SimpleNamespace(name="websearch", capabilities=["read", "network"], action_capabilities={})
    mailer = SimpleNamespace(name="mailer", capabilities=["read", "write", "delete", "send"], action_capabilities={})
    # A "search" that goes out to the network is still a network call: asked in an untrusted turn.
    assert capabilities_for(search, {"action": "search", "query": "x"}) == ["read", "network"]
    untrusted = decide("websearch", search.capabilities, untrusted=True, action_capabilities=["read", "network"])
    assert untrusted.action == "ask"
    # A delete that also sends keeps "send": a send: deny policy still denies it.
    caps = capabilities_for(mailer, {"action": "delete", "id": "1"})
    assert caps == ["delete", "send"]
    assert (
        decide(
            "mailer", mailer.capabilities, rules({"capabilities": {"send": "deny"}}), action_capabilities=caps
        ).action
        == "deny"
    )
    # An action the gate does not know needs all the skill declares; a known add needs no delete.
    assert capabilities_for(mailer, {"action": "nuke"}) == ["read", "write", "delete", "send"]
    assert capabilities_for(mailer, {"action": " Add "}) == ["read", "write", "send"]
    assert capabilities_for(mailer, {"action": "DELETE"}) == ["delete", "send"]


def test_call_capabilities_follow_the_action(tmp_path) -> None:
    skills = SkillManager.from_config({}, Workspace(tmp_path))
    file = skills.get("file")
    assert capabilities_for(file, {"action": "read", "path": "a"}) == ["read"]
    assert capabilities_for(file, {"action": "delete", "path": "a"}) == ["delete"]
    assert "delete" not in capabilities_for(file, {"action": "write", "path": "a", "content": "x"})
    assert (
        decide("file", file.capabilities, action_capabilities=capabilities_for(file, {"action": "read"})).action
        == "allow"
    )
    assert (
        decide("file", file.capabilities, action_capabilities=capabilities_for(file, {"action": "delete"})).action
        == "ask"
    )
    assert capabilities_for(skills.get("notes"), {"title": "no action"}) == ["read", "write"]


def test_audit_log_redacts_secrets(tmp_path) -> None:
    ws = Workspace(tmp_path)
    record = audit_record(
        chat=7,
        skill="mail",
        args={"to": "a@b", "password": "hunter2", "body": "x" * 900},
        decision="ask",
        outcome="denied",
    )
    append_audit(ws, record)
    rows = ws.read_jsonl("state/audit.jsonl")
    assert rows[0]["args"]["password"] == "***"
    assert rows[0]["args"]["to"] == "a@b"
    assert len(rows[0]["args"]["body"]) < 600
    assert "hunter2" not in ws.read_text("state/audit.jsonl")


SECRET_SHAPES = {
    "list under a secret key": {"passwords": ["hunter2", "letmein2"]},
    "list under an api_keys key": {"api_keys": ["sk-aaaa-hunter2", "sk-bbbb-letmein2"]},
    "objects in a list": {"accounts": [{"user": "ann", "password": "hunter2"}, {"user": "bo", "token": "letmein2"}]},
    "object under a secret key": {"token": {"value": "hunter2", "scope": "letmein2"}},
    "list of objects under a secret key": {"credentials": [{"name": "mail", "value": "hunter2"}, ["letmein2"]]},
    "number under a secret key": {"pin_password": 4711, "secret": ["letmein2"]},
    "hyphenated and other spellings": {"api-keys": ["hunter2"], "passphrase": "letmein2", "private_key": ["x"]},
    "deep": {"config": {"servers": [{"auth": {"api_key": ["hunter2"]}}], "note": "letmein2 is not here"}},
}


@pytest.mark.parametrize("args", SECRET_SHAPES.values(), ids=SECRET_SHAPES.keys())
def test_the_audit_log_redacts_every_shape_under_a_secret_key(tmp_path, args) -> None:
    ws = Workspace(tmp_path)
    append_audit(ws, audit_record(chat=7, skill="login", args=args, decision="allow", outcome="ok"))
    logged = ws.read_text("state/audit.jsonl")
    assert "hunter2" not in logged and "4711" not in logged
    assert ("letmein2" in logged) == (args.get("config", {}).get("note") is not None)
    assert "***" in logged


def test_redaction_keeps_empty_values_and_ordinary_fields() -> None:
    from assistant_framework.policy import redact_args

    args = {"passwords": [], "token": "", "api_key": None, "to": ["a@b"], "items": [{"name": "x"}]}
    assert redact_args(args) == args


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8080/admin",
        "http://localhost/",
        "http://10.0.0.1/",
        "http://192.168.1.1/",
        "http://169.254.169.254/latest/meta-data",
        "http://[::1]/",
        "http://[::ffff:127.0.0.1]/",
        "http://0.0.0.0/",
        "file:///etc/passwd",
        "ftp://example.org/",
    ],
)
def test_internal_and_non_http_urls_blocked(url: str) -> None:
    with pytest.raises(BlockedURLError):
        check_url(url)


def test_public_addresses_and_configured_private_allowed() -> None:
    assert check_url("http://93.184.216.34/page", resolve=False)
    assert check_url("http://127.0.0.1:9/", allow_private=True)
