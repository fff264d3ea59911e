"""Limits that keep a hostile or broken config file from exhausting memory or the stack.

A file over ``MAX_FILE_BYTES`` is refused before it is read. YAML aliases (``*name``) are
refused: nested aliases ("billion laughs") expand to gigabytes as soon as anything walks the
data, and a config has no need for them. Nesting deeper than ``MAX_DEPTH``
is refused too, before parsing for JSON (Python's parser would end in a ``RecursionError``) and
after parsing for YAML (or past ``MAX_FLOW_DEPTH`` open brackets while scanning, before reading on).
Pure functions; ``config.py`` turns the findings into ``ConfigError``.
"""

from __future__ import annotations

from typing import Any

import yaml

#: Deeper than any real config (the example's deepest value sits at level 5).
MAX_DEPTH = 64
#: Far more than any real config file (the example's largest is 3 KB); a bigger one is the wrong file.
MAX_FILE_BYTES = 10 * 2**20


#: Open flow brackets (``[`` or ``{``) the YAML scanner takes before it stops reading (``NestedTooDeep``). A file
#: nested deeper than ``MAX_DEPTH`` within this bound is refused after parsing, naming the path of its deepest value.
#: Unbounded, PyYAML's scanner keeps one possible simple key per open bracket and walks them all at each token
#: while it reads about 1,000 characters ahead: a line of "[" cost half a second of CPU before Python's recursion
#: limit stopped the composer.
MAX_FLOW_DEPTH = 2 * MAX_DEPTH


class NestedTooDeep(yaml.YAMLError):
    """A YAML document with more than ``MAX_FLOW_DEPTH`` flow collections open at once, found while scanning."""


class NoAliasLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that stops at the first alias with an error pointing at it, and at a flow collection
    opened inside ``MAX_FLOW_DEPTH`` others with ``NestedTooDeep``."""

    def compose_node(self, parent: Any, index: Any) -> Any:  # noqa: D102 - PyYAML hook
        if self.check_event(yaml.events.AliasEvent):
            event = self.peek_event()
            raise yaml.composer.ComposerError(
                None,
                None,
                f"aliases (*{event.anchor}) are not allowed in config files; write the value out",
                event.start_mark,
            )
        return super().compose_node(parent, index)

    def fetch_flow_collection_start(self, TokenClass: Any) -> None:  # noqa: N803, D102 - PyYAML hook
        if self.flow_level >= MAX_FLOW_DEPTH:
            raise NestedTooDeep(f"more than {MAX_FLOW_DEPTH} flow collections nested")
        super().fetch_flow_collection_start(TokenClass)


def json_too_deep(text: str, limit: int = MAX_DEPTH) -> tuple[int, int] | None:
    """(line, column) where JSON text opens its ``limit + 1``-th nested level, or None."""
    depth = 0
    line, column = 1, 0
    in_string = escaped = False
    for char in text:
        column += 1
        if char == "\n":
            line, column = line + 1, 0
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > limit:
                return line, column
        elif char in "]}":
            depth -= 1
    return None


def too_deep(value: Any, limit: int = MAX_DEPTH) -> tuple[str | int, ...] | None:
    """The JSON path of a value nested deeper than ``limit`` levels, or None (iterative: no recursion)."""
    stack: list[tuple[Any, tuple[str | int, ...], int]] = [(value, (), 0)]
    while stack:
        node, path, depth = stack.pop()
        if not isinstance(node, (dict, list)):
            continue
        if depth >= limit:
            return path
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for key, child in items:
            stack.append((child, (*path, key), depth + 1))
    return None
