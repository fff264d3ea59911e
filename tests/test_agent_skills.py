"""``SKILL.md`` skills in process: a broken one costs only itself (one line in ``skills list``), names
clash with no plugin's, the prompt's [Skills] stays in its budget, a new folder loads at the next look
without a restart, and a script gets no secret of the bot's environment, no interpreter outside the
allow-list and no file outside its ``scripts/``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from assistant_framework.skills import BUILTIN_SKILLS_DIR, SkillManager
from assistant_framework.workspace import Workspace
from messaging_llm_bot.agent.prompt import NAMES_ONLY, agent_skills_section
from tests.cli_inprocess import run_cli

PUBLISHED = Path(__file__).parent / "data" / "agent_skills"


def _skill(root: Path, name: str, front: str, body: str = "Do it well.", scripts: dict[str, str] | None = None) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"---\n{front}\n---\n{body}\n", encoding="utf-8")
    for rel, text in (scripts or {}).items():
        path = folder / "scripts" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return folder


def test_a_broken_skill_md_costs_only_itself_with_one_line(tmp_path: Path) -> None:
    skills = tmp_path / "skills"
    shutil.copytree(PUBLISHED / "brand-guidelines", skills / "brand-guidelines")
    _skill(skills, "wrong-folder", "name: other-name\ndescription: x")
    _skill(skills, "no-description", "name: no-description")
    _skill(skills, "bad-yaml", "name: [unclosed\ndescription: x")
    _skill(skills, "Upper", "name: Upper\ndescription: x")
    _skill(skills, "time", "name: time\ndescription: clashes with the built-in time skill")
    done = run_cli(
        "skills", "list", "--json", "--skills", str(BUILTIN_SKILLS_DIR), "--skills", str(skills),
        "--workspace", str(tmp_path / "none"),
    )  # fmt: skip
    assert done.returncode == 1
    rows = json.loads(done.stdout)
    errors = {row["name"]: row["error"] for row in rows if not row["loaded"]}
    assert set(errors) == {"wrong-folder", "no-description", "bad-yaml", "Upper", "time"}
    assert "must equal the folder's name 'wrong-folder'" in errors["wrong-folder"]
    assert "'description' must be a non-empty string" in errors["no-description"]
    assert "not valid YAML" in errors["bad-yaml"] and "lowercase" in errors["Upper"]
    assert "already a skill's" in errors["time"]
    loaded = {row["name"]: row for row in rows if row["loaded"]}
    assert loaded["brand-guidelines"]["form"] == "SKILL.md" and loaded["time"]["form"] == "plugin"


def test_the_skills_section_stays_within_its_budget_and_names_the_rest() -> None:
    many = [(f"skill-{n:03d}", "Does a thing when the user asks for that thing. " * 10) for n in range(80)]
    section = agent_skills_section(many, 2000)
    assert len(section) <= 2000
    assert "- skill-000: Does a thing" in section and NAMES_ONLY in section
    assert "skill-079" in section or "more" in section.splitlines()[-1]
    assert agent_skills_section([], 2000) == ""


def test_a_new_skill_folder_loads_at_the_next_look_without_a_restart(tmp_path: Path) -> None:
    workspace = Workspace(tmp_path / "ws")
    manager = SkillManager.from_config({}, workspace)
    assert "skill_doc" not in manager.names() and not manager.refresh_agent_skills()
    shutil.copytree(PUBLISHED / "internal-comms", workspace.root / ".agents" / "skills" / "internal-comms")
    assert manager.refresh_agent_skills()
    assert {"skill_doc", "run_script"} <= set(manager.names())
    assert "Load the appropriate guideline file" in manager.run("skill_doc", {"name": "internal-comms"}).text()
    shutil.rmtree(workspace.root / ".agents" / "skills" / "internal-comms")
    assert manager.refresh_agent_skills() and "skill_doc" not in manager.names()


@pytest.fixture
def scripted(tmp_path: Path) -> SkillManager:
    _skill(
        tmp_path / "skills",
        "env-check",
        "name: env-check\ndescription: prints what a script sees",
        scripts={
            "env.py": "import os, sys\nprint(sorted(os.environ))\nprint(os.getcwd())\nprint(sys.argv[1:])\n",
            "hello.rb": "#!/usr/bin/env ruby\nputs 'hi'\n",
            "plain": "echo no interpreter named\n",
        },
    )
    return SkillManager([], Workspace(tmp_path / "ws"), agent_skill_dirs=[tmp_path / "skills"])


@pytest.mark.subprocess  # the script is a process run_script starts
def test_a_script_gets_no_secret_of_the_bots_environment(scripted: SkillManager, monkeypatch) -> None:
    monkeypatch.setenv("TELEGRAM_BOT_TOKEN", "123456:secret-token-value")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    result = scripted.run("run_script", {"skill": "env-check", "script": "env.py", "args": ["a b", "$HOME;rm"]})
    assert result.ok, result.error
    lines = str(result.value).splitlines()
    assert lines[0] == "exit code 0"
    names = set(eval(lines[1]))  # noqa: S307 - the list our own script printed
    assert "TELEGRAM_BOT_TOKEN" not in names and "OPENAI_API_KEY" not in names
    assert names <= {"PATH", "LANG", "LC_ALL", "TZ", "TMPDIR", "HOME", "PYTHONIOENCODING", "SKILL_DIR", "WORKSPACE"}
    assert lines[2].endswith("/skills/env-check")  # its own folder
    assert lines[3] == "['a b', '$HOME;rm']"  # arguments as given: no shell reads them


def test_only_allowed_interpreters_and_only_files_of_scripts(scripted: SkillManager) -> None:
    ruby = scripted.run("run_script", {"skill": "env-check", "script": "hello.rb"})
    assert not ruby.ok and "scripts run with python, bash, node only" in str(ruby.error)
    plain = scripted.run("run_script", {"skill": "env-check", "script": "plain"})
    assert not plain.ok and "names no allowed interpreter" in str(plain.error)
    for outside in ("../SKILL.md", "scripts/../SKILL.md", "/etc/passwd"):
        result = scripted.run("run_script", {"skill": "env-check", "script": outside})
        assert not result.ok and ("not a path inside" in str(result.error) or "has no script" in str(result.error))


def test_links_out_of_the_folder_or_out_of_scripts_are_refused(scripted: SkillManager, tmp_path: Path) -> None:
    folder = tmp_path / "skills" / "env-check"
    (tmp_path / "secret.txt").write_text("owner secret", encoding="utf-8")
    (folder / "notes.md").symlink_to(tmp_path / "secret.txt")
    (folder / "tool.py").write_text("print('not a script')\n", encoding="utf-8")
    (folder / "scripts" / "tool.py").symlink_to(folder / "tool.py")
    scripted.refresh_agent_skills()
    read = scripted.run("skill_doc", {"name": "env-check", "file": "notes.md"})
    assert not read.ok and "leads out of the skill's folder" in str(read.error)
    run = scripted.run("run_script", {"skill": "env-check", "script": "tool.py"})
    assert not run.ok and "has no script 'tool.py'" in str(run.error)


def test_the_owners_rule_for_the_skill_decides_its_scripts_and_outside_content_asks(
    scripted: SkillManager, tmp_path: Path
) -> None:
    from assistant_framework.config.settings import PolicySettings
    from messaging_llm_bot.agent.guard import CallGate

    run_script = scripted.get("run_script")
    args = {"skill": "env-check", "script": "env.py"}
    asked: list[dict] = []

    def check(rules: dict[str, str], untrusted: bool = False):
        gate = CallGate(Workspace(tmp_path / "ws"), PolicySettings(skills=rules))
        return gate.check(run_script, args, untrusted=untrusted, approve=lambda q: asked.append(q) or False, chat=1)

    assert check({"env-check": "allow"}).allowed and not asked
    denied = check({"env-check": "deny"})
    assert not denied.allowed and denied.decision.action == "deny" and not asked
    assert not check({}).allowed and asked[-1]["capabilities"] == ["exec"]  # exec asks by default
    # A mail read in the turn may not run an allowed skill's script unasked.
    assert not check({"env-check": "allow"}, untrusted=True).allowed and len(asked) == 2


def test_a_draft_is_instructions_only_and_approval_moves_it_into_the_loaded_skills(tmp_path: Path) -> None:
    from assistant_framework.agentskills.drafts import DraftError, approve, write_draft

    workspace = Workspace(tmp_path / "ws")
    manager = SkillManager.from_config({}, workspace)
    write_draft(workspace, "weekly-report", "Writes the weekly report.", "1. List the week's done tasks.")
    planted = workspace.root / "skills-drafts" / "weekly-report" / "scripts" / "run.py"
    planted.parent.mkdir()
    planted.write_text("print('planted')\n", encoding="utf-8")
    with pytest.raises(DraftError, match="drafts are instructions only"):
        approve(workspace, "weekly-report")
    assert not manager.refresh_agent_skills() and "skill_doc" not in manager.names()
    shutil.rmtree(planted.parent)
    for bad in ("../evil", "Weekly", ""):
        with pytest.raises(DraftError, match="no skill name"):
            write_draft(workspace, bad, "d", "i")
    approve(workspace, "weekly-report")
    assert manager.refresh_agent_skills() and "weekly-report" in manager.library.skills


def test_doctor_says_which_skill_md_loaded_and_one_line_per_broken_one(tmp_path: Path) -> None:
    skills = tmp_path / "skills"
    shutil.copytree(PUBLISHED / "brand-guidelines", skills / "brand-guidelines")
    _skill(skills, "wrong-folder", "name: other-name\ndescription: x")
    config = tmp_path / "config"
    config.mkdir()
    (config / "runtime.json").write_text(json.dumps({"skills_dirs": [str(skills)]}), encoding="utf-8")
    done = run_cli("doctor", "--json", "--quick", "--config", str(config), "--workspace", str(tmp_path / "ws"))
    checks = {c["name"]: c for c in json.loads(done.stdout)}
    assert (
        checks["SKILL.md skills"]["status"] == "ok"
        and "1 loaded: brand-guidelines" in checks["SKILL.md skills"]["detail"]
    )
    broken = checks["SKILL.md wrong-folder"]
    assert broken["status"] == "warn" and "must equal the folder's name 'wrong-folder'" in broken["detail"]
    assert checks["skills"]["status"] == "ok"  # the plugins are not failed by it
