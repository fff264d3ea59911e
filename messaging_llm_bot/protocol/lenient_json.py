"""Lenient JSON for model output: decode drifted JSON, find JSON-ish values in text.

Weak models wrap calls in fences and ``<tool_call>`` tags, surround them with prose and
write Python-literal / single-quoted / trailing-comma JSON, with ``//`` comments. ``scan``
finds every parseable top-level value (never inside fences tagged with another language),
``open_region`` finds where a still-streaming structure starts, and ``strip_think`` drops
leading reasoning.
Bracket matching is regex-driven and step-bounded so pathological texts stay cheap.
"""

from __future__ import annotations

import ast
import io
import json
import re
import tokenize
from dataclasses import dataclass, field

CODE_FENCE_LANGS = frozenset({"", "json", "json5", "jsonc", "tool_call", "tool_code"})
_THINK_OPEN_RE = re.compile(r"\s*<(think|thinking|reasoning)>", re.I)  # matched at a position: no \A
_THINK_CLOSE_RES = {tag: re.compile(f"</{tag}>", re.I) for tag in ("think", "thinking", "reasoning")}
_LATE_CLOSE_RE = re.compile("</think>", re.I)
_LATE_OPEN_RE = re.compile("<think>", re.I)
_TAG_RE = re.compile(r"<(tool_call|function_call)>", re.I)
_TAG_CLOSE_RES = {tag: re.compile(f"</{tag}>", re.I) for tag in ("tool_call", "function_call")}
_INTERESTING_RE = re.compile(r"[{\[<`]")
_BRACKET_TOKEN_RE = re.compile(r"[\"'{}\[\]]")
_DQ_REST_RE = re.compile(r'[^"\\]*(?:\\.[^"\\]*)*"', re.S)  # unrolled: linear and fast
_SQ_REST_RE = re.compile(r"[^'\\]*(?:\\.[^'\\]*)*'", re.S)
_PARTIAL_MARKERS = ("```", "<tool_call>", "<function_call>", "<think>", "<thinking>", "<reasoning>")


@dataclass
class JsonCandidate:
    """One JSON-ish value found in a text, with the drift forms it needed."""

    value: object
    raw: str
    outer: tuple[int, int]  # span including any fence / tag wrapper
    labels: list[str]


# ---------------------------------------------------------------- lenient JSON


def _literal(node: ast.AST) -> object:
    """Evaluate a JSON-like Python literal AST; raises ValueError on anything else."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, int, float, bool, type(None))):
        return node.value
    if isinstance(node, ast.Name) and node.id in ("true", "false", "null", "True", "False", "None"):
        return {"true": True, "True": True, "false": False, "False": False}.get(node.id)
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_literal(e) for e in node.elts]
    if isinstance(node, ast.Dict):
        out = {}
        for k, v in zip(node.keys, node.values, strict=False):
            if isinstance(k, ast.Name):  # unquoted key
                key = k.id
            elif isinstance(k, ast.Constant) and isinstance(k.value, (str, int, float)):
                key = str(k.value)
            else:
                raise ValueError("unsupported dict key")
            out[key] = _literal(v)
        return out
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        val = _literal(node.operand)
        if isinstance(val, (int, float)) and not isinstance(val, bool):
            return -val if isinstance(node.op, ast.USub) else val
    raise ValueError(f"not a JSON-like literal: {type(node).__name__}")


def _repair_labels(src: str) -> list[str]:
    """Name the drift forms in a fragment that strict JSON rejected."""
    labels: set[str] = set()
    prev = None
    try:
        for tok in tokenize.generate_tokens(io.StringIO(src).readline):
            if tok.type in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT):
                continue
            if tok.type == tokenize.STRING and tok.string.lstrip("rRuU").startswith("'"):
                labels.add("single_quotes")
            elif tok.type == tokenize.NAME and tok.string in ("True", "False", "None"):
                labels.add("python_literals")
            elif tok.type == tokenize.OP and tok.string in "}]" and prev is not None and prev.string == ",":
                labels.add("trailing_comma")
            elif tok.type == tokenize.OP and tok.string == ":" and prev is not None and prev.type == tokenize.NAME:
                labels.add("unquoted_keys")
            prev = tok
    except (tokenize.TokenError, SyntaxError):
        pass
    return sorted(labels) or ["lenient_json"]


# A string (kept) or a JS comment (dropped): strings first, so "https://..." stays whole.
# Each alternative also ends at the end of the text, so an unclosed one costs one pass, not one per start.
_STRING_OR_COMMENT_RE = re.compile(
    r"""("(?:[^"\\]|\\.)*(?:"|\Z)|'(?:[^'\\\n]|\\.)*(?:'|$))|//[^\n]*|/\*.*?(?:\*/|\Z)""", re.S | re.M
)


def _strip_js_comments(src: str) -> str:
    """``src`` without ``//`` and ``/* */`` comments outside strings (jsonc, as models write it)."""
    return _STRING_OR_COMMENT_RE.sub(lambda m: m.group(1) or " ", src)


def loads_lenient(src: str) -> tuple[object, list[str]] | None:
    """Parse strict JSON, else JSON-like Python literals (``//`` and ``/* */`` comments dropped);
    returns (value, repair labels) or None."""
    try:
        return json.loads(src, strict=False), []
    except (ValueError, RecursionError):
        pass
    try:
        return _literal(ast.parse(src.strip(), mode="eval").body), _repair_labels(src)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        pass
    if "//" not in src and "/*" not in src:
        return None
    bare = _strip_js_comments(src)
    if bare == src:
        return None
    parsed = loads_lenient(bare)
    if parsed is None:
        return None
    return parsed[0], sorted({*(label for label in parsed[1] if label != "lenient_json"), "comments"})


REPLY_PREFIX_RE = re.compile(
    r"\A\s*(?:```(?:json)?\s*\n)?\s*\{\s*[\"']?(?:reply|response|answer|message)[\"']?\s*:\s*\""
)
_COMPLETE_STRING_PART_RE = re.compile(r'[^"\\]*(?:(?:\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})[^"\\]*)*')


def decode_partial_string(s: str) -> str:
    """Decode the start of a JSON string body (no opening quote), stopping before any unfinished escape."""
    return decode_string_part(s, 0)[0]


def decode_string_part(s: str, start: int) -> tuple[str, int]:
    """``s[start:]`` decoded as far as it is a JSON string's complete text: (the text, where it stopped: at the
    closing quote, at an unfinished or unknown escape, or at the end). A high surrogate's escape at the end is
    left for later (its pair is still on the way), so parts decoded one after the other join as one would."""
    match = _COMPLETE_STRING_PART_RE.match(s, start)
    end = match.end() if match else start  # the pattern matches any text (all its parts are optional)
    try:
        decoded = json.loads('"' + s[start:end] + '"', strict=False)
    except ValueError:
        return "", start
    if not isinstance(decoded, str):  # a string body always decodes to a string
        return "", start
    if decoded and 0xD800 <= ord(decoded[-1]) <= 0xDBFF:  # its surrogate pair is still on the way
        escaped = s[end - 6 : end - 4] == "\\u"  # written as an escape (six characters), or as itself
        decoded, end = decoded[:-1], end - (6 if escaped else 1)
    return decoded, end


# ---------------------------------------------------------------- scanning


@dataclass
class _Budget:
    """Bracket-matching steps left for one scan; bounds the cost of pathological texts."""

    steps: int = 200_000


def _prev_nonspace(text: str, j: int, start: int) -> str:
    k = j - 1
    while k >= start and text[k].isspace():
        k -= 1
    return text[k] if k >= start else ""


@dataclass
class OpenWalk:
    """Where the check of the open structure at ``start`` stopped, the text ending before it closed: for a bracket
    (``_match_end``) the next token is looked for from ``at`` (a string's opening quote when the string was open),
    with ``stack`` still to close and ``steps`` of the budget used; for a fence its closing one from ``at``. A
    text that grew goes on from there: what came before stays what it was. ``start`` -1: none. ``scanned``
    counts the characters the checks searched."""

    start: int = -1
    at: int = 0
    stack: list[str] = field(default_factory=list)
    steps: int = 0
    scanned: int = 0


def _match_end(text: str, start: int, budget: _Budget, walk: OpenWalk | None = None) -> tuple[str, int]:
    """Find the bracket closing text[start]; ("ok", end) / ("open", -1) / ("broken", -1). With ``walk`` (the
    budget whole), a walk from the same bracket that stopped open goes on where it stopped, and one that stops
    open now is kept there."""
    stack: list[str] = []
    i, full = start, budget.steps
    if walk is not None and walk.start == start:
        stack, i = list(walk.stack), walk.at
        budget.steps -= walk.steps
    while budget.steps > 0:
        budget.steps -= 1
        m = _BRACKET_TOKEN_RE.search(text, i)
        if walk is not None:
            walk.scanned += (m.start() if m else len(text)) - i
        if not m:  # none in the text: the next is looked for in what comes after it
            return _stopped_open(walk, start, max(i, len(text)), stack, full - budget.steps - 1)
        j, ch = m.start(), m.group()
        if ch == '"' or (ch == "'" and _prev_nonspace(text, j, start) in "{[,:"):
            # an apostrophe in prose ("Bob's") opens no string; one after {[,: does
            end = (_DQ_REST_RE if ch == '"' else _SQ_REST_RE).match(text, j + 1)
            if walk is not None:
                walk.scanned += (end.end() if end else len(text)) - j - 1
            if end is None:
                return _stopped_open(walk, start, j, stack, full - budget.steps - 1)
            i = end.end()
            continue
        i = j + 1
        if ch == "'":
            continue
        if ch in "{[":
            stack.append("}" if ch == "{" else "]")
        elif not stack or stack.pop() != ch:
            return "broken", -1
        elif not stack:
            return "ok", j + 1
    return _stopped_open(walk, start, i, stack, full)


def _stopped_open(walk: OpenWalk | None, start: int, at: int, stack: list[str], steps: int) -> tuple[str, int]:
    """("open", -1), the walk kept where it stopped (``at``: the next search, the step it took not counted)."""
    if walk is not None:
        walk.start, walk.at, walk.stack, walk.steps = start, at, list(stack), steps
    return "open", -1


def _fence_lang(text: str, i: int) -> str:
    """The language tag of the ``` fence at i, lowercased ('' when none)."""
    eol = text.find("\n", i + 3)
    info = text[i + 3 : eol if eol != -1 else len(text)].strip().lower()
    return info.split()[0] if info else ""


def _fence_at(text: str, i: int, searched: int = 0) -> tuple[str, int, int, int] | None:
    """For a ``` fence at i: (lang, content start, content end, block end) or None if unclosed. ``searched``: no
    closing fence starts before it (a shorter text had none)."""
    eol = text.find("\n", i + 3)
    if eol == -1:
        return None
    lang = _fence_lang(text, i)
    close = text.find("```", max(eol, searched))
    if close == -1:
        return None
    return lang, eol + 1, close, close + 3


def scan(
    text: str, offset: int = 0, labels: tuple[str, ...] = (), budget: _Budget | None = None
) -> list[JsonCandidate]:
    """Find every parseable top-level JSON-ish value, looking inside json fences and tags."""
    found: list[JsonCandidate] = []
    budget = budget or _Budget()
    i, n = 0, len(text)
    while i < n:
        m = _INTERESTING_RE.search(text, i)
        if not m:
            break
        i = m.start()
        if text.startswith("```", i):
            fence = _fence_at(text, i)
            if fence is None:  # unclosed: a truncated output; read on unless it is code
                if _fence_lang(text, i) not in CODE_FENCE_LANGS:
                    break
                i += 3
                continue
            lang, c0, c1, end = fence
            if lang in CODE_FENCE_LANGS:
                found.extend(scan(text[c0:c1], offset + c0, (*labels, "fenced"), budget))
                _widen_single(found, offset + c0, offset + c1, offset + i, offset + end)
            i = end
            continue
        tag = _TAG_RE.match(text, i)
        if tag:
            close = text.lower().find(f"</{tag.group(1).lower()}>", tag.end())
            c1 = close if close != -1 else n
            end = close + len(tag.group(1)) + 3 if close != -1 else n
            inner = scan(text[tag.end() : c1], offset + tag.end(), (*labels, "tool_call_tag"), budget)
            found.extend(inner)
            _widen_single(found, offset + tag.end(), offset + c1, offset + i, offset + end)
            i = end
            continue
        if text[i] in "{[":
            status, end = _match_end(text, i, budget)
            if status == "ok" and ":" not in text[i:end]:
                i = end  # holds no object, so nothing inside can be a call or reply
                continue
            if status == "ok":
                parsed = loads_lenient(text[i:end])
                if parsed is not None:
                    value, repairs = parsed
                    found.append(JsonCandidate(value, text[i:end], (offset + i, offset + end), list(labels) + repairs))
                    i = end
                    continue
        i += 1
    return found


def _widen_single(found: list[JsonCandidate], c0: int, c1: int, w0: int, w1: int) -> None:
    """Let the only candidate of a wrapper own the wrapper span (for whole-output checks)."""
    inside = [c for c in found if c0 <= c.outer[0] and c.outer[1] <= c1]
    if len(inside) == 1:
        inside[0].outer = (w0, w1)


def strip_think(text: str) -> tuple[str, bool]:
    """Drop leading reasoning blocks (<think>...</think>); an unclosed one swallows the rest."""
    start = ThinkCut().feed(text)
    if start is None:
        return "", True
    return text[start:], start > 0


class ThinkCut:
    """Where the answer starts in a model output that only grows (a stream), after its leading reasoning blocks
    (``<think>``, ``<thinking>``, ``<reasoning>``, each to its first closing tag) and after a ``</think>`` whose
    opening tag was in the template (the text after the blocks holds a ``</think>`` and no ``<think>``).

    Each ``feed`` searches only the text added since the one before (and a closing tag's length before it):
    what it found stays found, so a long stream costs its length, not its length squared. ``scanned`` counts
    the characters searched. Fed one text once it is ``strip_think``."""

    def __init__(self) -> None:
        self.scanned = 0
        self._after_blocks = 0  # where the text after the closed leading blocks starts
        self._open: tuple[re.Pattern[str], int] | None = None  # an open block's closing tag, searched from
        self._late_from = 0  # the text after the blocks is searched for </think> and <think> from here
        self._late_close: int | None = None  # where the first </think> after the blocks ends
        self._late_open = False  # a <think> after the blocks

    def feed(self, text: str) -> int | None:
        """Where the answer starts in ``text`` (which starts with the text fed before); None inside an unclosed
        leading block (nothing of it is the answer yet)."""
        while True:
            if self._open is None:
                opened = _THINK_OPEN_RE.match(text, self._after_blocks)
                if opened is None:
                    break
                self._open = (_THINK_CLOSE_RES[opened.group(1).lower()], opened.end())
            close_re, searched = self._open
            self.scanned += len(text) - searched
            closed = close_re.search(text, searched)
            if closed is None:
                # a closing tag cut by the end of the text is found whole next time
                self._open = (close_re, max(searched, len(text) - len(close_re.pattern) + 1))
                return None
            self._open, self._after_blocks = None, closed.end()
            self._late_from, self._late_close, self._late_open = closed.end(), None, False
        return self._late_start(text)

    def _late_start(self, text: str) -> int:
        """The answer's start after the blocks: past a ``</think>`` whose opening tag the template held."""
        searched = max(self._after_blocks, self._late_from - len("</think>") + 1)
        self.scanned += len(text) - searched
        if self._late_close is None and (closed := _LATE_CLOSE_RE.search(text, searched)) is not None:
            self._late_close = closed.end()
        self._late_open = self._late_open or _LATE_OPEN_RE.search(text, searched) is not None
        self._late_from = len(text)
        if self._late_close is not None and not self._late_open:
            return self._late_close
        return self._after_blocks


def _fence_end(text: str, i: int, walk: OpenWalk | None) -> int | None:
    """Where the ``` fence at ``i`` ends, None while it is open; a ``walk`` from the same fence goes on from where
    it stopped, and is kept where this one stops."""
    searched = walk.at if walk is not None and walk.start == i else 0
    fence = _fence_at(text, i, searched)
    if walk is not None:
        walk.scanned += (fence[2] if fence else len(text)) - min(len(text), max(i + 3, searched))
        if fence is None:  # a closing fence cut by the end of the text is found whole next time
            walk.start, walk.at, walk.stack, walk.steps = i, max(i + 3, len(text) - 2), [], 0
    return fence[3] if fence else None


def open_region(text: str, start: int = 0, walk: OpenWalk | None = None) -> int | None:
    """Index where an unresolved structure (bracket, fence, tag, partial marker) starts, else None. ``walk``: the
    bracket or fence that was open in a shorter text (a stream) is checked on from where that check stopped."""
    i, n, budget = start, len(text), _Budget()
    while i < n:
        m = _INTERESTING_RE.search(text, i)
        if not m:
            return None
        i = m.start()
        head = text[i : i + 16].lower()  # not the whole text lowered: a stream calls this once per delta
        if n - i <= 16 and any(mk.startswith(head) for mk in _PARTIAL_MARKERS):
            return i  # the text ends in what may become a fence or tag
        if head.startswith("```"):
            fence_end = _fence_end(text, i, walk)
            if fence_end is None:
                return i
            i = fence_end
            continue
        tag = _TAG_RE.match(text, i)
        if tag:
            close = _TAG_CLOSE_RES[tag.group(1).lower()].search(text, tag.end())
            if close is None:
                return i
            i = close.end()
            continue
        if text[i] in "{[":
            # a walk kept goes on only with the budget it had (none spent yet on structures before it); another
            # is a fresh one, its search counted all the same
            walked = OpenWalk() if walk is not None and budget.steps < _Budget.steps else walk
            status, end = _match_end(text, i, budget, walked)
            if walk is not None and walked is not None and walked is not walk:
                walk.scanned += walked.scanned
            if status == "open":
                return i
            if status == "ok":
                i = end
                continue
        i += 1
    return None
