"""The assistant against a real model: llama-cpp-python's server with SmolLM2-135M-Instruct (Q4_1).

Needs ``make model-server`` (builds llama-cpp-python, fetches the model). Parts:

- ``eval``: ``assistant eval skills`` cases (a fixed subset, ``--cases``) for structured_output
  off / json_object / auto (and tool_transport native, when implemented and accepted): right
  skill, args valid, args correct, no-skill ok, and how many model outputs were a valid
  protocol object (one JSON object matching the protocol schema).
- ``turns``: one 10-turn conversation; per turn the latency and the prompt tokens the server
  evaluated (from its log: llama.cpp's ``prompt eval time = ... / N tokens``), with fact
  extraction off, immediate (old behaviour: between turns) and idle-batched (the default).
- ``frontends``: the same 10 turns through the terminal chat (a real subprocess) and the
  Telegram bot (against the fake Bot API): errors, tracebacks, raw JSON shown to the user.
- ``stop``: a long streamed answer stopped with ``Agent.stop`` after a few deltas, then a short
  turn: does the server stop generating (the short turn is not kept waiting behind the rest)?

Run: ``.venv/bin/python bench/real_model.py [--part eval|turns|frontends|stop|all] [--cases 12]``.
Prints markdown tables; asserts nothing about time.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench._common import machine_line, table  # noqa: E402
from tests.real_model import RealModelServer, missing_reason  # noqa: E402

CONVERSATION = [
    "Hi! My name is Sam.",
    "Add a task: buy milk tomorrow",
    "What's on my to-do list?",
    "Remember that my sister Ann lives in Porto.",
    "What time is it?",
    "Add a note called shopping: eggs, bread, butter",
    "Remind me in 30 minutes to call Ann",
    "Which tasks are due?",
    "Thanks! Where does Ann live?",
    "Bye!",
]

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

_PROMPT_EVAL_RE = re.compile(r"prompt eval time\s*=\s*[\d.]+ ms /\s*(\d+) tokens")


class LogReader:
    """Reads what the server wrote to its log since the last call."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0

    def new_text(self) -> str:
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            data = f.read()
        self.offset += len(data)
        return data.decode("utf-8", "replace")

    def evaluated(self) -> list[int]:
        """Prompt tokens evaluated by each request finished since the last call."""
        return [int(n) for n in _PROMPT_EVAL_RE.findall(self.new_text())]


def start_server(folder: Path, chat_format: str = "chatml", n_ctx: int = 4096) -> RealModelServer:
    server = RealModelServer(log_path=folder / "server.log", verbose=True, chat_format=chat_format, n_ctx=n_ctx)
    server.start()
    return server


MAX_TOKENS = [160]


def llm_section(server: RealModelServer, **runner) -> dict:
    return {
        "runners": [server.runner(**runner)],
        "retries_per_runner": 0,
        "temperature": 0,
        "max_tokens": MAX_TOKENS[0],
        "max_skill_rounds": 3,
    }


# ------------------------------------------------------------------ eval


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
            "runtime": {"timezone": "UTC", **({"skills_dirs": skills_dirs} if skills_dirs else {})},
            "memory": {"enabled": False},
            "policy": {"capabilities": {c: "allow" for c in ("read", "write", "delete", "network", "send")}},
        }
        protocol_messages.EXAMPLES_SHOWN = setting.examples or shipped_examples[0]
        protocol_messages.CHOICE_EXAMPLES_SHOWN = setting.examples or shipped_examples[1]
        llm = Recording(config["llm"])
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


def part_turns(server: RealModelServer, log: LogReader, settings: list[str], pause: float, turns: int = 10) -> str:
    from assistant_framework.memory import MemoryService
    from assistant_framework.skills import SkillManager
    from assistant_framework.workspace import Workspace
    from messaging_llm_bot.agent.loop import Agent, Incoming
    from messaging_llm_bot.llm.client import LLMClient
    from messaging_llm_bot.runtime import BackgroundModel

    out = []
    summary = []
    for setting in settings:
        with tempfile.TemporaryDirectory() as tmp:
            memory_config = {
                "extract_facts": setting != "off",
                "extract_idle_seconds": 0 if setting == "immediate" else 20,
            }
            config = {
                "llm": llm_section(server),
                "runtime": {"timezone": "UTC"},
                "memory": memory_config,
                "policy": {"capabilities": {c: "allow" for c in ("read", "write", "delete", "network", "send")}},
            }
            workspace = Workspace(tmp)
            llm = LLMClient(config["llm"])
            memory = MemoryService(workspace, config, complete=BackgroundModel(llm))
            agent = Agent(config, workspace, SkillManager.from_config(config, workspace), llm, memory=memory)
            log.new_text()
            rows = []
            background = []
            for n, text in enumerate(CONVERSATION[:turns], 1):
                result = agent.handle(Incoming("bench", text, chat_id=1, user_id=1))
                chat = log.evaluated()
                if setting == "immediate":
                    memory.drain(600)  # the old behaviour: extraction right after the turn, before the next one
                    background.extend(log.evaluated())
                prompt = int(result.usage.get("prompt_tokens") or 0)
                rows.append(
                    [
                        n,
                        result.rounds,
                        prompt,
                        sum(chat),
                        f"{100 * (1 - sum(chat) / prompt):.0f}%" if prompt else "-",
                        f"{result.elapsed_s:.1f}",
                        "ok" if result.ok else "FAIL",
                        result.reply[:40].replace("\n", " ").replace("|", "/"),
                    ]
                )
                print(f"  [{setting}] turn {n}: " + " | ".join(str(c) for c in rows[-1]), file=sys.stderr, flush=True)
                time.sleep(pause)
            memory.drain(900)
            background.extend(log.evaluated())
            memory.close()
            llm.close()
        out += [
            f"### extraction {setting}",
            "",
            table(["turn", "rounds", "prompt tok", "evaluated", "reused", "s", "ok", "reply"], rows),
            "",
        ]
        first, rest = rows[0], rows[1:]
        summary.append(
            [
                setting,
                len(rows),
                first[3],
                f"{statistics.mean(r[3] for r in rest):.0f}" if rest else "-",
                f"{float(first[5]):.1f}",
                f"{statistics.median(float(r[5]) for r in rest):.1f}" if rest else "-",
                len(background),
                sum(background),
            ]
        )
    head = [
        "extraction",
        "turns",
        "turn 1 evaluated",
        "later turns evaluated (mean)",
        "turn 1 s",
        "later turns s (median)",
        "background calls",
        "background tok evaluated",
    ]
    return "\n".join([table(head, summary), ""] + out)


# ------------------------------------------------------------------ frontends

RAW_JSON = re.compile(r'\{\s*"(skill|reply|args|facts)"|^\s*[{}\[\]]\s*$', re.M)


def _config_dir(folder: Path, server: RealModelServer, telegram: dict | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "llm.json").write_text(json.dumps(llm_section(server)))
    (folder / "runtime.json").write_text(json.dumps({"timezone": "UTC"}))
    (folder / "telegram.json").write_text(json.dumps(telegram or {"token": ""}))
    (folder / "policy.json").write_text(
        json.dumps({"capabilities": {c: "allow" for c in ("read", "write", "delete", "network", "send")}})
    )
    return folder


def part_frontends(server: RealModelServer) -> str:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        config = _config_dir(tmp_path / "console-config", server)
        env = {k: v for k, v in os.environ.items() if k != "TELEGRAM_BOT_TOKEN"}
        started = time.monotonic()
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "messaging_llm_bot",
                "--frontend",
                "console",
                "--config",
                str(config),
                "--workspace",
                str(tmp_path / "console-ws"),
            ],
            input="\n".join(CONVERSATION) + "\n",
            capture_output=True,
            text=True,
            timeout=3600,
            cwd=ROOT,
            env=env,
        )
        screen = proc.stdout + proc.stderr
        rows.append(
            [
                "terminal chat",
                proc.returncode,
                screen.count("Traceback"),
                len(RAW_JSON.findall(screen)),
                sum(1 for line in proc.stderr.splitlines() if " ERROR " in line or "WARNING" in line),
                screen.count("Sorry, something went wrong"),
                f"{time.monotonic() - started:.0f}",
            ]
        )
        (tmp_path / "console.txt").write_text(screen)
        print(screen, file=sys.stderr)
        print(" | ".join(str(c) for c in rows[-1]), flush=True)
        rows.append(_telegram(server, tmp_path))
        print(" | ".join(str(c) for c in rows[-1]), flush=True)
    head = [
        "frontend",
        "exit code",
        "tracebacks",
        "raw JSON shown",
        "warning/error log lines on screen",
        "failed turns",
        "total s",
    ]
    return table(head, rows)


def _telegram(server: RealModelServer, tmp_path: Path) -> list:
    from assistant_framework.workspace import Workspace
    from messaging_llm_bot.frontends.telegram.settings import conversation_id
    from tests.fakes.bot_api import FakeBotAPI
    from tests.telegram_harness import OWNER, RunningBot, make_runtime, texts

    fake = FakeBotAPI()
    fake.start()
    started = time.monotonic()
    try:
        config = {
            "llm": llm_section(server),
            "runtime": {"timezone": "UTC"},
            "policy": {"capabilities": {c: "allow" for c in ("read", "write", "delete", "network", "send")}},
            "telegram": {
                "token": fake.token,
                "allowed_user_ids": [OWNER],
                "base_url": fake.base_url,
                "base_file_url": fake.base_file_url,
                "stream": True,
                "progress": True,
            },
        }
        runtime = make_runtime(config, Workspace(tmp_path / "tg-ws"), tmp_path)
        replies: list[str] = []
        conv = conversation_id(OWNER)
        bot = RunningBot(runtime)
        with bot:
            for text in CONVERSATION:
                traced = len(runtime.agent.traces.ids())
                fake.send_message(text)
                # every turn, answered or failed, leaves one trace; then nothing is running
                fake.wait_for(
                    lambda traced=traced: len(runtime.agent.traces.ids()) > traced and runtime.agent.pending(conv) == 0,
                    timeout=900,
                )
                time.sleep(1.5)  # let the last edit of a streamed reply land
            replies = texts(fake)
            bot.stop(timeout=300)  # shutdown sends the batched fact extraction to the slow model first
        shown = "\n".join(replies)
        print(shown, file=sys.stderr)
        return [
            "telegram (fake Bot API)",
            0,
            shown.count("Traceback"),
            len(RAW_JSON.findall(shown)),
            "-",
            shown.count("Sorry, something went wrong"),
            f"{time.monotonic() - started:.0f}",
        ]
    finally:
        fake.stop()


# ------------------------------------------------------------------ stop

STORY = "Write a very long story about a dragon who learns to bake bread, at least 600 words."


def part_stop(server: RealModelServer, deltas: int = 10) -> str:
    """The same long answer in full, then stopped after ``deltas`` deltas and followed by a short turn."""
    from assistant_framework.skills import SkillManager
    from assistant_framework.workspace import Workspace
    from messaging_llm_bot.agent.loop import Agent, Incoming
    from messaging_llm_bot.llm.client import LLMClient

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        # Prose (structured_output off): the 135M model writes long free text, where a constrained one stops early.
        config = {
            "llm": {**llm_section(server, structured_output="off"), "max_tokens": 800},
            "runtime": {"timezone": "UTC"},
            "memory": {"enabled": False},
        }
        workspace = Workspace(Path(tmp) / "ws")
        agent = Agent(config, workspace, SkillManager.from_config(config, workspace), LLMClient(config["llm"]))
        agent.handle(Incoming("warm-up", "Hi.", stream=True))  # the system prompt is evaluated once, then cached
        started = time.monotonic()
        full = agent.handle(Incoming("full", STORY, stream=True))
        rows.append(["full answer", f"{time.monotonic() - started:.1f}", len(full.reply), "-", "-"])
        seen = [0]

        def on_event(event) -> None:
            if event.kind == "delta":
                seen[0] += 1
                if seen[0] == deltas:
                    agent.stop("stopped")

        started = time.monotonic()
        stopped = agent.handle(Incoming("stopped", STORY, stream=True, on_event=on_event))
        stop_s = time.monotonic() - started
        started = time.monotonic()
        short = agent.handle(Incoming("next", "Say hello in three words.", stream=True))
        rows.append(
            [
                f"stopped after {deltas} deltas",
                f"{stop_s:.1f}",
                len(stopped.reply),
                stopped.stopped,
                f"{time.monotonic() - started:.1f} ({short.ok})",
            ]
        )
    return table(["turn", "s", "reply chars", "stopped", "next short turn s (ok)"], rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("eval", "turns", "frontends", "stop", "all"), default="all")
    parser.add_argument(
        "--cases",
        default=str(len(EVAL_SUBSET)),
        help="first N cases of the fixed subset, 'all' built-in cases, or case ids (a,b,c)",
    )
    parser.add_argument(
        "--n-ctx", type=int, default=4096, help="the server's context size (tools in the prompt need 8192)"
    )
    parser.add_argument(
        "--chat-format",
        default="chatml",
        help="the server's --chat_format (chatml-function-calling makes it honour `tools`)",
    )
    parser.add_argument(
        "--modes", default="off,json_object,auto", help="structured_output values (and 'native') for the eval"
    )
    parser.add_argument("--choices", default="direct", help="skill_choice values for the eval (direct,two_step)")
    parser.add_argument(
        "--examples", default="", help="protocol examples for the eval: none,one,set (default: the shipped one)"
    )
    parser.add_argument(
        "--case-dir",
        action="append",
        default=[],
        help="eval cases from this folder instead of the built-in ones (e.g. bench/heldout_cases); repeatable",
    )
    parser.add_argument(
        "--skills-dir",
        action="append",
        default=[],
        help="runtime.skills_dirs for the eval: skills that override built-ins of the same name (other descriptions)",
    )
    parser.add_argument(
        "--first-answers",
        action="store_true",
        help="quick eval: only the decisive requests go to the server (right skill, args valid, no-skill ok)",
    )
    parser.add_argument("--settings", default="off,immediate,batched", help="extraction settings for the turns part")
    parser.add_argument("--max-tokens", type=int, default=160, help="llm.max_tokens for every call")
    parser.add_argument("--turns", type=int, default=10, help="turns of the conversation (turns part)")
    parser.add_argument("--pause", type=float, default=2.0, help="seconds between user turns (turns part)")
    args = parser.parse_args(argv)
    MAX_TOKENS[0] = args.max_tokens
    reason = missing_reason()
    if reason:
        print(f"real_model: {reason}", file=sys.stderr)
        return 2
    print(f"# real model bench ({machine_line()})\n")
    with tempfile.TemporaryDirectory() as tmp:
        server = start_server(Path(tmp), args.chat_format, args.n_ctx)
        log = LogReader(server.log_path)
        try:
            if args.part in ("eval", "all"):
                print("## eval\n")
                subset = (
                    None
                    if args.cases == "all"
                    else EVAL_SUBSET[: int(args.cases)]
                    if args.cases.isdigit()
                    else args.cases.split(",")
                )
                settings = eval_settings(args.modes.split(","), args.choices.split(","), args.examples.split(","))
                dirs = [Path(d).resolve() for d in args.case_dir] or None
                print(
                    part_eval(
                        server,
                        subset,
                        settings,
                        case_dirs=dirs,
                        first_answers=args.first_answers,
                        log=log,
                        skills_dirs=[str(Path(d).resolve()) for d in args.skills_dir],
                    ),
                    flush=True,
                )
            if args.part in ("turns", "all"):
                print("## turns\n")
                print(part_turns(server, log, args.settings.split(","), args.pause, args.turns), flush=True)
            if args.part in ("frontends", "all"):
                print("## frontends\n")
                print(part_frontends(server), flush=True)
            if args.part in ("stop", "all"):
                print("## stop\n")
                print(part_stop(server), flush=True)
        finally:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
