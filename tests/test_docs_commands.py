"""Every command in the README and docs works as written after ``make run`` (issue 17, defect 2):
commands are spelled ``.venv/bin/...`` or ``make ...``, and each CLI line in a code block parses."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from messaging_llm_bot.cli.main import build_parser

REPO = Path(__file__).resolve().parents[1]
PAGES = sorted(
    {
        *REPO.glob("*.md"),
        *REPO.glob("docs/*.md"),
        *REPO.glob("config/README.md"),
        *REPO.glob("bench/*.md"),
        *REPO.glob("skills/**/README.md"),
        *REPO.glob("collectors/**/README.md"),
        *REPO.glob("deploy/*.md"),
    }
)
# A command a user would paste that only works inside an activated venv.
BARE = re.compile(r"^(?:\$ )?(assistant(?:-bot)?|python3? -m (?:assistant_framework|messaging_llm_bot)|pytest)\b")
FENCE = re.compile(r"```(?:sh|bash|shell|console)?\n(.*?)```", re.S)
INLINE = re.compile(r"`([^`\n]+)`")


def _commands(text: str) -> list[str]:
    lines = [line.strip() for block in FENCE.findall(text) for line in block.splitlines()]
    return lines + [m.strip() for m in INLINE.findall(text)]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_commands_work_outside_an_activated_venv(page: Path) -> None:
    bare = [
        c
        for c in _commands(page.read_text(encoding="utf-8"))
        if BARE.match(c) and not c.startswith(("assistant` ", "assistant-bot` "))
    ]
    bare = [c for c in bare if " " in c or c.startswith("python")]  # a lone `assistant` names the CLI, not a command
    assert bare == [], f"{page.name}: write these as .venv/bin/... or a make target: {bare}"


def _cli_lines() -> list[tuple[str, str]]:
    found = []
    for page in PAGES:
        for block in FENCE.findall(page.read_text(encoding="utf-8")):
            joined = block.replace("\\\n", " ")
            for line in joined.splitlines():
                line = line.split(" #")[0].strip()
                if line.startswith(".venv/bin/assistant "):
                    found.append((page.name, line))
    return found


@pytest.mark.parametrize("page, line", _cli_lines())
def test_cli_lines_in_code_blocks_parse(page: str, line: str) -> None:
    argv = shlex.split(line)[1:]
    try:
        build_parser().parse_args(argv)
    except SystemExit as exc:
        pytest.fail(f"{page}: `{line}` does not parse (exit {exc.code})")


@pytest.mark.parametrize("target", ["run", "chat", "setup", "doctor"])
def test_make_targets_run_the_venv_commands(target: str) -> None:
    import shutil
    import subprocess

    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    dry = subprocess.run(
        ["make", "-n", "--no-print-directory", "-C", str(REPO), target], capture_output=True, text=True, timeout=60
    )
    assert dry.returncode == 0, dry.stderr
    line = dry.stdout.strip().splitlines()[-1]
    argv = shlex.split(line)
    assert argv[0] == ".venv/bin/assistant", line
    args = build_parser().parse_args(argv[1:])
    if target in ("run", "chat"):
        assert args.func.__name__ == "cmd_run"
        assert args.frontend == ("console" if target == "chat" else None)  # run: every enabled chat frontend
    else:
        assert args.func.__name__ == f"cmd_{target}"


def test_make_run_installs_no_dev_extra_and_make_test_does(tmp_path: Path) -> None:
    """Issue 33.10: `make run` put pytest, selenium and pymap (59 packages) into the venv that runs the bot."""
    import shutil
    import subprocess

    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    for name in ("Makefile", "pyproject.toml"):  # a fresh clone: no .venv, so every install step is shown
        shutil.copy(REPO / name, tmp_path / name)

    def dry(target: str) -> str:
        done = subprocess.run(
            ["make", "-n", "--no-print-directory", target], cwd=tmp_path, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    for target in ("run", "chat", "setup", "doctor", "install"):
        installs = [line for line in dry(target).splitlines() if "pip install" in line]
        assert installs and not any("[dev]" in line for line in installs), (target, installs)
    assert any("pip install" in line and "'.[dev]'" in line for line in dry("test").splitlines())
    assert any("'.[dev]'" in line for line in dry("lint").splitlines())


#: Top-level folders and files of the repository: a path a doc names from one of these must exist.
REPO_ROOTS = (
    "assistant_framework/",
    "messaging_llm_bot/",
    "tests/",
    "docs/",
    "config/",
    "skills/",
    "collectors/",
    "bench/",
    "deploy/",
)
REPO_FILES = ("Makefile", "Dockerfile", "compose.yaml", "pyproject.toml", "README.md", "CHANGELOG.md", "LICENSE")
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
#: Not files of the repository: the user's own layer, placeholders (`NAME`, `<name>`), examples of a layout.
NOT_A_REPO_PATH = re.compile(r"[<>{}$?\[\]|]|^config/local(/|$)|\.\.\.|…|/[A-Z_]{3,}(/|$)|(^|/)index\.json$")
#: Files of the workspace the docs describe by their bare name (not files of the repository).
WORKSPACE_FILES = ("profile.md", "upcoming.md")
BARE_MD = re.compile(r"^[\w.-]+\.md$")


def _named_paths(page: Path) -> list[str]:
    text = page.read_text(encoding="utf-8")
    found = []
    for span in INLINE.findall(text):
        for word in span.split():
            word = word.split("::")[0].rstrip(".,;:)").strip("'\"")
            if word.startswith(REPO_ROOTS) or word in REPO_FILES or (BARE_MD.match(word) and word == span.strip()):
                found.append(word)
    for target in LINK.findall(text):
        if "://" in target or target.startswith("mailto:"):
            continue
        resolved = (page.parent / target).resolve()
        if resolved.is_relative_to(REPO):
            found.append(str(resolved.relative_to(REPO)))
    return [p for p in dict.fromkeys(found) if not NOT_A_REPO_PATH.search(p)]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_file_path_a_doc_names_exists(page: Path) -> None:
    """Issue 33.11: docs/agent.md named `messaging_llm_bot/protocol*.py` and a `policy.md` that do not exist."""
    missing = [p for p in _named_paths(page) if not _exists(p.rstrip("/"), page)]
    assert missing == [], f"{page.relative_to(REPO)} names paths that do not exist: {missing}"


def _exists(path: str, page: Path) -> bool:
    """Whether a path a page names is there: from the repository's root, the page's folder or a package
    (`config/write.py` in a page about the framework), a glob that matches, a bare `NAME.md` anywhere."""
    if "*" in path:
        return any(REPO.glob(path))
    if BARE_MD.match(path):
        return path in WORKSPACE_FILES or (page.parent / path).exists() or any(REPO.rglob(path))
    parts = path.split("/")
    if parts[0] == "collectors" and len(parts) > 2 and (REPO / "collectors" / parts[1]).is_dir():
        if not path.endswith(".py"):
            return True  # a file the collector writes into the workspace (its README lists them)
    bases = (REPO, page.parent, REPO / "assistant_framework", REPO / "messaging_llm_bot")
    return any((base / path).exists() for base in bases)
