"""How much the types say: the token ``Any`` per 1,000 lines and the ``dict[str, Any]`` spelled out.

Counted over the four packages (``assistant_framework``, ``messaging_llm_bot``, ``skills``, ``collectors``)
with ``tokenize``: a ``Any`` name token outside an import line (``from typing import Any`` says nothing
about a shape), in code, not in strings or comments. ``dict[str, Any]`` is counted as tokens too, so a
docstring that names it does not count. Lines are every line of every ``.py`` file.

    .venv/bin/python bench/any_count.py           # one line per package and the total
    .venv/bin/python bench/any_count.py --json    # the same as one JSON object
    .venv/bin/python bench/any_count.py --files   # the files with the most, for the next cut
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import sys
import tokenize
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("assistant_framework", "messaging_llm_bot", "skills", "collectors")
DICT_STR_ANY = ("dict", "[", "str", ",", "Any", "]")


@dataclass
class Count:
    """One file's or package's figures."""

    lines: int = 0
    any_tokens: int = 0
    dict_str_any: int = 0

    def add(self, other: Count) -> None:
        self.lines += other.lines
        self.any_tokens += other.any_tokens
        self.dict_str_any += other.dict_str_any

    def per_1000(self) -> float:
        return 1000 * self.any_tokens / self.lines if self.lines else 0.0


def count_source(text: str) -> Count:
    """The figures of one module's source."""
    count = Count(lines=len(text.splitlines()))
    tokens = [
        tok
        for tok in tokenize.generate_tokens(io.StringIO(text).readline)
        if tok.type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT)
    ]
    import_lines = _import_lines(text)
    for index, tok in enumerate(tokens):
        if tok.type != tokenize.NAME or tok.string != "Any" or tok.start[0] in import_lines:
            continue
        count.any_tokens += 1
        window = [t.string for t in tokens[index - 4 : index + 2]]
        if tuple(window) == DICT_STR_ANY:
            count.dict_str_any += 1
    return count


def _import_lines(text: str) -> set[int]:
    """The physical lines of every import statement (a parenthesised one spans several)."""
    lines: set[int] = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import | ast.ImportFrom):
            lines.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return lines


def count_tree(root: Path = ROOT) -> dict[str, dict[str, Count]]:
    """Per package, per file (path relative to ``root``)."""
    result: dict[str, dict[str, Count]] = {}
    for package in PACKAGES:
        files = result.setdefault(package, {})
        for path in sorted((root / package).rglob("*.py")):
            files[str(path.relative_to(root))] = count_source(path.read_text(encoding="utf-8"))
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="one JSON object")
    parser.add_argument("--files", action="store_true", help="the 25 files with the most Any")
    options = parser.parse_args(argv)
    tree = count_tree()
    total = Count()
    packages: dict[str, Count] = {}
    for package, files in tree.items():
        packages[package] = Count()
        for count in files.values():
            packages[package].add(count)
        total.add(packages[package])
    if options.json:
        rows = {name: _row(count) for name, count in {**packages, "total": total}.items()}
        print(json.dumps(rows, indent=2))
        return 0
    print(f"{'package':<22}{'lines':>8}{'Any':>7}{'per 1,000':>11}{'dict[str, Any]':>16}")
    for name, count in {**packages, "total": total}.items():
        print(f"{name:<22}{count.lines:>8}{count.any_tokens:>7}{count.per_1000():>11.1f}{count.dict_str_any:>16}")
    if options.files:
        flat = [(path, count) for files in tree.values() for path, count in files.items()]
        flat.sort(key=lambda item: item[1].any_tokens, reverse=True)
        for path, count in flat[:25]:
            print(f"  {count.any_tokens:>4} Any, {count.dict_str_any:>3} dict[str, Any]  {path}")
    return 0


def _row(count: Count) -> dict[str, float]:
    return {
        "lines": count.lines,
        "any": count.any_tokens,
        "per_1000": round(count.per_1000(), 1),
        "dict_str_any": count.dict_str_any,
    }


if __name__ == "__main__":
    sys.exit(main())
