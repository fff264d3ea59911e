"""One script of a ``SKILL.md`` skill run: no shell, an interpreter from the allow-list, a time limit,
bounded output, and an environment with nothing of the bot's (no tokens, no keys).

The script is a file under the skill's ``scripts/``; its interpreter comes from its extension or its
``#!`` line and must be one of ``INTERPRETERS`` (node only when it is installed). It runs in its own
process group, so a limit that passes ends it and whatever it started.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from assistant_framework.agentskills.format import AgentSkill
from assistant_framework.agentskills.library import inside

#: Interpreters a script may name, by the program its extension or ``#!`` line names.
INTERPRETERS = ("python", "bash", "node")
_BY_SUFFIX = {".py": "python", ".sh": "bash", ".bash": "bash", ".js": "node", ".mjs": "node", ".cjs": "node"}
#: Bytes of the script's output (stdout and stderr together) the model gets; the rest is counted.
OUTPUT_BYTES = 16_000
MAX_ARGS = 32
MAX_ARG_CHARS = 2_000
#: The only variables the script sees of the bot's environment (everything else may hold a secret).
PASSED_ENV = ("PATH", "LANG", "LC_ALL", "TZ", "TMPDIR")


class ScriptError(ValueError):
    """A script that cannot run or did not finish; the message is one sentence for the model."""


@dataclass(frozen=True)
class ScriptRun:
    """What a finished script did."""

    exit_code: int
    output: str
    cut_bytes: int


def interpreter(path: Path) -> list[str]:
    """The command that runs ``path``; ScriptError unless its interpreter is allowed and present."""
    kind = _BY_SUFFIX.get(path.suffix.lower())
    if kind is None:
        try:
            with path.open("rb") as handle:
                first = handle.readline(200).decode("utf-8", "replace").strip()
        except OSError as exc:
            raise ScriptError(f"the script cannot be read: {exc.strerror or exc}") from None
        words = first[2:].split() if first.startswith("#!") else []
        program = os.path.basename(
            words[1] if words[:1] and words[0].endswith("/env") and len(words) > 1 else (words or [""])[0]
        )
        kind = next((name for name in INTERPRETERS if program == name or program.startswith(name + "3")), None)
        if kind is None:
            raise ScriptError(
                f"{path.name} names no allowed interpreter (by its extension or its #! line): "
                f"scripts run with {', '.join(INTERPRETERS)} only"
            )
    if kind == "python":
        return [sys.executable]
    found = shutil.which(kind)
    if found is None:
        raise ScriptError(f"{path.name} needs {kind}, which is not installed here")
    return [found]


def script_path(skill: AgentSkill, script: str) -> Path:
    """The file ``script`` names under the skill's ``scripts/`` (``run.py`` or ``scripts/run.py``)."""
    rel = script if script.replace("\\", "/").startswith("scripts/") else f"scripts/{script}"
    path = inside(skill.folder, rel)
    if skill.folder.resolve() / "scripts" not in path.parents or not path.is_file():
        listed = ", ".join(skill.scripts) or "(none)"
        raise ScriptError(f"skill {skill.name!r} has no script {script!r}; its scripts: {listed}")
    return path


def script_env(workspace_root: Path, skill: AgentSkill) -> dict[str, str]:
    """The script's environment: the few harmless variables, where it is, and nothing else."""
    env = {key: os.environ[key] for key in PASSED_ENV if key in os.environ}
    env.setdefault("PATH", os.defpath)
    env.setdefault("LANG", "C.UTF-8")
    env["HOME"] = str(workspace_root)
    env["PYTHONIOENCODING"] = "utf-8"
    env["SKILL_DIR"] = str(skill.folder)
    env["WORKSPACE"] = str(workspace_root)
    return env


def _drain(stream: IO[bytes], kept: bytearray, counted: list[int]) -> None:
    """Read the script's output to its end: keep the first ``OUTPUT_BYTES``, count the rest."""
    while True:
        chunk = stream.read(65536)
        if not chunk:
            return
        room = OUTPUT_BYTES - len(kept)
        kept += chunk[: max(room, 0)]
        counted[0] += max(len(chunk) - max(room, 0), 0)


def run_script(
    skill: AgentSkill, script: str, args: list[str], *, cwd: Path, workspace_root: Path, limit_seconds: float
) -> ScriptRun:
    """Run one script and wait at most ``limit_seconds``; ScriptError says in one sentence why not."""
    if len(args) > MAX_ARGS or any(len(a) > MAX_ARG_CHARS for a in args):
        raise ScriptError(f"at most {MAX_ARGS} arguments of at most {MAX_ARG_CHARS} characters each")
    path = script_path(skill, script)
    command = [*interpreter(path), str(path), *args]
    try:
        process = subprocess.Popen(
            command,
            cwd=cwd,
            env=script_env(workspace_root, skill),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: the limit ends what it started too
        )
    except OSError as exc:
        raise ScriptError(f"{script} could not be started: {exc.strerror or exc}") from None
    kept = bytearray()
    counted = [0]
    reader = threading.Thread(target=_drain, args=(process.stdout, kept, counted), daemon=True)
    reader.start()
    try:
        process.wait(timeout=limit_seconds)
    except subprocess.TimeoutExpired:
        _end_group(process)
        raise ScriptError(
            f"The script {script} of skill {skill.name!r} ran past its time limit of {limit_seconds:g} s and was "
            "stopped."
        ) from None
    finally:
        reader.join(5)
        if process.stdout is not None:
            process.stdout.close()
    return ScriptRun(process.returncode, kept.decode("utf-8", "replace"), counted[0])


def _end_group(process: subprocess.Popen[bytes]) -> None:
    """End the script's process group: TERM, then KILL after a second."""
    for sig, wait in ((signal.SIGTERM, 1.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=wait)
            if sig == signal.SIGTERM:
                # The leader ended; children left in the group get the KILL too.
                try:
                    os.killpg(process.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            return
        except subprocess.TimeoutExpired:
            continue
