"""``assistant skills install|update|remove`` (in process): a local git repository at a tag is shown
(files, scripts, capabilities, licence, commit) and installed only after yes, pinned to the tag's commit
and loaded by the next look without a restart; archives are checked as ``restore`` checks a backup, so
``../`` paths, links and 10,000 files are refused with nothing written."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import tarfile
import zipfile
from pathlib import Path

import pytest

from assistant_framework.skills import SkillManager
from assistant_framework.workspace import Workspace
from tests.cli_inprocess import run_cli

PUBLISHED = Path(__file__).parent / "data" / "agent_skills"


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    ws = Workspace(tmp_path / "ws")
    ws.ensure_layout()
    return ws


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
        cwd=repo, check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, str]:
    """A repository holding the published webapp-testing skill, tagged v1, with a later commit on top."""
    repo = tmp_path / "repo"
    shutil.copytree(PUBLISHED / "webapp-testing", repo / "webapp-testing")
    _git(repo.parent, "init", "-q", str(repo))
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "v1")
    _git(repo, "tag", "v1")
    tagged = _git(repo, "rev-parse", "HEAD")
    skill_md = repo / "webapp-testing" / "SKILL.md"
    skill_md.write_text(skill_md.read_text(encoding="utf-8") + "\nA LATER CHANGE\n", encoding="utf-8")
    _git(repo, "commit", "-qam", "later")
    return repo, tagged


def _install(workspace: Workspace, *args: str, answer: str, monkeypatch) -> object:
    monkeypatch.setattr("sys.stdin", io.StringIO(answer))
    return run_cli("skills", "install", *args, "--workspace", str(workspace.root))


def test_a_git_repository_at_a_tag_is_reviewed_and_installed_only_after_yes(workspace, repo, monkeypatch) -> None:
    source, tagged = repo
    installed = workspace.root / ".agents" / "skills" / "webapp-testing"
    manager = SkillManager.from_config({}, workspace)
    assert "skill_doc" not in manager.names()

    declined = _install(workspace, str(source), "--ref", "v1", answer="n\n", monkeypatch=monkeypatch)
    assert declined.returncode == 1 and "Not installed: nothing written." in declined.stdout
    review = declined.stdout
    assert "Skill:        webapp-testing" in review and f"at v1 (commit {tagged})" in review
    assert "scripts/with_server.py" in review and "LICENSE.txt" in review and "runs with python" in review
    assert "Capabilities: read (" in review and "exec (run_script runs its scripts" in review
    assert not installed.exists() and not list((workspace.root / ".agents" / ".staging").iterdir())

    done = _install(workspace, str(source), "--ref", "v1", answer="y\n", monkeypatch=monkeypatch)
    assert done.returncode == 0, done.stderr
    assert "Installed webapp-testing" in done.stdout
    assert "A LATER CHANGE" not in (installed / "SKILL.md").read_text(encoding="utf-8")  # the tag, not the branch
    assert not (installed / ".git").exists()
    record = json.loads((workspace.root / "state" / "agent_skills.json").read_text(encoding="utf-8"))
    assert record["webapp-testing"]["commit"] == tagged and record["webapp-testing"]["ref"] == "v1"
    assert manager.refresh_agent_skills() and "run_script" in manager.names()  # no restart

    # update: the same review, to another ref; remove: gone at the next look.
    updated = run_cli(
        "skills", "update", "webapp-testing", "--ref", "HEAD", "--yes", "--workspace", str(workspace.root)
    )
    assert updated.returncode == 0 and "(replaces the installed one)" in updated.stdout
    assert "A LATER CHANGE" in (installed / "SKILL.md").read_text(encoding="utf-8")
    removed = run_cli("skills", "remove", "webapp-testing", "--workspace", str(workspace.root))
    assert removed.returncode == 0 and not installed.exists()
    assert manager.refresh_agent_skills() and "run_script" not in manager.names()


def _tar(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


SKILL = b"---\nname: evil\ndescription: looks fine\n---\nDo it.\n"


def test_an_archive_with_a_dotdot_path_is_refused_and_nothing_is_written(workspace, tmp_path) -> None:
    archive = _tar(tmp_path / "evil.tar.gz", {"evil/SKILL.md": SKILL, "evil/../../outside.txt": b"x"})
    done = run_cli("skills", "install", str(archive), "--yes", "--workspace", str(workspace.root))
    assert done.returncode == 1 and "'evil/../../outside.txt': not a file of a skill" in done.stderr
    assert "nothing installed" in done.stderr and "Traceback" not in done.stderr
    zipped = tmp_path / "evil.zip"
    with zipfile.ZipFile(zipped, "w") as bundle:
        bundle.writestr("evil/SKILL.md", SKILL)
        bundle.writestr("../outside.txt", b"x")
    done = run_cli("skills", "install", str(zipped), "--yes", "--workspace", str(workspace.root))
    assert done.returncode == 1 and "'../outside.txt': not a file of a skill" in done.stderr
    assert not (tmp_path / "outside.txt").exists() and not (workspace.root / "outside.txt").exists()
    assert not (workspace.root / ".agents" / "skills").exists()


def test_an_archive_of_ten_thousand_files_is_refused(workspace, tmp_path) -> None:
    members = {"many/SKILL.md": SKILL.replace(b"evil", b"many")}
    members.update({f"many/assets/{n}.txt": b"" for n in range(10_000)})
    archive = _tar(tmp_path / "many.tar.gz", members)
    done = run_cli("skills", "install", str(archive), "--yes", "--workspace", str(workspace.root))
    # Refused at the archive's headers, before a file is unpacked (not only by the folder check after).
    assert done.returncode == 1 and "the archive holds more than 2000 files: refused, nothing written" in done.stderr
    assert not (workspace.root / ".agents" / "skills").exists()


def test_a_folder_with_a_link_out_is_refused(workspace, tmp_path) -> None:
    folder = tmp_path / "linky"
    shutil.copytree(PUBLISHED / "brand-guidelines", folder / "brand-guidelines")
    (folder / "brand-guidelines" / "notes.md").symlink_to("/etc/passwd")
    done = run_cli("skills", "install", str(folder), "--yes", "--workspace", str(workspace.root))
    assert done.returncode == 1 and "notes.md is a link: links are refused" in done.stderr


def test_a_skill_folder_given_itself_is_installed_under_its_name(workspace, tmp_path, monkeypatch) -> None:
    folder = tmp_path / "notes-helper"
    folder.mkdir()
    (folder / "SKILL.md").write_text("---\nname: notes-helper\ndescription: Tidies notes.\n---\nTidy.\n")
    monkeypatch.chdir(tmp_path)  # given relative, recorded absolute: update may run from anywhere (the web page)
    done = run_cli("skills", "install", "notes-helper", "--yes", "--workspace", str(workspace.root))
    assert done.returncode == 0, done.stderr
    assert "Skill:        notes-helper" in done.stdout and "Source:       " + str(folder.resolve()) in done.stdout
    record = json.loads((workspace.root / "state" / "agent_skills.json").read_text(encoding="utf-8"))
    assert record["notes-helper"]["source"] == str(folder.resolve())
    assert (workspace.root / ".agents" / "skills" / "notes-helper" / "SKILL.md").read_text() == (
        folder / "SKILL.md"
    ).read_text()


@pytest.mark.parametrize(
    "url", ["https://me:ghp_S3CRETtoken@example.invalid/skills.git", "https://ghp_S3CRETtoken@example.invalid/s.git"]
)
def test_a_git_url_with_a_token_in_it_is_refused_and_the_token_is_not_shown_or_stored(workspace, url) -> None:
    done = run_cli("skills", "install", url, "--yes", "--workspace", str(workspace.root))
    assert done.returncode == 1 and "with a user name or token in it is refused" in done.stderr
    assert "S3CRET" not in done.stdout + done.stderr
    assert not (workspace.root / ".agents").exists() or not any(
        "S3CRET" in p.read_text(errors="replace") for p in workspace.root.rglob("*") if p.is_file()
    )


def test_an_ssh_url_with_a_password_is_refused_before_git_runs(workspace) -> None:
    from assistant_framework.agentskills.install import InstallError, stage

    with pytest.raises(InstallError, match="with a user name or token in it is refused") as refused:
        stage(workspace, "ssh://me:hunter2pass@example.invalid/skills.git")
    assert "hunter2pass" not in str(refused.value)
    assert not (workspace.root / ".agents").exists()
