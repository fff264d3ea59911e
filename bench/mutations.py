"""A mutation audit of the security and reliability guards: does the suite notice when a guard breaks?

Each mutation below is a one-line change of the kind a careless refactor makes (a flipped condition,
a removed check, ``==`` for ``in``, an early return) in one guard. The script copies the committed
tree (``git archive HEAD``) to a temporary folder, and for each mutation: applies it there, runs the
test files that guard that code (``pytest -x -q -p no:cacheprovider``, the copy first on
``PYTHONPATH`` so the bot processes the tests start run the mutated code too), records whether a
test failed (caught) or all passed (survived), and writes the file back. Your own checkout is never
changed, so you can go on working meanwhile.

A mutation marked ``equivalent`` changes nothing a user or an attacker can observe (the reason is
given): it is expected to survive. Every other survivor is a guard no test checks: write the test.

    .venv/bin/python bench/mutations.py                  # all mutations (about an hour on 2 busy cores)
    .venv/bin/python bench/mutations.py --list           # the mutations and the tests each runs
    .venv/bin/python bench/mutations.py --only policy-untrusted-min netguard-one-address
    .venv/bin/python bench/mutations.py --json results.json

Exit status: 0 when every mutation not marked equivalent was caught, 1 otherwise, 2 when a mutation
no longer applies (its line changed: update the list).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Mutation:
    """One one-line change to one guard, and the test files that should notice it."""

    id: str
    path: str
    old: str  # must occur exactly once in the file
    new: str
    breaks: str  # what the change would let through
    tests: tuple[str, ...]
    equivalent: str = ""  # why no test can notice it (then it is expected to survive)


# Test files by the guard they cover (the mutation loop runs only these, to keep the machine usable).
ACCESS = (
    "test_security_guests.py",
    "test_security_owner_commands.py",
    "test_guest_skills.py",
    "test_call_path.py",
    "test_security_injection.py",
    "test_untrusted_overwrites.py",
    "test_policy.py",
)
POLICY = (
    "test_policy.py",
    "test_agent_policy.py",
    "test_untrusted_overwrites.py",
    "test_security_injection.py",
    "test_call_path.py",
    "test_security.py",
)
REDACTION = (
    "test_redaction.py",
    "test_secret_keys.py",
    "test_policy.py",
    "test_agent_policy.py",
    "test_security.py",
    "test_config.py",
)
PATHS = (
    "test_workspace.py",
    "test_paths_sibling_folder.py",
    "test_security.py",
    "test_security_guests.py",
    "test_memory_damage.py",
    "test_web_http.py",
)
INBOX = (
    "test_inbox.py",
    "test_inbox_compaction.py",
    "test_telegram_lifecycle.py",
    "test_reliability_state.py",
    "test_signal_reliability.py",
    "test_signal.py",
)
BACKUP = ("test_backup.py", "test_restore_paths.py", "test_private_files.py", "test_workspace_tightening.py")
NET = (
    "test_web_skill.py",
    "test_netguard_bypasses.py",
    "test_netguard_https.py",
    "test_netguard_through_the_bot.py",
    "test_policy.py",
)
WEB = ("test_web_signin.py", "test_web_http.py", "test_web_limits.py", "test_web_bot.py")
GUARD = (
    "test_policy.py",
    "test_agent_policy.py",
    "test_untrusted_overwrites.py",
    "test_security_injection.py",
    "test_call_path.py",
    "test_memory_skills_untrusted.py",
    "test_untrusted_writes.py",
    "test_forwarded_media.py",
    "test_outside_content_neighbours.py",
)
FRAMING = ("test_protocol.py", "test_quoted_calls.py")
TELEGRAM = (
    "test_security.py",
    "test_security_guests.py",
    "test_security_owner_commands.py",
    "test_telegram_basic.py",
    "test_telegram_group_allowlist.py",
    "test_telegram_lifecycle.py",
)
SIGNAL = (
    "test_signal_identity.py",
    "test_signal_allowlist.py",
    "test_security_owner_commands.py",
    "test_signal.py",
    "test_guest_skills.py",
)
PREPARE = ("test_call_path.py", "test_skills_manager.py", "test_skills_small_model_args.py", "test_agent_policy.py")

AF = "assistant_framework"
BOT = "messaging_llm_bot"

MUTATIONS: tuple[Mutation, ...] = (
    # -- who sees the owner's data (access.py) ----------------------------------------------------------
    Mutation(
        "access-owner-or-private",
        f"{AF}/access.py",
        "return bool(is_owner and one_to_one)",
        "return bool(is_owner or one_to_one)",
        "a friend's private chat sees the owner's data",
        ACCESS,
    ),
    Mutation(
        "access-owner-anywhere",
        f"{AF}/access.py",
        "return bool(is_owner and one_to_one)",
        "return bool(is_owner)",
        "the owner's group chats see the owner's data",
        ACCESS,
    ),
    Mutation(
        "access-command-case",
        f"{AF}/access.py",
        "return owner_data or command.lower() not in OWNER_ONLY_COMMANDS",
        "return owner_data or command not in OWNER_ONLY_COMMANDS",
        "/NOW runs for a friend",
        ACCESS,
        equivalent="every caller passes a lower-case name (Telegram the name it registered, run_command the name "
        "it lowered), so the second lower() changes nothing; /NOW is tested through both bots",
    ),
    Mutation(
        "access-stats-not-owner-only",
        f"{AF}/access.py",
        'OWNER_ONLY_COMMANDS = frozenset({"now", "reload", "stats"})',
        'OWNER_ONLY_COMMANDS = frozenset({"now", "reload"})',
        "/stats shows a friend the owner's usage",
        ACCESS,
    ),
    Mutation(
        "access-empty-guest-skills-default",
        f"{AF}/access.py",
        "DEFAULT_GUEST_SKILLS if listed is None else",
        "DEFAULT_GUEST_SKILLS if not listed else",
        "policy.guest_skills: [] gives guests the default skills",
        ACCESS,
    ),
    Mutation(
        "access-prompt-files-exact",
        f"{AF}/access.py",
        "return any(rel == p or rel.startswith(p) for p in PROMPT_FILES)",
        "return any(rel == p for p in PROMPT_FILES)",
        "a write into context/ after outside content is not a prompt-file write",
        ACCESS + ("test_agent_policy.py",),
    ),
    Mutation(
        "access-prompt-files-dot-slash",
        f"{AF}/access.py",
        'rel = str(rel).replace("\\\\", "/").lstrip("./")',
        'rel = str(rel).replace("\\\\", "/")',
        "./context/x.md is not a prompt file",
        ACCESS + ("test_agent_policy.py",),
        equivalent="the gate, its only caller, judges each path as written and as the workspace resolves it "
        "(./context/x.md resolves to context/x.md), so the prompt-file rule still applies",
    ),
    Mutation(
        "access-plugin-dir-inside",
        f"{AF}/access.py",
        "if folder == root or root in folder.parents or folder == root.parent:",
        "if folder == root or folder == root.parent:",
        "runtime.skills_dirs inside the workspace is accepted (the model writes code the bot imports)",
        ("test_security_injection.py", "test_config.py"),
    ),
    # -- the capability policy and the audit log (policy.py) -------------------------------------------
    Mutation(
        "policy-send-not-guarded",
        f"{AF}/policy.py",
        'GUARDED_WHEN_UNTRUSTED = frozenset({"delete", "network", "send"})',
        'GUARDED_WHEN_UNTRUSTED = frozenset({"delete", "network"})',
        "a send after outside content runs without the owner",
        POLICY,
    ),
    Mutation(
        "policy-untrusted-min",
        f"{AF}/policy.py",
        'strictest = max(caps, key=lambda cap: _ORDER.get(rules.get(cap, "ask"), 1))',
        'strictest = min(caps, key=lambda cap: _ORDER.get(rules.get(cap, "ask"), 1))',
        "the most lenient capability rule decides",
        POLICY,
    ),
    Mutation(
        "policy-unknown-capability-allowed",
        f"{AF}/policy.py",
        'strictest = max(caps, key=lambda cap: _ORDER.get(rules.get(cap, "ask"), 1))',
        'strictest = max(caps, key=lambda cap: _ORDER.get(rules.get(cap, "allow"), 1))',
        "a capability the policy does not name is ranked as allowed",
        POLICY,
        equivalent="the skill loader refuses a capability it does not know and the defaults name all five, so "
        "the default of rules.get is never used",
    ),
    Mutation(
        "policy-per-skill-skips-untrusted",
        f"{AF}/policy.py",
        'if decision.action == "allow" and untrusted:',
        'if decision.action == "allow" and untrusted and not per_skill:',
        "a per-skill allow lifts the untrusted-content rule",
        POLICY,
    ),
    Mutation(
        "policy-redact-prefix-only",
        f"{AF}/policy.py",
        'if key and SECRET_KEY.search(str(key)) and value not in (None, "", [], {}):',
        'if key and SECRET_KEY.match(str(key)) and value not in (None, "", [], {}):',
        "a key like user_password or x-api-key is logged in clear",
        REDACTION,
    ),
    Mutation(
        "policy-redact-lists-shallow",
        f"{AF}/policy.py",
        "return [redact_args(v) for v in value]",
        "return list(value)",
        "secret keys inside objects in a list reach the audit log",
        REDACTION,
    ),
    # -- config show and the secret-key pattern (config/env.py) ----------------------------------------
    Mutation(
        "env-secret-case",
        f"{AF}/config/env.py",
        ')", re.IGNORECASE',
        ')"',
        "API_KEY or Token keys are shown in clear",
        REDACTION,
    ),
    Mutation(
        "env-redact-list-under-secret",
        f"{AF}/config/env.py",
        "return [redact(v, key) for v in value]",
        "return [redact(v) for v in value]",
        "a list of secrets (passwords: [...]) is shown by config show",
        REDACTION + ("test_config_local.py",),
    ),
    Mutation(
        "env-no-credential",
        f"{AF}/config/env.py",
        "|secret|credential|private[_-]?key)",
        "|secret|private[_-]?key)",
        "a credentials field is shown and logged in clear",
        REDACTION,
    ),
    # -- redaction of echoed secrets (redaction.py) ----------------------------------------------------
    Mutation(
        "redaction-whole-secrets-only",
        f"{AF}/redaction.py",
        "width = len(secret) if len(secret) < min_run else min_run",
        "width = len(secret)",
        "a key echoed cut short or in pieces is shown",
        REDACTION,
    ),
    Mutation(
        "redaction-first-occurrence-only",
        f"{AF}/redaction.py",
        "start = text.find(gram, start + 1)",
        "start = -1",
        "a secret echoed twice is redacted once",
        REDACTION,
    ),
    # -- path confinement (workspace/paths.py, workspace/files.py) -------------------------------------
    Mutation(
        "paths-inside-prefix",
        f"{AF}/workspace/paths.py",
        "return resolved == root or root in resolved.parents",
        "return str(resolved).startswith(str(root))",
        "a link to a sibling folder named like the workspace (ws-evil) counts as inside",
        PATHS,
    ),
    Mutation(
        "paths-dotdot-first-only",
        f"{AF}/workspace/paths.py",
        'if any(p == ".." for p in parts):',
        'if parts[:1] == [".."]:',
        "notes/../../x leaves the workspace",
        PATHS,
    ),
    Mutation(
        "paths-control-chars",
        f"{AF}/workspace/paths.py",
        "if _CONTROL.search(text):",
        'if "\\x00" in text:',
        "a newline in a file name poses as two lines in a listing",
        PATHS,
    ),
    Mutation(
        "paths-home",
        f"{AF}/workspace/paths.py",
        'if text.startswith("/") or (len(text) > 1 and text[1] == ":") or text.startswith("~"):',
        'if text.startswith("/") or (len(text) > 1 and text[1] == ":"):',
        "~/x is taken as a relative name",
        PATHS,
    ),
    Mutation(
        "paths-links-on-the-way",
        f"{AF}/workspace/paths.py",
        "if current.is_symlink() and not _inside(root, current.resolve()):",
        "if False:",
        "a link out to the folder holding the workspace and back in is followed",
        PATHS,
    ),
    Mutation(
        "paths-has-link-error",
        f"{AF}/workspace/paths.py",
        "return True  # e.g. a file used as a folder: let resolve() decide",
        "return False",
        "an lstat error skips the symlink check",
        PATHS,
    ),
    Mutation(
        "files-list-no-check",
        f"{AF}/workspace/files.py",
        "self.path(rel)\n            except WorkspacePathError:",
        "pass\n            except WorkspacePathError:",
        "Workspace.list shows files behind a link out",
        PATHS,
    ),
    Mutation(
        "files-glob-dotdot",
        f"{AF}/workspace/files.py",
        'if "\\x00" in pattern or pattern.startswith("/") or ".." in pattern.split("/"):',
        'if "\\x00" in pattern or pattern.startswith("/"):',
        "a glob with '..' lists the folder holding the workspace",
        PATHS,
    ),
    Mutation(
        "files-delete-root",
        f"{AF}/workspace/files.py",
        "if target == self.root:",
        "if False:",
        "delete('.') removes the workspace root when it is empty",
        PATHS,
    ),
    Mutation(
        "files-append-newline",
        f"{AF}/workspace/files.py",
        'if "\\n" in line.rstrip("\\n"):',
        "if False:",
        "an appended line with a newline forges a second log line",
        PATHS,
    ),
    Mutation(
        "files-append-not-private",
        f"{AF}/workspace/files.py",
        "if st.st_mode & NOT_PRIVATE:  # a file made before, or by hand: private from now on",
        "if False:",
        "a log file made 0644 stays readable by others",
        PATHS + ("test_private_files.py",),
    ),
    # -- the durable inbox (inbox.py) ------------------------------------------------------------------
    Mutation(
        "inbox-batch-duplicates",
        f"{AF}/inbox.py",
        "if any(item.source_id == source_id for item in batch):",
        "if False:",
        "an update twice in one batch is answered twice",
        INBOX,
    ),
    Mutation(
        "inbox-unknown-fingerprint-is-new",
        f"{AF}/inbox.py",
        "if not (fingerprint and known and known != fingerprint):",
        "if not (fingerprint and known != fingerprint):",
        "an id logged without a fingerprint (older seen.log) is answered again",
        INBOX,
    ),
    Mutation(
        "inbox-compaction-drops-pending",
        f"{AF}/inbox.py",
        "newest = set(list(self._seen)[-SEEN_KEEP:]) | {item.source_id for item in self._items.values()}",
        "newest = set(list(self._seen)[-SEEN_KEEP:])",
        "a pending item's id is forgotten by a compaction while running",
        INBOX,
    ),
    Mutation(
        "inbox-crash-ids-not-logged",
        f"{AF}/inbox.py",
        "self.ws.append_line(SEEN_LOG, seen_line(source_id, unlogged[source_id]))",
        "pass",
        "an item written just before a kill is answered again after a re-delivery",
        INBOX,
    ),
    Mutation(
        "inbox-parts-with-gaps",
        f"{AF}/inbox.py",
        "while count in item.parts:",
        "while count < len(item.parts):",
        "a reply part missing in the middle is never sent",
        INBOX,
        equivalent="parts are sent and recorded in order, one at a time per chat, so the ledger never holds a gap",
    ),
    # -- backup and restore (backup.py) ----------------------------------------------------------------
    Mutation(
        "backup-webhook-secret",
        f"{AF}/backup.py",
        'SECRETS = ("state/web/", "state/webhook_secret")',
        'SECRETS = ("state/web/",)',
        "the webhook secret goes into the archive",
        BACKUP,
    ),
    Mutation(
        "backup-archive-inside",
        f"{AF}/backup.py",
        "if target.resolve().is_relative_to(ws.root):",
        "if False:",
        "a backup written into the workspace it backs up (and into the next backup)",
        BACKUP,
    ),
    Mutation(
        "backup-fchmod",
        f"{AF}/backup.py",
        "os.fchmod(fd, FILE_MODE)  # the archive holds all memory",
        "pass  # the archive holds all memory",
        "the archive is not 0600",
        BACKUP,
        equivalent="the partial file is created anew (O_EXCL after an unlink) with mode 0600, and a umask "
        "only removes bits: the fchmod is a second fence",
    ),
    Mutation(
        "backup-links-followed",
        f"{AF}/backup.py",
        "if path.is_symlink():",
        "if False:",
        "a link in the workspace goes into the archive (restore then refuses the whole archive)",
        BACKUP,
    ),
    Mutation(
        "restore-dotdot",
        f"{AF}/backup.py",
        'if not parts or parts[0] != ARCHIVE_ROOT or ".." in parts or member.name.startswith("/"):',
        'if not parts or parts[0] != ARCHIVE_ROOT or member.name.startswith("/"):',
        "workspace/../x is unpacked beside the target",
        BACKUP,
    ),
    Mutation(
        "restore-hard-links",
        f"{AF}/backup.py",
        "if member.issym() or member.islnk():",
        "if member.issym():",
        "a hard link is refused only by the type check (message still names links)",
        BACKUP,
        equivalent="the member type check right after it refuses a hard link too (LNKTYPE is no file type) "
        "with a message naming links, before anything is written",
    ),
    Mutation(
        "restore-no-lock",
        f"{AF}/backup.py",
        "with exclusive(target):  # held through the swap",
        "with open(os.devnull):  # held through the swap",
        "restore --force replaces the workspace under a running bot",
        BACKUP,
    ),
    Mutation(
        "restore-disk-reserve",
        f"{AF}/backup.py",
        "if disk + DISK_RESERVE > free:",
        "if disk > free + DISK_RESERVE:",
        "a restore fills the disk",
        BACKUP,
    ),
    Mutation(
        "restore-not-tightened",
        f"{AF}/backup.py",
        "tighten(staging / ARCHIVE_ROOT)  # private whatever modes the archive carries",
        "pass",
        "restored files keep the archive's 0644/0755",
        BACKUP,
    ),
    # -- the SSRF guard (netguard.py) ------------------------------------------------------------------
    Mutation(
        "netguard-one-address",
        f"{AF}/netguard.py",
        "for address in addresses:\n            if is_internal",
        "for address in addresses[:1]:\n            if is_internal",
        "one DNS answer with a public and an internal address passes",
        NET,
    ),
    Mutation(
        "netguard-user-info",
        f"{AF}/netguard.py",
        'if parts.auth is not None or "@" in (parts.netloc or "") or "@" in url.split("//", 1)[-1].split("/", 1)[0]:',
        "if parts.auth is not None:",
        "http://127.0.0.1:P\\@8.8.8.8/ style URLs reach the parsers",
        NET,
    ),
    Mutation(
        "netguard-mapped-public",
        f"{AF}/netguard.py",
        "if embedded is not None and is_internal(embedded):",
        "if embedded is not None and not embedded.is_global:",
        "a 6to4/NAT64 address embedding a special-use IPv4 (100.64/10) passes",
        NET,
    ),
    Mutation(
        "netguard-cgnat",
        f"{AF}/netguard.py",
        '        "100.64.0.0/10",\n',
        "",
        "carrier-grade NAT (Tailscale) addresses are fetched",
        NET,
        equivalent="Python's ipaddress already counts 100.64.0.0/10 as not global; the list covers versions "
        "that do not (the test of the range fails on those)",
    ),
    Mutation(
        "netguard-trust-env",
        f"{AF}/netguard.py",
        "self.session.trust_env = False",
        "self.session.trust_env = True",
        "a proxy from the environment resolves the name again, unchecked",
        NET,
    ),
    Mutation(
        "netguard-unpinned-host",
        f"{AF}/netguard.py",
        'host_params["host"] = checked.address',
        "pass",
        "the connection resolves the name again (DNS rebinding)",
        NET,
    ),
    Mutation(
        "netguard-localhost-suffix",
        f"{AF}/netguard.py",
        'return host in ("localhost", "localhost.localdomain") or host.endswith(".localhost")',
        'return host in ("localhost", "localhost.localdomain")',
        "x.localhost is resolved by DNS instead of being loopback",
        NET,
    ),
    # -- the web page (web/auth.py, web/screen.py, web/limits.py) --------------------------------------
    Mutation(
        "web-loopback-suffix",
        f"{AF}/web/auth.py",
        'if host.strip().lower() == "localhost":',
        'if host.strip().lower().endswith("localhost"):',
        "Host: evil-localhost passes the DNS-rebinding check",
        WEB,
    ),
    Mutation(
        "web-throttle-credit",
        f"{AF}/web/auth.py",
        "self._level = max(0.0, self._level - (now - self._at) / self.refill_seconds)",
        "self._level = self._level - (now - self._at) / self.refill_seconds",
        "a quiet hour banks hundreds of wrong tokens for one burst",
        WEB,
    ),
    Mutation(
        "web-short-stored-token",
        f"{AF}/web/auth.py",
        "if len(stored) >= MIN_TOKEN_CHARS:",
        "if stored:",
        "a short token in state/web/token is used as it is",
        WEB,
    ),
    Mutation(
        "web-short-config-token",
        f"{AF}/web/auth.py",
        "if len(configured) < MIN_TOKEN_CHARS:",
        "if not configured:",
        "web.token: abc is accepted",
        WEB,
    ),
    Mutation(
        "web-signed-in-any-size",
        f"{AF}/web/screen.py",
        "if length > limits.max_body_bytes:",
        "if length > limits.max_body_bytes and not signed_in(headers, token, secret):",
        "a signed-in client (or a stolen cookie) sends 90 MB bodies",
        WEB,
    ),
    Mutation(
        "web-chunked",
        f"{AF}/web/screen.py",
        'if "Transfer-Encoding" in headers:',
        "if False:",
        "a chunked body has no length to check before it is read",
        WEB,
    ),
    Mutation(
        "web-host-check-after-body",
        f"{AF}/web/screen.py",
        'if not host_allowed(headers.get("Host", ""), listening_on):',
        "if False:",
        "a foreign Host reaches the handlers",
        WEB,
    ),
    Mutation(
        "web-cap-reserve",
        f"{AF}/web/limits.py",
        "room = fd_limit - max(FD_RESERVE, fd_limit // 2)",
        "room = fd_limit - FD_RESERVE",
        "the page takes all but 128 descriptors",
        WEB,
    ),
    Mutation(
        "web-cap-off-by-one",
        f"{AF}/web/limits.py",
        "if self._live() >= self.limits.max_connections:",
        "if self._live() > self.limits.max_connections:",
        "one connection more than the cap",
        WEB,
    ),
    Mutation(
        "web-csrf-subject",
        f"{AF}/web/csrf.py",
        'return hmac.compare_digest(given.encode("utf-8", "replace"), form_token(key, subject).encode("ascii"))',
        'return hmac.compare_digest(given.encode("utf-8", "replace"), form_token(key, subject.split(":")[0]).encode("ascii"))',  # noqa: E501
        "one form token for every session",
        WEB,
    ),
    # -- the gate of every skill call (agent/guard.py) -------------------------------------------------
    Mutation(
        "guard-read-drops-network",
        f"{BOT}/agent/guard.py",
        'return ["read", *reach]',
        'return ["read"]',
        "a network skill's search runs after outside content without the owner",
        GUARD,
    ),
    Mutation(
        "guard-untrusted-write-needs-write",
        f"{BOT}/agent/guard.py",
        'if not {"write", "delete"}.intersection(caps):',
        'if "write" not in caps:',
        "a removal by a skill that declares only delete is judged by the policy alone",
        GUARD,
    ),
    Mutation(
        "guard-first-path-only",
        f"{BOT}/agent/guard.py",
        "for rel in paths:\n            try:\n                if workspace.path(rel).is_file():",
        "for rel in paths[:1]:\n            try:\n                if workspace.path(rel).is_file():",
        "a write naming a new file first and an existing one second overwrites without the owner",
        GUARD,
    ),
    Mutation(
        "guard-paths-key",
        f"{BOT}/agent/guard.py",
        '_PATH_KEYS = ("path", "paths", "file", "folder")',
        '_PATH_KEYS = ("path", "file", "folder")',
        "a delete of several files (paths: [...]) into context/ is no prompt-file write",
        GUARD,
    ),
    Mutation(
        "guard-network-not-outside",
        f"{BOT}/agent/guard.py",
        'if "network" in (capabilities or ()):',
        "if False:",
        "a fetched page does not mark the turn untrusted",
        GUARD,
    ),
    Mutation(
        "guard-inbox-not-outside",
        f"{BOT}/agent/guard.py",
        'UNTRUSTED_MARKERS = ("collectors/", "inbox/", "collector:", OUTSIDE_LABEL)',
        'UNTRUSTED_MARKERS = ("collectors/", "collector:", OUTSIDE_LABEL)',
        "reading a saved attachment (inbox/) leaves the turn trusted",
        GUARD,
    ),
    Mutation(
        "guard-approve-truthy",
        f"{BOT}/agent/guard.py",
        "approved = bool(approve(request))",
        "approved = approve(request) is not False",
        "a confirmation path that answers None (timed out) approves",
        GUARD,
        equivalent="every frontend's approve returns a bool (Telegram, Signal and the terminal answer "
        "False on a timeout or /stop), so no caller can give None",
    ),
    Mutation(
        "guard-deny-not-audited",
        f"{BOT}/agent/guard.py",
        'self.audit(chat, skill.name, args, decision.action, "denied")',
        "pass",
        "a denied call leaves no audit line",
        GUARD,
    ),
    Mutation(
        "guard-overwrite-judged-in-owner-area",
        f"{BOT}/agent/guard.py",
        "why = untrusted_write(skill, args, caps, workspace or self.workspace, guest=guest)",
        "why = untrusted_write(skill, args, caps, self.workspace, guest=guest)",
        "a guest's overwrite of its own file after outside content is judged by the owner's files",
        GUARD + ("test_security_guests.py",),
    ),
    # -- one call of a turn (agent/calls.py) -----------------------------------------------------------
    Mutation(
        "calls-guest-any-skill",
        f"{BOT}/agent/calls.py",
        "elif skills.get(call.skill) is None or (turn.guest is not None and call.skill not in turn.guest):",
        "elif skills.get(call.skill) is None:",
        "a guest's model calls an owner skill (notes, tasks) anyway",
        ACCESS,
    ),
    Mutation(
        "calls-history-not-guarded",
        f"{BOT}/agent/calls.py",
        "untrusted=turn.guarded,",
        "untrusted=turn.untrusted,",
        "outside content earlier in the chat no longer guards later turns",
        GUARD,
    ),
    Mutation(
        "calls-run-in-owner-area",
        f"{BOT}/agent/calls.py",
        "result = self.skills.run_prepared(call, context, workspace=where)",
        "result = self.skills.run_prepared(call, context)",
        "a guest's call runs on the owner's workspace",
        ACCESS,
    ),
    Mutation(
        "calls-guest-flag",
        f"{BOT}/agent/calls.py",
        "guest=turn.guest is not None,",
        "guest=False,",
        "a guest turn is gated as the owner's (prompt-file rule)",
        ACCESS + GUARD,
        equivalent="a guest's area has no prompt files (context/, learnings/ are read only from the owner's "
        "workspace), so judging a guest write as a prompt-file write only asks more; a guest chat has no "
        "approve callback, so it can only be refused more, never allowed more",
    ),
    Mutation(
        "calls-network-result-trusted",
        f"{BOT}/agent/calls.py",
        "if touches_untrusted(args, result.value, skill.capabilities):",
        "if touches_untrusted(args, result.value):",
        "a fetched page leaves the turn trusted",
        GUARD,
    ),
    Mutation(
        "calls-marks-history-turns",
        f"{BOT}/agent/calls.py",
        "context.untrusted = turn.guarded",
        "context.untrusted = turn.untrusted",
        "what a skill writes while outside content is in the history is stored unmarked",
        GUARD,
    ),
    # -- is an answer a call (protocol/framing.py) -----------------------------------------------------
    Mutation(
        "framing-quoted-line",
        f"{BOT}/protocol/framing.py",
        'if before.lstrip().startswith(">") or _LIST_ITEM_RE.match(before):',
        "if _LIST_ITEM_RE.match(before):",
        "a call on a '> ' quoted line runs",
        FRAMING,
    ),
    Mutation(
        "framing-guarded-tail",
        f"{BOT}/protocol/framing.py",
        "    if guarded:\n        return True\n",
        "",
        "in a guarded turn a call followed by a line of prose runs",
        FRAMING,
    ),
    Mutation(
        "framing-open-quote",
        f"{BOT}/protocol/framing.py",
        'return any(mark in _CLOSED_QUOTE_RE.sub("", before) for mark in _OPENERS)',
        "return False",
        "a call after an opening quotation mark still open on its line runs",
        FRAMING,
    ),
    Mutation(
        "framing-lead-lines",
        f"{BOT}/protocol/framing.py",
        "return len(text.strip()) > LEAD_MAX_CHARS or len(lines) > LEAD_MAX_LINES",
        "return len(text.strip()) > LEAD_MAX_CHARS",
        "a call after many short lines of prose runs",
        FRAMING,
    ),
    # -- Telegram: allowlist and owner-only commands (frontends/telegram/handlers.py) ------------------
    Mutation(
        "telegram-group-is-owner",
        f"{BOT}/frontends/telegram/handlers.py",
        'user is not None and user.id == self.settings.owner_id, chat is not None and chat.type == "private"',
        'user is not None and user.id == self.settings.owner_id, chat is not None and chat.type != "channel"',
        "the owner's group chats see the owner's data",
        TELEGRAM,
    ),
    Mutation(
        "telegram-persist-strangers",
        f"{BOT}/frontends/telegram/handlers.py",
        "if message is None or not self.allowed(message.from_user) or is_command(message):",
        "if message is None or is_command(message):",
        "a stranger's message is written to the inbox before the gate refuses it",
        TELEGRAM,
    ),
    Mutation(
        "telegram-status-details",
        f"{BOT}/frontends/telegram/handlers.py",
        "if not self.owner_data(update):  # model, skills and collector errors are the owner's business",
        "if False:",
        "/status shows a friend the model, skills and collector errors",
        TELEGRAM,
    ),
    Mutation(
        "telegram-duplicate-not-dropped",
        f"{BOT}/frontends/telegram/handlers.py",
        "if update.update_id in self.duplicates:",
        "if False:",
        "an update delivered twice is answered twice",
        TELEGRAM,
    ),
    Mutation(
        "telegram-userless-passes",
        f"{BOT}/frontends/telegram/handlers.py",
        "            await self._refuse(update, context.bot, user)\n        raise ApplicationHandlerStop",
        "            await self._refuse(update, context.bot, user)\n            raise ApplicationHandlerStop",
        "an update without a user (a channel post) passes the gate",
        TELEGRAM,
    ),
    # -- Signal: allowlist and identity (frontends/signal/) --------------------------------------------
    Mutation(
        "signal-number-without-account",
        f"{BOT}/frontends/signal/identity.py",
        "if pinned is not None and pinned != uuid:",
        "if pinned is not None and uuid and pinned != uuid:",
        "a message with a pinned number and no account passes as that number",
        SIGNAL,
    ),
    Mutation(
        "signal-group-is-owner",
        f"{BOT}/frontends/signal/identity.py",
        "return sees_owner_data(self.owner, msg.group_id is None)",
        "return sees_owner_data(self.owner, True)",
        "the owner's Signal groups see the owner's data",
        SIGNAL,
    ),
    Mutation(
        "signal-repin",
        f"{BOT}/frontends/signal/identity.py",
        "if number in self._pins:\n                return",
        "if False:\n                return",
        "a number is pinned again to another account",
        SIGNAL,
        equivalent="pin runs only for a number with no pin on record (the service checks pinned() first) "
        "and judge has already refused a number whose pin disagrees",
    ),
    Mutation(
        "signal-allowed-any-id",
        f"{BOT}/frontends/signal/settings.py",
        "return bool({normalize_id(x) for x in ids if x} & set(self.allowed))",
        "return bool(ids)",
        "every sender is allowed",
        SIGNAL,
    ),
    Mutation(
        "signal-owner-unchecked",
        f"{BOT}/frontends/signal/settings.py",
        "return self.owner is not None and self.owner in {normalize_id(x) for x in ids if x} and self.allows_any(ids)",
        "return self.owner is None or self.owner in {normalize_id(x) for x in ids if x}",
        "with no owner configured every allowed sender is the owner",
        SIGNAL,
        equivalent="SignalSettings.from_config makes the first allowed id the owner when none is set, so "
        "owner is None only when nobody is allowed, and then no message gets this far",
    ),
    # -- preparing a call (skills/manager.py, skills/prepare.py) ---------------------------------------
    Mutation(
        "prepare-integer-prefix",
        f"{AF}/skills/prepare.py",
        "_INTEGER_TEXT.fullmatch(value.strip())",
        "_INTEGER_TEXT.match(value.strip())",
        "'15; rm' is fitted to an integer (and raises)",
        PREPARE,
    ),
    Mutation(
        "prepare-args-shared",
        f"{AF}/skills/prepare.py",
        "return copy.deepcopy(self.args)",
        "return self.args",
        "a skill that edits its args changes the audit line and the repeat key",
        PREPARE,
    ),
    Mutation(
        "prepare-stale-validator",
        f"{AF}/skills/manager.py",
        "if validator is None or validator.schema is not skill.args_schema:",
        "if validator is None:",
        "after a reload a call is validated against the old schema",
        PREPARE,
    ),
    Mutation(
        "prepare-run-owner-area",
        f"{AF}/skills/manager.py",
        "where = workspace if workspace is not None else self.workspace",
        "where = self.workspace",
        "a guest's prepared call runs on the owner's workspace",
        PREPARE + ("test_security_guests.py",),
    ),
)


@dataclass
class Outcome:
    id: str
    path: str
    result: str  # caught | survived | equivalent-caught | equivalent | error | timeout
    seconds: float
    failed: str  # the first failing test (or the error) when caught


def apply(root: Path, mutation: Mutation) -> str:
    """Apply ``mutation`` under ``root``; return the file's original text."""
    path = root / mutation.path
    text = path.read_text(encoding="utf-8")
    count = text.count(mutation.old)
    if count != 1:
        raise SystemExit(f"{mutation.id}: the line to change occurs {count} times in {mutation.path}; update the list")
    path.write_text(text.replace(mutation.old, mutation.new), encoding="utf-8")
    return text


def run_tests(
    root: Path, mutation: Mutation, timeout: float, workers: int, test_timeout: float, deselect: list[str]
) -> tuple[int, str]:
    """Run the mutation's test files in ``root``; (pytest's exit status, its output)."""
    tests = [f"tests/{name}" for name in dict.fromkeys(mutation.tests)]
    # A broken guard often makes a test wait for something that never comes (a question nobody answers):
    # a shorter per-test timeout than the suite's keeps such a run from costing minutes.
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", f"--timeout={test_timeout:g}", *tests]
    cmd += [arg for node in deselect for arg in ("--deselect", node)]
    if workers > 1:
        cmd += ["-n", str(workers), "--dist", "loadfile"]
    return _pytest(root, cmd, timeout)


def fails_unmutated(root: Path, node: str, timeout: float) -> bool:
    """Whether one test fails on the real code too (the machine's load, a flaky test): then its failure
    under a mutation says nothing about the mutation."""
    status, _ = _pytest(root, [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", node], timeout)
    return status != 0


def _pytest(root: Path, cmd: list[str], timeout: float) -> tuple[int, str]:
    env = {**os.environ, "PYTHONPATH": str(root)}  # the bot processes the tests start import the copy too
    try:
        proc = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return -1, f"timed out after {timeout:g} s"
    return proc.returncode, proc.stdout + proc.stderr


def first_failure(output: str) -> str:
    match = re.search(r"^(?:FAILED|ERROR) (\S+)", output, re.M)
    return match.group(1) if match else (output.strip().splitlines() or [""])[-1][:200]


def copy_of_head(dest: Path) -> None:
    """The committed tree (``git archive HEAD``) under ``dest``, with the checkout's virtualenv linked in."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "HEAD"], capture_output=True, check=True).stdout
    with tempfile.TemporaryFile() as handle:
        handle.write(archive)
        handle.seek(0)
        with tarfile.open(fileobj=handle) as tar:
            tar.extractall(dest, filter="data")
    if (ROOT / ".venv").exists():
        (dest / ".venv").symlink_to(ROOT / ".venv")


def audit(work: Path, m: Mutation, args: argparse.Namespace) -> Outcome:
    """Apply one mutation, run its tests, restore the file. A test that fails on the real code too is left
    out and the run repeated (at most twice): only a failure the mutation causes counts as caught."""
    started = time.monotonic()
    deselected: list[str] = []
    while True:
        original = apply(work, m)
        try:
            status, output = run_tests(work, m, args.timeout, args.workers, args.test_timeout, deselected)
        finally:
            (work / m.path).write_text(original, encoding="utf-8")
        failed = "" if status == 0 else first_failure(output)
        if status != 1 or "::" not in failed or not fails_unmutated(work, failed, args.timeout):
            break
        deselected.append(failed)
        if len(deselected) > 2:
            status, failed = -2, "inconclusive: fails without the mutation too: " + ", ".join(deselected)
            break
    if status == 0:
        result = "equivalent" if m.equivalent else "survived"
    elif status == 1:
        result = "equivalent-caught" if m.equivalent else "caught"
    else:
        result = {-1: "timeout", -2: "inconclusive"}.get(status, "error")
    return Outcome(m.id, m.path, result, round(time.monotonic() - started, 1), failed)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="+", metavar="ID", help="run these mutations only")
    parser.add_argument("--list", action="store_true", help="list the mutations and exit")
    parser.add_argument("--json", metavar="FILE", help="also write the outcomes as JSON")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per mutation's test run (default 900)")
    parser.add_argument("--workers", type=int, default=1, help="pytest-xdist workers per run (default 1)")
    parser.add_argument("--test-timeout", type=float, default=60, help="seconds per test (default 60)")
    parser.add_argument("--tree", metavar="DIR", help="mutate this checkout in place instead of a copy of HEAD")
    args = parser.parse_args(argv)

    chosen = [m for m in MUTATIONS if not args.only or m.id in args.only]
    unknown = set(args.only or ()) - {m.id for m in MUTATIONS}
    if unknown:
        parser.error(f"no such mutation: {', '.join(sorted(unknown))}")
    if args.list:
        for m in chosen:
            mark = " (equivalent)" if m.equivalent else ""
            print(f"{m.id}{mark}: {m.path}: {m.breaks}\n    tests: {' '.join(m.tests)}")
        return 0

    work = Path(args.tree).resolve() if args.tree else Path(tempfile.mkdtemp(prefix="mutations-"))
    try:
        if not args.tree:
            copy_of_head(work)
        for m in chosen:  # every line still there before an hour of runs
            text = (work / m.path).read_text(encoding="utf-8")
            if text.count(m.old) != 1:
                print(f"{m.id}: the line to change occurs {text.count(m.old)} times in {m.path}; update the list")
                return 2
        outcomes = []
        print(f"{len(chosen)} mutations in {work}", flush=True)
        for m in chosen:
            outcome = audit(work, m, args)
            outcomes.append(outcome)
            print(f"{outcome.result:18} {outcome.seconds:6.0f}s  {m.id}  {outcome.failed}", flush=True)
    finally:
        if not args.tree:
            shutil.rmtree(work, ignore_errors=True)

    survived = [o for o in outcomes if o.result in ("survived", "inconclusive")]
    caught = sum(o.result in ("caught", "equivalent-caught", "timeout", "error") for o in outcomes)
    print(f"\n{caught} caught, {len(survived)} survived, {sum(o.result == 'equivalent' for o in outcomes)} equivalent")
    print("| mutation | file | result | first failing test |\n|---|---|---|---|")
    for o in outcomes:
        print(f"| {o.id} | {o.path} | {o.result} | {o.failed} |")
    if args.json:
        Path(args.json).write_text(json.dumps([asdict(o) for o in outcomes], indent=2) + "\n", encoding="utf-8")
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main())
