"""A mutation audit of the security and reliability guards: does the suite notice when a guard breaks?

Each mutation below is a one-line change of the kind a careless refactor makes (a flipped condition,
a removed check, ``==`` for ``in``, an early return) in one guard. The script copies the committed
tree (``git archive HEAD``) to a temporary folder, and for each mutation: applies it there, runs the
test files that guard that code (``pytest -x -q -p no:cacheprovider``, the copy first on
``PYTHONPATH`` so the bot processes the tests start run the mutated code too), records whether a
test failed (caught) or all passed (survived), and writes the file back. Your own checkout is never
changed, so you can go on working meanwhile.

A mutation marked ``equivalent`` changes nothing a user or an attacker can observe (the reason is
given): it is expected to survive. Every other survivor is a guard no test checks: write the test.

    .venv/bin/python bench/mutations.py                  # all mutations (about an hour on 2 busy cores)
    .venv/bin/python bench/mutations.py --list           # the mutations and the tests each runs
    .venv/bin/python bench/mutations.py --only policy-untrusted-min netguard-one-address
    .venv/bin/python bench/mutations.py --json results.json

Exit status: 0 when every mutation not marked equivalent was caught, 1 otherwise, 2 when a mutation
no longer applies (its line changed: update the list).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from mutation_list import MUTATIONS, Mutation  # bench/ is the script's folder, first on sys.path

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Outcome:
    id: str
    path: str
    result: str  # caught | survived | equivalent-caught | equivalent | error | timeout
    seconds: float
    failed: str  # the first failing test (or the error) when caught


def apply(root: Path, mutation: Mutation) -> str:
    """Apply ``mutation`` under ``root``; return the file's original text."""
    path = root / mutation.path
    text = path.read_text(encoding="utf-8")
    count = text.count(mutation.old)
    if count != 1:
        raise SystemExit(f"{mutation.id}: the line to change occurs {count} times in {mutation.path}; update the list")
    path.write_text(text.replace(mutation.old, mutation.new), encoding="utf-8")
    return text


def run_tests(
    root: Path, mutation: Mutation, timeout: float, workers: int, test_timeout: float, deselect: list[str]
) -> tuple[int, str]:
    """Run the mutation's test files in ``root``; (pytest's exit status, its output)."""
    tests = [f"tests/{name}" for name in dict.fromkeys(mutation.tests)]
    # A broken guard often makes a test wait for something that never comes (a question nobody answers):
    # a shorter per-test timeout than the suite's keeps such a run from costing minutes.
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", f"--timeout={test_timeout:g}", *tests]
    cmd += [arg for node in deselect for arg in ("--deselect", node)]
    if workers > 1:
        cmd += ["-n", str(workers), "--dist", "loadfile"]
    return _pytest(root, cmd, timeout)


def fails_unmutated(root: Path, node: str, timeout: float) -> bool:
    """Whether one test fails on the real code too (the machine's load, a flaky test): then its failure
    under a mutation says nothing about the mutation."""
    status, _ = _pytest(root, [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", node], timeout)
    return status != 0


def _pytest(root: Path, cmd: list[str], timeout: float) -> tuple[int, str]:
    env = {**os.environ, "PYTHONPATH": str(root)}  # the bot processes the tests start import the copy too
    try:
        proc = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return -1, f"timed out after {timeout:g} s"
    return proc.returncode, proc.stdout + proc.stderr


def first_failure(output: str) -> str:
    # A node id may hold spaces (a parametrized test's id); pytest ends it with " - " and the message.
    match = re.search(r"^(?:FAILED|ERROR) (.+?)(?: - .*)?$", output, re.M)
    return match.group(1) if match else (output.strip().splitlines() or [""])[-1][:200]


def copy_of_head(dest: Path) -> None:
    """The committed tree (``git archive HEAD``) under ``dest``, with the checkout's virtualenvs linked in."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "HEAD"], capture_output=True, check=True).stdout
    with tempfile.TemporaryFile() as handle:
        handle.write(archive)
        handle.seek(0)
        with tarfile.open(fileobj=handle) as tar:
            tar.extractall(dest, filter="data")
    if (ROOT / ".venv").exists():
        (dest / ".venv").symlink_to(ROOT / ".venv")
    if (ROOT / ".cache" / "synapse-venv").exists():  # the Matrix tests' homeserver (make synapse)
        (dest / ".cache").mkdir(exist_ok=True)
        (dest / ".cache" / "synapse-venv").symlink_to(ROOT / ".cache" / "synapse-venv")


def audit(work: Path, m: Mutation, args: argparse.Namespace) -> Outcome:
    """Apply one mutation, run its tests, restore the file. A test that fails on the real code too is left
    out and the run repeated (at most twice): only a failure the mutation causes counts as caught."""
    started = time.monotonic()
    deselected: list[str] = []
    while True:
        original = apply(work, m)
        try:
            status, output = run_tests(work, m, args.timeout, args.workers, args.test_timeout, deselected)
        finally:
            (work / m.path).write_text(original, encoding="utf-8")
        failed = "" if status == 0 else first_failure(output)
        if status != 1 or "::" not in failed or not fails_unmutated(work, failed, args.timeout):
            break
        deselected.append(failed)
        if len(deselected) > 2:
            status, failed = -2, "inconclusive: fails without the mutation too: " + ", ".join(deselected)
            break
    if status == 0:
        result = "equivalent" if m.equivalent else "survived"
    elif status == 1:
        result = "equivalent-caught" if m.equivalent else "caught"
    else:
        result = {-1: "timeout", -2: "inconclusive"}.get(status, "error")
    return Outcome(m.id, m.path, result, round(time.monotonic() - started, 1), failed)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="+", metavar="ID", help="run these mutations only")
    parser.add_argument("--list", action="store_true", help="list the mutations and exit")
    parser.add_argument("--json", metavar="FILE", help="also write the outcomes as JSON")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per mutation's test run (default 900)")
    parser.add_argument("--workers", type=int, default=1, help="pytest-xdist workers per run (default 1)")
    parser.add_argument("--test-timeout", type=float, default=60, help="seconds per test (default 60)")
    parser.add_argument("--tree", metavar="DIR", help="mutate this checkout in place instead of a copy of HEAD")
    args = parser.parse_args(argv)

    chosen = [m for m in MUTATIONS if not args.only or m.id in args.only]
    unknown = set(args.only or ()) - {m.id for m in MUTATIONS}
    if unknown:
        parser.error(f"no such mutation: {', '.join(sorted(unknown))}")
    if args.list:
        for m in chosen:
            mark = " (equivalent)" if m.equivalent else ""
            print(f"{m.id}{mark}: {m.path}: {m.breaks}\n    tests: {' '.join(m.tests)}")
        return 0

    work = Path(args.tree).resolve() if args.tree else Path(tempfile.mkdtemp(prefix="mutations-"))
    try:
        if not args.tree:
            copy_of_head(work)
        for m in chosen:  # every line still there before an hour of runs
            text = (work / m.path).read_text(encoding="utf-8")
            if text.count(m.old) != 1:
                print(f"{m.id}: the line to change occurs {text.count(m.old)} times in {m.path}; update the list")
                return 2
        outcomes = []
        print(f"{len(chosen)} mutations in {work}", flush=True)
        for m in chosen:
            outcome = audit(work, m, args)
            outcomes.append(outcome)
            print(f"{outcome.result:18} {outcome.seconds:6.0f}s  {m.id}  {outcome.failed}", flush=True)
    finally:
        if not args.tree:
            shutil.rmtree(work, ignore_errors=True)

    survived = [o for o in outcomes if o.result in ("survived", "inconclusive")]
    caught = sum(o.result in ("caught", "equivalent-caught", "timeout", "error") for o in outcomes)
    print(f"\n{caught} caught, {len(survived)} survived, {sum(o.result == 'equivalent' for o in outcomes)} equivalent")
    print("| mutation | file | result | first failing test |\n|---|---|---|---|")
    for o in outcomes:
        print(f"| {o.id} | {o.path} | {o.result} | {o.failed} |")
    if args.json:
        Path(args.json).write_text(json.dumps([asdict(o) for o in outcomes], indent=2) + "\n", encoding="utf-8")
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main())
