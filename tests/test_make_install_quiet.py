"""``make run`` installs the package quietly: no setuptools banner ("Editable installation... Please be careful
with folders in your working directory", which pip 26 prints as a BuildBackendWarning) between the user's
command and the bot's first line. The Makefile's own install recipe (pip's upgrade, then the editable install
with pip's isolated build) runs for real in a copy of the project whose dependency list is emptied (so only the
package itself is built and installed, in a fresh venv).

The fresh venv is made by the test, not by the Makefile's ``python3 -m venv`` (which prints nothing, and whose
``ensurepip`` was a third of the test's CPU: it installs and compiles the interpreter's bundled pip and
setuptools, and the recipe's upgrade then replaces that pip): ``venv --without-pip`` plus a copy of the pip that
runs these tests (its files as installed, compiled ones too). The recipe's upgrade step still runs and upgrades
it when the index has a newer pip."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from importlib.metadata import distribution
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BANNER = ("BuildBackendWarning", "Please be careful with folders", "!!")
#: What pip says when the package index cannot give it a requirement (here the build's setuptools>=77).
NO_INDEX = re.compile(r"No matching distribution found for|Could not find a version that satisfies the requirement")


def _run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONWARNINGS", "VIRTUAL_ENV", "PYTHONPATH")}
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def _venv(project: Path) -> None:
    """``project/.venv`` as ``make install`` finds one: a fresh venv (no system site-packages) holding only pip,
    copied from this interpreter's (package and dist-info: the version pip's upgrade step compares)."""
    made = _run(["python3", "-m", "venv", "--without-pip", str(project / ".venv")], project)
    assert made.returncode == 0, made.stderr
    [site] = (project / ".venv" / "lib").glob("python3.*/site-packages")
    pip_dist = distribution("pip")
    shutil.copytree(Path(pip_dist.locate_file("pip")), site / "pip")
    info = next(Path(pip_dist.locate_file(f)).parent for f in pip_dist.files or [] if f.name == "METADATA")
    shutil.copytree(info, site / info.name)


def _project(root: Path) -> Path:
    """The project as `make install` sees it, without its dependencies (they are not what prints the banner)."""
    src = root / "src"
    src.mkdir()
    for name in ("Makefile", "README.md", "LICENSE"):
        shutil.copy(REPO / name, src / name)
    for package in ("assistant_framework", "messaging_llm_bot"):
        shutil.copytree(REPO / package, src / package, ignore=shutil.ignore_patterns("__pycache__"))
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    pyproject, count = re.subn(r"(?ms)^dependencies = \[.*?^\]", "dependencies = []", pyproject)
    assert count == 1
    (src / "pyproject.toml").write_text(pyproject, encoding="utf-8")
    return src


@pytest.mark.timeout(600)  # a venv, pip's own upgrade and an isolated build: minutes on a busy machine
@pytest.mark.slow(
    reason="runs the real make install (pip upgrade, an isolated build) in a fresh venv, and a plain install"
)
def test_make_install_prints_no_installer_banner(tmp_path) -> None:
    if shutil.which("make") is None or shutil.which("python3") is None:
        pytest.skip("no make or python3")
    src = _project(tmp_path)
    _venv(src)
    made = _run(["make", "install"], src)
    shown = made.stdout + made.stderr
    # The build needs setuptools>=77 from the package index (pip's build isolation): without one, skip. (Read
    # from make's own output: a separate `pip download` to probe the index cost a pip process per run.)
    if made.returncode != 0 and NO_INDEX.search(shown):
        pytest.skip("no package index reachable for the build requirements")
    assert made.returncode == 0, shown
    assert not [banner for banner in BANNER if banner in shown], shown
    assert (src / ".venv" / ".installed").exists()
    # The package found, not imported: importing it needs the dependencies this install left out (PyYAML).
    found = "import importlib.util as u; assert u.find_spec('messaging_llm_bot') and u.find_spec('assistant_framework')"
    # From another folder: in the project's own, the current folder on sys.path finds the sources uninstalled.
    check = _run([str(src / ".venv" / "bin" / "python"), "-c", found], tmp_path)  # installed, without its dependencies
    assert check.returncode == 0, check.stderr

    # The same install without the Makefile's setting prints the banner with this pip: the test can fail.
    plain = _run(
        [".venv/bin/python", "-m", "pip", "install", "--quiet", "--no-deps", "--force-reinstall", "-e", "."], src
    )
    assert plain.returncode == 0 and "Please be careful with folders" in plain.stdout + plain.stderr
