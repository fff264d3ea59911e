"""``eval skills``: can the configured model drive the assistant? See docs/eval.md."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from assistant_framework.config import load_config
from assistant_framework.evals.cases import BUILTIN_CASES_DIR, CaseError, EvalCase, load_cases
from assistant_framework.evals.report import build_report, format_comparison, format_table
from assistant_framework.evals.scoring import CaseResult
from assistant_framework.json_types import JsonObject
from messaging_llm_bot.cli.config import Subparsers


def register(subparsers: Subparsers) -> None:
    group = subparsers.add_parser("eval", help="measure how well a model calls the assistant's skills")
    commands = group.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True
    skills = commands.add_parser(
        "skills",
        help="run the skill-calling suite against a model",
        description="Run the built-in skill-calling cases (plus --cases PATH) against the configured runner, "
        "print a table per category, optionally write a JSON report; or compare two reports.",
    )
    skills.add_argument("--config", default="config", help="config file or directory (default: config)")
    skills.add_argument(
        "--workspace",
        default="workspace",
        help="workspace whose spending caps the calls count against (default: workspace)",
    )
    skills.add_argument("--runner", help="use this runner from llm.runners")
    skills.add_argument("--base-url", help="an OpenAI-compatible base URL instead of the configured runner")
    skills.add_argument("--model", help="the model name to send")
    skills.add_argument(
        "--structured-output",
        choices=("auto", "json_schema", "json_object", "off"),
        help="override the runner's structured_output (how answers are constrained to the protocol)",
    )
    skills.add_argument(
        "--tool-transport", choices=("json", "native", "auto"), help="override the runner's tool_transport"
    )
    skills.add_argument(
        "--skill-choice",
        choices=("auto", "direct", "two_step"),
        help="override the runner's skill_choice (the skill and its arguments in one answer, or in two)",
    )
    skills.add_argument(
        "--cases",
        action="append",
        default=[],
        metavar="PATH",
        help="add your own cases (a folder of JSON or YAML files, or one file); repeatable",
    )
    skills.add_argument("--no-builtin", action="store_true", help="run only the cases given with --cases")
    skills.add_argument("--category", action="append", default=[], help="run only these categories; repeatable")
    skills.add_argument("--id", action="append", default=[], dest="ids", help="run only these case ids; repeatable")
    skills.add_argument("--report", metavar="PATH", help="write the results as JSON")
    skills.add_argument(
        "--compare", nargs=2, metavar=("A.json", "B.json"), help="show two reports side by side and exit"
    )
    skills.set_defaults(func=cmd_skills)


class _EvalRefused(Exception):
    """Why the eval does not run at all: one ``error:`` line, exit 2."""


def cmd_skills(args: argparse.Namespace) -> int:
    try:
        if args.compare:
            print(_comparison(args.compare[0], args.compare[1]))
            return 0
        config = load_config(args.config) if Path(args.config).exists() or not (args.base_url and args.model) else {}
        cases = _selected_cases(args)
        runner = _eval_runners(config, args)
        if args.report and not Path(args.report).resolve().parent.is_dir():
            raise _EvalRefused(f"--report {args.report}: the folder does not exist")
    except _EvalRefused as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return _run(args, cases, config, runner)


def _comparison(first: str, second: str) -> str:
    """Two reports written by ``--report``, side by side."""
    reports = []
    for name in (first, second):
        try:
            reports.append(json.loads(Path(name).read_text(encoding="utf-8")))
        except OSError as exc:
            raise _EvalRefused(f"cannot read report {name}: {exc.strerror}") from None
        except ValueError as exc:
            raise _EvalRefused(f"{name} is not a JSON report written by --report: {exc}") from None
    try:
        return format_comparison(reports[0], reports[1], Path(first).stem, Path(second).stem)
    except (KeyError, TypeError, AttributeError):
        raise _EvalRefused("the files are not reports written by `eval skills --report`") from None


def _selected_cases(args: argparse.Namespace) -> list[EvalCase]:
    """The built-in cases and those of ``--cases``, narrowed by ``--category`` and ``--id``."""
    dirs = [] if args.no_builtin else [BUILTIN_CASES_DIR]
    dirs += [Path(d) for d in args.cases]
    try:
        cases = load_cases(dirs)
    except CaseError as exc:
        raise _EvalRefused(str(exc)) from None
    if args.category:
        cases = [c for c in cases if c.category in args.category]
    if args.ids:
        cases = [c for c in cases if c.id in args.ids]
    if not cases:
        raise _EvalRefused("no eval cases selected")
    return cases


def _eval_runners(config: JsonObject, args: argparse.Namespace) -> JsonObject:
    """Set ``config["llm"]`` to the runners the eval asks (the options' overrides in each) and return the
    first, checked to answer: one clear error before the first case, not 67 failures against nothing."""
    # Imported here: the runner talks to model servers, which the rest of the CLI never does.
    from messaging_llm_bot.evals.runner import eval_llm_config
    from messaging_llm_bot.llm.probe import check_runner
    from messaging_llm_bot.llm.runners import runners_from_config

    try:
        config["llm"] = eval_llm_config(
            config.get("llm") or {}, runner=args.runner, base_url=args.base_url, model=args.model
        )
    except ValueError as exc:
        raise _EvalRefused(str(exc)) from None
    for entry in config["llm"]["runners"]:
        if args.structured_output:
            entry["structured_output"] = args.structured_output
        if args.tool_transport:
            entry["tool_transport"] = args.tool_transport
        if args.skill_choice:
            entry["skill_choice"] = args.skill_choice
    try:
        runners_from_config(config["llm"])  # e.g. two_step with native tools: one line, not 67 failures
    except ValueError as exc:
        raise _EvalRefused(str(exc)) from None
    runner: JsonObject = config["llm"]["runners"][0]
    problem = check_runner(runner)
    if problem:
        raise _EvalRefused(problem)
    return runner


def _run(args: argparse.Namespace, cases: list[EvalCase], config: JsonObject, runner: JsonObject) -> int:
    """Run the cases, print the table (and write the report); 1 when a case failed or was not run."""
    from messaging_llm_bot.cli import refused_by_caps
    from messaging_llm_bot.evals.runner import counted_client, run_cases

    def progress(index: int, total: int, result: CaseResult) -> None:
        mark = "ok  " if result.passed else "FAIL"
        print(f"[{index:>3}/{total}] {mark} {result.id}", file=sys.stderr, flush=True)

    # The runners' spending caps, counted in the workspace the bot counts them in (none there: exit 2).
    llm = counted_client(config["llm"], config, args.workspace)
    try:
        if refused_by_caps(llm):
            return 1
        results = run_cases(cases, config, progress=progress, llm=llm)
        refusal = llm.refusal() if len(results) < len(cases) else None
    finally:
        llm.close()
    report = build_report(
        results, model=runner.get("model", ""), runner=runner.get("name", ""), base_url=runner.get("base_url", "")
    )
    print(format_table(report))
    if args.report:
        Path(args.report).write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"\nreport written to {args.report}")
    failed = sum(1 for r in results if not r.passed)
    if failed:
        print(f"\n{failed} of {len(results)} case(s) failed", file=sys.stderr)
    if refusal is not None:
        print(f"\n{len(cases) - len(results)} case(s) not run: {refusal}", file=sys.stderr)
        return 1
    return 1 if failed else 0
