"""Every statement of a syntax tree, without visiting its expressions.

A ``def``, a ``class`` and an ``import`` are always statements, and statements sit only in the bodies of other
statements (``body``, ``orelse``, ``finalbody``, an ``except``'s and a ``case``'s body). ``ast.walk`` visits
every expression too, most of a file's nodes: the source checks that read the whole tree (test_layout's
imports, test_function_length, test_reliability_doc's test names) spent most of their time there.

``parse`` is ``ast.parse`` with the garbage collector paused while the tree is built.
"""

from __future__ import annotations

import ast
import gc
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


def parse(source: str, filename: str = "<unknown>") -> ast.Module:
    """``source``'s syntax tree, built with the garbage collector paused (as it was before, after). A tree is tens
    of thousands of new objects and none of them garbage, yet each batch of them set off a collection, and the
    older ones walked the test process's whole heap: parsing the project's 500 files took 1.2 s of CPU that way
    and 0.3 s paused. The checks keep what they need of a tree, not the tree, so no later collection walks it."""
    paused = gc.isenabled()
    gc.disable()
    try:
        return ast.parse(source, filename=filename)
    finally:
        if paused:
            gc.enable()
