"""The bounds on the calls of one model answer: how many run, and how long one call's arguments may be.

A model, or a hostile model server, decides both: an answer of 2,000 calls ran 2,000 skills, a call whose
note was 20 MB wrote it. A call over a bound is not run and the model is told in one sentence, so it can
try a smaller one; what the next request carries of the answer is the call as kept, not its arguments.
"""

from __future__ import annotations

import dataclasses
import json
import logging

from messaging_llm_bot.llm.tools import ToolCall
from messaging_llm_bot.protocol import ParsedOutput, SkillCall

log = logging.getLogger(__name__)

#: The calls of one answer that run; the model is told of the rest (an answer of 2,000 calls ran 2,000 skills).
MAX_CALLS_PER_ANSWER = 20
#: One call's arguments as JSON, in characters: a longer call is not run (a note of 20 MB was written as asked).
#: A note, a mail or a file's text a person writes in a chat is far shorter.
MAX_CALL_ARGS_CHARS = 256 * 1024


def args_size(args: object) -> int:
    """A call's arguments as JSON, in characters (what the bound counts)."""
    return len(json.dumps(args, ensure_ascii=False, default=str))


def too_long(size: int) -> str:
    """What the model reads of a call whose arguments are over the bound (the error of its feedback)."""
    return (
        f"its arguments are {size:,} characters of JSON, more than the {MAX_CALL_ARGS_CHARS:,} one call may "
        "have; nothing was done. Make a shorter call, or tell the user it is too long."
    )


def within_bounds(parsed: ParsedOutput) -> ParsedOutput:
    """The answer's calls as they may run: a call whose arguments are over ``MAX_CALL_ARGS_CHARS`` keeps its
    name and its size only (``SkillCall.too_long``), logged once; the others as they are."""
    calls = []
    for call in parsed.calls:
        size = args_size(call.args)
        if size > MAX_CALL_ARGS_CHARS:
            log.warning("a call of %s has %d characters of arguments (at most %d): not run", call.skill, size,
                        MAX_CALL_ARGS_CHARS)  # fmt: skip
            call = SkillCall(call.skill, {}, too_long=size)
        calls.append(call)
    return dataclasses.replace(parsed, calls=calls)


def answer_as_kept(text: str, native: list[ToolCall], calls: list[SkillCall]) -> tuple[str, list[ToolCall]]:
    """The answer as the turn's next request carries it: with a call over the bound, its calls as kept (the JSON
    protocol's text) or that tool call without its arguments (native), not the megabytes the model wrote."""
    if not any(call.too_long for call in calls):
        return text, native
    kept = json.dumps([{"skill": c.skill, "args": c.args} for c in calls], ensure_ascii=False)
    cut = [dataclasses.replace(n, arguments={}) if c.too_long else n for n, c in zip(native, calls, strict=False)]
    return (text if native else kept if len(calls) > 1 else kept[1:-1]), cut
