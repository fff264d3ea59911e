"""The web page over real HTTP: the token, CSRF, security headers, path confinement, redaction, edits."""

from __future__ import annotations

import dataclasses
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import requests

from assistant_framework.config import ConfigError, load_config
from assistant_framework.policy import AUDIT_LOG
from assistant_framework.web import WebServer, standalone_parts
from assistant_framework.web.auth import TOKEN_FILE, TokenError, is_loopback
from assistant_framework.workspace import Workspace
from tests import preload
from tests.cli_inprocess import run_cli
from tests.web_site import API_KEY, BOT_TOKEN, WEB_TOKEN, start_site

REPO = Path(__file__).resolve().parent.parent
BEARER = {"Authorization": f"Bearer {WEB_TOKEN}"}

PAGES = [
    "/",
    "/memory",
    "/memory?q=bicycle",
    "/memory/facts",
    "/memory/notes",
    "/memory/tasks",
    "/memory/profile",
    "/file?path=notes/shopping.md",
    "/file?path=notes/keys.md",
    "/file?path=tasks/tasks.json",
    "/api/file?path=tasks/tasks.json",
    "/conversations",
    "/traces",
    "/collectors",
    "/reminders",
    "/usage",
    "/skills",
    "/jobs",
    "/api/jobs",
    "/api/memory/search?q=bicycle",
    "/api/memory/notes",
    "/api/file?path=notes/keys.md",
    "/api/conversations",
    "/api/traces",
    "/api/collectors",
    "/api/reminders",
    "/api/usage",
    "/api/skills",
    "/no/such/page",
]
POSTS = [
    "/file?path=notes/shopping.md",
    "/file/delete",
    "/memory/notes/new",
    "/collectors/writer/run",
    "/api/collectors/writer/run",
    "/api/file?path=notes/shopping.md",
    "/jobs/j1/pause",
    "/api/jobs/j1/remove",
    "/logout",
]


@pytest.fixture
def site(tmp_path):
    site = start_site(tmp_path)
    yield site
    site.close()


def _all_pages(site) -> list[str]:
    return PAGES + [
        f"/traces/{site.trace_id}",
        f"/api/traces/{site.trace_id}",
        f"/conversations/{site.chat}/{site.day}",
        f"/api/conversations/{site.chat}/{site.day}",
    ]


def _session(site) -> requests.Session:
    """A browser-like session signed in through the ?token= link."""
    session = requests.Session()
    reply = session.get(f"{site.base}/memory?token={WEB_TOKEN}", allow_redirects=False)
    assert reply.status_code == 302
    return session


def _xsrf(session: requests.Session, site, path: str = "/memory") -> str:
    """The form token a page gives this browser (bound to its session, or its pre-session on /login)."""
    page = session.get(f"{site.base}{path}").text
    return re.search(r'name="_xsrf" value="([^"]+)"', page).group(1)


def test_without_the_token_every_page_and_api_answers_401(site):
    for path in _all_pages(site):
        reply = requests.get(site.base + path, allow_redirects=False)
        assert reply.status_code == 401, path
        assert "oat milk" not in reply.text and "bicycle is blue" not in reply.text, path
    for path in POSTS:
        reply = requests.post(
            site.base + path, data={"content": "x", "path": "notes/shopping.md"}, allow_redirects=False
        )
        assert reply.status_code == 401, path
    assert requests.delete(f"{site.base}/api/file?path=notes/shopping.md").status_code == 401
    assert site.workspace.exists("notes/shopping.md")
    assert not site.workspace.exists("collectors/writer/latest.md")  # no collector ran
    assert '"id": "j1"' in site.workspace.read_text("jobs/jobs.json")  # no job removed
    assert '"paused"' not in site.workspace.read_text("jobs/jobs.json")  # nor paused


def test_a_wrong_token_is_refused_everywhere(site):
    assert (
        requests.get(f"{site.base}/memory", headers={"Authorization": "Bearer nope-nope-nope-nope"}).status_code == 401
    )
    assert requests.get(f"{site.base}/memory?token=nope-nope-nope-nope", allow_redirects=False).status_code == 401
    session = requests.Session()
    reply = session.post(
        f"{site.base}/login",
        data={"token": "nope-nope-nope-nope", "_xsrf": _xsrf(session, site, "/login")},
        allow_redirects=False,
    )
    assert reply.status_code == 401 and "assistant_web" not in session.cookies
    forged = requests.get(f"{site.base}/memory", cookies={"assistant_web": "owner"})
    assert forged.status_code == 401


def test_token_link_sets_a_strict_httponly_cookie_and_drops_the_token_from_the_address(site):
    session = requests.Session()
    reply = session.get(f"{site.base}/memory?q=bicycle&token={WEB_TOKEN}", allow_redirects=False)
    assert reply.status_code == 302
    assert reply.headers["Location"] == "/memory?q=bicycle"
    cookie = reply.headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and WEB_TOKEN not in cookie
    page = session.get(f"{site.base}/memory?q=bicycle")
    assert page.status_code == 200 and "blue bicycle" in page.text


def test_behind_a_tls_proxy_the_cookies_are_secure(site):
    """Reached over HTTPS through a proxy (``X-Forwarded-Proto: https``), the session cookie and the sign-in
    form's cookie are ``Secure``: without it the browser sends them in the clear to ``http://`` at the same name,
    where anyone on the way reads the session (they were never Secure: fails without the flag, checked). Over
    plain HTTP on loopback they stay without it, or the browser would not send them back."""
    https = {"X-Forwarded-Proto": "https"}
    signed_in = requests.get(f"{site.base}/memory?token={WEB_TOKEN}", headers=https, allow_redirects=False)
    assert signed_in.status_code == 302
    assert "Secure" in signed_in.headers["Set-Cookie"] and "HttpOnly" in signed_in.headers["Set-Cookie"]
    form = requests.get(f"{site.base}/login", headers=https)
    assert form.status_code == 200 and "assistant_web_login=" in form.headers["Set-Cookie"]
    assert "Secure" in form.headers["Set-Cookie"]
    plain = requests.get(f"{site.base}/memory?token={WEB_TOKEN}", allow_redirects=False)
    assert "Secure" not in plain.headers["Set-Cookie"]


def test_login_form_signs_in_and_needs_its_csrf_token(site):
    session = requests.Session()
    assert session.get(f"{site.base}/login").status_code == 200
    assert session.post(f"{site.base}/login", data={"token": WEB_TOKEN}, allow_redirects=False).status_code == 403
    reply = session.post(
        f"{site.base}/login", data={"token": WEB_TOKEN, "_xsrf": _xsrf(session, site, "/login")}, allow_redirects=False
    )
    assert reply.status_code == 302 and reply.headers["Location"] == "/memory"
    assert session.get(f"{site.base}/traces").status_code == 200
    session.post(f"{site.base}/logout", data={"_xsrf": _xsrf(session, site)})
    assert session.get(f"{site.base}/traces").status_code == 401


def test_security_headers_on_pages_apis_errors_and_the_stylesheet(site):
    for path, headers in [
        ("/memory", BEARER),
        ("/api/usage", BEARER),
        ("/memory", {}),
        ("/login", {}),
        ("/static/style.css", {}),
        ("/file?path=../x", BEARER),
    ]:
        reply = requests.get(site.base + path, headers=headers)
        csp = reply.headers["Content-Security-Policy"]
        assert "default-src 'none'" in csp and "script-src" not in csp and "unsafe-inline" not in csp, path
        assert "frame-ancestors 'none'" in csp
        assert reply.headers["X-Frame-Options"] == "DENY", path
        assert reply.headers["Referrer-Policy"] == "no-referrer", path
    for path in _all_pages(site)[:-4]:
        body = requests.get(site.base + path, headers=BEARER).text
        assert "<script" not in body.lower() and " style=" not in body, path


def test_forms_refuse_a_post_without_the_csrf_token(site):
    session = _session(site)
    before = site.workspace.read_text("notes/shopping.md")
    reply = session.post(f"{site.base}/file?path=notes/shopping.md", data={"content": "forged"}, allow_redirects=False)
    assert reply.status_code == 403
    reply = session.post(
        f"{site.base}/file/delete", data={"path": "notes/shopping.md", "_xsrf": "2|00|00|00"}, allow_redirects=False
    )
    assert reply.status_code == 403
    assert session.post(f"{site.base}/collectors/writer/run", allow_redirects=False).status_code == 403
    assert session.post(f"{site.base}/jobs/j1/remove", allow_redirects=False).status_code == 403
    assert "j1" in site.workspace.read_text("jobs/jobs.json")
    assert site.workspace.read_text("notes/shopping.md") == before
    assert not site.workspace.exists("collectors/writer/latest.md")


def test_an_edit_on_the_page_is_in_the_file_the_audit_log_and_the_index(site):
    session = _session(site)
    reply = session.post(
        f"{site.base}/file?path=notes/shopping.md",
        data={"content": "# Shopping\r\n\r\nBuy pistachio ice cream.", "_xsrf": _xsrf(session, site)},
        allow_redirects=False,
    )
    assert reply.status_code == 302
    assert site.workspace.read_text("notes/shopping.md") == "# Shopping\n\nBuy pistachio ice cream.\n"
    audit = site.workspace.read_jsonl(AUDIT_LOG)[-1]
    assert (
        audit["chat"] == "web:owner" and audit["decision"] == "owner" and audit["args"]["path"] == "notes/shopping.md"
    )
    hits = requests.get(f"{site.base}/api/memory/search?q=pistachio", headers=BEARER).json()["hits"]
    assert [h["path"] for h in hits] == ["notes/shopping.md"]
    assert not requests.get(f"{site.base}/api/memory/search?q=oat", headers=BEARER).json()["hits"]


def test_scripts_edit_and_delete_with_the_bearer_token(site):
    reply = requests.post(
        f"{site.base}/api/file?path=profile.md", headers=BEARER, json={"content": "# Profile\n\nLives in Lyon.\n"}
    )
    assert reply.json() == {"saved": "profile.md"}
    assert "Lyon" in site.workspace.read_text("profile.md")
    bad = requests.post(f"{site.base}/api/file?path=tasks/tasks.json", headers=BEARER, json={"content": "[{not json"})
    assert bad.status_code == 400 and "JSON" in bad.json()["error"]
    assert "bicycle light" in site.workspace.read_text("tasks/tasks.json")  # nothing lost
    assert requests.delete(f"{site.base}/api/file?path=notes/shopping.md", headers=BEARER).json() == {"deleted": True}
    assert not site.workspace.exists("notes/shopping.md")
    assert not requests.get(f"{site.base}/api/memory/search?q=pistachio+oat", headers=BEARER).json()["hits"]
    actions = [r["args"]["action"] for r in site.workspace.read_jsonl(AUDIT_LOG)]
    assert actions == ["write", "delete"]


def test_a_fact_is_deleted_by_its_id_and_superseded_ones_are_shown(site):
    session = _session(site)
    page = session.get(f"{site.base}/memory/facts").text
    assert "Lyon" in page and "superseded" in page and "extraction" in page
    assert '<a href="/conversations/42/2026-11-29#42:2026-11-29:1">' in page  # where the extracted fact came from
    facts = site.workspace.read_json("facts/facts.json")
    blue = next(f for f in facts if f["value"] == "blue")
    reply = session.post(
        f"{site.base}/file/delete",
        data={"path": "facts/facts.json", "id": blue["id"], "_xsrf": _xsrf(session, site)},
        allow_redirects=False,
    )
    assert reply.status_code == 302 and reply.headers["Location"] == "/memory/facts"
    assert [f["value"] for f in site.workspace.read_json("facts/facts.json")] == ["Lyon", "Paris"]
    assert site.workspace.read_jsonl(AUDIT_LOG)[-1]["args"] == {
        "action": "delete-record",
        "path": "facts/facts.json",
        "id": blue["id"],
    }


ESCAPES = [
    "../outside.txt",
    "/etc/passwd",
    "notes/../../outside.txt",
    "notes/../state/web/token",
    "state/web/token",
    "state/audit.jsonl",
    "notes/link.md",
    "notes/outlink.md",
    "memory/index.sqlite3",
    "notes/\x00.md",
    "traces",
    "",
]


def test_every_file_view_and_edit_stays_inside_the_memory(site, tmp_path):
    (tmp_path / "outside.txt").write_text("OUTSIDE-CONTENT")
    site.workspace.write_text("state/web/token", "state-token-not-the-real-one\n")
    os.symlink(site.root / "state" / "web" / "token", site.root / "notes" / "link.md")
    os.symlink(tmp_path / "outside.txt", site.root / "notes" / "outlink.md")
    session = _session(site)
    xsrf = _xsrf(session, site)
    for rel in ESCAPES:
        for reply in (
            requests.get(f"{site.base}/file", params={"path": rel}, headers=BEARER),
            requests.get(f"{site.base}/api/file", params={"path": rel}, headers=BEARER),
            session.post(
                f"{site.base}/file",
                params={"path": rel},
                data={"content": "PWNED", "_xsrf": xsrf},
                allow_redirects=False,
            ),
            requests.post(f"{site.base}/api/file", params={"path": rel}, headers=BEARER, json={"content": "PWNED"}),
            requests.delete(f"{site.base}/api/file", params={"path": rel}, headers=BEARER),
            session.post(f"{site.base}/file/delete", data={"path": rel, "_xsrf": xsrf}, allow_redirects=False),
            session.post(
                f"{site.base}/file/delete", data={"path": rel, "id": "f1", "_xsrf": xsrf}, allow_redirects=False
            ),
        ):
            assert reply.status_code in (403, 404), (rel, reply.request.method, reply.status_code)
            assert "OUTSIDE-CONTENT" not in reply.text and "state-token-not-the-real-one" not in reply.text
    assert (tmp_path / "outside.txt").read_text() == "OUTSIDE-CONTENT"
    assert site.workspace.read_text("state/web/token") == "state-token-not-the-real-one\n"
    assert os.path.islink(site.root / "notes" / "link.md") and site.workspace.exists("state/audit.jsonl") is False
    # Collector output and conversations are shown, never edited.
    site.workspace.write_text("collectors/writer/latest.md", "# run 0\n")
    assert requests.get(f"{site.base}/file?path=collectors/writer/latest.md", headers=BEARER).status_code == 200
    reply = requests.post(
        f"{site.base}/api/file?path=collectors/writer/latest.md", headers=BEARER, json={"content": "x"}
    )
    assert reply.status_code == 403 and site.workspace.read_text("collectors/writer/latest.md") == "# run 0\n"
    reply = requests.post(
        f"{site.base}/api/file?path=conversations/{site.chat}/{site.day}.jsonl", headers=BEARER, json={"content": "x"}
    )
    assert reply.status_code == 403


def test_no_page_shows_a_secret(site):
    secrets = [API_KEY, BOT_TOKEN, WEB_TOKEN]
    assert API_KEY in site.workspace.read_text(f"traces/{site.day}/{site.trace_id}.json")  # planted, unredacted on disk
    for path in _all_pages(site):
        reply = requests.get(site.base + path, headers=BEARER)
        assert reply.status_code < 500, (path, reply.status_code)
        body = reply.text
        for secret in secrets:
            assert secret not in body, (path, secret)
    assert "***" in requests.get(f"{site.base}/traces/{site.trace_id}", headers=BEARER).text


def test_trace_page_shows_the_section_sizes_as_a_chart(site):
    page = requests.get(f"{site.base}/traces/{site.trace_id}", headers=BEARER).text
    chart = page.split('<svg class="chart hbar"', 1)[1].split("</svg>", 1)[0]
    widths = {
        label: float(w)
        for label, w in re.findall(
            r'<text class="label"[^>]*>([^<]+)</text><rect class="bar" [^>]*width="([0-9.]+)"', chart
        )
    }
    assert set(widths) == {"base", "tools", "profile", "history", "recall"}
    assert widths["tools"] > widths["base"] > widths["history"] > widths["recall"] > widths["profile"]
    assert "2400" in page and "5200" in page and '"action": "get"' in page.replace("&quot;", '"')
    listing = requests.get(f"{site.base}/api/traces", headers=BEARER).json()["traces"]
    assert listing[0]["id"] == site.trace_id and listing[0]["prompt_tokens"] == 1800 and listing[0]["rounds"] == 1


def test_conversation_day_shows_what_was_recalled_for_each_reply(site):
    turns = requests.get(f"{site.base}/api/conversations/{site.chat}/{site.day}", headers=BEARER).json()["turns"]
    assert [t["role"] for t in turns] == ["user", "assistant"]
    assert turns[0].get("recalled") is None and turns[1]["recalled"][0]["path"] == "facts/facts.json"
    assert requests.get(f"{site.base}/api/conversations/{site.chat}/1999-01-01", headers=BEARER).status_code == 404
    assert requests.get(f"{site.base}/api/conversations/..%2Fstate/{site.day}", headers=BEARER).status_code == 404


def test_search_filters_by_source_and_date_and_links_to_the_place(site):
    hits = requests.get(f"{site.base}/api/memory/search", params={"q": "bicycle"}, headers=BEARER).json()["hits"]
    assert {"notes", "facts", "conversation", "tasks"} <= {h["source"] for h in hits}
    notes = requests.get(
        f"{site.base}/api/memory/search", params={"q": "bicycle", "source": "notes"}, headers=BEARER
    ).json()["hits"]
    assert [h["link"] for h in notes] == ["/file?path=notes%2Fshopping.md#L1"]
    chat = next(h for h in hits if h["source"] == "conversation")
    assert chat["link"].startswith(f"/conversations/{site.chat}/{site.day}#{site.chat}:{site.day}:")
    old = requests.get(
        f"{site.base}/api/memory/search",
        params={"q": "bicycle", "source": "conversation", "until": "2001-01-01"},
        headers=BEARER,
    )
    assert old.json()["hits"] == []
    assert (
        requests.get(
            f"{site.base}/api/memory/search", params={"q": "x", "since": "yesterday"}, headers=BEARER
        ).status_code
        == 400
    )


def test_collectors_status_and_run_now(site):
    rows = {r["name"]: r for r in requests.get(f"{site.base}/api/collectors", headers=BEARER).json()["collectors"]}
    assert rows["writer"]["outcome"] is None and rows["writer"]["enabled"]
    outcome = requests.post(f"{site.base}/api/collectors/writer/run", headers=BEARER).json()
    assert outcome["outcome"] == "ok" and "collectors/writer/latest.md" in outcome["written"]
    assert site.workspace.read_text("collectors/writer/latest.md") == "# run 0\n"
    failed = requests.post(f"{site.base}/api/collectors/raiser/run", headers=BEARER).json()
    assert failed["outcome"] == "error" and "refused the login" in failed["error"]
    rows = {r["name"]: r for r in requests.get(f"{site.base}/api/collectors", headers=BEARER).json()["collectors"]}
    assert rows["writer"]["source_errors"] == ["feed b.example: HTTP 503"] and rows["writer"]["next_run"]
    assert rows["raiser"]["consecutive_failures"] == 1 and "refused the login" in rows["raiser"]["error"]
    assert requests.post(f"{site.base}/api/collectors/nosuch/run", headers=BEARER).status_code == 404


def test_jobs_list_next_run_history_pause_run_now_and_delete(site):
    site.workspace.append_jsonl(
        "jobs/runs.jsonl",
        {"run": "job:j1:a", "job": "j1", "planned": "2026-11-29T18:00:00+00:00", "outcome": "delivered"},
    )
    listed = requests.get(f"{site.base}/api/jobs", headers=BEARER).json()
    [job] = listed["jobs"]
    assert job["id"] == "j1" and job["next_run"] and job["runs"][0]["outcome"] == "delivered"
    session = _session(site)
    page = session.get(f"{site.base}/jobs").text
    assert "Bins out" in page and "delivered" in page and 'action="/jobs/j1/pause"' in page
    xsrf = _xsrf(session, site, "/jobs")
    paused = session.post(f"{site.base}/jobs/j1/pause", data={"_xsrf": xsrf}, allow_redirects=False)
    assert paused.status_code == 302 and "paused" in paused.headers["Location"]
    assert requests.get(f"{site.base}/api/jobs", headers=BEARER).json()["jobs"][0]["paused"] is True
    assert "Resume" in session.get(f"{site.base}/jobs").text
    ran = requests.post(f"{site.base}/api/jobs/j1/run", headers=BEARER).json()
    assert ran["done"] == "run" and '"run_requested"' in site.workspace.read_text("jobs/jobs.json")
    assert requests.post(f"{site.base}/api/jobs/j9/run", headers=BEARER).status_code == 404
    assert requests.post(f"{site.base}/api/jobs/j1/explode", headers=BEARER).status_code == 404
    session.post(f"{site.base}/jobs/j1/remove", data={"_xsrf": xsrf}, allow_redirects=False)
    assert requests.get(f"{site.base}/api/jobs", headers=BEARER).json()["jobs"] == []


def test_usage_and_skills(site):
    usage = requests.get(f"{site.base}/api/usage", headers=BEARER).json()
    assert len(usage["by_day"]) == 30 and usage["by_day"][site.day]["prompt_tokens"] == 1800
    assert usage["by_model"]["test-model"]["cached_tokens"] == 1200
    page = requests.get(f"{site.base}/usage", headers=BEARER).text
    assert page.count('<svg class="chart') == 3
    skills = requests.get(f"{site.base}/api/skills", headers=BEARER).json()
    notes = next(s for s in skills["skills"] if s["name"] == "notes")
    assert notes["args_schema"]["type"] == "object" and notes["description"]
    assert [e["name"] for e in skills["errors"]] == ["broken"] and "import failed" in skills["errors"][0]["error"]
    assert "Failed to load" in requests.get(f"{site.base}/skills", headers=BEARER).text


def test_a_token_is_generated_once_into_state_and_printed_with_the_url(tmp_path):
    site = start_site(tmp_path, token=None)
    try:
        token = site.workspace.read_text(TOKEN_FILE).strip()
        assert stat.S_IMODE(os.stat(site.workspace.path(TOKEN_FILE)).st_mode) == 0o600
        assert (
            site.server.banner()
            == f"web page: {site.base}/?token={token}  (a new token, saved in state/web/token; shown only this once)"
        )
        assert requests.get(f"{site.base}/memory", headers={"Authorization": f"Bearer {token}"}).status_code == 200
        again = WebServer(site.server.state.parts, port=0)
        assert again.access.value == token and token not in again.banner()
    finally:
        site.close()


def test_a_short_configured_token_is_refused(tmp_path):
    site = start_site(tmp_path)
    site.close()
    parts = standalone_parts(tmp_path / "config", site.root)
    parts.settings = dataclasses.replace(parts.settings, web=dataclasses.replace(parts.settings.web, token="short"))
    with pytest.raises(TokenError):
        WebServer(parts, port=0)
    parts.close()


def test_web_config_is_validated_with_file_and_path(tmp_path):
    (tmp_path / "web.json").write_text('{"port": "eighty", "enabled": true}')
    with pytest.raises(ConfigError, match=r"web.json.*port"):
        load_config(tmp_path)


def test_loopback_detection():
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost") and is_loopback("127.5.0.1")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.2") and not is_loopback("example.org")


def test_cli_refuses_a_short_token_with_exit_2(tmp_path):
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "web.json").write_text('{"token": "short"}')
    Workspace(tmp_path / "ws")  # `web` never creates a workspace (a typo must not serve a new, empty one)
    # main(argv) in this process: a config error's exit code and message (the real process's start and its
    # signals are test_assistant_web_serves_until_interrupted's).
    argv = ["web", "--config", str(tmp_path / "config"), "--workspace", str(tmp_path / "ws"), "--port", "0"]
    proc = run_cli(*argv, cwd=REPO)
    assert proc.returncode == 2 and "web.token must be at least" in proc.stderr and "Traceback" not in proc.stderr


def test_a_symlink_out_of_the_workspace_does_not_break_the_memory_index(tmp_path):
    """Regression: one link in notes/ pointing outside made every index refresh (so every search) fail."""
    from assistant_framework.memory.index import MemoryIndex
    from assistant_framework.workspace import Workspace

    (tmp_path / "outside.md").write_text("# Outside\n\nOUTSIDE-CONTENT zebra\n")
    ws = Workspace(tmp_path / "ws")
    ws.write_text("notes/zebra.md", "# Zebra\n\nstripes\n")
    os.symlink(tmp_path / "outside.md", ws.path("notes") / "outlink.md")
    index = MemoryIndex(ws)
    try:
        index.refresh()
        assert [row[0] for row in index.query("SELECT path FROM files")] == ["notes/zebra.md"]
    finally:
        index.close()


def test_a_fact_is_corrected_as_the_owners_and_the_old_value_kept(site):
    session = _session(site)
    reply = session.post(
        f"{site.base}/memory/facts/set",
        data={"subject": "owner", "attribute": "bicycle", "value": "green", "_xsrf": _xsrf(session, site)},
        allow_redirects=False,
    )
    assert reply.status_code == 302
    bikes = [f for f in site.workspace.read_json("facts/facts.json") if f["attribute"] == "bicycle"]
    assert [(f["value"], f["status"], f["source"]) for f in bikes] == [
        ("blue", "superseded", "extraction"),
        ("green", "current", "user"),
    ]
    assert site.workspace.read_jsonl(AUDIT_LOG)[-1]["args"]["action"] == "set-fact"
    hits = requests.get(
        f"{site.base}/api/memory/search", params={"q": "bicycle", "source": "facts"}, headers=BEARER
    ).json()["hits"]
    assert [h["snippet"] for h in hits if "green" in h["snippet"]] and not [h for h in hits if "blue" in h["snippet"]]
    bad = requests.post(
        f"{site.base}/api/memory/facts/set", headers=BEARER, json={"subject": "owner", "attribute": "", "value": "x"}
    )
    assert bad.status_code == 400


def test_a_missing_profile_can_be_written_from_the_page(site):
    site.workspace.delete("profile.md")
    session = _session(site)
    assert session.get(f"{site.base}/file?path=profile.md").status_code == 404
    editor = session.get(f"{site.base}/file?path=profile.md&edit=1")
    assert editor.status_code == 200 and '<textarea name="content"' in editor.text
    assert session.get(f"{site.base}/file?path=state/new.md&edit=1").status_code == 403
    session.post(
        f"{site.base}/file?path=profile.md", data={"content": "# Profile\n\nVegetarian.", "_xsrf": _xsrf(session, site)}
    )
    assert site.workspace.read_text("profile.md") == "# Profile\n\nVegetarian.\n"


def test_bad_numbers_in_the_address_are_a_400_not_a_crash(site):
    for path in ("/api/memory/search?q=x&limit=abc", "/api/traces?limit=-1", "/traces?limit=1e9"):
        reply = requests.get(site.base + path, headers=BEARER)
        assert reply.status_code == 400, path
        assert "whole number" in reply.text, path


def test_assistant_web_serves_until_interrupted(tmp_path):
    import signal

    start_site(tmp_path).close()  # lays out config/ and ws/
    proc = preload.popen(
        [
            sys.executable,
            "-m",
            "messaging_llm_bot.cli",
            "web",
            "--config",
            str(tmp_path / "config"),
            "--workspace",
            str(tmp_path / "ws"),
            "--port",
            "0",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        takes_sigint=True,
    )
    try:
        banner = proc.stdout.readline()
        url = re.match(
            r"web page: (http://127\.0\.0\.1:\d+/)  \(sign in with the token from web.token of the config\)$", banner
        ).group(1)
        assert requests.get(f"{url}memory").status_code == 401
        assert "blue bicycle" in requests.get(f"{url}memory?q=bicycle", headers=BEARER).text
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0 and "Traceback" not in err, err


def test_saving_a_file_that_holds_a_secret_is_refused_and_keeps_the_secret(site):
    """The editor shows a secret as ***: saving that text back must not replace the owner's secret."""
    site.workspace.write_text("notes/keys.md", f"# Keys\n\nmodel key: {API_KEY}\n")
    shown = requests.get(f"{site.base}/api/file?path=notes/keys.md", headers=BEARER).text
    assert API_KEY not in shown and "***" in shown
    reply = requests.post(
        f"{site.base}/api/file?path=notes/keys.md",
        headers=BEARER,
        json={"content": "# Keys\n\nmodel key: ***\nand one more line\n"},
    )
    assert reply.status_code == 400 and "edit this file on disk" in reply.json()["error"]
    assert site.workspace.read_text("notes/keys.md") == f"# Keys\n\nmodel key: {API_KEY}\n"
    # A file without a secret still saves.
    ok = requests.post(f"{site.base}/api/file?path=notes/plain.md", headers=BEARER, json={"content": "# Plain\n"})
    assert ok.status_code == 200 and site.workspace.read_text("notes/plain.md") == "# Plain\n"


def test_a_secret_with_html_characters_or_a_piece_of_one_is_masked_on_the_pages_too(tmp_path):
    """The HTML is escaped before it is redacted: a secret holding & < > " ' (or 8+ of its characters) must
    still be ***."""
    import json as _json
    from html import escape

    special = "pw-Tr0ub&<or>\"'-9c1e55aa"
    site = start_site(tmp_path)
    site.close()
    llm = tmp_path / "config" / "llm.json"
    config = _json.loads(llm.read_text())
    config["runners"].append({"name": "second", "base_url": "http://127.0.0.1:9/v1", "model": "m", "api_key": special})
    llm.write_text(_json.dumps(config))
    parts = standalone_parts(tmp_path / "config", site.root)
    server = WebServer(parts, host="127.0.0.1", port=0)
    server.start()
    base = f"http://127.0.0.1:{server.port}"
    try:
        parts.workspace.write_text("notes/special.md", f"# Special\n\nthe second key: {special}\n")
        parts.workspace.write_text("notes/piece.md", f"# Piece\n\nthe key starts {special[:12]}…\n")
        for path in [
            "/file?path=notes/special.md",
            "/file?path=notes/special.md&edit=1",
            "/file?path=notes/piece.md",
            "/file?path=notes/piece.md&edit=1",
            "/memory?q=second+key",
            "/api/file?path=notes/special.md",
            "/api/file?path=notes/piece.md",
        ]:
            body = requests.get(base + path, headers=BEARER).text
            for shown in (
                special,
                escape(special),
                special[:12],
                escape(special[:12]),
                escape(special[:12], quote=False),
            ):
                assert shown not in body, (path, shown)
            assert "***" in body, path
        # The editor shows the piece as ***: saving that back is refused, the file keeps its text.
        reply = requests.post(
            f"{base}/api/file?path=notes/piece.md", headers=BEARER, json={"content": "# Piece\n\nthe key starts ***…\n"}
        )
        assert reply.status_code == 400 and "edit this file on disk" in reply.json()["error"]
        assert special[:12] in parts.workspace.read_text("notes/piece.md")
    finally:
        server.stop()
        parts.close()


def test_a_request_for_another_host_name_is_refused_dns_rebinding(site):
    """A page of evil.example whose name now points at 127.0.0.1 reaches the server with its own Host: refused."""
    port = site.server.port
    for host in ("evil.example", f"evil.example:{port}", "127.0.0.1.evil.example", f"localhost.evil.example:{port}"):
        for path, headers in [
            ("/login", {}),
            ("/static/style.css", {}),
            ("/api/usage", BEARER),
            ("/memory", BEARER),
            (f"/memory?token={WEB_TOKEN}", {}),
        ]:
            reply = requests.get(site.base + path, headers={**headers, "Host": host}, allow_redirects=False)
            assert reply.status_code == 403, (host, path, reply.status_code)
            assert "assistant_web" not in reply.headers.get("Set-Cookie", "") and "oat milk" not in reply.text
        session = requests.Session()
        form_token = _xsrf(session, site, "/login")  # as the rebinding page could get it
        reply = session.post(
            f"{site.base}/login",
            headers={"Host": host},
            allow_redirects=False,
            data={"token": WEB_TOKEN, "_xsrf": form_token},
        )
        assert reply.status_code == 403 and "assistant_web" not in reply.headers.get("Set-Cookie", "")
    # The page's own names, with or without the port.
    for host in (
        f"127.0.0.1:{port}",
        "127.0.0.1",
        f"localhost:{port}",
        "LOCALHOST",
        f"[::1]:{port}",
        f"127.0.0.2:{port}",
    ):
        assert requests.get(f"{site.base}/api/usage", headers={**BEARER, "Host": host}).status_code == 200, host
        assert requests.get(f"{site.base}/static/style.css", headers={"Host": host}).status_code == 200, host


def test_a_conversation_name_the_workspace_refuses_is_a_404_not_a_crash(site):
    for chat in ("%00", "a%01b", "%2e%2e", ".hidden"):
        for prefix in ("/conversations", "/api/conversations"):
            reply = requests.get(f"{site.base}{prefix}/{chat}/{site.day}", headers=BEARER)
            assert reply.status_code == 404, (prefix, chat, reply.status_code)


def _version(page: str) -> str:
    return re.search(r'name="version" value="([^"]+)"', page).group(1)


def test_an_edit_of_a_file_changed_since_it_was_opened_is_refused_and_keeps_both_texts(site):
    """The bot (or another tab) wrote the note after the editor opened: Save must not overwrite it unseen."""
    session = _session(site)
    xsrf = _xsrf(session, site)
    opened = _version(session.get(f"{site.base}/file?path=notes/shopping.md&edit=1").text)
    newer = "# Shopping\n\nBuy oat milk and coffee beans.\nAdded by the bot: bread.\n"
    site.workspace.write_text("notes/shopping.md", newer)
    reply = session.post(
        f"{site.base}/file?path=notes/shopping.md",
        allow_redirects=False,
        data={"content": "# Shopping\n\nOnly tea.", "version": opened, "_xsrf": xsrf},
    )
    assert reply.status_code == 409
    assert "changed since you opened it" in reply.text
    assert "Only tea." in reply.text and "Added by the bot: bread." in reply.text  # the draft and the file as it is now
    assert site.workspace.read_text("notes/shopping.md") == newer
    # Having seen the newer text, the owner saves again from that page: now it is written.
    again = session.post(
        f"{site.base}/file?path=notes/shopping.md",
        allow_redirects=False,
        data={"content": "# Shopping\n\nOnly tea.", "version": _version(reply.text), "_xsrf": xsrf},
    )
    assert again.status_code == 302 and site.workspace.read_text("notes/shopping.md") == "# Shopping\n\nOnly tea.\n"


def test_two_tabs_editing_one_file_the_second_save_is_refused(site):
    session = _session(site)
    xsrf = _xsrf(session, site)
    tab_a = _version(session.get(f"{site.base}/file?path=profile.md&edit=1").text)
    tab_b = _version(session.get(f"{site.base}/file?path=profile.md&edit=1").text)
    first = session.post(
        f"{site.base}/file?path=profile.md",
        data={"content": "# Profile\n\nFrom tab A.", "version": tab_a, "_xsrf": xsrf},
        allow_redirects=False,
    )
    assert first.status_code == 302
    second = session.post(
        f"{site.base}/file?path=profile.md",
        data={"content": "# Profile\n\nFrom tab B.", "version": tab_b, "_xsrf": xsrf},
        allow_redirects=False,
    )
    assert second.status_code == 409 and "From tab A." in second.text and "From tab B." in second.text
    assert site.workspace.read_text("profile.md") == "# Profile\n\nFrom tab A.\n"


def test_a_new_file_written_meanwhile_by_the_bot_is_not_overwritten(site):
    site.workspace.delete("profile.md")
    session = _session(site)
    xsrf = _xsrf(session, site)
    opened = _version(session.get(f"{site.base}/file?path=profile.md&edit=1").text)
    site.workspace.write_text("profile.md", "# Profile\n\nWritten by the memory worker.\n")
    reply = session.post(
        f"{site.base}/file?path=profile.md",
        data={"content": "# Mine", "version": opened, "_xsrf": xsrf},
        allow_redirects=False,
    )
    assert reply.status_code == 409
    assert site.workspace.read_text("profile.md") == "# Profile\n\nWritten by the memory worker.\n"


def test_scripts_get_the_version_and_a_stale_one_is_a_409(site):
    shown = requests.get(f"{site.base}/api/file?path=notes/shopping.md", headers=BEARER).json()
    site.workspace.write_text("notes/shopping.md", "# Shopping\n\nchanged on disk\n")
    stale = requests.post(
        f"{site.base}/api/file?path=notes/shopping.md",
        headers=BEARER,
        json={"content": "# Shopping\n\nfrom a script\n", "version": shown["version"]},
    )
    assert stale.status_code == 409 and "changed since" in stale.json()["error"]
    assert site.workspace.read_text("notes/shopping.md") == "# Shopping\n\nchanged on disk\n"
    fresh = stale.json()["version"]
    assert (
        fresh
        == requests.get(f"{site.base}/api/file?path=notes/shopping.md", headers=BEARER).json()["version"]
        != shown["version"]
    )
    ok = requests.post(
        f"{site.base}/api/file?path=notes/shopping.md",
        headers=BEARER,
        json={"content": "# Shopping\n\nfrom a script\n", "version": fresh},
    )
    assert ok.status_code == 200 and site.workspace.read_text("notes/shopping.md") == "# Shopping\n\nfrom a script\n"


def test_deleting_a_file_changed_since_it_was_shown_is_refused(site):
    session = _session(site)
    xsrf = _xsrf(session, site)
    shown = _version(session.get(f"{site.base}/file?path=notes/shopping.md").text)
    site.workspace.write_text("notes/shopping.md", "# Shopping\n\nthe bot added this\n")
    reply = session.post(
        f"{site.base}/file/delete",
        data={"path": "notes/shopping.md", "version": shown, "_xsrf": xsrf},
        allow_redirects=False,
    )
    assert reply.status_code == 409 and "changed since you opened it" in reply.text
    assert site.workspace.read_text("notes/shopping.md") == "# Shopping\n\nthe bot added this\n"
    current = _version(session.get(f"{site.base}/file?path=notes/shopping.md").text)
    reply = session.post(
        f"{site.base}/file/delete",
        data={"path": "notes/shopping.md", "version": current, "_xsrf": xsrf},
        allow_redirects=False,
    )
    assert reply.status_code == 302 and not site.workspace.exists("notes/shopping.md")


def test_a_note_that_is_not_utf8_is_shown_and_not_overwritten_by_the_editor(site):
    """A hand-copied Latin-1 note: the view answered 500; an edit would replace its bytes with U+FFFD."""
    raw = "# Café\n\nCrème brûlée for Sunday.\n".encode("latin-1")
    site.workspace.path("notes/latin.md").write_bytes(raw)
    page = requests.get(f"{site.base}/file?path=notes/latin.md", headers=BEARER)
    assert page.status_code == 200 and "Sunday" in page.text and "not UTF-8" in page.text
    assert "edit=1" not in page.text  # no Edit button for it
    shown = requests.get(f"{site.base}/api/file?path=notes/latin.md", headers=BEARER)
    assert shown.status_code == 200 and "Sunday" in shown.json()["text"]
    reply = requests.post(
        f"{site.base}/api/file?path=notes/latin.md",
        headers=BEARER,
        json={"content": shown.json()["text"], "version": shown.json()["version"]},
    )
    assert reply.status_code == 400 and "not UTF-8" in reply.json()["error"]
    assert site.workspace.path("notes/latin.md").read_bytes() == raw
    assert requests.delete(f"{site.base}/api/file?path=notes/latin.md", headers=BEARER).json() == {"deleted": True}


def test_drafted_skills_are_shown_and_approved_or_discarded_with_the_form_token(site):
    from assistant_framework.agentskills.drafts import write_draft

    write_draft(site.workspace, "weekly-report", "Writes the weekly report.", "1. List the week's done tasks.")
    write_draft(site.workspace, "bad-idea", "Something the owner does not want.", "Do it.")
    listed = requests.get(f"{site.base}/api/skills/drafts", headers=BEARER).json()
    assert [d["name"] for d in listed["drafts"]] == ["bad-idea", "weekly-report"]
    session = _session(site)
    page = session.get(f"{site.base}/skills/drafts").text
    assert (
        "done tasks." in page
        and "Writes the weekly report." in page
        and 'action="/skills/drafts/weekly-report/approve"' in page
    )
    forged = session.post(f"{site.base}/skills/drafts/weekly-report/approve", allow_redirects=False)
    assert forged.status_code == 403 and not (site.workspace.root / ".agents" / "skills" / "weekly-report").exists()
    xsrf = _xsrf(session, site, "/skills/drafts")
    done = session.post(f"{site.base}/skills/drafts/weekly-report/approve", data={"_xsrf": xsrf}, allow_redirects=False)
    assert done.status_code == 302 and "approved" in done.headers["Location"]
    assert (site.workspace.root / ".agents" / "skills" / "weekly-report" / "SKILL.md").is_file()
    assert requests.post(f"{site.base}/api/skills/drafts/bad-idea/discard", headers=BEARER).json()["done"] == "discard"
    assert requests.get(f"{site.base}/api/skills/drafts", headers=BEARER).json()["drafts"] == []
    assert requests.post(f"{site.base}/api/skills/drafts/nothing/approve", headers=BEARER).status_code == 409
    assert requests.post(f"{site.base}/skills/drafts/weekly-report/approve").status_code == 401  # no token


@pytest.mark.parametrize("host", ["evil-localhost", "evil-localhost:8080", "notlocalhost", "localhost.evil.example"])
def test_a_host_name_that_only_looks_like_localhost_is_refused_on_loopback(host: str) -> None:
    """The DNS-rebinding check: on loopback only loopback names pass, not a name that ends like one."""
    from assistant_framework.web.auth import host_allowed

    assert not host_allowed(host, "127.0.0.1")
    assert host_allowed("localhost:8080", "127.0.0.1") and host_allowed("LOCALHOST", "127.0.0.1")


def test_a_short_token_left_in_state_is_replaced_by_a_new_long_one(tmp_path: Path) -> None:
    """A hand-written short token in state/web/token is not used as the page's key: a new one is made."""
    from assistant_framework.config.settings import WebSettings
    from assistant_framework.web.auth import MIN_TOKEN_CHARS, load_or_create_token

    workspace = Workspace(tmp_path / "ws")
    workspace.write_text(TOKEN_FILE, "short\n")
    token = load_or_create_token(WebSettings(), workspace)
    assert token.generated and len(token.value) >= MIN_TOKEN_CHARS
    assert workspace.read_text(TOKEN_FILE).strip() == token.value
    assert stat.S_IMODE(os.stat(workspace.path(TOKEN_FILE)).st_mode) == 0o600


def _bytes_read() -> int:
    """What this process read so far (``rchar`` of /proc/self/io: every read and pread, the page's server thread's
    too)."""
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise AssertionError("no rchar in /proc/self/io")


def test_the_collectors_view_reads_only_the_end_of_a_long_run_log(site):
    """A year of runs every 10 minutes is about 11 MB: the view reads the last run's line from the end (it read the
    whole file for it: 1.2 s for three collectors after a year, docs/benchmarks.md)."""
    old = "".join(
        '{"started":"2025-01-01T00:00:00+00:00","outcome":"ok","new":0,"summary":"an old run %07d","errors":[]}\n' % n
        for n in range(80_000)
    )
    site.workspace.write_text("collectors/writer/runs.jsonl", old + '{"outcome":"ok","summary":"the newest run"}\n')
    assert site.workspace.path("collectors/writer/runs.jsonl").stat().st_size > 8_000_000
    before = _bytes_read()
    rows = {r["name"]: r for r in requests.get(f"{site.base}/api/collectors", headers=BEARER).json()["collectors"]}
    assert rows["writer"]["last_summary"] == "the newest run"
    assert _bytes_read() - before < 1_000_000
