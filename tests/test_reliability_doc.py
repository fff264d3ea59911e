"""docs/reliability.md and docs/security.md stay true (issue 34.12): every test a row names exists, and every
guarantee names at least two tests (a guard tested in one mode only is how a one-line regression slips through: name the
neighbouring case too, another frontend, chat type, skill or store)."""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

from tests.statements import statements

REPO = Path(__file__).resolve().parents[1]
DOCS = (REPO / "docs" / "reliability.md", REPO / "docs" / "security.md")
#: `tests/test_x.py`, `tests/test_x.py::test_name[param]`, or `::test_name` (in the file named last in the row).
REF = re.compile(r"`((?:tests/[\w/]+\.py)?(?:::\w+)?)(?:\[[^\]`]*\])?`")


def rows() -> list[tuple[str, list[str]]]:
    """(guarantee, [test references with their file]) for each table row whose last cell names tests."""
    found = []
    lines = [line for doc in DOCS for line in doc.read_text(encoding="utf-8").splitlines()]
    for line in lines:
        if not line.startswith("| ") or line.startswith(("| Guarantee", "| Fault")):
            continue
        guarantee, _, tests = line.rpartition(" | ")
        refs, current = [], None
        for ref in REF.findall(tests):
            if not ref:
                continue
            if ref.startswith("tests/"):
                current = ref.split("::")[0]
                refs.append(ref)
            elif ref.startswith("::") and current:
                refs.append(current + ref)
        found.append((guarantee.lstrip("| ")[:100], refs))
    return found


@cache
def functions_in(path: str) -> set[str]:
    tree = ast.parse((REPO / path).read_text(encoding="utf-8"))
    return {node.name for node in statements(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}


def test_every_test_the_reliability_doc_names_exists() -> None:
    missing = []
    for guarantee, refs in rows():
        for ref in refs:
            path, _, name = ref.partition("::")
            if not (REPO / path).is_file() or (name and name not in functions_in(path)):
                missing.append(f"{ref} (row: {guarantee})")
    assert missing == [], "docs/reliability.md or security.md names tests that do not exist:\n" + "\n".join(missing)


def test_every_guarantee_names_at_least_two_tests() -> None:
    alone = [f"{guarantee} -> {refs}" for guarantee, refs in rows() if len(refs) < 2]
    assert alone == [], (
        "these rows of docs/reliability.md or security.md name one test: add the neighbouring case (another "
        "frontend, chat type, skill, store or collector) and name it:\n" + "\n".join(alone)
    )
