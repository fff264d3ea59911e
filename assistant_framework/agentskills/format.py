"""One ``SKILL.md`` read and checked: YAML front matter, then the author's Markdown instructions.

The rules are the Agent Skills specification's: ``name`` 1-64 characters of lowercase letters, digits and
hyphens (no leading, trailing or double hyphen) and equal to the folder's name; ``description`` 1-1,024
characters; optional ``license``, ``compatibility`` (at most 500 characters), ``metadata`` (a map of
strings) and ``allowed-tools`` (space-separated). A file that breaks one raises ``AgentSkillError`` with
the file and the key; the library records it and loads the others.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from assistant_framework.config.limits import NoAliasLoader, too_deep

SKILL_FILE = "SKILL.md"
#: A ``SKILL.md`` over this is refused unread (the spec asks for bodies under ~5,000 tokens).
MAX_SKILL_FILE_BYTES = 256 * 1024
MAX_NAME = 64
MAX_DESCRIPTION = 1024
MAX_COMPATIBILITY = 500
NAME_RE = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")
_FRONT = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.DOTALL)


class AgentSkillError(Exception):
    """A ``SKILL.md`` that cannot be loaded; the message names the file and what is wrong."""


@dataclass(frozen=True)
class AgentSkill:
    """One skill folder as its ``SKILL.md`` describes it."""

    name: str
    description: str
    folder: Path
    body: str
    license: str = ""
    compatibility: str = ""
    metadata: dict[str, str] = field(default_factory=dict)
    #: ``allowed-tools``: the skills the model may call while this one is active (empty: no narrowing).
    allowed_tools: tuple[str, ...] = ()

    @property
    def scripts(self) -> list[str]:
        """The files under ``scripts/``, relative to the folder (``scripts/run.py``)."""
        root = self.folder / "scripts"
        if not root.is_dir():
            return []
        return sorted(p.relative_to(self.folder).as_posix() for p in root.rglob("*") if p.is_file())


def _text(value: object, key: str, where: Path, *, limit: int, required: bool) -> str:
    if value is None and not required:
        return ""
    if not isinstance(value, str) or not value.strip():
        raise AgentSkillError(f"{where}: front matter key {key!r} must be a non-empty string")
    if len(value) > limit:
        raise AgentSkillError(f"{where}: front matter key {key!r} has {len(value)} characters; at most {limit}")
    return value.strip()


def check_name(name: object, folder_name: str, where: Path) -> str:
    """The ``name`` key checked against the spec and the folder's name."""
    if not isinstance(name, str) or not name:
        raise AgentSkillError(f"{where}: front matter key 'name' must be a non-empty string")
    if len(name) > MAX_NAME or not NAME_RE.fullmatch(name):
        raise AgentSkillError(
            f"{where}: front matter key 'name' ({name[:80]!r}) must be 1-{MAX_NAME} lowercase letters, digits and "
            "single hyphens, not starting or ending with a hyphen"
        )
    if name != folder_name:
        raise AgentSkillError(
            f"{where}: front matter key 'name' ({name!r}) must equal the folder's name {folder_name!r}"
        )
    return name


def parse_skill_file(text: str, folder: Path) -> AgentSkill:
    """``SKILL.md``'s text into an ``AgentSkill`` (``folder`` is where it lives); raises AgentSkillError."""
    where = folder / SKILL_FILE
    match = _FRONT.match(text.lstrip("\ufeff"))
    if match is None:
        raise AgentSkillError(f"{where}: no YAML front matter (a first line '---', the keys, then '---')")
    try:
        meta = yaml.load(match.group(1), Loader=NoAliasLoader)  # noqa: S506 - a SafeLoader without aliases
    except yaml.YAMLError as exc:
        raise AgentSkillError(f"{where}: the front matter is not valid YAML: {str(exc).splitlines()[0]}") from None
    if not isinstance(meta, dict) or too_deep(meta, 8) is not None:
        raise AgentSkillError(f"{where}: the front matter must be a map of keys (name, description, ...)")
    name = check_name(meta.get("name"), folder.name, where)
    description = _text(meta.get("description"), "description", where, limit=MAX_DESCRIPTION, required=True)
    metadata = meta.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise AgentSkillError(f"{where}: front matter key 'metadata' must be a map")
    tools = meta.get("allowed-tools") or ""
    if isinstance(tools, list):
        tools = " ".join(str(t) for t in tools)
    if not isinstance(tools, str):
        raise AgentSkillError(f"{where}: front matter key 'allowed-tools' must be a space-separated string")
    return AgentSkill(
        name=name,
        description=description,
        folder=folder,
        body=text[match.end() :].strip(),
        license=_text(meta.get("license"), "license", where, limit=MAX_DESCRIPTION, required=False),
        compatibility=_text(meta.get("compatibility"), "compatibility", where, limit=MAX_COMPATIBILITY, required=False),
        metadata={str(k): str(v) for k, v in metadata.items()},
        allowed_tools=tuple(tools.split()),
    )


def read_skill_folder(folder: Path) -> AgentSkill:
    """Read and check ``folder/SKILL.md``; raises AgentSkillError (size, encoding, front matter)."""
    path = folder / SKILL_FILE
    try:
        size = path.stat().st_size
        if size > MAX_SKILL_FILE_BYTES:
            raise AgentSkillError(f"{path}: {size} bytes; a SKILL.md may have at most {MAX_SKILL_FILE_BYTES}")
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise AgentSkillError(f"{path}: not UTF-8 text") from None
    except OSError as exc:
        raise AgentSkillError(f"{path}: cannot be read: {exc.strerror or exc}") from None
    return parse_skill_file(text, folder)
