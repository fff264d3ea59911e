"""Installing ``SKILL.md`` skills from the web page, over real HTTP (one site for the module): a local git
repository at a tag is reviewed (files, scripts, capabilities, licence, commit) and installed only by a
confirm with the form token, exactly as reviewed; update and remove act on the installed list; a source
that fails a check is refused in one sentence with nothing written."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
import requests

from tests.test_agent_skills_install import _tar
from tests.web_site import WEB_TOKEN, start_site

PUBLISHED = Path(__file__).parent / "data" / "agent_skills"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    site = start_site(tmp_path_factory.mktemp("site"))
    yield site
    site.close()


@pytest.fixture
def web(site):
    """A signed-in browser session and its form token; the workspace's installed skills are cleared after."""
    session = requests.Session()
    assert session.get(f"{site.base}/skills?token={WEB_TOKEN}", allow_redirects=False).status_code == 302
    page = session.get(f"{site.base}/skills/install").text
    xsrf = re.search(r'name="_xsrf" value="([^"]+)"', page).group(1)
    yield session, xsrf
    shutil.rmtree(site.root / ".agents" / "skills", ignore_errors=True)
    (site.root / "state" / "agent_skills.json").unlink(missing_ok=True)


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
        cwd=repo, check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> tuple[Path, str]:
    """The published webapp-testing skill in a repository tagged v1, with a later commit on top."""
    repo = tmp_path_factory.mktemp("src") / "repo"
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


def _staging_empty(site) -> bool:
    staging = site.root / ".agents" / ".staging"
    return not staging.exists() or not any(p for p in staging.rglob("*") if p.name != "web")


def _review_id(page: str) -> str:
    return re.search(r'name="review" value="([^"]+)"', page).group(1)


def test_a_git_repository_at_a_tag_is_reviewed_installed_on_confirm_updated_and_removed(site, web, repo):
    session, xsrf = web
    source, tagged = repo
    installed = site.root / ".agents" / "skills" / "webapp-testing"
    records = site.root / "state" / "agent_skills.json"

    # Without the form token (another site's form), nothing is fetched; without sign-in, nothing at all.
    forged = session.post(f"{site.base}/skills/install/review", data={"source": str(source), "ref": "v1"})
    assert forged.status_code == 403 and _staging_empty(site)
    assert requests.get(f"{site.base}/skills/install", allow_redirects=False).status_code == 401

    review = session.post(
        f"{site.base}/skills/install/review", data={"source": str(source), "ref": "v1", "_xsrf": xsrf}
    )
    assert review.status_code == 200, review.text
    page = review.text
    assert "Review: webapp-testing" in page and f"at v1 (commit <code>{tagged}</code>)" in page
    assert "<code>scripts/with_server.py</code> (runs with python" in page and "LICENSE.txt" in page
    assert "read (the model reads its instructions with skill_doc)" in page
    assert "exec (run_script runs its scripts; you are asked each time unless policy.skills.webapp-testing" in page
    assert "<code>SKILL.md</code>" in page
    assert not installed.exists()  # shown, not installed
    assert len(list((site.root / ".agents" / ".staging" / "web").iterdir())) == 1  # the page's own staging

    review_id = _review_id(page)
    no_token = session.post(f"{site.base}/skills/install/confirm", data={"review": review_id})
    assert no_token.status_code == 403 and not installed.exists()
    done = session.post(f"{site.base}/skills/install/confirm", data={"review": review_id, "_xsrf": xsrf})
    assert done.status_code == 200 and "Installed webapp-testing" in done.text
    assert "A LATER CHANGE" not in (installed / "SKILL.md").read_text(encoding="utf-8")  # the tag, pinned
    record = json.loads(records.read_text(encoding="utf-8"))["webapp-testing"]
    assert record["commit"] == tagged and record["ref"] == "v1" and record["source"] == str(source)
    assert _staging_empty(site)
    again = session.post(f"{site.base}/skills/install/confirm", data={"review": review_id, "_xsrf": xsrf})
    assert "that review is no longer waiting" in again.text  # one confirm, one install

    listed = done.text
    assert 'action="/skills/installed/webapp-testing/update"' in listed
    assert 'action="/skills/installed/webapp-testing/remove"' in listed

    # Update: the same review, of another ref; installed only on confirm.
    update = session.post(f"{site.base}/skills/installed/webapp-testing/update", data={"ref": "HEAD", "_xsrf": xsrf})
    assert "This replaces the installed webapp-testing." in update.text
    assert "A LATER CHANGE" not in (installed / "SKILL.md").read_text(encoding="utf-8")
    session.post(f"{site.base}/skills/install/confirm", data={"review": _review_id(update.text), "_xsrf": xsrf})
    assert "A LATER CHANGE" in (installed / "SKILL.md").read_text(encoding="utf-8")

    # Remove: refused without the form token, done with it.
    assert session.post(f"{site.base}/skills/installed/webapp-testing/remove").status_code == 403
    assert installed.exists()
    removed = session.post(f"{site.base}/skills/installed/webapp-testing/remove", data={"_xsrf": xsrf})
    assert "Removed webapp-testing" in removed.text and not installed.exists()
    assert "webapp-testing" not in json.loads(records.read_text(encoding="utf-8"))


def test_what_is_installed_is_what_was_reviewed_and_cancel_writes_nothing(site, web, tmp_path):
    session, xsrf = web
    folder = tmp_path / "notes-helper"
    folder.mkdir()
    (folder / "SKILL.md").write_text("---\nname: notes-helper\ndescription: Tidies notes.\n---\nTidy.\n")
    review = session.post(f"{site.base}/skills/install/review", data={"source": str(folder), "_xsrf": xsrf})
    assert "Review: notes-helper" in review.text and "Tidies notes." in review.text
    # The folder changes after the review: the confirm installs the reviewed copy, not a second fetch.
    (folder / "SKILL.md").write_text("---\nname: notes-helper\ndescription: Tidies notes.\n---\nSWAPPED.\n")
    session.post(f"{site.base}/skills/install/confirm", data={"review": _review_id(review.text), "_xsrf": xsrf})
    installed = site.root / ".agents" / "skills" / "notes-helper" / "SKILL.md"
    assert "Tidy." in installed.read_text(encoding="utf-8") and "SWAPPED" not in installed.read_text(encoding="utf-8")

    shutil.rmtree(installed.parent)
    review = session.post(f"{site.base}/skills/install/review", data={"source": str(folder), "_xsrf": xsrf})
    cancelled = session.post(
        f"{site.base}/skills/install/cancel", data={"review": _review_id(review.text), "_xsrf": xsrf}
    )
    assert "notes-helper: not installed; nothing written." in cancelled.text
    assert not installed.parent.exists() and _staging_empty(site)


def test_a_source_that_fails_a_check_is_refused_in_one_sentence_with_nothing_written(site, web, tmp_path):
    session, xsrf = web
    evil = _tar(
        tmp_path / "evil.tar.gz",
        {"evil/SKILL.md": b"---\nname: evil\ndescription: looks fine\n---\nDo it.\n", "evil/../../outside.txt": b"x"},
    )
    for source, why in [
        (str(evil), "'evil/../../outside.txt': not a file of a skill"),
        (str(tmp_path / "nowhere"), "not a git repository, a folder, a .zip or a .tar.gz"),
        ("x" * 2001, "source is longer than 2000 characters"),
    ]:
        reply = session.post(f"{site.base}/skills/install/review", data={"source": source, "_xsrf": xsrf})
        assert reply.status_code == 400 and why in html.unescape(reply.text), source[:80]
        assert "Traceback" not in reply.text
    assert "nothing written" in reply.text or "longer" in reply.text
    assert not (site.root / ".agents" / "skills").exists() and _staging_empty(site)
    assert not (tmp_path / "outside.txt").exists() and not (site.root / "outside.txt").exists()
    missing = session.post(f"{site.base}/skills/installed/nothing/remove", data={"_xsrf": xsrf})
    assert missing.status_code == 409 and "no installed skill 'nothing'" in html.unescape(missing.text)


def test_what_a_stopped_page_left_staged_is_removed_at_its_next_start(site):
    from assistant_framework.web.skills_install import PENDING_SECONDS, routes

    web = site.root / ".agents" / ".staging" / "web"
    (web / "skill-left").mkdir(parents=True)
    (web / "skill-left" / "SKILL.md").write_text("left by a page that stopped")
    (web / "skill-waiting").mkdir()
    old = time.time() - PENDING_SECONDS - 60
    os.utime(web / "skill-left", (old, old))
    routes(site.server.state)  # as a server starting on this workspace
    assert not (web / "skill-left").exists() and (web / "skill-waiting").is_dir()  # another page's, waiting
    shutil.rmtree(web / "skill-waiting")


def test_the_json_twins_review_install_and_remove_with_the_access_token(site, web, repo):
    source, tagged = repo
    bearer = {"Authorization": f"Bearer {WEB_TOKEN}"}
    api = f"{site.base}/api/skills"
    assert requests.post(f"{api}/install/review", json={"source": str(source)}).status_code == 401
    review = requests.post(f"{api}/install/review", json={"source": str(source), "ref": "v1"}, headers=bearer)
    assert review.status_code == 200, review.text
    shown = review.json()["review"]
    assert shown["name"] == "webapp-testing" and shown["commit"] == tagged and shown["ref"] == "v1"
    assert any(rel == "scripts/with_server.py" and "runs with python" in how for rel, how in shown["scripts"])
    assert any("exec (run_script" in note for note in shown["capabilities"])
    assert not (site.root / ".agents" / "skills" / "webapp-testing").exists()
    done = requests.post(f"{api}/install/confirm", json={"review": review.json()["id"]}, headers=bearer)
    assert done.json() == {
        "said": "Installed webapp-testing; the assistant offers it from its next message.",
        "name": "webapp-testing",
        "done": "confirm",
    }
    again = requests.post(f"{api}/install/confirm", json={"review": review.json()["id"]}, headers=bearer)
    assert again.status_code == 409 and again.json()["name"] is None
    listed = requests.get(f"{api}/install", headers=bearer).json()["installed"]
    assert [(r["name"], r["commit"]) for r in listed] == [("webapp-testing", tagged)]
    refused = requests.post(f"{api}/install/review", json={"source": str(source / "nowhere")}, headers=bearer)
    assert refused.status_code == 400 and "nothing written" in refused.json()["error"]
    removed = requests.post(f"{api}/installed/webapp-testing/remove", headers=bearer)
    assert removed.json()["done"] == "remove" and not (site.root / ".agents" / "skills" / "webapp-testing").exists()
