"""One class per name: a class name is defined once across the four packages (issue 49).

Two classes under one name are two things a reader (and a grep, and an import) takes for one; a class
says what it is (``ChatJob``, ``AsyncJob``, ``TelegramIntake``). A duplicate that really is the same
concept goes in ``ALLOWED`` with the reason beside it.
"""

from __future__ import annotations

import ast
import functools
import re
from collections import defaultdict
from pathlib import Path

from tests.statements import parse

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("assistant_framework", "messaging_llm_bot", "skills", "collectors")

#: A line that opens a class statement (a decorator's class too: the ``class`` keyword opens its own line). A file
#: without one defines no class, so it needs no parse (a fifth of the packages' source).
CLASS_LINE = re.compile(r"^\s*class\b", re.MULTILINE)

#: Class names that may be defined more than once, each with why it is one concept.
ALLOWED: dict[str, str] = {}


def class_sites(roots: list[Path]) -> dict[str, list[str]]:
    """Each top-level class name under ``roots`` and the files (relative to their root's parent) defining it."""
    sites: dict[str, list[str]] = defaultdict(list)
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            if not CLASS_LINE.search(text):
                continue
            tree = parse(text, filename=str(path))
            for node in tree.body:
                if isinstance(node, ast.ClassDef):
                    sites[node.name].append(path.relative_to(root.parent).as_posix())
    return sites


@functools.cache
def _project_sites() -> dict[str, list[str]]:
    """``class_sites`` of the four packages, read once for both checks."""
    return class_sites([ROOT / package for package in PACKAGES])


def duplicates(sites: dict[str, list[str]], allowed: dict[str, str]) -> dict[str, list[str]]:
    return {name: files for name, files in sorted(sites.items()) if len(files) > 1 and name not in allowed}


def test_each_class_name_is_defined_once() -> None:
    found = duplicates(_project_sites(), ALLOWED)
    assert not found, "one class per name; rename each to say what it is (or allow it, with why): " + "; ".join(
        f"{name} in {', '.join(files)}" for name, files in found.items()
    )


def test_every_allowed_name_is_still_defined_twice() -> None:
    sites = _project_sites()
    stale = [name for name in ALLOWED if len(sites.get(name, [])) < 2]
    assert not stale, f"ALLOWED names no longer defined twice: {stale}"


def test_the_check_sees_a_name_defined_in_two_packages(tmp_path: Path) -> None:
    (tmp_path / "one").mkdir()
    (tmp_path / "two" / "inner").mkdir(parents=True)
    (tmp_path / "one" / "a.py").write_text("class Job:\n    pass\n\n\nclass Only:\n    pass\n")
    (tmp_path / "two" / "inner" / "b.py").write_text("class Job:\n    pass\n\n\ndef f():\n    class Job: ...\n")
    sites = class_sites([tmp_path / "one", tmp_path / "two"])
    assert duplicates(sites, {}) == {"Job": ["one/a.py", "two/inner/b.py"]}
    assert duplicates(sites, {"Job": "the same record"}) == {}
