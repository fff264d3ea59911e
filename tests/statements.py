"""Every statement of a syntax tree, without visiting its expressions.

A ``def``, a ``class`` and an ``import`` are always statements, and statements sit only in the bodies of other
statements (``body``, ``orelse``, ``finalbody``, an ``except``'s and a ``case``'s body). ``ast.walk`` visits
every expression too, most of a file's nodes: the source checks that read the whole tree (test_layout's
imports, test_function_length, test_reliability_doc's test names) spent most of their time there.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

_BODIES = ("body", "orelse", "finalbody", "handlers", "cases")


def statements(tree: ast.AST) -> Iterator[ast.stmt]:
    """Each statement in ``tree``, nested ones included, in source order."""
    todo: list[ast.AST] = [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.stmt):
            yield node
        children = [child for name in _BODIES for child in _listed(node, name)]
        todo.extend(reversed(children))


def _listed(node: ast.AST, name: str) -> list[ast.AST]:
    value = getattr(node, name, None)
    return value if isinstance(value, list) else []  # a lambda's or an if-expression's body is one expression
