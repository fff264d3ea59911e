"""Installing a ``SKILL.md`` skill with review: fetch into a staging folder, show what it is, install only
after yes, record where it came from.

A source is a git repository (a URL, or a local folder with ``.git``; ``ref``: a tag, branch or commit,
pinned to its commit), a local folder, or a ``.zip`` / ``.tar.gz`` archive. Archives are checked as
``restore`` checks a backup (``backup.check_members``: no path outside, no link, bounded size), with the
file bound of a skill (``MAX_FILES``). The skill goes to the workspace's ``.agents/skills/<name>/`` by one
rename; ``state/agent_skills.json`` records its source, ref and commit for ``update``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tarfile
import tempfile
import zipfile
import zlib
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TypedDict, cast
from urllib.parse import urlsplit

from assistant_framework.agentskills.format import SKILL_FILE, AgentSkill, AgentSkillError, read_skill_folder
from assistant_framework.agentskills.library import WORKSPACE_SKILLS
from assistant_framework.agentskills.scripts import ScriptError, interpreter
from assistant_framework.backup import BackupError, check_member_name, check_members
from assistant_framework.workspace import Workspace

#: A skill with more files than this is refused (a published skill has tens).
MAX_FILES = 2_000
#: What a skill may unpack to or be copied as.
MAX_BYTES = 64 * 1024**2
#: One git command (a clone of a large repository over a slow link) may take this long.
GIT_SECONDS = 300
RECORDS = "state/agent_skills.json"
#: Where sources are fetched to before they are installed (a folder per fetch).
STAGING = ".agents/.staging"


class InstallError(Exception):
    """Why a source cannot be installed; one sentence, nothing written."""


@dataclass
class Review:
    """What the owner is shown before saying yes: the skill as staged and where it came from."""

    skill: AgentSkill
    source: str
    kind: str  # git | folder | archive
    ref: str | None = None
    commit: str | None = None
    files: list[tuple[str, int]] = field(default_factory=list)
    scripts: list[tuple[str, str]] = field(default_factory=list)  # (file, interpreter or why not)
    licence_files: list[str] = field(default_factory=list)
    replaces: bool = False

    @property
    def capabilities(self) -> list[str]:
        """What using it needs: reading its instructions, and ``exec`` when it has scripts."""
        return ["read", "exec"] if self.scripts else ["read"]

    def capability_notes(self) -> list[str]:
        """Each capability with what it lets the skill do (the CLI's review and the web page's)."""
        notes = ["read (the model reads its instructions with skill_doc)"]
        if self.scripts:
            notes.append(
                "exec (run_script runs its scripts; you are asked each time unless "
                f"policy.skills.{self.skill.name} says)"
            )
        return notes

    def text(self) -> str:
        """The review as the CLI prints it."""
        s = self.skill
        lines = [
            f"Skill:        {s.name}" + ("  (replaces the installed one)" if self.replaces else ""),
            f"Description:  {s.description}",
            f"Source:       {self.source}" + (f" at {self.ref}" if self.ref else "")
            + (f" (commit {self.commit})" if self.commit else ""),
            f"Licence:      {s.license or '(none given)'}"
            + (f"; files: {', '.join(self.licence_files)}" if self.licence_files else ""),
        ]  # fmt: skip
        if s.compatibility:
            lines.append(f"Compatibility: {s.compatibility}")
        if s.allowed_tools:
            lines.append(f"Allowed tools: {' '.join(s.allowed_tools)}")
        lines.append("Capabilities: " + "; ".join(self.capability_notes()))
        total = sum(size for _, size in self.files)
        lines.append(f"Files ({len(self.files)}, {total} bytes):")
        lines += [f"  {rel}  {size} bytes" for rel, size in self.files[:60]]
        if len(self.files) > 60:
            lines.append(f"  ... and {len(self.files) - 60} more")
        if self.scripts:
            lines.append("Scripts:")
            lines += [f"  {rel}  ({how})" for rel, how in self.scripts]
        return "\n".join(lines)


@dataclass
class Staged:
    """A source fetched into a staging folder; ``close`` removes what is left of it."""

    review: Review
    folder: Path
    staging: Path

    def close(self) -> None:
        shutil.rmtree(self.staging, ignore_errors=True)


def _git(args: list[str], cwd: Path | None = None, seconds: float = GIT_SECONDS) -> str:
    env = {key: os.environ[key] for key in ("PATH", "HOME", "LANG") if key in os.environ}
    env.update({"GIT_TERMINAL_PROMPT": "0", "GIT_CONFIG_NOSYSTEM": "1"})
    try:
        done = subprocess.run(
            ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=seconds, check=False
        )
    except FileNotFoundError:
        raise InstallError("git is not installed; install it or give a folder or an archive") from None
    except subprocess.TimeoutExpired:
        raise InstallError(f"git {args[0]} took more than {seconds:g} s; nothing installed") from None
    if done.returncode != 0:
        detail = (done.stderr.strip().splitlines() or ["failed"])[-1][:300]
        raise InstallError(f"git {args[0]} failed: {detail}")
    return done.stdout.strip()


def is_git_source(source: str) -> bool:
    """A URL git fetches (https, ssh, git@), or a local folder that is a repository."""
    if source.startswith(("https://", "http://", "ssh://", "git://", "git@", "file://")):
        return True
    return (Path(source).expanduser() / ".git").exists()


def _refuse_credentials(source: str) -> None:
    """A git URL holding a user name or token (``https://user:token@host/...``) is refused: the source is
    shown in the review and recorded with the skill (state/agent_skills.json, in backups), so the token
    would be too. ``ssh://git@host`` and ``git@host:`` name no secret."""
    if not source.startswith(("https://", "http://", "ssh://", "git://")):
        return
    parts = urlsplit(source)
    if parts.password is not None or (parts.username is not None and parts.scheme in ("https", "http")):
        raise InstallError(
            "a git URL with a user name or token in it is refused (it would be shown and stored with the "
            "skill); use a git credential helper or an SSH key, and give the URL without it"
        )


def _fetch_git(source: str, ref: str | None, into: Path, seconds: float) -> tuple[str, str]:
    """Clone ``source`` into ``into`` at ``ref`` (default: its default branch); (ref, commit)."""
    _git(["clone", "--quiet", "--no-checkout", "--", source, str(into)], seconds=seconds)
    target = ref or "HEAD"
    commit = _git(["rev-parse", "--verify", "--quiet", f"{target}^{{commit}}"], cwd=into, seconds=seconds)
    _git(["-c", "advice.detachedHead=false", "checkout", "--quiet", commit], cwd=into, seconds=seconds)
    shutil.rmtree(into / ".git", ignore_errors=True)
    return target if ref else "", commit


def _unpack_tar(archive: Path, into: Path) -> None:
    try:
        with tarfile.open(archive, "r:*") as tar:
            plan = check_members(
                tar, archive.stat().st_size, MAX_BYTES, into, root=None, max_members=MAX_FILES, what="a skill"
            )
            tar.extractall(into, members=plan.members, filter="data")
    except (tarfile.TarError, EOFError, zlib.error) as exc:
        raise InstallError(f"{archive}: not a readable archive ({exc})") from None
    except BackupError as exc:
        raise InstallError(f"{archive}: {exc}") from None


def _unpack_zip(archive: Path, into: Path) -> None:
    try:
        with zipfile.ZipFile(archive) as bundle:
            members = bundle.infolist()
            if len(members) > MAX_FILES:
                raise InstallError(
                    f"{archive}: the archive holds more than {MAX_FILES} files: refused, nothing written"
                )
            total = 0
            for member in members:
                check_member_name(member.filename, None, "a skill")
                if (member.external_attr >> 16) & 0o170000 == 0o120000:
                    raise InstallError(f"{archive}: {member.filename!r} is a symbolic link: links are refused")
                total += member.file_size
                if total > MAX_BYTES:
                    raise InstallError(f"{archive}: the archive unpacks to more than {MAX_BYTES} bytes: refused")
            bundle.extractall(into)
    except (zipfile.BadZipFile, zlib.error) as exc:
        raise InstallError(f"{archive}: not a readable .zip ({exc})") from None
    except BackupError as exc:
        raise InstallError(f"{archive}: {exc}") from None


def _copy_folder(source: Path, into: Path) -> None:
    _check_tree(source)
    shutil.copytree(source, into, symlinks=True, ignore=shutil.ignore_patterns(".git"))


def _check_tree(folder: Path) -> list[tuple[str, int]]:
    """Every file of ``folder`` (no ``.git``) with its size; InstallError on a link or past the bounds."""
    files: list[tuple[str, int]] = []
    total = 0
    for root, dirs, names in os.walk(folder):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in [*names, *dirs]:
            path = Path(root) / name
            if path.is_symlink():
                raise InstallError(f"{path.relative_to(folder)} is a link: links are refused")
        for name in names:
            path = Path(root) / name
            size = path.stat().st_size
            files.append((path.relative_to(folder).as_posix(), size))
            total += size
            if len(files) > MAX_FILES:
                raise InstallError(f"the skill holds more than {MAX_FILES} files: refused, nothing installed")
            if total > MAX_BYTES:
                raise InstallError(f"the skill is larger than {MAX_BYTES} bytes: refused, nothing installed")
    return sorted(files)


def _skill_folder(tree: Path, name: str | None) -> Path:
    """The folder of the skill to install: the tree itself, or the one (``name``) of those it holds."""
    if (tree / SKILL_FILE).is_file() and (name is None or tree.name == name):
        return tree
    found = sorted({p.parent for p in [*tree.glob(f"*/{SKILL_FILE}"), *tree.glob(f"*/*/{SKILL_FILE}")]})
    if name is not None:
        found = [p for p in found if p.name == name]
    if len(found) == 1:
        return found[0]
    if not found:
        raise InstallError("no SKILL.md in the source" + (f" for a skill named {name!r}" if name else ""))
    names = ", ".join(p.name for p in found)
    raise InstallError(f"the source holds several skills ({names}): choose one with --skill NAME")


def stage(
    workspace: Workspace,
    source: str,
    *,
    ref: str | None = None,
    name: str | None = None,
    git_seconds: float = GIT_SECONDS,
    staging_dir: str = STAGING,
) -> Staged:
    """Fetch ``source`` into a staging folder of the workspace and review it; nothing is installed yet.
    ``git_seconds`` bounds each git command (the web page waits less than a terminal); ``staging_dir`` is
    the workspace folder the fetch goes to (the web page has its own, swept at its start)."""
    _refuse_credentials(source)
    staging_root = workspace.root / staging_dir
    staging_root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix="skill-", dir=staging_root))
    try:
        tree = staging / "tree"
        fetched = _fetch_source(source, ref, tree, git_seconds)
        tree, ref, commit = fetched.tree, fetched.ref, fetched.commit
        folder = _skill_folder(tree, name)
        files = _check_tree(folder)
        try:
            skill = read_skill_folder(folder)
        except AgentSkillError as exc:
            raise InstallError(str(exc).replace(str(folder), skill_label(folder, tree))) from None
        review = Review(skill, fetched.origin, fetched.kind, ref or None, commit, files)
        review.scripts = [(rel, _interpreter_note(folder / rel)) for rel in skill.scripts]
        review.licence_files = [
            rel for rel, _ in files if rel.split("/")[-1].upper().startswith(("LICENSE", "COPYING"))
        ]
        review.replaces = (workspace.root / WORKSPACE_SKILLS / skill.name).exists()
        return Staged(review, folder, staging)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


@dataclass(frozen=True)
class _Fetched:
    """A source copied into the staging tree: what kind it was, where its files are, where it came from."""

    kind: str  # "git", "folder" or "archive"
    tree: Path
    origin: str
    ref: str | None
    commit: str | None


def _fetch_source(source: str, ref: str | None, tree: Path, git_seconds: float) -> _Fetched:
    """Copy a git repository, a folder or an archive into ``tree`` (a folder named as its source for a
    repository or a folder, since a skill at its top must be named as it)."""
    path = Path(source).expanduser()
    # A local source is recorded absolute: ``update`` may run elsewhere (the web page, another folder).
    local = str(path.resolve())
    if is_git_source(source):
        where = source if "://" in source or "@" in source else local
        tree = tree / _source_name(where)
        ref, commit = _fetch_git(where, ref, tree, git_seconds)
        return _Fetched("git", tree, where, ref, commit)
    if ref:
        raise InstallError(f"{source}: --ref is for a git repository; this is no repository")
    if path.is_dir():
        tree = tree / _source_name(local)
        _copy_folder(path, tree)
    elif path.is_file() and path.name.endswith((".tar.gz", ".tgz", ".tar")):
        tree.mkdir()
        _unpack_tar(path, tree)
    elif path.is_file() and path.name.endswith(".zip"):
        tree.mkdir()
        _unpack_zip(path, tree)
    else:
        raise InstallError(
            f"{source}: not a git repository, a folder, a .zip or a .tar.gz (a git URL or a path that exists)"
        )
    return _Fetched("folder" if path.is_dir() else "archive", tree, local, ref, None)


def _source_name(where: str) -> str:
    """The folder name a repository or folder has at its source: a skill at its top must be named as it
    (``name`` in its front matter equals its folder's name), so it is staged under that name."""
    name = where.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1].removesuffix(".git")
    return name if name not in ("", ".", "..") else "source"


def skill_label(folder: Path, tree: Path) -> str:
    return folder.relative_to(tree).as_posix() if folder != tree else "(the source)"


def _interpreter_note(path: Path) -> str:
    try:
        return "runs with " + Path(interpreter(path)[0]).name
    except ScriptError as exc:
        return f"will not run: {exc}"


def install(workspace: Workspace, staged: Staged) -> Path:
    """Move the staged skill to ``.agents/skills/<name>/`` (the old one, on update, is removed after the
    new one is in place) and record where it came from. Returns the installed folder."""
    skills = workspace.root / WORKSPACE_SKILLS
    skills.mkdir(parents=True, exist_ok=True)
    name = staged.review.skill.name
    target = skills / name
    old = None
    if target.exists():
        old = staged.staging / "replaced"
        os.replace(target, old)
    os.replace(staged.folder, target)
    records = read_records(workspace)
    records[name] = {
        "source": staged.review.source,
        "kind": staged.review.kind,
        "ref": staged.review.ref,
        "commit": staged.review.commit,
        "installed": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    workspace.write_json(RECORDS, records)
    staged.close()
    return target


class InstallRecord(TypedDict, total=False):
    """Where an installed skill came from, by its name in ``state/agent_skills.json`` (a key edited by hand may
    be missing)."""

    source: str
    kind: str  # git | folder | archive
    ref: str | None
    commit: str | None
    installed: str  # ISO time


def read_records(workspace: Workspace) -> dict[str, InstallRecord]:
    """The installed skills' records by name (``state/agent_skills.json``)."""
    records = workspace.read_json(RECORDS, default={})
    return cast(dict[str, InstallRecord], records) if isinstance(records, dict) else {}


def remove(workspace: Workspace, name: str) -> None:
    """Remove an installed skill and its record; InstallError when there is none of that name."""
    target = workspace.root / WORKSPACE_SKILLS / name
    if not name or "/" in name or name.startswith(".") or not (target / SKILL_FILE).is_file():
        installed = sorted(p.parent.name for p in (workspace.root / WORKSPACE_SKILLS).glob(f"*/{SKILL_FILE}"))
        raise InstallError(f"no installed skill {name!r}; installed: {', '.join(installed) or '(none)'}")
    shutil.rmtree(target)
    records = read_records(workspace)
    if records.pop(name, None) is not None:
        workspace.write_json(RECORDS, records)
