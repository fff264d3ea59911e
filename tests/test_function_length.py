"""No function over 60 lines in the framework, the skills, the collectors and the bot (issue 49).

ruff's C901 and PLR0915 bound a function's branches and statements; neither sees a function that is long
without being complex (a big table of routes, a long chain of appends). Lines are counted from the first
decorator to its last statement, docstring and comments between included: what a reader has to hold at once.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.statements import parse, statements

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("assistant_framework", "skills", "collectors", "messaging_llm_bot")
MAX_LINES = 60


def long_functions(source: str, where: str) -> list[str]:
    """``where:line name (N lines)`` for each function or method in ``source`` longer than MAX_LINES."""
    found = []
    for node in statements(parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            lines = (node.end_lineno or node.lineno) - first + 1
            if lines > MAX_LINES:
                found.append(f"{where}:{node.lineno} {node.name} ({lines} lines)")
    return found


def test_no_function_over_60_lines_in_the_framework_skills_collectors_and_bot() -> None:
    found = [
        hit
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        for hit in long_functions(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    ]
    assert not found, "split these by what their parts do (a reader, a check, a writer):\n" + "\n".join(found)


def test_the_count_includes_decorators_and_nested_functions() -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(57))
    at_limit = f"@decorator\ndef f():\n{body}\n    return x0\n"  # 1 + 1 + 57 + 1 = 60 lines
    assert long_functions(at_limit, "m.py") == []
    over = f"@decorator\n@another\ndef f():\n{body}\n    return x0\n"  # 61
    assert long_functions(over, "m.py") == ["m.py:3 f (61 lines)"]
    nested = "class C:\n    def g(self):\n" + "\n".join(f"        y{i} = {i}" for i in range(60)) + "\n"
    assert long_functions(nested, "m.py") == ["m.py:2 g (61 lines)"]
