"""The README's "Writing a skill" example is a real skill folder (docs/examples/skills/temperature), shown as it
is: ``make lint`` type-checks that folder (pyproject's mypy ``files``), so the example's types are the contract's."""

from __future__ import annotations

import re
from pathlib import Path

from assistant_framework.skills import SkillContext, SkillManager
from assistant_framework.workspace import Workspace

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "docs" / "examples" / "skills"


def test_the_readme_shows_the_checked_example_as_it_is() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Writing a skill") :]
    shown = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert shown is not None, "README.md's 'Writing a skill' has no python block"
    assert shown.group(1) == (EXAMPLES / "temperature" / "__init__.py").read_text(encoding="utf-8")


def test_the_example_is_type_checked_by_the_lint() -> None:
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    files = re.search(r"^files = \[(.*?)\]", pyproject, re.MULTILINE)
    assert files is not None and '"docs/examples"' in files.group(1)


def test_the_example_loads_and_runs_as_a_skill(ws: Workspace) -> None:
    manager = SkillManager([EXAMPLES], ws, timeout_seconds=10)
    hot = manager.run("temperature", {"value": 100, "to": "F"}, SkillContext())
    cold = manager.run("temperature", {"value": 212, "to": "C"})
    assert (hot.ok, hot.value, cold.ok, cold.value) == (True, 212.0, True, 100.0)
    assert not manager.run("temperature", {"value": 1, "to": "K"}).ok
