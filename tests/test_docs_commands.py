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
