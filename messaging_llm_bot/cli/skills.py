"""``skills list|inspect``: what skills exist, and what the model sees of each; ``skills install|update|remove``:
SKILL.md skills from elsewhere, after a review (assistant_framework/agentskills/install.py)."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from assistant_framework.agentskills.install import InstallError, install, read_records, stage
from assistant_framework.agentskills.install import remove as remove_skill
from assistant_framework.config import load_config
from assistant_framework.config.settings import Settings
from assistant_framework.mcp import skill_sources
from assistant_framework.skills import BUILTIN_SKILLS_DIR, SkillManager
from assistant_framework.skills.loading import agent_skill_dirs
from assistant_framework.workspace import Workspace, existing_workspace
from messaging_llm_bot.cli import UsageError
from messaging_llm_bot.cli.config import Subparsers, add_config_option


def register(subparsers: Subparsers) -> None:
    group = subparsers.add_parser("skills", help="list skills and inspect what the model sees of them")
    commands = group.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True

    list_ = commands.add_parser(
        "list", help="one row per skill: name, loaded or the load error, description (exit 1 if any failed)"
    )
    _add_dir_options(list_)
    list_.add_argument("--json", action="store_true", help="the rows as a JSON list")
    list_.set_defaults(func=cmd_list)

    install = commands.add_parser(
        "install",
        help="install a SKILL.md skill from a git repository, a folder, a .zip or a .tar.gz, after a review",
    )
    install.add_argument("source", help="a git URL or repository folder, a skill folder, or an archive")
    install.add_argument("--ref", help="git: the tag, branch or commit to install (pinned to its commit)")
    install.add_argument("--skill", metavar="NAME", help="the skill to install when the source holds several")
    _add_install_options(install)
    install.set_defaults(func=cmd_install)

    update = commands.add_parser(
        "update", help="fetch an installed skill again from where it came from, after a review"
    )
    update.add_argument("name")
    update.add_argument("--ref", help="git: another tag, branch or commit (default: the one installed)")
    _add_install_options(update)
    update.set_defaults(func=cmd_update)

    remove = commands.add_parser("remove", help="remove an installed SKILL.md skill")
    remove.add_argument("name")
    remove.add_argument("--workspace", default="workspace", help="workspace folder (default: workspace)")
    remove.set_defaults(func=cmd_remove)

    inspect = commands.add_parser("inspect", help="prompt-visible metadata, help text and implementation of one skill")
    inspect.add_argument("name")
    _add_dir_options(inspect)
    inspect.add_argument("--json", action="store_true", help="the same as one JSON object")
    inspect.set_defaults(func=cmd_inspect)


def _add_dir_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--skills",
        action="append",
        metavar="DIR",
        help="skill folder to load (repeatable); replaces the built-ins plus runtime.skills_dirs",
    )
    parser.add_argument(
        "--workspace",
        default="workspace",
        help="workspace whose .agents/skills/ holds SKILL.md skills (default: workspace)",
    )
    add_config_option(parser)


def _add_install_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--yes", action="store_true", help="install without asking (after printing the review)")
    parser.add_argument("--workspace", default="workspace", help="workspace folder (default: workspace)")


def cmd_install(args: argparse.Namespace) -> int:
    workspace = existing_workspace(args.workspace)
    return _review_and_install(workspace, args.source, args.ref, args.skill, args.yes)


def cmd_update(args: argparse.Namespace) -> int:
    workspace = existing_workspace(args.workspace)
    record = read_records(workspace).get(args.name)
    if record is None:
        print(
            f"skills update: {args.name!r} was not installed with `skills install` (no record of its source)",
            file=sys.stderr,
        )
        return 1
    return _review_and_install(workspace, str(record["source"]), args.ref or record.get("ref"), args.name, args.yes)


def cmd_remove(args: argparse.Namespace) -> int:
    workspace = existing_workspace(args.workspace)
    try:
        remove_skill(workspace, args.name)
    except InstallError as exc:
        print(f"skills remove: {exc}", file=sys.stderr)
        return 1
    print(f"Removed {args.name}; the bot stops offering it at its next turn.")
    return 0


def _review_and_install(workspace: Workspace, source: str, ref: str | None, name: str | None, yes: bool) -> int:
    try:
        staged = stage(workspace, source, ref=ref, name=name)
    except InstallError as exc:
        print(f"skills install: {exc}; nothing installed", file=sys.stderr)
        return 1
    try:
        print(staged.review.text())
        if not yes and not _confirmed("Install it? [y/N] "):
            print("Not installed: nothing written.")
            return 1
        target = install(workspace, staged)
    finally:
        staged.close()
    print(f"Installed {staged.review.skill.name} into {target}; the bot offers it from its next turn.")
    return 0


def _confirmed(question: str) -> bool:
    try:
        answer = input(question)
    except EOFError:
        print()
        return False
    return answer.strip().lower() in ("y", "yes")


def skill_dirs(args: argparse.Namespace) -> list[Path]:
    """``--skills`` when given, else the built-in skills plus ``runtime.skills_dirs`` of the config."""
    if args.skills:
        missing = [d for d in args.skills if not Path(d).is_dir()]
        if missing:
            raise UsageError(f"--skills {missing[0]}: no such folder")
        return [Path(d) for d in args.skills]
    dirs = [BUILTIN_SKILLS_DIR]
    if Path(args.config).exists():
        runtime = Settings.from_config(load_config(args.config)).runtime
        dirs += [Path(d).expanduser() for d in runtime.skills_dirs]
    return dirs


def _manager(args: argparse.Namespace) -> SkillManager:
    """The skills of the folders and, without ``--skills``, the config's MCP servers (started to list
    their tools; ``close()`` stops them)."""
    # Listing runs no skill, so it gets a workspace that is never created or touched.
    unused = Workspace(Path(tempfile.gettempdir()) / "assistant-skills-inspect-unused", create=False)
    sources = []
    configured: list[str] = []
    if not args.skills and Path(args.config).exists():
        settings = Settings.from_config(load_config(args.config))
        sources = skill_sources(settings.mcp)
        configured = list(settings.runtime.skills_dirs)
    # SKILL.md folders sit in the same skills dirs, and in the workspace's .agents/skills/ (only read).
    documents = agent_skill_dirs(args.skills or configured, Workspace(args.workspace, create=False))
    return SkillManager(skill_dirs(args), unused, sources=sources, agent_skill_dirs=documents)


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


def cmd_list(args: argparse.Namespace) -> int:
    manager = _manager(args)
    try:
        return _list(manager, args)
    finally:
        manager.close()


def _list(manager: SkillManager, args: argparse.Namespace) -> int:
    # (name, state, description, from, form): a SKILL.md skill is read by the model through skill_doc,
    # a plugin or a tool (an MCP server's, skill_doc itself) is called.
    rows = [
        (skill.name, "loaded", _first_line(skill.description), skill.where, "plugin" if skill.folder else "tool")
        for skill in manager.skills.values()
    ]
    rows += [
        (skill.name, "loaded", " ".join(skill.description.split()), str(skill.folder), "SKILL.md")
        for skill in manager.library.skills.values()
    ]
    broken = {problem.folder for problem in manager.library.errors}
    rows += [
        (
            error.name,
            f"error: {error.error}",
            "",
            str(error.folder or ""),
            "SKILL.md" if error.folder in broken else "plugin" if error.folder else "tool",
        )
        for error in manager.errors
    ]
    if args.json:
        print(
            json.dumps(
                [
                    {
                        "name": name,
                        "loaded": state == "loaded",
                        "error": None if state == "loaded" else state[len("error: ") :],
                        "description": description,
                        "from": where,
                        "form": form,
                    }
                    for name, state, description, where, form in sorted(rows)
                ],
                indent=2,
                ensure_ascii=False,
            )
        )
        return 1 if manager.errors else 0
    if not rows:
        print("no skills found in: " + ", ".join(str(d) for d in manager.dirs))
        return 0
    width = max(len(name) for name, *_ in rows)
    for name, state, description, _where, _form in sorted(rows, key=lambda row: row[0]):
        print(f"{name:<{width}}  {state:<6}  {description}".rstrip())
    return 1 if manager.errors else 0


def cmd_inspect(args: argparse.Namespace) -> int:
    manager = _manager(args)
    try:
        return _inspect(manager, args)
    finally:
        manager.close()


def _inspect(manager: SkillManager, args: argparse.Namespace) -> int:
    skill = manager.get(args.name)
    if skill is None:
        failed = [error for error in manager.errors if error.name == args.name]
        if failed:
            print(f"skill {args.name!r} failed to load: {failed[0].error}")
            return 1
        near = manager.closest(args.name)
        hint = f"; closest: {', '.join(near)}" if near else ""
        print(f"unknown skill {args.name!r}{hint}", file=sys.stderr)
        return 2
    timeout = manager.timeout_for(skill.name)
    if args.json:
        print(
            json.dumps(
                {
                    "name": skill.name,
                    "description": skill.description,
                    "args_schema": skill.args_schema,
                    "help": skill.help_text,
                    "source": str(skill.source_path) if skill.source_path else skill.origin,
                    "readme": str(skill.readme_path) if skill.readme_path else None,
                    "schema_source": skill.schema_source,
                    "capabilities": list(skill.capabilities),
                    "timeout_seconds": timeout,
                    "receives_context": bool(skill.wants_context),
                },
                indent=2,
                ensure_ascii=False,
            )
        )
        return 0
    print("== Prompt-visible metadata ==")
    print(f"name: {skill.name}")
    print(f"description: {skill.description}")
    print("args_schema: " + json.dumps(skill.args_schema, ensure_ascii=False, separators=(",", ":"), sort_keys=True))
    print()
    print("== Help (README ## What it does) ==")
    print(skill.help_text or "(no '## What it does' section in the README)")
    print()
    print("== Implementation ==")
    print(f"source: {skill.source_path or skill.origin}")
    print(f"readme: {skill.readme_path or '(none)'}")
    print(f"schema source: {skill.schema_source}")
    print(f"capabilities: {', '.join(skill.capabilities)}")
    timeout = manager.timeout_for(skill.name)
    print(f"timeout: {timeout:g} s" + ("" if skill.timeout_seconds else " (default)"))
    print(f"receives context: {'yes' if skill.wants_context else 'no'}")
    return 0
