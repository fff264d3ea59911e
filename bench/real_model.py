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
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench._common import end_children_when_killed, machine_line  # noqa: E402
from bench.realmodel.eval import EVAL_SUBSET, eval_settings, part_eval  # noqa: E402
from bench.realmodel.frontends import part_frontends  # noqa: E402
from bench.realmodel.server import MAX_TOKENS, LogReader, start_server  # noqa: E402
from bench.realmodel.stop import part_stop  # noqa: E402
from bench.realmodel.turns import part_turns  # noqa: E402
from tests.real_model import missing_reason  # noqa: E402


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
        "--section-cap",
        action="append",
        default=[],
        metavar="SECTION=CHARS",
        help="runtime.section_caps for the eval (skills=200: [Skills] lists the names only); repeatable",
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
    end_children_when_killed()
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
                        section_caps={k: int(v) for k, v in (cap.split("=", 1) for cap in args.section_cap)} or None,
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
