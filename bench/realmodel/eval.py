"""The eval bench: built-in (or given) eval cases against the real model, per structured-output mode
and skill choice."""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench._common import table
from bench.realmodel.server import ROOT, LogReader, llm_section
from tests.real_model import RealModelServer

# A fixed subset of the built-in eval cases (every category), so the three modes run the same cases.
EVAL_SUBSET = [
    "tasks-add-plain",
    "tasks-add-due-tomorrow",
    "tasks-list-open",
    "reminders-in-minutes",
    "notes-add-groceries",
    "notes-list",
    "facts-add-allergy",
    "birthdays-add",
    "contacts-find",
    "time-now",
    "chain-list-then-read",
    "memory-note-by-topic",
    "chat-greeting",
    "chat-thanks",
    "chat-joke",
    "chat-general-knowledge",
]


def _call_as_protocol(call) -> str:
    """A native tool call written as the JSON protocol object it stands for (arguments as sent)."""
    args = call.arguments
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError:
            return json.dumps({"skill": call.name}) + args  # not JSON: stays invalid
    return json.dumps({"skill": call.name, "args": args})


@dataclass(frozen=True)
class EvalSetting:
    """One row of the eval table: how answers are constrained, how the skill is chosen, which examples."""

    mode: str  # structured_output, or "native" (tool_transport)
    choice: str = "direct"  # skill_choice
    examples: str = ""  # protocol examples shown ("" = the shipped default)

    @property
    def label(self) -> str:
        from messaging_llm_bot.protocol import messages

        shipped = messages.CHOICE_EXAMPLES_SHOWN if self.choice != "direct" else messages.EXAMPLES_SHOWN
        return f"{self.mode} / {self.choice} / examples {self.examples or shipped}"


def eval_settings(modes: list[str], choices: list[str], examples: list[str]) -> list[EvalSetting]:
    """Every combination, in the order given (mode, then choice, then examples)."""
    return [EvalSetting(m, c, e) for m in modes for c in choices for e in examples]


#: What a quick run (``first_answers``) answers, without the server, after a case's decisive requests.
LOCAL_REPLY = '{"reply": "ok"}'


def part_eval(
    server: RealModelServer,
    subset: list[str] | None,
    settings: list[EvalSetting],
    *,
    case_dirs: list[Path] | None = None,
    first_answers: bool = False,
    log: "LogReader | None" = None,
    skills_dirs: list[str] | None = None,
    section_caps: dict[str, int] | None = None,
) -> str:
    """The eval per setting. ``first_answers``: only the requests that decide right skill, args valid
    and no-skill ok go to the server (a case's first answer, and the arguments request after a
    two_step choice); later rounds get ``{"reply": "ok"}`` at once, so pass rates are not measured."""
    import jsonschema

    from assistant_framework.evals.cases import load_cases
    from assistant_framework.evals.report import build_report
    from assistant_framework.skills import SkillManager
    from assistant_framework.workspace import Workspace
    from messaging_llm_bot.evals.runner import run_case
    from messaging_llm_bot.llm.client import Completion, LLMClient
    from messaging_llm_bot.llm.structured import choice_schema, protocol_schema
    from messaging_llm_bot.llm.tools import tool_calls_of
    from messaging_llm_bot.llm.usage import Usage
    from messaging_llm_bot.protocol import messages as protocol_messages
    from messaging_llm_bot.protocol.messages import ARGS_REQUEST_LEAD

    dirs = case_dirs or [ROOT / "assistant_framework" / "evals" / "cases"]
    all_cases = {c.id: c for c in load_cases(dirs)}
    if subset is None:  # every case, in file order
        subset = list(all_cases)
    cases = [all_cases[i] for i in subset if i in all_cases]
    missing = [i for i in subset if i not in all_cases]
    with tempfile.TemporaryDirectory() as tmp:
        skills = SkillManager.from_config({"runtime": {}}, Workspace(tmp))
        names = skills.names()
        schema = protocol_schema((n, skills.get(n).args_schema) for n in names)
        choice = choice_schema(names)
        args_schemas = {n: skills.get(n).args_schema for n in names}

    class Recording(LLMClient):
        outputs: list[tuple[str, str]] = []  # (kind: answer / choice / args:<skill>, text)
        cut: list[bool] = []  # finish_reason "length": the answer hit max_tokens
        usage: list[dict] = []  # per request sent to the server
        local = 0  # requests answered without the server (first_answers)
        case_requests = 0

        def complete(self, messages, **kwargs):
            last = str(messages[-1].get("content") or "")
            asks_args = messages[-1].get("role") == "user" and last.startswith(ARGS_REQUEST_LEAD)
            if first_answers and Recording.case_requests and not asks_args:
                Recording.local += 1
                return Completion(LOCAL_REPLY, None, Usage(), "local", "local", 0.0, {})
            Recording.case_requests += 1
            completion = super().complete(messages, **kwargs)
            choices = (completion.raw or {}).get("choices") or [{}]
            calls = tool_calls_of(completion.raw or {})
            # A native tool call counts as the protocol object it stands for: {"skill", "args"}.
            texts = [_call_as_protocol(c) for c in calls] or [completion.text]
            kind = "args:" + last[len(ARGS_REQUEST_LEAD) :].split(" ", 1)[0] if asks_args else "answer"
            self.outputs.extend((kind, t) for t in texts)
            self.cut.extend([choices[0].get("finish_reason") == "length"] * len(texts))
            self.usage.append(completion.usage.as_dict())
            return completion

    def valid(kind: str, text: str, strict: bool = True) -> bool:
        # strict=False lets raw control characters inside strings through (JSON forbids them;
        # llama-cpp-python's grammar emits raw newlines, and the protocol parser reads them).
        try:
            value = json.loads(text, strict=strict)
        except ValueError:
            return False
        if kind.startswith("args:"):
            candidates = [args_schemas.get(kind[5:]) or {"type": "object"}]
        else:
            candidates = [schema, choice]
        for candidate in candidates:
            try:
                jsonschema.validate(value, candidate)
                return True
            except jsonschema.ValidationError:
                continue
        return False

    lines = [
        f"Cases ({len(cases)}): {', '.join(c.id for c in cases)}" + (f"; missing: {missing}" if missing else ""),
        "",
    ]
    rows = []
    shipped_examples = (protocol_messages.EXAMPLES_SHOWN, protocol_messages.CHOICE_EXAMPLES_SHOWN)
    for setting in settings:
        mode = setting.mode
        runner = (
            {"structured_output": mode, "skill_choice": setting.choice}
            if mode in ("off", "json_object", "auto", "json_schema")
            else {"tool_transport": mode, "structured_output": "off", "skill_choice": "direct"}
        )
        config = {
            "llm": llm_section(server, **runner),
            "runtime": {
                "timezone": "UTC",
                **({"skills_dirs": skills_dirs} if skills_dirs else {}),
                **({"section_caps": section_caps} if section_caps else {}),
            },
            "memory": {"enabled": False},
            "policy": {"capabilities": {c: "allow" for c in ("read", "write", "delete", "network", "send")}},
        }
        protocol_messages.EXAMPLES_SHOWN = setting.examples or shipped_examples[0]
        protocol_messages.CHOICE_EXAMPLES_SHOWN = setting.examples or shipped_examples[1]
        llm = Recording.from_section(config["llm"])
        Recording.outputs, Recording.cut, Recording.usage, Recording.local = [], [], [], 0
        evaluated: list[int] = []
        if log is not None:
            log.evaluated()  # skip what earlier rows left in the log
        started = time.monotonic()
        results = []
        valid_cases = lenient_cases = 0
        label = setting.label
        try:
            for case in cases:
                before = len(Recording.outputs)
                Recording.case_requests = 0
                results.append(run_case(case, config, llm))
                if log is not None:
                    evaluated.extend(log.evaluated())
                outs = Recording.outputs[before:]
                valid_cases += bool(outs) and all(valid(k, o) for k, o in outs)
                lenient_cases += bool(outs) and all(valid(k, o, strict=False) for k, o in outs)
                for n, (kind, o) in enumerate(outs):
                    if not valid(kind, o):
                        cut = Recording.cut[before + n]
                        print(
                            f"  [{label}] {case.id}: not a protocol object ({kind}, {len(o)} "
                            f"chars{', cut at max_tokens' if cut else ''}): "
                            f"{o[:120]!r}...{o[-60:]!r}",
                            file=sys.stderr,
                        )
                calls = [c.get("skill") for c in results[-1].calls]
                print(
                    f"  [{label}] {case.id}: {'pass' if results[-1].passed else 'FAIL'} calls {calls} "
                    f"{results[-1].problems[:1]}",
                    file=sys.stderr,
                    flush=True,
                )
        finally:
            protocol_messages.EXAMPLES_SHOWN, protocol_messages.CHOICE_EXAMPLES_SHOWN = shipped_examples
            llm.close()
        report = build_report(results)
        o = report["overall"]
        pct = lambda v: "-" if v is None else f"{v * 100:.0f}%"  # noqa: E731
        outputs = Recording.outputs
        sent = Recording.usage
        mean = lambda values: f"{statistics.mean(values):.0f}" if values else "-"  # noqa: E731
        rows.append(
            [
                label,
                "-" if first_answers else f"{report['passed']}/{report['cases']}",
                pct(o["right_skill"]),
                pct(o["args_valid"]),
                "-" if first_answers else pct(o["args_correct"]),
                pct(o["no_skill_ok"]),
                f"{valid_cases}/{len(cases)}",
                f"{sum(valid(k, t) for k, t in outputs)}/{len(outputs)}",
                f"{sum(Recording.cut)}",
                f"{len(sent) / max(1, len(cases)):.1f}",
                mean([u.get("prompt_tokens", 0) for u in sent]),
                mean(evaluated),
                mean([u.get("completion_tokens", 0) for u in sent]),
                f"{o['median_latency_s']:.1f}",
                f"{time.monotonic() - started:.0f}",
            ]
        )
        cats = [
            [
                c,
                f"{s['passed']}/{s['cases']}",
                pct(s["right_skill"]),
                pct(s["args_valid"]),
                pct(s["args_correct"]),
                pct(s["no_skill_ok"]),
            ]
            for c, s in report["by_category"].items()
        ]
        lines += [
            f"### {label}: per category",
            "",
            table(["category", "passed", "right skill", "args valid", "args correct", "no-skill ok"], cats),
            "",
        ]
        print(f"[{label}] " + " | ".join(str(c) for c in rows[-1]), flush=True)  # partial results as they come
    head = [
        "structured_output / skill_choice / examples",
        "passed",
        "right skill",
        "args valid",
        "args correct",
        "no-skill ok",
        "cases all-valid",
        "outputs valid",
        "outputs cut at max_tokens",
        "requests / case",
        "prompt tok / request",
        "evaluated tok / request",
        "completion tok / request",
        "median s",
        "total s",
    ]
    return "\n".join([table(head, rows), ""] + lines)


# ------------------------------------------------------------------ turns
