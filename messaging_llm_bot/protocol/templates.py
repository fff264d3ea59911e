"""The text forms of chat templates: calls a model writes as text when the server does not parse them.

Each form is a marker, the skill's name, and the arguments right after it (JSON, or Qwen3-Coder's
parameter tags). ``parse`` turns what is found here into skill calls; the stream guard holds back
text from a marker on (``TEMPLATE_CALL_MARKERS``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from assistant_framework.skills.spec import SkillArgs
from messaging_llm_bot.protocol.lenient_json import loads_lenient, scan

#: ``TEMPLATE_FORMS``: the forms read here, by their recovered label.
TEMPLATE_FORMS = {
    "mistral_tool_calls": "[TOOL_CALLS]name[ARGS]{...} (Mistral v11+, also with [CALL_ID]id before [ARGS])",
    "llama_function_tag": "<function=name>{...}</function> (Llama 3.x)",
    "qwen_xml_function": "<function=name><parameter=key>value</parameter></function> (Qwen3-Coder)",
    "kimi_tool_call": "<|tool_call_begin|>functions.name:0<|tool_call_argument_begin|>{...} (Kimi K2)",
    "deepseek_tool_call": "<｜tool▁call▁begin｜>function<｜tool▁sep｜>name ```json {...}``` (DeepSeek V3/R1)",
}
#: The call markers of those templates (and Llama's ``<|python_tag|>``, Phi-4-mini's and Granite's
#: ``<|tool_call|>``): what follows is a call, not text (the stream guard holds it back).
TEMPLATE_CALL_MARKERS = (
    "[TOOL_CALLS]",
    "<function=",
    "<|python_tag|>",
    "<|tool_call|>",
    "<|tool_calls_section_begin|>",
    "<|tool_call_begin|>",
    "<｜tool▁calls▁begin｜>",
    "<｜tool▁call▁begin｜>",
)
_NAME = r"[A-Za-z_][\w.\-]{0,63}"
_TEMPLATE_CALL_RE = re.compile(
    rf"\[TOOL_CALLS\]\s*(?P<mistral_tool_calls>{_NAME})\s*(?:\[CALL_ID\]\s*[\w-]{{1,64}}\s*)?\[ARGS\]\s*(?=\{{)"
    rf"|<function=(?P<llama_function_tag>{_NAME})>\s*(?=\{{)"
    rf"|<function=(?P<qwen_xml_function>{_NAME})>\s*(?=<parameter=|</function>)"
    rf"|<\|tool_call_begin\|>\s*(?P<kimi_tool_call>{_NAME})(?::\d{{1,4}})?\s*<\|tool_call_argument_begin\|>\s*(?=\{{)"
    rf"|<｜tool▁call▁begin｜>\s*function\s*<｜tool▁sep｜>\s*(?P<deepseek_tool_call>{_NAME})\s*(?:```(?:json)?\s*)?(?=\{{)"
)
#: What closes a form after its arguments, taken into the call's span.
_TEMPLATE_CLOSE_RE = {
    "llama_function_tag": re.compile(r"\s*</function>"),
    "deepseek_tool_call": re.compile(r"\s*```"),
}
#: Qwen3-Coder's parameters: at most this many in one call (a longer list is not a call).
MAX_XML_PARAMETERS = 64
_PARAMETER_RE = re.compile(r"\s*<parameter=([A-Za-z_][\w.\-]{0,63})>\n?(.*?)\n?</parameter>\s*", re.S)


def _xml_value(text: str) -> Any:
    """A parameter's value: an object or array as JSON when it is one, else the text (the prepare step
    fits a string to the scalar type the schema declares)."""
    if text.lstrip().startswith(("{", "[")):
        parsed = loads_lenient(text)
        if parsed is not None and isinstance(parsed[0], (dict, list)):
            return parsed[0]
    return text


def _xml_args(body: str, start: int) -> tuple[SkillArgs, int] | None:
    """Qwen3-Coder's ``<parameter=key>value</parameter>`` run from ``start`` to ``</function>``: the
    args and where the call ends, or None when anything else is inside or the run is too long."""
    close = body.find("</function>", start)
    if close == -1:
        return None
    args: SkillArgs = {}
    at = start
    while at < close:
        match = _PARAMETER_RE.match(body, at, close)
        if match is None or len(args) >= MAX_XML_PARAMETERS:
            return None
        args[match.group(1)] = _xml_value(match.group(2))
        at = match.end()
    return args, close + len("</function>")


@dataclass(frozen=True)
class TemplateCall:
    """One call in a template's text form: its form's label, the name as written, its args and its span."""

    form: str
    name: str
    args: Any
    start: int
    end: int


def template_calls(body: str) -> tuple[list[TemplateCall], list[str]] | None:
    """The template calls in ``body`` in order, with the labels of what was repaired; None when there are
    none; no calls and ``truncated_call`` when one is cut off or broken (a call was meant, nothing in it is
    for the user)."""
    calls: list[TemplateCall] = []
    labels: list[str] = []
    for match in _TEMPLATE_CALL_RE.finditer(body):
        form = next(key for key, value in match.groupdict().items() if value is not None)
        labels.append(form)
        if form == "qwen_xml_function":
            xml = _xml_args(body, match.end())
            if xml is None:
                return [], ["truncated_call"]
            args_value: Any = xml[0]
            end = xml[1]
        else:
            # The arguments right after the marker, read as leniently as any call (single quotes, trailing commas).
            args = next((c for c in scan(body[match.end() :], match.end()) if c.outer[0] == match.end()), None)
            if args is None or not isinstance(args.value, dict):
                # Cut off by max_tokens or broken: a call was meant, nothing in it is for the user.
                return [], ["truncated_call"]
            args_value, end = args.value, args.outer[1]
            labels += args.labels
            closer = _TEMPLATE_CLOSE_RE.get(form)
            closing = closer.match(body, end) if closer else None
            end = closing.end() if closing else end
        calls.append(TemplateCall(form, match.group(form), args_value, match.start(), end))
    return (calls, labels) if calls else None
